package algos

import (
	"fmt"
	"math"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/sim"
)

// The executor's slot layout
//
// Each rank's ops [base, next) are held in a window of cap slots: op i in
// window position i mod cap (a stored schedule's window is its whole
// program). Position k of rank r is slot k × ranks + r of executor.slots
// and of executor.cold: the slots of all ranks are interleaved by window
// position, because ranks of a symmetric collective run the same op at
// the same instant in rank order and so touch neighbouring slots. The op's
// completion event and its callback (slotCold.fin) carry k and r packed in
// one integer (executor.opArg), so an event names its op without a
// closure.
//
// A slot holds what starting and finishing the op needs in 32 bytes, two
// to a cache line: kind, flags, how many deps are not yet done, the source
// memory (or flag ID), the destination memory, the byte count (or flag
// value, or compute time) and the first two waiting successors (more go
// to rankRun.more), whose word holds, once the op is done, when it
// finished: completing an op touches its slot and its successors' only.
// What starts read besides (kernel and label, interned, and the callback
// handed to hw) is in its slotCold. An op's
// index in its program is derived from its position (executor.opIndex).
// At 1024 ranks the slots of every rank's window of 32 ops take 1 MiB and
// the cold slots 512 KiB. Measured side by side against a whole op
// (~300 bytes) per slot and rank-major windows, this layout ran
// 256–1024-rank rings 11–20 % faster (docs/PERFORMANCE.md).

// slot holds one op of a rank's window while it is in flight (see above).
type slot struct {
	kind    OpKind
	bits    uint8 // opAccumulate, opInline, opAtomic, opDone, opStarted, opBlockSync, opFenced, opFused
	nsucc   uint16
	waiting int32 // deps not yet done
	// a is Src.Buf.At (an xmem) of a Read, Write, Copy or Reduce, the
	// flag ID of a Signal or Wait, the memory whose loads a Fence waits
	// for (fenceLoadsOf).
	a   int32
	dst xmem  // Dst.Buf.At; Flag.At for a Signal or Wait
	n   int64 // Src.Len; Value for a Signal or Wait; Dur for a Compute
	// While the op runs, the window positions of the first two waiting
	// ops that depend on it (succ, setSucc; the others in rankRun.more);
	// once it is done, when it finished (doneAt).
	link uint64
}

// inlineSucc is how many successors a slot holds itself.
const inlineSucc = 2

func (s *slot) succ(i int) int32 { return int32(uint32(s.link >> (32 * i))) }

func (s *slot) setSucc(i int, k int32) {
	sh := 32 * i
	s.link = s.link&^(0xFFFFFFFF<<sh) | uint64(uint32(k))<<sh
}

// doneAt returns when the op finished; valid once it is done.
func (s *slot) doneAt() sim.Time { return sim.Time(s.link) }

// slotCold is the rest of a slot.
type slotCold struct {
	kernel int32  // index in executor.kernels
	label  int32  // index in executor.labels
	fin    func() // the completion callback handed to hw (Engine.Func)
}

const (
	opAccumulate = 1 << iota
	opInline
	opAtomic
	opDone
	opStarted
	opBlockSync
	opFenced
	opFused
)

func (s *slot) done() bool    { return s.bits&opDone != 0 }
func (s *slot) started() bool { return s.bits&opStarted != 0 }

// opBits packs an op's flags into a slot's bits (done and started clear).
func opBits(accumulate, inline, atomic, blockSync, fenced, fused bool) uint8 {
	var b uint8
	if fused {
		b |= opFused
	}
	if fenced {
		b |= opFenced
	}
	if blockSync {
		b |= opBlockSync
	}
	if accumulate {
		b |= opAccumulate
	}
	if inline {
		b |= opInline
	}
	if atomic {
		b |= opAtomic
	}
	return b
}

// xmem is a hw.Mem in 32 bits: a GPU rank (≥ 0) or −1 − socket (host).
type xmem int32

func toXmem(m hw.Mem) (xmem, bool) {
	v := m.Rank
	if m.Host {
		v = -1 - m.Socket
	}
	return xmem(v), v >= math.MinInt32 && v <= math.MaxInt32
}

func (v xmem) mem() hw.Mem {
	if v < 0 {
		return hw.HostMem(int(-1 - v))
	}
	return hw.GPUMem(int(v))
}

// slotName names the op waiting in a slot in deadlock reports, formatted
// only then.
type slotName struct {
	x    *executor
	r, k int32
}

func (w *slotName) String() string {
	x, r := w.x, int(w.r)
	return fmt.Sprintf("rank %d op %d [%s]", r, x.opIndex(r, w.k), x.labels[x.coldOf(r, w.k).label])
}

// rankRun is one rank's program in progress: ops [base, next) are held in
// slots, op i in window position i mod cap; ops before base are done, ops
// from next are not yet loaded. base moves past finished ops only while
// ops remain to be loaded (it makes room for them); once all are loaded
// it stays, and ops after it may be done.
//
// Invariant: base ≤ next ≤ n, next − base ≤ cap, basePos = base mod cap,
// nextPos = next mod cap.
type rankRun struct {
	n, cap           int
	iter, left       int // the allreduce running, and its ops not yet done
	base, next       int
	basePos, nextPos int
	more             [][]int32  // by window position: successors beyond the slot's own (made when needed)
	names            []slotName // by window position
	starts           []sim.Time // by window position: when the op started (for spans)
	lastWrite        lastWrite  // the rank's last write that hw accepted
}

// lastWrite names a write's destination, kernel and fencing (see
// executor.write).
type lastWrite struct {
	ok     bool
	fenced bool
	dst    xmem
	kernel int32
}

// slot returns window position k of rank r.
func (x *executor) slot(r int, k int32) *slot { return &x.slots[int(k)*x.nranks+r] }

func (x *executor) coldOf(r int, k int32) *slotCold { return &x.cold[int(k)*x.nranks+r] }

// opIndex returns the index in rank r's program of the op in window
// position k.
func (x *executor) opIndex(r int, k int32) int {
	p := &x.ranks[r]
	d := int(k) - p.basePos
	if d < 0 {
		d += p.cap
	}
	return p.base + d
}

// fenceLoadsOf is the memory whose loads by the kernel's other blocks a
// Fence of rank r waits for (hw.Machine.FenceBesidePolls): its Src where
// it names one (FenceLoadsName), else its own memory dst where that is
// host memory and its stores did not pay for it (a Fenced fence's stores
// counted the loads of host memory), else the rank's GPU (whose loads
// cost a fence nothing).
func fenceLoadsOf(op *Op, dst xmem, r int) xmem {
	if op.Src.Buf.Name == FenceLoadsName {
		if v, ok := toXmem(op.Src.Buf.At); ok {
			return v
		}
	}
	if dst < 0 && !op.Fenced {
		return dst
	}
	return xmem(r)
}
