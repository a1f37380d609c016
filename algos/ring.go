package algos

import "fmt"

// ring is NCCL's ring allreduce: on every channel, a reduce-scatter of
// n−1 steps then an all-gather of n−1 steps around the ring r → r+1, each
// step cut into slices that stream through the connection's FIFO.
type ring struct{ anyRanks }

func init() { Register(ring{}) }

func (ring) Name() string { return "ring" }

func (ring) Describe() string {
	return "NCCL ring: reduce-scatter + all-gather, 2(n−1) pipelined steps per channel, LL/LL128/Simple over P2P or SHM"
}

func (ring) Options() []OptionSpec { return ncclCommonOptions }

func (ring) Plan(req Request) (*Schedule, error) {
	spec, err := commonSpec(req, "ring")
	if err != nil {
		return nil, err
	}
	return planRing(req, spec)
}

// planRing builds the ring. Per channel the data share is cut into n
// chunks; at step s rank r sends chunk (r−s) mod n and receives chunk
// (r−s−1) mod n from r−1, which it
//
//	s < n−2:        adds its own input to and sends on (recvReduceSend)
//	s = n−2:        adds its own input to, stores in its output, sends on
//	                (recvReduceCopySend: the chunk is complete)
//	n−1 ≤ s < 2n−3: stores in its output and forwards (recvCopySend)
//	s = 2n−3:       stores in its output (recv)
func planRing(req Request, spec ncclSpec) (*Schedule, error) {
	n := req.Ranks
	for r := 0; r < n; r++ {
		if err := checkP2P(req, spec, r, (r+1)%n); err != nil {
			return nil, err
		}
	}
	pl := newNCCLPlanner(req, spec, "ring")
	b := pl.b
	elem := req.DType.Size()
	chOff, chLen := spec.split(req.Bytes, elem)
	reserveRing(pl, chLen, n)
	used := 0
	loopsMax, kMax := 0, 0
	anySHM := false // a link of the ring goes through host memory
	for r := 0; r < n; r++ {
		anySHM = anySHM || spec.transport(r, (r+1)%n) == shm
	}
	for ch := 0; ch < spec.channels; ch++ {
		if chLen[ch] == 0 {
			continue
		}
		used++
		L, K := ringLoops(spec.proto, chLen[ch], n)
		P, slots := ringPieces(spec.proto, chLen[ch], n, L, K)
		// A connection's loop moves its pieces one at a time, so they
		// flow down the ring as NCCL's lines do; LL128 and Simple steps
		// too, as a channel's block moves a chunk's slices one after
		// another (prims_simple.h, prims_ll128.h: genericOp). Side by
		// side, back-to-back allreduces on a ring with SHM links fall into
		// a convoy (every FIFO slot written at once, then read at once).
		// LL steps not cut into pieces stay side by side, their lines
		// streaming (in order, NCCL's LL over NVLink from 8 MiB would be
		// 20–50 % slow), except on a ring with an SHM link, where the
		// block's receive is its own load of host memory, one step after
		// another (side by side, back-to-back calls convoy there too:
		// 8 KiB on a800x8-2islands 45 µs a call against 31 alone).
		pl.inOrder, K = P > K || spec.proto != protoLL || anySHM, P
		loopsMax, kMax = max(loopsMax, L), max(kMax, K)
		lOff, lLen := Split(chLen[ch], elem, L)
		// sOff[l][x][j], sLen[l][x][j]: slice j of chunk x of loop l,
		// offsets in the buffer.
		sOff := make([][][]int64, L)
		sLen := make([][][]int64, L)
		slotLen := int64(0)
		for l := 0; l < L; l++ {
			cOff, cLen := Split(lLen[l], elem, n)
			sOff[l], sLen[l] = make([][]int64, n), make([][]int64, n)
			for x := 0; x < n; x++ {
				o, ln := Split(cLen[x], elem, K)
				for j := range o {
					o[j] += chOff[ch] + lOff[l] + cOff[x]
					slotLen = max(slotLen, ln[j])
				}
				sOff[l][x], sLen[l][x] = o, ln
			}
		}
		conns := make([]*conn, n) // conns[r]: r → r+1
		for r := 0; r < n; r++ {
			conns[r] = pl.newConn(fmt.Sprintf("ring.ch%d", ch), r, (r+1)%n, slotLen)
			conns[r].slots = slots
		}
		if pl.inOrder {
			// One block per rank and channel runs the ring's primitives
			// one after another (prims_ll.h): its receives over SHM
			// share the in-order loop of its sends.
			for r := 0; r < n; r++ {
				conns[r].recvGroup = conns[(r+1)%n].id
			}
		}
		for l := 0; l < L; l++ {
			pl.ringLoop(conns, ch, l, K, sOff[l], sLen[l])
		}
		for _, c := range conns {
			pl.finish(c)
		}
	}
	noteReadUnused(b, req, spec)
	b.Note("%s: ring over %d of %d channels, proto %s, %d threads, %d loop(s) of %d slice(s) per step (NCCL slice %d B; at most %d slices per step in all loops in arsim)",
		spec.algo, used, spec.channels, spec.proto, spec.threads, loopsMax, kMax, spec.proto.sliceBytes(), maxSlicesPerRingStep)
	return b.Schedule(), nil
}

