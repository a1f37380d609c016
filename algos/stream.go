package algos

import (
	"fmt"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/sim"
)

// Stream is a schedule generated op by op while it runs, for schedules too
// large to store (a ring of 1024 ranks has 25 million ops). The executor
// keeps at most Window consecutive ops of each rank at once: it loads op i
// of a rank when every op before i − Window has finished, and forgets an
// op once it and every op before it have finished. RunStream times a
// stream exactly as Run times the same ops stored (Materialize): when an op
// would have started while still outside the window, the run stops with an
// error naming it, instead of starting it late.
//
// Op must return the same op for the same (r, i) every time it is asked:
// the executor asks again for every allreduce of a run.
type Stream interface {
	// Header returns the schedule's description without programs: Algo,
	// Ranks, Bytes, Elem, Input, Output and Notes.
	Header() Schedule
	// Len returns the number of ops in rank r's program.
	Len(r int) int
	// Window is how many consecutive ops of one rank the executor holds at
	// once (≥ 1). It must cover the ops a rank can have in flight: an op
	// is only seen once the ops Window before it have all finished.
	Window() int
	// Flags lists every flag the ops signal or wait on; ops name them by
	// index. Flags must be distinct.
	Flags() []StreamFlag
	// Op writes op i of rank r into op and returns, for a Signal or Wait,
	// the index in Flags of its flag (op.Flag is set from it), else −1.
	// op arrives zeroed except for After, an empty slice whose storage may
	// be reused (append to it). After may only name earlier ops of the
	// rank.
	Op(r, i int, op *Op) int
}

// CompactStream is a Stream that can also write its ops in a compact form,
// which RunStream then uses instead of Op: a few integers per op, with
// buffers, kernels and labels named by their index in tables the stream
// gives once. Filling a StreamOp costs a fraction of filling an Op (about
// 90 bytes against 300, no strings, no structs compared), which matters
// when a run loads tens of millions of ops. Op and CompactOp must describe
// the same op: Materialize uses Op.
type CompactStream interface {
	Stream
	// Tables returns the buffers, kernels and labels that compact ops
	// name by index. It is called once per run.
	Tables() StreamTables
	// CompactOp writes op i of rank r into op, which arrives zeroed except
	// for After, an empty slice whose storage may be reused (append to it).
	CompactOp(r, i int, op *StreamOp)
}

// RepeatingStream is a Stream whose ops repeat in stretches, as a ring's
// steps do: in a run of one allreduce, the executor then finds the
// stretch's steady state and skips whole periods of it exactly, as it
// does back-to-back allreduces (periodic.go). What a stretch claims is the
// stream's to keep, like Op's returning the same op every time (CheckRepeats
// verifies it op by op); the skip itself rests on the run's state being
// equal, not on the claim alone.
type RepeatingStream interface {
	Stream
	// Repeats lists the stretches, in program order, not overlapping.
	Repeats() []Repeat
}

// Repeat is a stretch [From, To) of every rank's program in which the
// ops repeat every Ops ops: for From ≤ i and i + Ops < To, op i + Ops is
// op i one period on. It has op i's kind, options, memories, byte count,
// kernel and label (buffer offsets may differ), its deps lie as far back
// as op i's do, and a Signal's or Wait's flag is op i's with the value
// raised by Step[f], f the flag's index in Flags (0 beyond Step's end).
type Repeat struct {
	From, To, Ops int
	Step          []int64
}

// CheckRepeats verifies, by generating every op, that the stream's ops
// repeat as its Repeats say (nil for a stream without them). It costs a
// pass over the whole schedule: for tests.
func CheckRepeats(st Stream) error {
	rs, ok := st.(RepeatingStream)
	if !ok {
		return nil
	}
	h := st.Header()
	reps := rs.Repeats()
	if err := checkRepeatBounds(st, reps); err != nil {
		return err
	}
	var a, b Op
	for r := 0; r < h.Ranks; r++ {
		for _, rp := range reps {
			for i := rp.From; i+rp.Ops < rp.To; i++ {
				a, b = Op{After: a.After[:0]}, Op{After: b.After[:0]}
				fa, fb := st.Op(r, i, &a), st.Op(r, i+rp.Ops, &b)
				if why := repeatDiff(&a, &b, fa, fb, rp); why != "" {
					return fmt.Errorf("algos: stream %s: rank %d op %d is not op %d one period on: %s", h.Algo, r, i+rp.Ops, i, why)
				}
			}
		}
	}
	return nil
}

