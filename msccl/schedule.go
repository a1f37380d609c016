package msccl

import (
	"fmt"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/hw"
)

// Threads is the interpreter's threads per thread block: it runs every
// block with NCCL_MAX_NTHREADS threads (mscclRunInterpreter; 640 in NCCL's
// src/include/device.h).
const Threads = 640

// sliceBytes is how much of each chunk one pass of the program moves: the
// interpreter loops over each chunk in slices of its protocol's step
// (mscclRunInterpreter: chunkSize = calcBytePerStep × MSCCL_CHUNKSTEPS for
// Simple, × 1 otherwise), from NCCL's default buffers:
//   - Simple: 4 MiB buffer (NCCL_BUFFSIZE) / NCCL_STEPS 8 = 512 KiB a step,
//     × MSCCL_CHUNKSTEPS = NCCL_STEPS/2 = 4 (MSCCL src/include/msccl.h);
//   - LL: 8 lines a thread × 512 threads × 8 steps × 16 B / 8 steps, half
//     of it data: 32 KiB;
//   - LL128: 120 elements a thread × 640 threads × 8 B, 15 of every 16
//     elements data: 576000 B.
func sliceBytes(proto string) int64 {
	switch proto {
	case "LL":
		return 32 << 10
	case "LL128":
		return 576000
	}
	return 2 << 20
}

// wire is the protocol's wire bytes per payload byte (LL: 8 B of data per
// 16-B line; LL128: 120 of 128 B).
func wire(proto string) float64 {
	switch proto {
	case "LL":
		return 2
	case "LL128":
		return 128.0 / 120
	}
	return 1
}

// Unit returns the message size unit: the schedule splits the message
// into NChunks chunks of whole elements.
func (a *Algo) Unit(elem int64) int64 { return int64(a.NChunks) * elem }

// fifo names the receive area of connection (from → at, channel c) on at.
func fifo(c, from int) string { return fmt.Sprintf("msccl.c%d.from%d", c, from) }

// piece is a part of a step moved in one op: byte offsets in the source
// and destination buffers (a chunk's offset plus the slice's) and length.
type piece struct{ src, dst, n int64 }

// Schedule turns the MSCCL program into an arsim schedule named name for
// req (req.Ranks must be NGPUs; req.Bytes a multiple of Unit).
func (a *Algo) Schedule(name string, req algos.Request) (*algos.Schedule, error) {
	e, err := a.newEmitter(name, req)
	if err != nil {
		return nil, err
	}
	for gi := range a.GPUs {
		g := &a.GPUs[gi]
		order, err := a.order(g, e.loops)
		if err != nil {
			return nil, err
		}
		e.gpu(g, order)
	}
	return e.s, nil
}

// emitter writes the program of one message size as arsim ops: the size
// of a chunk, the passes over slices of it, the kernel every op runs in
// and where each message lands in its connection's receive area.
type emitter struct {
	a      *Algo
	b      *algos.Builder
	s      *algos.Schedule
	q      int64   // bytes of one chunk
	loops  int     // passes over the chunks, one slice of each per pass
	po, ps []int64 // offset in its chunk and length of each pass's slice
	k      hw.Kernel
	// sendAt and recvAt place each message in its connection's receive
	// area (see placeMessages).
	sendAt, recvAt map[msgKey]msg
}

// msgKey names one message: piece of step of thread block tb of GPU g in
// pass loop.
type msgKey struct{ g, tb, loop, step, piece int }

// msg is a message's offset in its connection's receive area and its
// position k (from 0) in the connection's sequence of messages.
type msg struct {
	off int64
	k   int64
}

// newEmitter checks req against the program, sizes the chunks and slices,
// starts the schedule with a note saying so and places the messages.
func (a *Algo) newEmitter(name string, req algos.Request) (*emitter, error) {
	n, S, es := req.Ranks, req.Bytes, req.DType.Size()
	if n != a.NGPUs {
		return nil, fmt.Errorf("msccl: %s: the schedule is written for %d GPUs, not %d", a.File, a.NGPUs, n)
	}
	if u := a.Unit(es); S%u != 0 {
		return nil, fmt.Errorf("msccl: %s: %d B is not %d whole chunks of %s elements: use a multiple of %d B", a.File, S, a.NChunks, req.DType, u)
	}
	q := S / int64(a.NChunks)
	loops := int(max(1, (q+sliceBytes(a.Proto)-1)/sliceBytes(a.Proto)))
	loops = int(min(int64(loops), q/es)) // a slice holds at least one element
	loops = max(loops, 1)
	po, ps := algos.Split(q, es, loops)
	b := algos.NewBuilder(name, n, S, es)
	s := b.Schedule()
	if a.Inplace {
		s.Output = s.Input
	}
	threads := req.IntOpt("threads", Threads)
	b.Note("MSCCL %q (%s): %d GPUs, %d chunks of %d B, proto %s, %d pass(es) over slices of up to %d B; %d threads per thread block",
		a.Name, a.File, a.NGPUs, a.NChunks, q, a.Proto, loops, ps[0], threads)
	e := &emitter{a: a, b: b, s: s, q: q, loops: loops, po: po, ps: ps,
		k: hw.Kernel{Blocks: 1, Threads: threads, Wire: wire(a.Proto)}}
	e.placeMessages()
	return e, nil
}

