package algos

import (
	"fmt"
	"slices"
	"strings"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/sim"
)

// Buf names a buffer: an owner memory (a GPU rank or a socket's host
// memory) and a name ("in", "out", "tmp", "ll.ch0", …). Sizes are implied by
// the ranges used.
type Buf struct {
	At   hw.Mem
	Name string
	// Rotate > 1 makes Name stand for Rotate copies of the buffer that
	// back-to-back allreduces use in turn: allreduce k (counted from 0)
	// uses copy (k + Shift) mod Rotate. TensorRT-LLM's Lamport buffers
	// rotate three copies, FlashInfer's PCIe IPC scratch two (its per-call
	// epoch). 0 or 1: a single buffer. The copies live in the same memory,
	// so the executor times them alike; the checker tells them apart
	// (Copy).
	Rotate, Shift int
}

func (b Buf) String() string {
	s := b.At.String() + ":" + b.Name
	if b.Rotate > 1 {
		if b.Shift == 0 {
			return s + fmt.Sprintf("{k mod %d}", b.Rotate)
		}
		return s + fmt.Sprintf("{k%+d mod %d}", b.Shift, b.Rotate)
	}
	return s
}

// Copy returns the buffer allreduce k (from 0) uses: b itself, or for a
// rotating buffer its copy (k + Shift) mod Rotate as a buffer of its own,
// named "name{c/Rotate}".
func (b Buf) Copy(k int) Buf {
	if b.Rotate <= 1 {
		return Buf{At: b.At, Name: b.Name}
	}
	c := ((k+b.Shift)%b.Rotate + b.Rotate) % b.Rotate
	return Buf{At: b.At, Name: fmt.Sprintf("%s{%d/%d}", b.Name, c, b.Rotate)}
}

// Rotating returns r on a buffer of n copies used in turn, allreduce k
// using copy (k + shift) mod n (see Buf.Rotate).
func (r Range) Rotating(n, shift int) Range {
	r.Buf.Rotate, r.Buf.Shift = n, shift
	return r
}

// SentinelName is the buffer name of a clear's source: a Range of this
// name on the rank's own GPU holds, in every byte, the value a protocol
// reserves for "not written yet" (−0.0 in TensorRT-LLM's Lamport buffers,
// +0.0 in FlashInfer's PCIe IPC scratch), as a store loop would write it
// from registers. A Read or Write from it re-arms its Dst for a
// data-carried wait (see Op); the executor times it as a local store pass.
const SentinelName = "sentinel"

// Sentinel returns n bytes of the sentinel source on GPU r.
func Sentinel(r int, n int64) Range { return On(r, SentinelName, 0, n) }

// IsSentinel reports whether x is the sentinel source.
func (r Range) IsSentinel() bool { return !r.Buf.At.Host && r.Buf.Name == SentinelName }

// Range is a byte range of a buffer.
type Range struct {
	Buf      Buf
	Off, Len int64
}

func (r Range) String() string { return fmt.Sprintf("%s[%d:%d]", r.Buf, r.Off, r.Off+r.Len) }

// Flag names a flag: the memory it lives in and a name. Flags of one
// memory with the same non-empty Sector share a 32-byte sector in each
// thread block (a barrier's slots that one block polls, laid out together
// as vLLM's, PyTorch's and arsim's kernels do); where polls queue at the
// memory (pinned host memory), the pollers of one sector wait for each
// other (see package hw, WaitFlag).
type Flag struct {
	At     hw.Mem
	Name   string
	Sector string
	// Apart: bytes between the sectors of one barrier's ranks (Sector
	// groups of the same barrier), when they lie one after another in host
	// memory; 0 for the default, next to each other a line apart (hw's
	// hostmem.collision_mask: which of their lines collide).
	Apart int32
	// BlockStride: bytes between the thread blocks' copies of the sector
	// (each block of the kernel polls its own), when they lie one after
	// another in host memory (vLLM's Signal layout: 32, four blocks' to a
	// line); 0: each on a line of its own.
	BlockStride int32
}

func (f Flag) String() string { return f.At.String() + ":" + f.Name }

// OpKind is what an operation does.
type OpKind uint8