// repeatDiff says how op b (flag index fb) differs from op a (fa) one
// period of rp on, or "" when it does not.
func repeatDiff(a, b *Op, fa, fb int, rp Repeat) string {
	switch {
	case a.Kind != b.Kind || a.Accumulate != b.Accumulate || a.Inline != b.Inline || a.Atomic != b.Atomic || a.BlockSync != b.BlockSync || a.Fenced != b.Fenced || a.Fused != b.Fused:
		return fmt.Sprintf("%s against %s", b.Kind, a.Kind)
	case a.Kernel != b.Kernel || a.Label != b.Label || a.Dur != b.Dur:
		return "kernel, label or duration differ"
	case len(a.After) != len(b.After):
		return "a different number of deps"
	}
	for j := range a.After {
		if b.After[j]-a.After[j] != rp.Ops {
			return fmt.Sprintf("its dep on op %d is not op %d one period on", b.After[j], a.After[j])
		}
	}
	switch a.Kind {
	case Signal, Wait:
		step := int64(0)
		if fa >= 0 && fa < len(rp.Step) {
			step = rp.Step[fa]
		}
		if fa != fb || b.Value != a.Value+step {
			return fmt.Sprintf("flag %d = %d against flag %d = %d + %d", fb, b.Value, fa, a.Value, step)
		}
	case Compute, Launch:
	default:
		if a.Src.Buf.At != b.Src.Buf.At || a.Dst.Buf.At != b.Dst.Buf.At || a.Src.Len != b.Src.Len {
			return fmt.Sprintf("moves %d bytes %s → %s against %d bytes %s → %s", b.Src.Len, b.Src.Buf.At, b.Dst.Buf.At, a.Src.Len, a.Src.Buf.At, a.Dst.Buf.At)
		}
	}
	return ""
}

// checkRepeatBounds refuses stretches that are empty, out of order,
// overlapping or past a rank's program, or name flags the stream lacks.
func checkRepeatBounds(st Stream, reps []Repeat) error {
	h := st.Header()
	n := -1
	for r := 0; r < h.Ranks; r++ {
		if l := st.Len(r); n < 0 || l < n {
			n = l
		}
	}
	end := 0
	for i, rp := range reps {
		if rp.Ops < 1 || rp.From < end || rp.To < rp.From || rp.To > n || len(rp.Step) > len(st.Flags()) {
			return fmt.Errorf("algos: stream %s: repeat %d (ops %d–%d every %d, %d steps) has no period, runs backwards, overlaps the one before, passes the end of a program (%d ops) or names more than the %d flags", h.Algo, i, rp.From, rp.To, rp.Ops, len(rp.Step), n, len(st.Flags()))
		}
		end = rp.To
	}
	return nil
}

// StreamTables are what compact ops name by index. An empty Kernels or
// Labels stands for one entry, the zero Kernel or the empty label.
type StreamTables struct {
	Bufs    []Buf
	Kernels []hw.Kernel
	Labels  []string
}

// StreamOp is an Op in compact form (see CompactStream). Fields mean what
// Op's do; those an op's kind does not use are ignored.
type StreamOp struct {
	Kind                                                 OpKind
	Accumulate, Inline, Atomic, BlockSync, Fenced, Fused bool
	// Src and Dst: buffers, by index in Bufs (Read, Write, Copy, Reduce;
	// Dst for a Fence, and Src where it names a buffer called
	// FenceLoadsName: the memory the fencing kernel's other blocks load),
	// with the ranges' offsets and common length.
	Src, Dst       int32
	SrcOff, DstOff int64
	Len            int64
	// Flag (index in Flags) and Value, for Signal and Wait.
	Flag  int32
	Value int64
	// Dur of a Compute.
	Dur sim.Duration
	// Kernel and Label, by index in Kernels and Labels.
	Kernel, Label int32
	After         []int
}

// StreamFlag is a flag of a Stream and its epoch stride: the largest
// value signalled to it in one allreduce (what Run derives from the stored
// ops, and adds per allreduce in back-to-back runs). RunStream checks it.
type StreamFlag struct {
	Flag   Flag
	Stride int64
}

// RunStream executes the stream st on machine m (which must be fresh), as
// Run does a stored schedule, keeping only each rank's window of ops.
func RunStream(m *hw.Machine, st Stream, opt RunOptions) (*Result, error) {
	src, err := newStreamSource(st)
	if err != nil {
		return nil, err
	}
	return run(m, src, opt)
}

// Materialize generates every op of st into an ordinary schedule (for
// Check, Run and comparisons on small instances).
func Materialize(st Stream) (*Schedule, error) {
	src, err := newStreamSource(st)
	if err != nil {
		return nil, err
	}
	s := src.head
	s.Programs = make([][]Op, s.Ranks)
	for r := range s.Programs {
		n := st.Len(r)
		s.Programs[r] = make([]Op, n)
		for i := 0; i < n; i++ {
			op, _, err := src.load(r, i)
			if err != nil {
				return nil, err
			}
			s.Programs[r][i] = *op
			s.Programs[r][i].After = append([]int(nil), op.After...)
		}
	}
	if err := src.check(); err != nil {
		return nil, err
	}
	return s, nil
}