// buf names the buffer a step's srcbuf or dstbuf letter stands for.
func (e *emitter) buf(c byte) string {
	switch c {
	case 's':
		return "msccl.scratch"
	case 'o':
		return e.s.Output
	}
	return e.s.Input
}

// pieces returns what step st moves in pass l: nothing for a nop, its
// chunks whole in a single pass, else slice l of each of its chunks.
func (e *emitter) pieces(st Step, l int) []piece {
	if st.Type == "nop" {
		return nil
	}
	q := e.q
	if e.loops == 1 {
		return []piece{{int64(st.SrcOff) * q, int64(st.DstOff) * q, int64(st.Cnt) * q}}
	}
	var out []piece
	for c := 0; c < st.Cnt; c++ {
		out = append(out, piece{int64(st.SrcOff+c)*q + e.po[l], int64(st.DstOff+c)*q + e.po[l], e.ps[l]})
	}
	return out
}

// placeMessages lays out each connection's receive area: messages follow
// each other in the order the one sending (or receiving) thread block
// moves them, pass by pass.
func (e *emitter) placeMessages() {
	e.sendAt, e.recvAt = map[msgKey]msg{}, map[msgKey]msg{}
	for _, g := range e.a.GPUs {
		for _, tb := range g.TBs {
			var so, ro, sk, rk int64
			for l := 0; l < e.loops; l++ {
				for si, st := range tb.Steps {
					kind := stepTypes[st.Type]
					for pi, p := range e.pieces(st, l) {
						key := msgKey{g.ID, tb.ID, l, si, pi}
						if kind.send {
							e.sendAt[key] = msg{so, sk}
							so += p.n
							sk++
						}
						if kind.recv {
							e.recvAt[key] = msg{ro, rk}
							ro += p.n
							rk++
						}
					}
				}
			}
		}
	}
}

// gpu adds GPU g's program: a launch, then the steps of every pass in
// order, each after the last ops of the steps it waits for (after the
// launch when it waits for none).
func (e *emitter) gpu(g *GPU, order []node) {
	launch := e.b.Add(g.ID, algos.Op{Kind: algos.Launch, Label: "launch"})
	ends := map[node][]int{}
	for _, x := range order {
		after := []int{launch}
		if ps := preds(g, x); len(ps) > 0 {
			after = nil
			for _, p := range ps {
				after = append(after, ends[p]...)
			}
		}
		ends[x] = e.step(g, x, after)
	}
}

// step adds the ops of step x of GPU g, after the ops in after, and
// returns its last ones; a nop is one op that only waits.
func (e *emitter) step(g *GPU, x node, after []int) []int {
	tb := &g.TBs[x.tb]
	st := tb.Steps[x.step]
	label := fmt.Sprintf("tb%d step %d %s", tb.ID, st.S, st.Type)
	if e.loops > 1 {
		label += fmt.Sprintf(" slice %d", x.loop)
	}
	var fin []int
	for pi, p := range e.pieces(st, x.loop) {
		m := e.newMove(g.ID, tb, st, msgKey{g.ID, tb.ID, x.loop, x.step, pi}, p, label, after)
		fin = append(fin, m.ops(st.Type)...)
	}
	if len(fin) == 0 { // a nop: it only waits
		fin = []int{e.b.Add(g.ID, algos.Op{Kind: algos.Compute, Label: label}, after...)}
	}
	return fin
}

// move is one piece of one step on rank r: where its operand and result
// are, and, for a step that receives, the message in the receive area and
// the wait for it.
type move struct {
	e        *emitter
	r        int
	tb       *TB
	key      msgKey
	n        int64 // bytes
	label    string
	after    []int       // the ops the step waits for
	src, dst algos.Range // the step's operand and result on r
	same     bool        // src and dst are the same bytes
	in       algos.Range // the received message (steps that receive)
	got      int         // the wait for it (steps that receive)
}

