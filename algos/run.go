package algos

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/sim"
)

// RunOptions says how to execute a schedule.
type RunOptions struct {
	// Iterations back to back with the same buffers (default 1). Each
	// rank starts allreduce k+1 when its own allreduce k has finished,
	// as kernels on one stream do.
	Iterations int
	// Launch is the launch mode for Launch ops.
	Launch hw.LaunchMode
	// Gap is extra time between a rank's allreduces (layer compute in a
	// verify pass); 0 for none.
	Gap sim.Duration
	// IssueInterval is, in eager mode, the host time to issue one
	// allreduce: allreduce k cannot start before k × IssueInterval. 0 means
	// one eager kernel launch (gpu.launch_eager); callers that model a
	// heavier host API (torch.distributed) pass its cost.
	IssueInterval sim.Duration
	// EventLimit stops runaway schedules (default 50 million events).
	EventLimit uint64
	// Spans asks for the time of every op in Result.Spans (timelines).
	Spans bool
	// EveryEvent runs every event. By default a run of three or more
	// allreduces that reaches a periodic steady state (the same state
	// at the start of allreduce k as at allreduce k − c, shifted in
	// time) advances over the periods that repeat it instead of running
	// their events; the results are the same, bit for bit. Tests set it
	// to compare both.
	EveryEvent bool
}

// Span is when one op ran.
type Span struct {
	Rank, Op, Iter int
	Start, End     sim.Time
}

// Result is the outcome of a run.
type Result struct {
	// Time is when the last rank finished the last allreduce.
	Time sim.Time
	// PerIter[k] is when the last rank finished allreduce k.
	PerIter []sim.Time
	// Spans of every op, in order of end, then rank, allreduce and op.
	Spans []Span
	// Events is the number of engine events processed, counting those of
	// the periods advanced over as if they ran.
	Events uint64
	// Skipped is how many allreduces (of all ranks) were advanced over
	// without running their events (see RunOptions.EveryEvent).
	Skipped int
	// SkippedOps is how many ops of each rank were advanced over inside
	// an allreduce of a repeating stream (RepeatingStream), events
	// counted as if they ran.
	SkippedOps int
	// LoadedBesideStreams: some SM load of host memory ran beside the
	// same GPU's streaming stores to it (hw.Machine.LoadedBesideStreams),
	// so the timing rests on MechLoadsBesideStores (RanMechanisms).
	LoadedBesideStreams bool
}

// MeanUs returns the mean time per allreduce in µs.
func (r *Result) MeanUs() float64 {
	return sim.Duration(r.Time).Micros() / float64(len(r.PerIter))
}

// SteadyUs returns the time per allreduce in steady state, in µs: the
// interval between the first and the last allreduce's end divided by the
// allreduces in between, as benchmarks that time many back-to-back
// operations measure it (the first one's start-up is not counted, and
// eager calls paced by the host take the host's interval). With one
// iteration it is MeanUs.
func (r *Result) SteadyUs() float64 {
	n := len(r.PerIter)
	if n < 2 {
		return r.MeanUs()
	}
	return r.PerIter[n-1].Sub(r.PerIter[0]).Micros() / float64(n-1)
}

// Run executes s on machine m (which must be fresh) and returns its timing.
// A schedule that deadlocks stops with an error listing the blocked waits.
func Run(m *hw.Machine, s *Schedule, opt RunOptions) (*Result, error) {
	src, err := newScheduleSource(s)
	if err != nil {
		return nil, err
	}
	return run(m, src, opt)
}

// A source gives the executor each rank's ops: a stored schedule, whose
// ops are all present from the start, or a Stream that generates them.
type source interface {
	info() *Schedule // the header (Algo, Ranks …)
	// size returns rank r's program length and how many of its ops are
	// kept at once (the window).
	size(r int) (n, window int)
	flags() []Flag    // by flag ID
	strides() []int64 // by flag ID: the largest value signalled in one allreduce
	// load returns op i of rank r and its flag ID (−1 when it has none).
	// The op may be overwritten by the next load: the executor copies
	// what it needs.
	load(r, i int) (*Op, int32, error)
	// fill writes what the executor needs of op i of rank r into slot s
	// and returns the op's deps (valid until the next fill or load).
	fill(x *executor, r, i int, s *slot, c *slotCold) ([]int, error)
	// check runs once every rank has finished.
	check() error
	// badDep is the error for op i of rank r naming dep d, not an earlier
	// op of the rank (fill returns deps unchecked; the executor checks).
	badDep(r, i, d int) error
}