// streamSource serves a Stream to the executor, one op at a time.
type streamSource struct {
	st      Stream
	head    *Schedule
	sflags  []StreamFlag
	keys    []Flag
	stride  []int64
	seen    []int64 // the largest value loaded per flag, checked against stride
	window  int
	scratch Op
	// The compact form, when the stream has one.
	cst     CompactStream
	tables  StreamTables
	cop     StreamOp
	flagMem []memOK  // by flag ID
	bufMem  []memOK  // by buffer index
	repeats []Repeat // a RepeatingStream's stretches
	kmap    []int32  // executor kernel ID by table index (made by bind)
	lmap    []int32  // executor label ID by table index
}

func newStreamSource(st Stream) (*streamSource, error) {
	h := st.Header()
	src := &streamSource{st: st, head: &h, sflags: st.Flags(), window: st.Window()}
	if h.Ranks < 0 {
		return nil, fmt.Errorf("algos: stream %s: %d ranks", h.Algo, h.Ranks)
	}
	if src.window < 1 {
		return nil, fmt.Errorf("algos: stream %s: window must be ≥ 1, got %d", h.Algo, src.window)
	}
	ids := make(map[Flag]int, len(src.sflags))
	for i, f := range src.sflags {
		if j, dup := ids[f.Flag]; dup {
			return nil, fmt.Errorf("algos: stream %s: flags %d and %d are both %s", h.Algo, j, i, f.Flag)
		}
		ids[f.Flag] = i
		src.keys = append(src.keys, f.Flag)
		src.stride = append(src.stride, f.Stride)
	}
	src.seen = make([]int64, len(src.sflags))
	if rs, ok := st.(RepeatingStream); ok {
		src.repeats = rs.Repeats()
		if err := checkRepeatBounds(st, src.repeats); err != nil {
			return nil, err
		}
	}
	if cst, ok := st.(CompactStream); ok {
		src.cst = cst
		src.tables = cst.Tables()
		if len(src.tables.Kernels) == 0 {
			src.tables.Kernels = []hw.Kernel{{}}
		}
		if len(src.tables.Labels) == 0 {
			src.tables.Labels = []string{""}
		}
		for _, f := range src.keys {
			v, ok := toXmem(f.At) // checked when an op uses it
			src.flagMem = append(src.flagMem, memOK{v, ok})
		}
		for _, b := range src.tables.Bufs {
			v, ok := toXmem(b.At)
			src.bufMem = append(src.bufMem, memOK{v, ok})
		}
	}
	return src, nil
}

func (src *streamSource) info() *Schedule { return src.head }

func (src *streamSource) size(r int) (int, int) {
	n := src.st.Len(r)
	return n, min(src.window, n)
}

func (src *streamSource) flags() []Flag    { return src.keys }
func (src *streamSource) strides() []int64 { return src.stride }

func (src *streamSource) load(r, i int) (*Op, int32, error) {
	op := &src.scratch
	after := op.After[:0]
	*op = Op{After: after}
	id := src.st.Op(r, i, op)
	for _, d := range op.After {
		if d < 0 || d >= i {
			return nil, 0, fmt.Errorf("algos: stream %s: rank %d op %d depends on op %d, which is not an earlier op of the rank", src.head.Algo, r, i, d)
		}
	}
	if op.Kind != Signal && op.Kind != Wait {
		return op, -1, nil
	}
	if id < 0 || id >= len(src.sflags) {
		return nil, 0, fmt.Errorf("algos: stream %s: rank %d op %d (%s) names flag %d of %d", src.head.Algo, r, i, op.Kind, id, len(src.sflags))
	}
	op.Flag = src.keys[id]
	if op.Kind == Signal {
		if op.Value > src.stride[id] {
			return nil, 0, fmt.Errorf("algos: stream %s: rank %d op %d signals %s = %d, above the flag's declared stride %d", src.head.Algo, r, i, op.Flag, op.Value, src.stride[id])
		}
		src.seen[id] = max(src.seen[id], op.Value)
	}
	return op, int32(id), nil
}

// memOK is a memory as an xmem and whether it fits one.
type memOK struct {
	m  xmem
	ok bool
}

// fill writes op i of rank r into slot s and returns the op's deps (a
// stream without the compact form; see fillCompact).
func (src *streamSource) fill(x *executor, r, i int, s *slot, c *slotCold) ([]int, error) {
	if src.cst != nil {
		return src.fillCompact(r, i, s, c)
	}
	op, id, err := src.load(r, i)
	if err != nil {
		return nil, err
	}
	err = x.fill(s, c, op, id, r, i)
	return runDeps(op.After, s), err
}

