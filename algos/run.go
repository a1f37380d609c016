package algos

import (
	"fmt"
	"sort"
	"strings"

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
	// Spans of every op, in completion order.
	Spans []Span
	// Events is the number of engine events processed.
	Events uint64
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
	x := &executor{m: m, s: s, opt: opt, flags: map[Flag]*sim.FlagVar{}, stride: map[Flag]int64{}, res: &Result{PerIter: make([]sim.Time, opt.Iterations)}}
	for _, prog := range s.Programs {
		for _, op := range prog {
			if op.Kind == Signal {
				x.stride[op.Flag] = max(x.stride[op.Flag], op.Value)
			}
		}
	}
	x.opFlag = make([][]*sim.FlagVar, s.Ranks)
	for q, prog := range s.Programs {
		x.opFlag[q] = make([]*sim.FlagVar, len(prog))
		for i, op := range prog {
			if op.Kind == Signal || op.Kind == Wait {
				x.opFlag[q][i] = x.flag(op.Flag)
			}
		}
	}
	x.state = make([][]opState, s.Ranks)
	for r := range s.Programs {
		x.state[r] = make([]opState, len(s.Programs[r]))
		x.startIter(r, 0)
	}
	if err := m.Eng.Run(); err != nil {
		return nil, fmt.Errorf("algos: run %s: %w", s.Algo, err)
	}
	if x.err != nil {
		return nil, x.err
	}
	if x.finished < s.Ranks {
		return nil, x.deadlock()
	}
	x.res.Events = m.Eng.Processed()
	return x.res, nil
}

type opState struct {
	waiting int // deps not yet done
	done    bool
	start   sim.Time
	started bool
}

type executor struct {
	m        *hw.Machine
	s        *Schedule
	opt      RunOptions
	flags    map[Flag]*sim.FlagVar
	opFlag   [][]*sim.FlagVar // each Signal/Wait op's flag, resolved once
	stride   map[Flag]int64
	state    [][]opState
	iter     []int
	left     []int
	finished int
	err      error
	res      *Result
	succ     [][][]int
	fins     [][]func() // each op's completion callback
}

func (x *executor) fail(err error) {
	if x.err == nil {
		x.err = err
	}
}

func (x *executor) flag(f Flag) *sim.FlagVar {
	v, ok := x.flags[f]
	if !ok {
		v = sim.NewFlag(x.m.Eng, f.String())
		x.flags[f] = v
	}
	return v
}

// startIter begins allreduce it on rank r.
func (x *executor) startIter(r, it int) {
	if x.iter == nil {
		x.iter = make([]int, x.s.Ranks)
		x.left = make([]int, x.s.Ranks)
		x.succ = make([][][]int, x.s.Ranks)
		x.fins = make([][]func(), x.s.Ranks)
		for q, prog := range x.s.Programs {
			// Successor lists in one backing array per rank (counted first).
			count := make([]int, len(prog))
			total := 0
			for _, op := range prog {
				for _, d := range op.After {
					count[d]++
					total++
				}
			}
			flat := make([]int, total)
			x.succ[q] = make([][]int, len(prog))
			at := 0
			for i, c := range count {
				x.succ[q][i] = flat[at : at : at+c]
				at += c
			}
			for i, op := range prog {
				for _, d := range op.After {
					x.succ[q][d] = append(x.succ[q][d], i)
				}
			}
			// One completion callback per op, reused by every iteration.
			x.fins[q] = make([]func(), len(prog))
			for i := range prog {
				x.fins[q][i] = func() { x.done(q, i) }
			}
		}
	}
	x.iter[r] = it
	prog := x.s.Programs[r]
	x.left[r] = len(prog)
	if len(prog) == 0 {
		x.endIter(r)
		return
	}
	for i := range prog {
		x.state[r][i] = opState{waiting: len(prog[i].After)}
	}
	for i := range prog {
		if len(prog[i].After) == 0 {
			x.start(r, i)
		}
	}
}

func (x *executor) endIter(r int) {
	it := x.iter[r]
	now := x.m.Eng.Now()
	x.res.PerIter[it] = max(x.res.PerIter[it], now)
	if it+1 < x.opt.Iterations {
		// The next allreduce starts after the gap, and not before the host
		// has issued it.
		at := max(now.Add(x.opt.Gap), sim.Time(0).Add(x.opt.IssueInterval*sim.Duration(it+1)))
		if at > now {
			x.m.Eng.At(at, func() { x.startIter(r, it+1) })
		} else {
			x.startIter(r, it+1)
		}
		return
	}
	x.res.Time = max(x.res.Time, now)
	x.finished++
}