// newMove sets up piece p of step st of thread block tb on rank r; for a
// step that receives it adds the wait for the message.
func (e *emitter) newMove(r int, tb *TB, st Step, key msgKey, p piece, label string, after []int) *move {
	m := &move{e: e, r: r, tb: tb, key: key, n: p.n, label: label, after: after,
		src:  algos.On(r, e.buf(st.SrcBuf), p.src, p.n),
		dst:  algos.On(r, e.buf(st.DstBuf), p.dst, p.n),
		same: e.buf(st.SrcBuf) == e.buf(st.DstBuf) && p.src == p.dst,
	}
	if stepTypes[st.Type].recv {
		in := e.recvAt[key]
		m.in = algos.On(r, fifo(tb.Chan, tb.Recv), in.off, p.n).Rotating(2, 0)
		m.got = e.b.Add(r, algos.Op{Kind: algos.Wait, Flag: algos.Flag{At: hw.GPUMem(r), Name: fifo(tb.Chan, tb.Recv)}, Value: in.k + 1, Kernel: e.k,
			Label: label + fmt.Sprintf(": wait for message %d from GPU %d", in.k+1, tb.Recv)}, after...)
	}
	return m
}

// add adds op to the move's rank after the ops dep.
func (m *move) add(op algos.Op, dep ...int) int {
	op.Kernel = m.e.k
	return m.e.b.Add(m.r, op, dep...)
}

// ops adds the ops of a step of type typ and returns its last ones.
func (m *move) ops(typ string) []int {
	switch typ {
	case "s":
		return []int{m.send(m.src, m.after...)}
	case "r":
		return []int{m.copyOut()}
	case "rrc":
		return []int{m.reduceInto(m.dst)}
	case "rrcs":
		x := m.reduceInto(m.dst)
		return []int{m.send(m.dst, x)}
	case "rrs":
		tmp := algos.On(m.r, fmt.Sprintf("msccl.tb%d.tmp", m.tb.ID), 0, m.n)
		x := m.reduceInto(tmp)
		return []int{m.send(tmp, x)}
	case "rcs":
		c := m.copyOut()
		return []int{c, m.send(m.in, m.got)}
	case "cpy":
		return []int{m.add(algos.Op{Kind: algos.Read, Src: m.src, Dst: m.dst, Label: m.label}, m.after...)}
	case "re":
		return []int{m.add(algos.Op{Kind: algos.Reduce, Src: m.src, Dst: m.dst, Label: m.label}, m.after...)}
	}
	return nil
}

// copyOut copies the received message into the step's result.
func (m *move) copyOut() int {
	return m.add(algos.Op{Kind: algos.Read, Src: m.in, Dst: m.dst, Label: m.label + ": copy out"}, m.got)
}

// send writes from into the send peer's receive area after the ops dep
// and marks it: Simple with a system-scope fence, then the tail flag; LL
// and LL128 with the flags in the lines.
func (m *move) send(from algos.Range, dep ...int) int {
	tb := m.tb
	at := m.e.sendAt[m.key]
	to := algos.On(tb.Send, fifo(tb.Chan, m.r), at.off, m.n).Rotating(2, 0)
	w := m.add(algos.Op{Kind: algos.Write, Src: from, Dst: to, Label: m.label + fmt.Sprintf(": send to GPU %d", tb.Send)}, dep...)
	flag := algos.Flag{At: hw.GPUMem(tb.Send), Name: fifo(tb.Chan, m.r)}
	if m.e.a.Proto == "Simple" {
		f := algos.AddFence(m.e.b, m.r, hw.GPUMem(tb.Send), w)
		return m.add(algos.Op{Kind: algos.Signal, Flag: flag, Value: at.k + 1, Label: m.label + ": post"}, f)
	}
	return m.add(algos.Op{Kind: algos.Signal, Flag: flag, Value: at.k + 1, Inline: true, Label: m.label + ": flags in the lines"}, w)
}

// reduceInto adds the received message to the step's operand into to: in
// place when the operand is to itself, else after a copy of the operand.
func (m *move) reduceInto(to algos.Range) int {
	if m.same && to == m.dst {
		return m.add(algos.Op{Kind: algos.Reduce, Src: m.in, Dst: to, Label: m.label + ": reduce"}, m.got)
	}
	c := m.add(algos.Op{Kind: algos.Read, Src: m.src, Dst: to, Label: m.label + ": local operand"}, m.after...)
	return m.add(algos.Op{Kind: algos.Reduce, Src: m.in, Dst: to, Label: m.label + ": reduce"}, m.got, c)
}
