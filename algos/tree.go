package algos

import "fmt"

// tree is NCCL's double binary tree allreduce: two binary trees over the
// ranks, tree 1 the shift of tree 0 by one rank so that the leaves of one
// (even ranks) are inner nodes of the other; channel c runs tree c mod 2
// over its share of the data (so two channels carry half the data each).
// Every slice is reduced up to the root and broadcast back down, slices
// pipelined through the connections' FIFOs.
type tree struct{ anyRanks }

func init() { Register(tree{}) }

func (tree) Name() string { return "tree" }

func (tree) Describe() string {
	return "NCCL double binary tree: reduce up, broadcast down, pipelined slices, LL/LL128/Simple over P2P or SHM"
}

func (tree) Options() []OptionSpec {
	return append(append([]OptionSpec(nil), ncclCommonOptions...),
		OptionSpec{Name: "shape", Values: []string{"dbtree", "chain"}, Default: "dbtree",
			Doc: "dbtree: double binary tree; chain: NCCL's single-node tree, a chain of the ranks (tree 1 reversed)"})
}

func (tree) Plan(req Request) (*Schedule, error) {
	spec, err := commonSpec(req, "tree")
	if err != nil {
		return nil, err
	}
	spec.chain = req.Opt("shape", "dbtree") == "chain"
	return planTree(req, spec)
}

// btreeParents returns the parent of every rank (−1 for the root) in the
// in-order binary tree over positions 1..n, where rank r sits at position
// pos(r): the node at position i with lowest set bit b has children
// i ± b/2, and its parent is the nearest ancestor of the complete tree
// that exists (≤ n). Odd positions are leaves.
func btreeParents(n int, pos func(r int) int) []int {
	at := make([]int, n+1)
	for r := 0; r < n; r++ {
		at[pos(r)] = r
	}
	parent := make([]int, n)
	root := 1
	for root*2 <= n {
		root *= 2
	}
	for r := 0; r < n; r++ {
		i := pos(r)
		if i == root {
			parent[r] = -1
			continue
		}
		p := i
		for {
			b := p & -p
			if (p/(2*b))%2 == 1 {
				p -= b
			} else {
				p += b
			}
			if p <= n {
				break
			}
		}
		parent[r] = at[p]
	}
	return parent
}

// treeParents returns the parents of tree t (0 or 1).
func treeParents(n, t int, chain bool) []int {
	parent := make([]int, n)
	if chain {
		// NCCL's tree inside one node is a chain along the ranks; the
		// second tree runs the other way.
		for r := range parent {
			if t == 0 {
				parent[r] = r - 1
			} else if r == n-1 {
				parent[r] = -1
			} else {
				parent[r] = r + 1
			}
		}
		return parent
	}
	if t == 0 {
		return btreeParents(n, func(r int) int { return r + 1 })
	}
	return btreeParents(n, func(r int) int {
		if r == 0 {
			return n
		}
		return r
	})
}

// treeSplit is the share of a non-root rank's threads that reduce up in
// NCCL's tree (runTreeSplit, src/device/all_reduce.h): for Simple
// nthreads/2, plus 64 from 256 threads on; for LL and LL128 70 %, rounded
// down to whole warps (448 of 640 threads); the rest broadcast down.
func treeSplit(p ncclProto, threads int) float64 {
	split := threads * 7 / (10 * 32) * 32
	if p == protoSimple {
		split = threads / 2
		if split >= 256 {
			split += 64
		}
	}
	return float64(split) / float64(threads)
}

// sendSources is the sources a tree send's loop loads: 0 when it forwards
// what an SHM or P2P-read receive loop loaded (that loop bounded the
// step), else n.
func sendSources(out, in *conn, n int) int {
	if out.tr == shm || in.loads() {
		return 0
	}
	return n
}

// treeLinePiece is the smallest piece a tree's LL step moves in (see
// planTree): an eighth of NCCL's 32 KiB LL step. It is a step of the
// model's discretisation, not of the machine: halving it moves the
// channel capture's tree/LL records by less than 2 % (median 7.0 → 7.1 %,
// p95 15.8 → 16.5 %, a quarter: 7.2 %, 17.3 %).
const treeLinePiece = 4096