func (x *executor) done(r, i int) {
	st := &x.state[r][i]
	st.done = true
	if x.opt.Spans {
		x.res.Spans = append(x.res.Spans, Span{Rank: r, Op: i, Iter: x.iter[r], Start: st.start, End: x.m.Eng.Now()})
	}
	x.left[r]--
	for _, j := range x.succ[r][i] {
		if x.state[r][j].waiting--; x.state[r][j].waiting == 0 {
			x.start(r, j)
		}
	}
	if x.left[r] == 0 {
		x.endIter(r)
	}
}

func (x *executor) start(r, i int) {
	if x.err != nil {
		return
	}
	op := &x.s.Programs[r][i]
	st := &x.state[r][i]
	st.started = true
	st.start = x.m.Eng.Now()
	m := x.m
	fin := x.fins[r][i]
	local := func(b Range) bool { return !b.Buf.At.Host && b.Buf.At.Rank == r }
	label := op.Label
	var err error
	switch op.Kind {
	case Launch:
		m.Eng.After(m.LaunchCost(x.opt.Launch), fin)
	case Compute:
		m.Eng.After(op.Dur, fin)
	case Fence:
		var d sim.Duration
		d, err = m.FenceCost(r, op.Dst.Buf.At)
		if err == nil {
			m.Eng.After(d, fin)
		}
	case Read, Write, Copy, Reduce:
		n := sim.Bytes(op.Src.Len)
		switch {
		case n == 0:
			m.Eng.After(0, fin)
		case op.Kind == Copy:
			err = x.copyOp(r, op, label, fin)
		case local(op.Src) && local(op.Dst):
			inputs := 1
			if op.Accumulate || op.Kind == Reduce {
				inputs = 2
			}
			m.Eng.After(m.ReduceTime(inputs, n), fin)
		case op.Kind == Read:
			err = m.Read(r, op.Src.Buf.At, n, op.Kernel, label, fin)
		case op.Kind == Write:
			err = m.Write(r, op.Dst.Buf.At, n, op.Kernel, label, fin)
		default:
			err = fmt.Errorf("algos: %s rank %d op %d: a %s must be local to the rank", x.s.Algo, r, i, op.Kind)
		}
	case Signal:
		v := op.Value + int64(x.iter[r])*x.stride[op.Flag]
		if op.Inline {
			x.opFlag[r][i].Set(v)
		} else {
			err = m.SignalFlag(r, op.Flag.At, x.opFlag[r][i], v)
		}
		var d sim.Duration
		if op.Atomic && err == nil {
			d, err = m.RoundTrip(r, op.Flag.At)
		}
		if err == nil {
			m.Eng.After(d, fin)
		}
	case Wait:
		v := op.Value + int64(x.iter[r])*x.stride[op.Flag]
		err = m.WaitFlag(r, op.Flag.At, x.opFlag[r][i], v, waiter{r, i, op.Label}, fin)
	}
	if err != nil {
		x.fail(fmt.Errorf("algos: run %s: rank %d op %d (%s): %w", x.s.Algo, r, i, op.Label, err))
	}
}

func (x *executor) copyOp(r int, op *Op, label string, fin func()) error {
	n := sim.Bytes(op.Src.Len)
	src, dst := op.Src.Buf.At, op.Dst.Buf.At
	own := func(a hw.Mem) bool { return !a.Host && a.Rank == r }
	switch {
	case own(src) && dst.Host:
		return x.m.Copy(r, hw.D2H, 0, n, label, fin)
	case src.Host && own(dst):
		return x.m.Copy(r, hw.H2D, 0, n, label, fin)
	case own(src) && !dst.Host:
		return x.m.Copy(r, hw.P2P, dst.Rank, n, label, fin)
	}
	return fmt.Errorf("copy %s ← %s: the copy engine of rank %d moves its own memory to host or peer, or host to its own", op.Dst, op.Src, r)
}

// deadlock describes what is still blocked after the engine ran dry.
func (x *executor) deadlock() error {
	var blocked []string
	keys := make([]Flag, 0, len(x.flags))
	for f := range x.flags {
		keys = append(keys, f)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	for _, f := range keys {
		blocked = append(blocked, x.flags[f].Blocked()...)
	}
	var idle []string
	for r := range x.state {
		for i, st := range x.state[r] {
			if !st.started && len(idle) < 5 {
				idle = append(idle, fmt.Sprintf("rank %d op %d", r, i))
			}
		}
	}
	if len(blocked) > 8 {
		blocked = append(blocked[:8], fmt.Sprintf("… %d more", len(blocked)-8))
	}
	return fmt.Errorf("algos: run %s: deadlock: the engine ran out of events with %d of %d ranks unfinished; blocked waits: %s; not started: %s",
		x.s.Algo, x.s.Ranks-x.finished, x.s.Ranks, strings.Join(blocked, "; "), strings.Join(idle, ", "))
}

// waiter names a waiting op in deadlock reports, formatted only then.
type waiter struct {
	rank, op int
	label    string
}

func (w waiter) String() string { return fmt.Sprintf("rank %d op %d [%s]", w.rank, w.op, w.label) }