// reserveRing makes room in every rank's program for the ops the ring
// adds (ringOps; chLen: the channels' bytes).
func reserveRing(pl *ncclPlanner, chLen []int64, n int) {
	for r := 0; r < n; r++ {
		pl.b.Reserve(r, ringOps(pl.spec, chLen, n, r))
	}
}

// ringOps is how many ops planRing adds to rank r's program: per loop,
// step and slice a send (write, Simple's fence and bookkeeping, tail), a
// head signal, a receive (wait, SHM's load) and a local pass, two at step
// n−2; per channel a credit wait for each send beyond the FIFO's slots,
// the drain and Simple's last fence.
func ringOps(spec ncclSpec, chLen []int64, n, r int) int {
	simple := 0
	if spec.proto == protoSimple {
		simple = 2
	}
	shmIn := 0 // the receive's load: SHM, or P2P read
	if spec.transport((r-1+n)%n, r) != p2p {
		shmIn = 1
	}
	ops := 0
	for _, d := range chLen {
		if d > 0 {
			L, K := ringLoops(spec.proto, d, n)
			K, slots := ringPieces(spec.proto, d, n, L, K)
			sends := L * K * 2 * (n - 1)
			ops += sends*(5+simple+shmIn) + L*K + max(0, sends-slots) + 1 + simple/2
		}
	}
	return ops
}

// ringLoops returns how many loops a channel's d bytes take and how many
// slices each ring step of a loop has. NCCL cuts the channel's data into
// loops of n chunks, a chunk being ALLREDUCE_CHUNKSTEPS steps (Simple: 2
// slices of 2 steps; LL, LL128: one step), shrinking the chunk when the
// data is smaller. NCCL moves a smaller Simple chunk in its two slices
// still (prims_simple.h genericOp: half the chunk each, at least a 32nd
// of a full slice); arsim moves a chunk of one slice's bytes or less in
// one, since two make the mid sizes faster than measured: a per-slice
// cost the model lacks (docs/VALIDATION.md, "What the model misses").
// A step's slices must be fewer than the FIFO's slots,
// or every rank would wait for credit from a neighbour that is waiting
// too. arsim caps loops × slices at maxSlicesPerRingStep, growing the
// chunk beyond NCCL's for large messages.
func ringLoops(p ncclProto, d int64, n int) (loops, slices int) {
	k := int64(1)
	if p == protoSimple {
		k = 2 // ALLREDUCE_CHUNKSTEPS / ALLREDUCE_SLICESTEPS
	}
	chunk := k * p.sliceBytes()
	L := max(1, ceilDiv(d, int64(n)*chunk))
	if L == 1 {
		k = min(k, ceilDiv(ceilDiv(d, int64(n)), p.sliceBytes()))
	}
	L = min(L, maxSlicesPerRingStep/k)
	return int(L), int(k)
}

// ringPieces returns how many pieces each ring step of a channel of d
// bytes moves in (K: the step's slices before) and how many of them the
// FIFO holds. NCCL's LL receiver uses each line as it lands and its
// recvReduceSend stores the line onward in the same iteration
// (prims_ll.h), so a step flows around the ring line by line: arsim moves
// it in pieces (llPieces), up to maxSlicesPerRingStep over the loops.
func ringPieces(p ncclProto, d int64, n, L, K int) (pieces, slots int) {
	return llPieces(p, ceilDiv(d, int64(L)*int64(n)), K, maxSlicesPerRingStep/L, p.sliceBytes(), false)
}

// llPieces returns how many pieces an LL step of step bytes moves in,
// each with its flag, down to treeLinePiece bytes and at most most (k:
// the pieces it moves in otherwise), and how many such pieces the FIFO
// holds: as many as its NCCL_STEPS slots of slot bytes each hold. With
// ll128, an LL128 step moves in pieces the same way (the tree's: see
// planTree). Other protocols keep k and their slots.
func llPieces(p ncclProto, step int64, k, most int, slot int64, ll128 bool) (pieces, slots int) {
	slots = p.slots()
	if p != protoLL && (p != protoLL128 || !ll128) {
		return k, slots
	}
	pieces = int(min(int64(most), max(int64(k), ceilDiv(step, treeLinePiece))))
	if pieces <= k {
		return k, slots
	}
	return pieces, max(slots, int(int64(slots)*slot/ceilDiv(step, int64(pieces))))
}