// Operation kinds.
const (
	// Launch starts a kernel: it costs a launch in the run's launch mode.
	Launch OpKind = iota
	// Read: the rank loads Src (any memory) into its own Dst.
	Read
	// Write: the rank stores its own Src into Dst (any memory).
	Write
	// Copy: the rank's copy engine moves Src into Dst.
	Copy
	// Reduce: the rank adds its own Src into its own Dst (local memory work).
	Reduce
	// Signal: the rank sets Flag to Value.
	Signal
	// Wait: the rank waits until Flag holds at least Value. With Src
	// set, the wait is data-carried (see Op.Src).
	Wait
	// Compute: the rank is busy for Dur.
	Compute
	// Fence: a system-scope fence (__threadfence_system, release.sys):
	// the rank waits until its earlier stores to Dst's memory are visible
	// system-wide; the cost is about one round trip to that memory.
	Fence
)

var opNames = [...]string{"launch", "read", "write", "copy", "reduce", "signal", "wait", "compute", "fence"}

func (k OpKind) String() string { return opNames[k] }

// Op is one operation of a rank's program.
type Op struct {
	Kind OpKind
	// Src and Dst: the byte ranges moved (Read, Write, Copy, Reduce).
	// Lengths are equal. A Src of the sentinel source (Sentinel) makes the
	// op a clear: Dst is re-armed with the protocol's "not written" value.
	//
	// On a Wait, a Src of non-zero length makes the wait data-carried: the
	// rank polls those bytes until none holds the sentinel (TensorRT-LLM's
	// Lamport one-shot, FlashInfer's PCIe IPC kernels). The writer marks
	// the landing with an Inline Signal right after its Write, on the flag
	// the wait names, so it is timed as an inline flag that lands with the
	// data (NCCL's LL lines do the same). The checker holds such a wait to
	// what the bytes carry: they are polled (a read), every store into
	// polled bytes must find them holding the sentinel (re-armed since
	// their last use), and when the wait ends they hold this allreduce's
	// data.
	//
	// On a Fence, Dst names the memory its stores went to, and a Src
	// whose buffer is named FenceLoadsName the memory outside the GPU that
	// the fencing kernel loads (AddFence sets it from the ops it follows):
	// each block's fence waits for the other blocks' loads of it
	// (hw.Machine.FenceBesidePolls).
	Src, Dst Range
	// Accumulate: Dst becomes Dst + Src (a reduction in registers on the
	// way), instead of a copy of Src. Concurrent accumulations into one
	// range commute.
	Accumulate bool
	// Flag and Value for Signal and Wait. Values count within one
	// allreduce; back-to-back runs add an epoch offset (see Schedule).
	Flag  Flag
	Value int64
	// Fenced, on a Write: the writing threads fence (system scope) right
	// after these stores, and the op ends when the fence does: the fence
	// counts from the stores' issue (hw.Machine.FenceCost), as a GPU
	// issues posted stores and fences without waiting for them to land
	// where its fence does not wait for their round trip. The data lands
	// on its own, one route latency after its last byte leaves; a flag the
	// threads store after the fence on the same path lands after it. On a
	// Fence: every store it orders is a Fenced Write, which paid for it, so
	// it takes no time itself.
	Fenced bool
	// Fused, on a Write: the stores are issued by the loop that produces
	// Src, each element as soon as that loop has it (a reduce that stores
	// its result to another memory in the same iteration, as a host
	// two-shot publishes its part): the run starts the write when its
	// first After op ends (the loop's start) and runs it beside the
	// producers its other After ops name; the checker holds it to all of
	// them, as if it followed them. Every op that waits for a fused write
	// must also name those producers (Check refuses a schedule where one
	// does not): the write may end before they do.
	Fused bool
	// Inline: the flag travels inside the data the rank has just written
	// (NCCL LL/LL128 lines carry their own flags; Lamport sentinels): it is
	// set the moment the op runs, with no extra latency. Otherwise a Signal
	// is a separate posted write that lands one route latency later.
	Inline bool
	// Atomic: the Signal is a compare-and-swap on the flag's memory that
	// the issuing thread waits for (PyTorch's symmetric-memory put_signal):
	// the op ends one round trip after it starts, the flag lands one way.
	// On a BlockSync Wait: the poll is a compare-and-swap that consumes
	// the token (wait_signal), slower than a load (gpu.atomic_poll_extra).
	Atomic bool
	// BlockSync: the Wait ends a barrier of the whole thread block with
	// its peers (Builder.Barrier, Builder.AtomicBarrier): the block's
	// threads meet at __syncthreads around the flag exchange, which adds
	// hw.Machine.BarrierWaitExtra after the flag is seen (the meeting,
	// gpu.barrier_meet by warps, and gpu.barrier_sync between GPUs).
	BlockSync bool
	// Dur is the duration of a Compute.
	Dur sim.Duration
	// Kernel is the launch configuration of the issuing kernel (it sets
	// reads in flight and store rates) and the protocol's wire factor.
	Kernel hw.Kernel
	// After lists the indices, in the same rank's program, of the
	// operations that must finish before this one starts.
	After []int
	// Label says what the op is for: "rs step 3 ch1", "start barrier".
	Label string
}