// scheduleSource serves a stored schedule: the window is the whole program.
type scheduleSource struct {
	s      *Schedule
	keys   []Flag
	stride []int64
	flagOf [][]int32 // each Signal/Wait op's flag ID, resolved once
}

func newScheduleSource(s *Schedule) (*scheduleSource, error) {
	src := &scheduleSource{s: s, flagOf: make([][]int32, len(s.Programs))}
	ids := map[Flag]int32{}
	var last recent
	for r, prog := range s.Programs {
		src.flagOf[r] = make([]int32, len(prog))
		for i := range prog {
			op := &prog[i]
			for _, d := range op.After {
				if d < 0 || d >= i {
					return nil, fmt.Errorf("algos: run %s: rank %d op %d depends on op %d, which is not an earlier op of the rank", s.Algo, r, i, d)
				}
			}
			id := int32(-1)
			if op.Kind == Signal || op.Kind == Wait {
				var ok bool
				if id, ok = findRecent(&last, src.keys, op.Flag); !ok {
					if id, ok = ids[op.Flag]; !ok {
						id = int32(len(src.keys))
						ids[op.Flag] = id
						src.keys = append(src.keys, op.Flag)
						src.stride = append(src.stride, 0)
					}
					last.push(id)
				}
				if op.Kind == Signal {
					src.stride[id] = max(src.stride[id], op.Value)
				}
			}
			src.flagOf[r][i] = id
		}
	}
	return src, nil
}

func (src *scheduleSource) info() *Schedule { return src.s }

func (src *scheduleSource) size(r int) (int, int) {
	n := len(src.s.Programs[r])
	return n, n
}

func (src *scheduleSource) flags() []Flag    { return src.keys }
func (src *scheduleSource) strides() []int64 { return src.stride }
func (src *scheduleSource) check() error     { return nil }

// badDep cannot happen: newScheduleSource checked every dep.
func (src *scheduleSource) badDep(r, i, d int) error {
	return fmt.Errorf("algos: run %s: rank %d op %d depends on op %d, which is not an earlier op of the rank", src.s.Algo, r, i, d)
}
func (src *scheduleSource) load(r, i int) (*Op, int32, error) {
	return &src.s.Programs[r][i], src.flagOf[r][i], nil
}

// fill converts op i of rank r. Each is converted once a run: the
// executor keeps the rank's program image (image.go).
func (src *scheduleSource) fill(x *executor, r, i int, s *slot, c *slotCold) ([]int, error) {
	op := &src.s.Programs[r][i]
	if err := x.fill(s, c, op, src.flagOf[r][i], r, i); err != nil {
		return nil, err
	}
	return runDeps(op.After, s), nil
}

// runDeps is what the run waits for before it starts an op with deps
// after (filled into s): all of them, but a fused write's first alone
// (Op.Fused: it starts with its producing loop).
func runDeps(after []int, s *slot) []int {
	if s.bits&opFused != 0 && len(after) > 1 {
		return after[:1]
	}
	return after
}

// run executes src on m: every rank starts allreduce 0 at time 0, and
// allreduce k+1 when its allreduce k has finished (see RunOptions).
func run(m *hw.Machine, src source, opt RunOptions) (*Result, error) {
	x, err := newExecutor(m, src, opt)
	if err != nil {
		return nil, err
	}
	s := src.info()
	for r := range x.ranks {
		x.startIter(r, 0)
	}
	x.drain()
	for {
		if x.per != nil && x.per.due {
			x.per.checkpoint(x)
		}
		if err := x.eng.Run(); err != nil {
			return nil, fmt.Errorf("algos: run %s: %w", s.Algo, err)
		}
		if x.per == nil || !x.per.due {
			break
		}
	}
	if x.err != nil {
		return nil, x.err
	}
	if x.finished < s.Ranks {
		if err := x.windowStall(); err != nil {
			return nil, err
		}
		return nil, x.deadlock()
	}
	if err := src.check(); err != nil {
		return nil, err
	}
	x.res.Events = x.eng.Processed()
	x.res.LoadedBesideStreams = m.LoadedBesideStreams()
	sortSpans(x.res.Spans)
	return x.res, nil
}

