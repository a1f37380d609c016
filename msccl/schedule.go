package msccl

import (
	"container/heap"
	"fmt"
	"strings"

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

// node is one step of one thread block in one pass (loop) over the chunks.
type node struct{ loop, tb, step int }

type nodeHeap []node

func (h nodeHeap) Len() int { return len(h) }
func (h nodeHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.loop != b.loop {
		return a.loop < b.loop
	}
	if a.tb != b.tb {
		return a.tb < b.tb
	}
	return a.step < b.step
}
func (h nodeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *nodeHeap) Push(x any)   { *h = append(*h, x.(node)) }
func (h *nodeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Schedule turns the MSCCL program into an arsim schedule named name for
// req (req.Ranks must be NGPUs; req.Bytes a multiple of Unit).
func (a *Algo) Schedule(name string, req algos.Request) (*algos.Schedule, error) {
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
	k := hw.Kernel{Blocks: 1, Threads: threads, Wire: wire(a.Proto)}
	b.Note("MSCCL %q (%s): %d GPUs, %d chunks of %d B, proto %s, %d pass(es) over slices of up to %d B; %d threads per thread block",
		a.Name, a.File, a.NGPUs, a.NChunks, q, a.Proto, loops, ps[0], threads)
	buf := func(g int, c byte) string {
		switch c {
		case 's':
			return "msccl.scratch"
		case 'o':
			return s.Output
		}
		return s.Input
	}
	pieces := func(st Step, l int) []piece {
		if st.Type == "nop" {
			return nil
		}
		if loops == 1 {
			return []piece{{int64(st.SrcOff) * q, int64(st.DstOff) * q, int64(st.Cnt) * q}}
		}
		var out []piece
		for c := 0; c < st.Cnt; c++ {
			out = append(out, piece{int64(st.SrcOff+c)*q + po[l], int64(st.DstOff+c)*q + po[l], ps[l]})
		}
		return out
	}
	// Offsets of each message in its connection's receive area, in the
	// order the one sending (or receiving) thread block moves them.
	type msgKey struct{ g, tb, loop, step, piece int }
	type msg struct {
		off int64
		k   int64
	}
	sendAt, recvAt := map[msgKey]msg{}, map[msgKey]msg{}
	for _, g := range a.GPUs {
		for _, tb := range g.TBs {
			var so, ro, sk, rk int64
			for l := 0; l < loops; l++ {
				for si, st := range tb.Steps {
					kind := stepTypes[st.Type]
					for pi, p := range pieces(st, l) {
						key := msgKey{g.ID, tb.ID, l, si, pi}
						if kind.send {
							sendAt[key] = msg{so, sk}
							so += p.n
							sk++
						}
						if kind.recv {
							recvAt[key] = msg{ro, rk}
							ro += p.n
							rk++
						}
					}
				}
			}
		}
	}
	for _, g := range a.GPUs {
		r := g.ID
		launch := b.Add(r, algos.Op{Kind: algos.Launch, Label: "launch"})
		// Steps in an order that respects each thread block's sequence
		// and the cross-block dependencies (Kahn, smallest first).
		preds := func(x node) []node {
			var out []node
			switch {
			case x.step > 0:
				out = append(out, node{x.loop, x.tb, x.step - 1})
			case x.loop > 0:
				out = append(out, node{x.loop - 1, x.tb, len(g.TBs[x.tb].Steps) - 1})
			}
			if st := g.TBs[x.tb].Steps[x.step]; st.DepID >= 0 && st.DepID != x.tb {
				out = append(out, node{x.loop, st.DepID, st.Deps})
			}
			return out
		}
		indeg := map[node]int{}
		succ := map[node][]node{}
		total := 0
		ready := &nodeHeap{}
		for l := 0; l < loops; l++ {
			for ti, tb := range g.TBs {
				for si := range tb.Steps {
					x := node{l, ti, si}
					total++
					ps := preds(x)
					indeg[x] = len(ps)
					for _, p := range ps {
						succ[p] = append(succ[p], x)
					}
					if len(ps) == 0 {
						heap.Push(ready, x)
					}
				}
			}
		}
		ends := map[node][]int{}
		done := 0
		for ready.Len() > 0 {
			x := heap.Pop(ready).(node)
			done++
			after := []int{launch}
			if ps := preds(x); len(ps) > 0 {
				after = nil
				for _, p := range ps {
					after = append(after, ends[p]...)
				}
			}
			tb := g.TBs[x.tb]
			st := tb.Steps[x.step]
			label := fmt.Sprintf("tb%d step %d %s", tb.ID, st.S, st.Type)
			if loops > 1 {
				label += fmt.Sprintf(" slice %d", x.loop)
			}
			var fin []int
			for pi, p := range pieces(st, x.loop) {
				key := msgKey{r, tb.ID, x.loop, x.step, pi}
				src := algos.On(r, buf(r, st.SrcBuf), p.src, p.n)
				dst := algos.On(r, buf(r, st.DstBuf), p.dst, p.n)
				kind := stepTypes[st.Type]
				var in algos.Range
				var got int
				if kind.recv {
					m := recvAt[key]
					in = algos.On(r, fifo(tb.Chan, tb.Recv), m.off, p.n).Rotating(2, 0)
					got = b.Add(r, algos.Op{Kind: algos.Wait, Flag: algos.Flag{At: hw.GPUMem(r), Name: fifo(tb.Chan, tb.Recv)}, Value: m.k + 1, Kernel: k,
						Label: label + fmt.Sprintf(": wait for message %d from GPU %d", m.k+1, tb.Recv)}, after...)
				}
				send := func(from algos.Range, dep ...int) int {
					m := sendAt[key]
					to := algos.On(tb.Send, fifo(tb.Chan, r), m.off, p.n).Rotating(2, 0)
					w := b.Add(r, algos.Op{Kind: algos.Write, Src: from, Dst: to, Kernel: k, Label: label + fmt.Sprintf(": send to GPU %d", tb.Send)}, dep...)
					flag := algos.Flag{At: hw.GPUMem(tb.Send), Name: fifo(tb.Chan, r)}
					if a.Proto == "Simple" {
						// Simple: a system-scope fence, then the tail flag.
						f := b.Add(r, algos.Op{Kind: algos.Fence, Dst: algos.Range{Buf: algos.Buf{At: hw.GPUMem(tb.Send)}}, Label: label + ": fence"}, w)
						return b.Add(r, algos.Op{Kind: algos.Signal, Flag: flag, Value: m.k + 1, Kernel: k, Label: label + ": post"}, f)
					}
					return b.Add(r, algos.Op{Kind: algos.Signal, Flag: flag, Value: m.k + 1, Inline: true, Kernel: k, Label: label + ": flags in the lines"}, w)
				}
				same := buf(r, st.SrcBuf) == buf(r, st.DstBuf) && p.src == p.dst
				// reduceInto adds the received data to src into dst.
				reduceInto := func(to algos.Range) int {
					if same && to == dst {
						return b.Add(r, algos.Op{Kind: algos.Reduce, Src: in, Dst: to, Kernel: k, Label: label + ": reduce"}, got)
					}
					c := b.Add(r, algos.Op{Kind: algos.Read, Src: src, Dst: to, Kernel: k, Label: label + ": local operand"}, after...)
					return b.Add(r, algos.Op{Kind: algos.Reduce, Src: in, Dst: to, Kernel: k, Label: label + ": reduce"}, got, c)
				}
				switch st.Type {
				case "s":
					fin = append(fin, send(src, after...))
				case "r":
					fin = append(fin, b.Add(r, algos.Op{Kind: algos.Read, Src: in, Dst: dst, Kernel: k, Label: label + ": copy out"}, got))
				case "rrc":
					fin = append(fin, reduceInto(dst))
				case "rrcs":
					x := reduceInto(dst)
					fin = append(fin, send(dst, x))
				case "rrs":
					tmp := algos.On(r, fmt.Sprintf("msccl.tb%d.tmp", tb.ID), 0, p.n)
					x := reduceInto(tmp)
					fin = append(fin, send(tmp, x))
				case "rcs":
					fin = append(fin, b.Add(r, algos.Op{Kind: algos.Read, Src: in, Dst: dst, Kernel: k, Label: label + ": copy out"}, got), send(in, got))
				case "cpy":
					fin = append(fin, b.Add(r, algos.Op{Kind: algos.Read, Src: src, Dst: dst, Kernel: k, Label: label}, after...))
				case "re":
					fin = append(fin, b.Add(r, algos.Op{Kind: algos.Reduce, Src: src, Dst: dst, Kernel: k, Label: label}, after...))
				}
			}
			if len(fin) == 0 { // a nop: it only waits
				fin = []int{b.Add(r, algos.Op{Kind: algos.Compute, Label: label}, after...)}
			}
			ends[x] = fin
			for _, y := range succ[x] {
				if indeg[y]--; indeg[y] == 0 {
					heap.Push(ready, y)
				}
			}
		}
		if done < total {
			var stuck []string
			for ti, tb := range g.TBs {
				for si, st := range tb.Steps {
					if indeg[node{0, ti, si}] > 0 && len(stuck) < 4 {
						stuck = append(stuck, fmt.Sprintf("thread block %d step %d (line %d)", ti, si, st.Line))
					}
				}
			}
			return nil, fmt.Errorf("msccl: %s: the thread blocks of GPU %d wait for each other in a cycle (deadlock): %s", a.File, r, strings.Join(stuck, ", "))
		}
	}
	return s, nil
}