func (o Op) String() string {
	var b strings.Builder
	b.WriteString(o.Kind.String())
	switch o.Kind {
	case Read, Write, Copy, Reduce:
		op := "←"
		if o.Accumulate {
			op = "+="
		}
		fmt.Fprintf(&b, " %s %s %s (%d B)", o.Dst, op, o.Src, o.Src.Len)
		if o.Fenced {
			b.WriteString(", then a system-scope fence")
		}
		if o.Fused {
			b.WriteString(", fused with the loop that produces it")
		}
	case Signal:
		fmt.Fprintf(&b, " %s = %d", o.Flag, o.Value)
	case Wait:
		fmt.Fprintf(&b, " %s ≥ %d", o.Flag, o.Value)
	case Compute:
		fmt.Fprintf(&b, " %v", o.Dur)
	case Fence:
		fmt.Fprintf(&b, " stores to %s", o.Dst.Buf.At)
	}
	if o.Label != "" {
		b.WriteString("  [" + o.Label + "]")
	}
	return b.String()
}

// Schedule is the whole plan: one program per rank.
type Schedule struct {
	Algo string
	// Runs names the built-in algorithm whose schedule this is, where Algo
	// names another that chose it (custom_ar running one_stage, two_stage
	// or, falling back, nccl); "": Algo's own.
	Runs string
	// Moves says how the schedule moves its data where its algorithm has
	// several ways that are measured apart ("P2P read": NCCL's receivers
	// load Simple's steps from the senders); "": the algorithm's usual
	// way. Its measurements whole are its own (algos.Whole).
	Moves string
	Ranks int
	Bytes int64
	Elem  int64 // element size in bytes
	// Programs[r] is rank r's program.
	Programs [][]Op
	// Input and Output name each rank's input and output buffers (the
	// same name for in-place algorithms). Inputs hold the rank's own
	// data at the start; outputs must hold the sum at the end.
	Input, Output string
	// Notes explain choices made while planning ("NCCL chose ring/LL, 2
	// channels"), printed by explain and verify.
	Notes []string
}

// Builder helps algorithms write programs: Add appends an op to a rank's
// program and returns its index.
type Builder struct {
	s *Schedule
	// deps is where Add keeps ops' After lists: carved from arrays of
	// depsChunk indices rather than one allocation per op.
	deps []int
}

// depsChunk is how many dependency indices the Builder allocates at once.
const depsChunk = 1024

// NewBuilder starts a schedule.
func NewBuilder(algo string, ranks int, bytes, elem int64) *Builder {
	return &Builder{s: &Schedule{Algo: algo, Ranks: ranks, Bytes: bytes, Elem: elem, Programs: make([][]Op, ranks), Input: "in", Output: "out"}}
}

// Add appends op to rank r's program, after the listed ops, and returns its index.
func (b *Builder) Add(r int, op Op, after ...int) int {
	if len(after) > 0 {
		n := len(op.After) + len(after)
		if len(b.deps) < n {
			b.deps = make([]int, max(depsChunk, n))
		}
		d := b.deps[:n:n]
		b.deps = b.deps[n:]
		copy(d[copy(d, op.After):], after)
		op.After = d
	}
	b.s.Programs[r] = append(b.s.Programs[r], op)
	return len(b.s.Programs[r]) - 1
}

// Reserve makes room for n more ops in rank r's program, so that a
// planner that knows about how many it will add saves the program's
// growing (an Op is large).
func (b *Builder) Reserve(r, n int) {
	b.s.Programs[r] = slices.Grow(b.s.Programs[r], n)
}

// Launches adds a kernel launch to every rank's program and returns, per
// rank, the launch's index as a dependency list.
func (b *Builder) Launches() [][]int {
	out := make([][]int, b.s.Ranks)
	for r := range out {
		out[r] = []int{b.Add(r, Op{Kind: Launch, Label: "launch"})}
	}
	return out
}

// Clear adds to rank r's program a store pass that re-arms dst with the
// sentinel (a local or remote store of the sentinel source), after the
// listed ops, and returns its index.
func (b *Builder) Clear(r int, dst Range, k hw.Kernel, label string, after ...int) int {
	return b.Add(r, Op{Kind: Write, Src: Sentinel(r, dst.Len), Dst: dst, Kernel: k, Label: label}, after...)
}