// bind interns the compact tables' kernels and labels with x, once per
// run, before the first fillCompact.
func (src *streamSource) bind(x *executor) {
	src.kmap, src.lmap = src.kmap[:0], src.lmap[:0]
	for _, k := range src.tables.Kernels {
		src.kmap = append(src.kmap, x.kernel(k))
	}
	for _, l := range src.tables.Labels {
		src.lmap = append(src.lmap, x.label(l))
	}
}

// fillCompact writes op i of rank r into slot s from the compact form and
// returns the op's deps.
func (src *streamSource) fillCompact(r, i int, s *slot, c *slotCold) ([]int, error) {
	op := &src.cop
	after := op.After[:0]
	*op = StreamOp{After: after}
	src.cst.CompactOp(r, i, op)
	if uint32(op.Kernel) >= uint32(len(src.kmap)) || uint32(op.Label) >= uint32(len(src.lmap)) {
		return nil, src.badTable(r, i)
	}
	s.kind = op.Kind
	s.bits = opBits(op.Accumulate, op.Inline, op.Atomic, op.BlockSync, op.Fenced, op.Fused && op.Kind == Write)
	c.kernel, c.label = src.kmap[op.Kernel], src.lmap[op.Label]
	switch op.Kind {
	case Signal, Wait:
		id := op.Flag
		if uint32(id) >= uint32(len(src.flagMem)) {
			return nil, fmt.Errorf("algos: stream %s: rank %d op %d (%s) names flag %d of %d", src.head.Algo, r, i, op.Kind, id, len(src.sflags))
		}
		if op.Kind == Signal {
			if op.Value > src.stride[id] {
				return nil, fmt.Errorf("algos: stream %s: rank %d op %d signals %s = %d, above the flag's declared stride %d", src.head.Algo, r, i, src.keys[id], op.Value, src.stride[id])
			}
			src.seen[id] = max(src.seen[id], op.Value)
		}
		fm := src.flagMem[id]
		s.a, s.n, s.dst = id, op.Value, fm.m
		if !fm.ok {
			return nil, fmt.Errorf("algos: run %s: rank %d op %d: memory %s out of range", src.head.Algo, r, i, src.keys[id].At)
		}
	case Compute:
		s.n = int64(op.Dur)
	case Launch:
	default:
		bm := src.bufMem
		if uint32(op.Dst) >= uint32(len(bm)) || (op.Kind != Fence && uint32(op.Src) >= uint32(len(bm))) {
			return nil, fmt.Errorf("algos: stream %s: rank %d op %d names buffers %d and %d of %d", src.head.Algo, r, i, op.Src, op.Dst, len(bm))
		}
		dm := bm[op.Dst]
		s.n, s.dst = op.Len, dm.m
		if !dm.ok {
			return nil, fmt.Errorf("algos: run %s: rank %d op %d: memory %s out of range", src.head.Algo, r, i, src.tables.Bufs[op.Dst].At)
		}
		if op.Kind == Fence {
			// a Fence's Src, where it names a buffer called
			// FenceLoadsName, is the memory its kernel's other blocks load
			fop := Op{Fenced: op.Fenced}
			if uint32(op.Src) < uint32(len(bm)) && src.tables.Bufs[op.Src].Name == FenceLoadsName && bm[op.Src].ok {
				fop.Src.Buf = src.tables.Bufs[op.Src]
			}
			s.a = int32(fenceLoadsOf(&fop, s.dst, r))
		} else {
			sm := bm[op.Src]
			s.a = int32(sm.m)
			if !sm.ok {
				return nil, fmt.Errorf("algos: run %s: rank %d op %d: memory %s out of range", src.head.Algo, r, i, src.tables.Bufs[op.Src].At)
			}
		}
	}
	return runDeps(op.After, s), nil
}

// badTable words the error of op i of rank r naming a kernel or label
// outside the tables.
func (src *streamSource) badTable(r, i int) error {
	op := &src.cop
	return fmt.Errorf("algos: stream %s: rank %d op %d names kernel %d of %d, label %d of %d", src.head.Algo, r, i, op.Kernel, len(src.kmap), op.Label, len(src.lmap))
}

// badDep words the error of op i of rank r depending on op d, which is
// not an earlier op of the rank (the executor checks every dep it loads).
func (src *streamSource) badDep(r, i, d int) error {
	return fmt.Errorf("algos: stream %s: rank %d op %d depends on op %d, which is not an earlier op of the rank", src.head.Algo, r, i, d)
}

// check verifies, once every op has been loaded, that each flag's
// declared stride is the largest value signalled to it, as Run would have
// derived it.
func (src *streamSource) check() error {
	for id, v := range src.seen {
		if v != src.stride[id] {
			return fmt.Errorf("algos: stream %s: flag %s declares stride %d but its largest signalled value is %d", src.head.Algo, src.keys[id], src.stride[id], v)
		}
	}
	return nil
}