// ringSources is what the primitive receiving step s of a ring of n
// ranks loads per element: the received data and the rank's input up to
// step n−2 (recvReduceSend, and recvReduceCopySend at n−2), the received
// data alone after (recvCopySend, the last step's recv).
func ringSources(s, n int) int {
	if s <= n-2 {
		return 2
	}
	return 1
}

// ringLoop adds one loop: 2(n−1) steps of K slices on every rank.
func (pl *ncclPlanner) ringLoop(conns []*conn, ch, l, K int, sOff, sLen [][]int64) {
	b := pl.b
	n := len(conns)
	// After receiving step s: src[r][j] is what rank r sends at step s+1,
	// ready[r][j] the op that makes it ready; pend[r][j] the ops that must
	// finish before the received slot is released.
	src := make([][]Range, n)
	ready := make([][]int, n)
	pend := make([][][]int, n)
	for r := range src {
		src[r] = make([]Range, K)
		ready[r] = make([]int, K)
		pend[r] = make([][]int, K)
	}
	steps := 2 * (n - 1)
	// Every rank's ops of step s, slice j carry the same labels.
	labels := make([][]*stepLabels, steps)
	for s := range labels {
		phase := "rs"
		if s >= n-1 {
			phase = "ag"
		}
		labels[s] = make([]*stepLabels, K)
		for j := range labels[s] {
			labels[s][j] = newStepLabels(fmt.Sprintf("%s step %d ch%d loop %d slice %d", phase, s, ch, l, j))
		}
	}
	name := func(s, j int) *stepLabels { return labels[s][j] }
	for s := 0; s < steps; s++ {
		// Sends of step s.
		for r := 0; r < n; r++ {
			x := ((r-s)%n + n) % n
			for j := 0; j < K; j++ {
				if s == 0 {
					pl.sendInput(conns[r], b.In(r, sOff[x][j], sLen[x][j]), 1, name(s, j))
					continue
				}
				// The send of step s is the primitive that received step
				// s−1 (ringSources). Over SHM, or received by P2P read,
				// the receive loop bounded the step already.
				srcs := ringSources(s-1, n)
				if conns[r].tr == shm || conns[(r-1+n)%n].loads() {
					srcs = 0
				}
				send := pl.send
				if s >= n-1 {
					// recvReduceCopySend and recvCopySend store each
					// element to the output too.
					send = pl.sendOut
				}
				w := send(conns[r], src[r][j], 1, name(s, j), srcs, ready[r][j])
				pend[r][j] = append(pend[r][j], w)
			}
		}
		// Slots of step s−1 are free once their sends have read them.
		if s > 0 {
			for r := 0; r < n; r++ {
				for j := 0; j < K; j++ {
					pl.release(conns[(r-1+n)%n], name(s-1, j), pend[r][j]...)
					pend[r][j] = nil
				}
			}
		}
		// Receives of step s.
		for r := 0; r < n; r++ {
			x := ((r-s-1)%n + 2*n) % n
			in := conns[(r-1+n)%n]
			for j := 0; j < K; j++ {
				lbl := name(s, j)
				off, ln := sOff[x][j], sLen[x][j]
				// the block sends every step but the last on
				data, got := pl.recv(in, ln, 1, lbl, onwardIf(s < steps-1, conns[r]), ringSources(s, n))
				switch {
				case s < n-2:
					red := pl.local(r, Reduce, data, b.In(r, off, ln), lbl.plus(sufReduce), got)
					src[r][j], ready[r][j], pend[r][j] = data, red, []int{red}
				case s == n-2:
					red := pl.local(r, Reduce, data, b.In(r, off, ln), lbl.plus(sufReduce), got)
					cp := pl.local(r, Read, b.Out(r, off, ln), data, lbl.plus(sufStore), red)
					src[r][j], ready[r][j], pend[r][j] = b.Out(r, off, ln), cp, []int{cp}
				case s < steps-1:
					cp := pl.local(r, Read, b.Out(r, off, ln), data, lbl.plus(sufStore), got)
					src[r][j], ready[r][j], pend[r][j] = data, got, []int{cp}
				default:
					cp := pl.store(in, conns[r].id, b.Out(r, off, ln), data, 1, lbl.plus(sufStore), got)
					pend[r][j] = []int{cp}
				}
			}
		}
	}
	for r := 0; r < n; r++ {
		for j := 0; j < K; j++ {
			pl.release(conns[(r-1+n)%n], name(steps-1, j), pend[r][j]...)
		}
	}
}