// Carry adds the landing mark of a data-carried transfer: an inline
// signal of value v on flag f, set the moment the write it follows has
// landed. It returns its index.
func (b *Builder) Carry(r int, f Flag, v int64, k hw.Kernel, label string, write int) int {
	return b.Add(r, Op{Kind: Signal, Flag: f, Value: v, Inline: true, Kernel: k, Label: label}, write)
}

// DataWait adds a data-carried wait on rank r: it polls watch until no
// byte holds the sentinel, the landing marked by value v on flag f.
func (b *Builder) DataWait(r int, f Flag, v int64, watch Range, k hw.Kernel, label string, after ...int) int {
	return b.Add(r, Op{Kind: Wait, Flag: f, Value: v, Src: watch, Kernel: k, Label: label}, after...)
}

// Last returns the index of rank r's last op, or -1.
func (b *Builder) Last(r int) int { return len(b.s.Programs[r]) - 1 }

// Note records a planning note.
func (b *Builder) Note(format string, args ...any) {
	b.s.Notes = append(b.s.Notes, fmt.Sprintf(format, args...))
}

// Schedule returns the schedule built.
func (b *Builder) Schedule() *Schedule { return b.s }

// In returns rank r's input range [off, off+n).
func (b *Builder) In(r int, off, n int64) Range {
	return Range{Buf: Buf{At: hw.GPUMem(r), Name: b.s.Input}, Off: off, Len: n}
}

// Out returns rank r's output range [off, off+n).
func (b *Builder) Out(r int, off, n int64) Range {
	return Range{Buf: Buf{At: hw.GPUMem(r), Name: b.s.Output}, Off: off, Len: n}
}

// On returns a range of a named buffer on GPU r.
func On(r int, name string, off, n int64) Range {
	return Range{Buf: Buf{At: hw.GPUMem(r), Name: name}, Off: off, Len: n}
}

// OnHost returns a range of a named buffer in socket s's host memory.
func OnHost(s int, name string, off, n int64) Range {
	return Range{Buf: Buf{At: hw.HostMem(s), Name: name}, Off: off, Len: n}
}

// Barrier adds the custom-allreduce flag barrier for one block: every rank
// writes epoch value v into slot [rank] of every peer's flag array name,
// then waits for every peer's write into its own array. It returns, per
// rank, the indices of the waits (the barrier is passed when all are).
func (b *Builder) Barrier(name string, v int64, k hw.Kernel, label string, after [][]int) [][]int {
	return b.barrier(name, v, k, label, after, false)
}

// AtomicBarrier is Barrier with PyTorch symmetric memory's signals: thread
// p of each rank compare-and-swaps the flag into peer p (a round trip it
// waits for), then waits on its own slot for peer p.
func (b *Builder) AtomicBarrier(name string, v int64, k hw.Kernel, label string, after [][]int) [][]int {
	return b.barrier(name, v, k, label, after, true)
}

func (b *Builder) barrier(name string, v int64, k hw.Kernel, label string, after [][]int, atomic bool) [][]int {
	n := b.s.Ranks
	done := make([][]int, n)
	for r := 0; r < n; r++ {
		var dep []int
		if after != nil {
			dep = after[r]
		}
		sig := make([]int, n)
		for p := 0; p < n; p++ {
			if p == r {
				continue
			}
			sig[p] = b.Add(r, Op{Kind: Signal, Flag: Flag{At: hw.GPUMem(p), Name: fmt.Sprintf("%s[%d]", name, r), Sector: fmt.Sprintf("%s>%d", name, p)}, Value: v, Atomic: atomic, Kernel: k, Label: label}, dep...)
		}
		for p := 0; p < n; p++ {
			if p == r {
				continue
			}
			wdep := dep
			if atomic {
				wdep = []int{sig[p]} // the same thread signals, then waits
			}
			done[r] = append(done[r], b.Add(r, Op{Kind: Wait, Flag: Flag{At: hw.GPUMem(r), Name: fmt.Sprintf("%s[%d]", name, p), Sector: fmt.Sprintf("%s>%d", name, r)}, Value: v,
				Atomic: atomic, BlockSync: true, Kernel: k, Label: label}, wdep...))
		}
	}
	return done
}

// Split divides n bytes into parts pieces aligned to elem bytes, the
// remainder going to the last piece; pieces may be empty.
func Split(n, elem int64, parts int) (off, size []int64) {
	elems := n / elem
	per := elems / int64(parts)
	off = make([]int64, parts)
	size = make([]int64, parts)
	for i := 0; i < parts; i++ {
		off[i] = int64(i) * per * elem
		size[i] = per * elem
	}
	size[parts-1] = n - off[parts-1]
	return off, size
}