func planTree(req Request, spec ncclSpec) (*Schedule, error) {
	n := req.Ranks
	trees := [2][]int{treeParents(n, 0, spec.chain), treeParents(n, 1, spec.chain)}
	for _, par := range trees[:min(2, spec.first+spec.channels)] { // the trees its channels use
		for r, p := range par {
			if p >= 0 {
				if err := checkP2P(req, spec, r, p); err != nil {
					return nil, err
				}
				if err := checkP2P(req, spec, p, r); err != nil {
					return nil, err
				}
			}
		}
	}
	pl := newNCCLPlanner(req, spec, "tree")
	pl.inOrder = true
	b := pl.b
	elem := req.DType.Size()
	chOff, chLen := spec.split(req.Bytes, elem)
	maxS := 0
	for ch := 0; ch < spec.channels; ch++ {
		if chLen[ch] == 0 {
			continue
		}
		parent := trees[(ch+spec.first)%2]
		kids := make([][]int, n)
		root := -1
		for r, p := range parent {
			if p < 0 {
				root = r
				continue
			}
			kids[p] = append(kids[p], r)
		}
		chunk := spec.proto.treeChunk(req.Bytes, spec.channels, n-1, spec.release)
		if spec.proto == protoLL128 {
			pl.stepBytes = chunk
		}
		S := int(max(1, min(ceilDiv(chLen[ch], chunk), maxTreeSlices)))
		// LL lines carry their flags: a receiver uses each line as it
		// lands, so a step flows down the tree line by line
		// (prims_ll.h): in pieces (llPieces), at most maxTreeSlices per
		// channel. LL128's lines carry theirs too: each warp spins on
		// the flags of its own 128-byte lines, reduces them and stores
		// them onward with the flag in the same iteration (GenericOp in
		// src/device/prims_ll128.h), so its steps flow in pieces as
		// well. Moved whole, a step crossed each hop before the next
		// began: tree/LL128's records on two H200s at 8–256 KiB went
		// from −5…+29 % to −8…+18 % over NVLink and from −4…+19 % to
		// −9…+7 % over SHM (docs/VALIDATION.md). The ring's LL128 steps
		// move whole: in pieces its SHM records go to −29…+3 %.
		// The FIFO holds NCCL_STEPS steps of the tree's chunk (LL128's
		// halved ones included), whatever its pieces.
		S, slots := llPieces(spec.proto, chLen[ch], S, maxTreeSlices, chunk, true)
		maxS = max(maxS, S)
		sOff, sLen := Split(chLen[ch], elem, S)
		slotLen := int64(0)
		for j := range sOff {
			sOff[j] += chOff[ch]
			slotLen = max(slotLen, sLen[j])
		}
		up := make([]*conn, n)   // up[r]: r → parent
		down := make([]*conn, n) // down[r]: parent → r
		for r, p := range parent {
			if p >= 0 {
				up[r] = pl.newConn(fmt.Sprintf("tree.ch%d.up", ch), r, p, slotLen)
				down[r] = pl.newConn(fmt.Sprintf("tree.ch%d.down", ch), p, r, slotLen)
				up[r].slots, down[r].slots = slots, slots
			}
		}
		pl.treeSlices(ch, S, sOff, sLen, kids, root, up, down)
		for r := 0; r < n; r++ {
			if up[r] != nil {
				pl.finish(up[r])
				pl.finish(down[r])
			}
		}
	}
	shape := "double binary tree"
	if spec.chain {
		shape = "chain"
	}
	noteReadUnused(b, req, spec)
	b.Note("%s: %s, channel c on tree c mod 2, %d channels, proto %s, %d threads, up to %d slices (NCCL slice %d B; at most %d in arsim)",
		spec.algo, shape, spec.channels, spec.proto, spec.threads, maxS, spec.proto.treeChunk(req.Bytes, spec.channels, n-1, spec.release), maxTreeSlices)
	return b.Schedule(), nil
}

// treeSlices adds channel ch's S slices (offsets sOff, lengths sLen) on
// its tree: each rank reduces its children's slices into its own and
// sends the sum up, then the root's sum travels down to every rank.
func (pl *ncclPlanner) treeSlices(ch, S int, sOff, sLen []int64, kids [][]int, root int, up, down []*conn) {
	b := pl.b
	n := len(kids)
	spec := pl.spec
	// Every rank but the root splits its threads: nthreadsSplit of them
	// reduce up, the rest broadcast down, at the same time
	// (runTreeSplit in src/device/all_reduce.h); the root's threads do
	// both in one loop.
	upShare := treeSplit(spec.proto, spec.threads)
	downShare := 1 - upShare
	for j := 0; j < S; j++ {
		off, l := sOff[j], sLen[j]
		// Reduce up.
		sum := make([][]int, n) // ops after which out[slice] holds the subtree sum
		for r := 0; r < n; r++ {
			lbl := newStepLabels(fmt.Sprintf("up ch%d slice %d", ch, j))
			if len(kids[r]) == 0 {
				pl.sendInput(up[r], b.In(r, off, l), upShare, lbl)
				continue
			}
			cp := pl.local(r, Read, b.Out(r, off, l), b.In(r, off, l), lbl.name+" own", pl.launch[r])
			for _, k := range kids[r] {
				klbl := newStepLabels(fmt.Sprintf("%s from %d", lbl.name, k))
				share := upShare
				if r == root {
					share = 1
				}
				// a non-root sends the subtree's sum up on
				data, got := pl.recv(up[k], l, share, klbl, onwardIf(r != root, up[r]), 2)
				red := pl.local(r, Reduce, b.Out(r, off, l), data, klbl.plus(sufReduce), cp, got)
				pl.release(up[k], klbl, red)
				sum[r] = append(sum[r], red)
			}
			if r != root {
				pl.send(up[r], b.Out(r, off, l), upShare, lbl, sendSources(up[r], up[kids[r][0]], 2), sum[r]...)
			}
		}
		// Broadcast down.
		for r := 0; r < n; r++ {
			lbl := newStepLabels(fmt.Sprintf("down ch%d slice %d", ch, j))
			share := 1 / float64(max(1, len(kids[r])))
			if r == root {
				for _, k := range kids[r] {
					pl.send(down[k], b.Out(r, off, l), share, newStepLabels(fmt.Sprintf("%s to %d", lbl.name, k)), 1, sum[r]...)
				}
				continue
			}
			var onward *conn // the broadcast goes on down to the children (one over SHM, if any)
			for _, k := range kids[r] {
				if onward == nil || down[k].tr == shm {
					onward = down[k]
				}
			}
			data, got := pl.recv(down[r], l, downShare, lbl, onward, 1)
			uses := []int{pl.store(down[r], "", b.Out(r, off, l), data, downShare, lbl.plus(sufStore), got)}
			for _, k := range kids[r] {
				uses = append(uses, pl.send(down[k], data, share*downShare, newStepLabels(fmt.Sprintf("%s to %d", lbl.name, k)), sendSources(down[k], down[r], 1), got))
			}
			pl.release(down[r], lbl, uses...)
		}
	}
}