// sortSpans puts spans in order of end, then rank, allreduce and op: the
// order in which ops finish, with ties at one instant broken by name
// rather than by the order in which the instant's work happened to run.
func sortSpans(spans []Span) {
	slices.SortFunc(spans, func(a, b Span) int {
		switch {
		case a.End != b.End:
			return cmp.Compare(a.End, b.End)
		case a.Rank != b.Rank:
			return a.Rank - b.Rank
		case a.Iter != b.Iter:
			return a.Iter - b.Iter
		}
		return a.Op - b.Op
	})
}

// newExecutor checks the options and prepares the run: flags, windows,
// slots and their callbacks, handlers, steady-state detection.
func newExecutor(m *hw.Machine, src source, opt RunOptions) (*executor, error) {
	s := src.info()
	if opt.Iterations <= 0 {
		opt.Iterations = 1
	}
	if opt.EventLimit == 0 {
		opt.EventLimit = 50_000_000
	}
	if s.Ranks > m.NumRanks() {
		return nil, fmt.Errorf("algos: run %s: %d ranks on %d GPUs", s.Algo, s.Ranks, m.NumRanks())
	}
	if opt.Launch == hw.Eager && opt.IssueInterval == 0 {
		opt.IssueInterval = m.IssueInterval()
	}
	if opt.Launch != hw.Eager {
		opt.IssueInterval = 0
	}
	m.Eng.SetEventLimit(opt.EventLimit)
	x := &executor{m: m, eng: m.Eng, src: src, algo: s.Algo, nranks: s.Ranks, opt: opt, stride: src.strides(),
		kernelID: map[hw.Kernel]int32{}, labels: []string{""}, labelID: map[string]int32{"": 0},
		res: &Result{PerIter: make([]sim.Time, opt.Iterations)}}
	for _, f := range src.flags() {
		x.flagVars = append(x.flagVars, m.NewFlag(f.String(), f.At, f.Sector, int(f.Apart), int(f.BlockStride)))
	}
	if st, ok := src.(*streamSource); ok && st.cst != nil {
		st.bind(x)
		x.compact = st
	}
	x.ranks = make([]rankRun, s.Ranks)
	if _, ok := src.(*scheduleSource); ok {
		x.images = make([]rankImage, s.Ranks)
	}
	maxCap := 0
	for r := range x.ranks {
		p := &x.ranks[r]
		p.n, p.cap = src.size(r)
		p.cap = max(1, min(p.cap, p.n))
		if p.n > math.MaxInt32 {
			return nil, fmt.Errorf("algos: run %s: rank %d has %d ops, more than %d", s.Algo, r, p.n, math.MaxInt32)
		}
		maxCap = max(maxCap, p.cap)
		p.names = make([]slotName, p.cap)
		if opt.Spans {
			p.starts = make([]sim.Time, p.cap)
		}
		for k := range p.names {
			p.names[k] = slotName{x: x, r: int32(r), k: int32(k)}
		}
	}
	if int64(maxCap)*int64(s.Ranks) > math.MaxInt32 {
		return nil, fmt.Errorf("algos: run %s: %d ranks × a window of %d ops is more than %d slots", s.Algo, s.Ranks, maxCap, math.MaxInt32)
	}
	x.slots = make([]slot, maxCap*s.Ranks)
	x.cold = make([]slotCold, maxCap*s.Ranks)
	x.rbits = uint8(bits.Len(uint(max(s.Ranks-1, 0))))
	x.rmask = 1<<x.rbits - 1
	x.hDone = x.eng.Register((*completion)(x))
	x.hStart = x.eng.Register((*iterStart)(x))
	if x.images == nil {
		for r := range x.ranks {
			x.makeFins(r, nil)
		}
	}
	x.stepAt = -1
	x.per = newPeriodic(x)
	if x.per != nil && x.per.step != nil {
		x.per.step.next(x, x.per)
	}
	return x, nil
}
