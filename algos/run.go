package algos

import (
	"fmt"
	"math"
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
				if id, ok = ids[op.Flag]; !ok {
					id = int32(len(src.keys))
					ids[op.Flag] = id
					src.keys = append(src.keys, op.Flag)
					src.stride = append(src.stride, 0)
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
func (src *scheduleSource) load(r, i int) (*Op, int32, error) {
	return &src.s.Programs[r][i], src.flagOf[r][i], nil
}

func (src *scheduleSource) fill(x *executor, r, i int, s *slot, c *slotCold) ([]int, error) {
	op := &src.s.Programs[r][i]
	return op.After, x.fill(s, c, op, src.flagOf[r][i], r, i)
}

func run(m *hw.Machine, src source, opt RunOptions) (*Result, error) {
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
	x := &executor{m: m, src: src, algo: s.Algo, nranks: s.Ranks, opt: opt, stride: src.strides(), kernelID: map[hw.Kernel]int32{}, labels: []string{""}, labelID: map[string]int32{"": 0}, res: &Result{PerIter: make([]sim.Time, opt.Iterations)}}
	for _, f := range src.flags() {
		x.flagVars = append(x.flagVars, m.NewFlag(f.String(), f.At, f.Sector))
	}
	x.ranks = make([]rankRun, s.Ranks)
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
	x.slots = make([]slot, maxCap*s.Ranks)
	x.cold = make([]slotCold, maxCap*s.Ranks)
	for r := range x.ranks {
		for k := range x.ranks[r].cap {
			x.cold[k*s.Ranks+r].fin = func() { x.done(r, int32(k)) }
		}
	}
	for r := range x.ranks {
		x.startIter(r, 0)
	}
	if err := m.Eng.Run(); err != nil {
		return nil, fmt.Errorf("algos: run %s: %w", s.Algo, err)
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
	x.res.Events = m.Eng.Processed()
	return x.res, nil
}

// slot holds one op of a rank's window while it is in flight: a compact
// copy of what starting and finishing it needs, in 32 bytes (two to a
// cache line); what only some starts need is in its slotCold. The slots
// of all ranks are interleaved, window position first (executor.slots):
// ranks of a symmetric collective run the same op at the same instant, in
// rank order, and so touch consecutive slots. The source is asked again
// for the whole op only to word an error.
type slot struct {
	kind    OpKind
	bits    uint8 // opAccumulate, opInline, opAtomic, opDone, opStarted, opBlockSync
	nsucc   uint16
	waiting int32 // deps not yet done
	// a is Src.Buf.At (an xmem) of a Read, Write, Copy or Reduce, the
	// flag ID of a Signal or Wait.
	a   int32
	dst xmem  // Dst.Buf.At; Flag.At for a Signal or Wait
	n   int64 // Src.Len; Value for a Signal or Wait; Dur for a Compute
	// Window positions of the waiting ops that depend on this one: the
	// first ones here, the others in rankRun.more.
	succ [2]int32
}

// slotCold is the rest of a slot.
type slotCold struct {
	kernel int32  // index in executor.kernels
	label  int32  // index in executor.labels
	fin    func() // completion callback, made once per slot
}

const (
	opAccumulate = 1 << iota
	opInline
	opAtomic
	opDone
	opStarted
	opBlockSync
)

func (s *slot) done() bool    { return s.bits&opDone != 0 }
func (s *slot) started() bool { return s.bits&opStarted != 0 }

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
// slots, op i in slot i mod cap; ops before base are done, ops from next
// are not yet loaded.
type rankRun struct {
	n, cap           int
	iter, left       int
	base, next       int
	basePos, nextPos int
	more             [][]int32  // by window position: successors beyond slot.succ (made when needed)
	names            []slotName // by window position
	starts           []sim.Time // by window position: when the op started (for spans)
}

type executor struct {
	m        *hw.Machine
	src      source
	algo     string
	nranks   int
	opt      RunOptions
	flagVars []*sim.FlagVar // by flag ID
	stride   []int64        // by flag ID
	kernels  []hw.Kernel    // the distinct kernels of the ops loaded
	kernelID map[hw.Kernel]int32
	labels   []string // the distinct labels of the ops loaded
	labelID  map[string]int32
	ranks    []rankRun
	slots    []slot     // slot k of rank r at k × nranks + r
	cold     []slotCold // likewise
	finished int
	err      error
	res      *Result
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

func (x *executor) fail(err error) {
	if x.err == nil {
		x.err = err
	}
}

// startIter begins allreduce it on rank r.
func (x *executor) startIter(r, it int) {
	p := &x.ranks[r]
	p.iter = it
	p.left = p.n
	if p.n == 0 {
		x.endIter(r)
		return
	}
	p.base, p.next, p.basePos, p.nextPos = 0, 0, 0, 0
	for p.next < p.n && p.next-p.base < p.cap {
		x.load(r, -1)
	}
}

// load brings op next of rank r into the window. cur is the op whose
// completion is being handled (−1 at the start of an allreduce): an op
// whose deps are all done may start only if cur is one of them (it is
// the one that finished last), or if it has none and the allreduce is
// starting; otherwise it should have started earlier, and the window was
// too small to see it.
func (x *executor) load(r, cur int) {
	p := &x.ranks[r]
	j, k := p.next, p.nextPos
	p.next++
	if p.nextPos++; p.nextPos == p.cap {
		p.nextPos = 0
	}
	s := x.slot(r, int32(k))
	c := x.coldOf(r, int32(k))
	after, err := x.src.fill(x, r, j, s, c)
	if err != nil {
		x.fail(err)
		return
	}
	s.nsucc = 0
	waiting := int32(0)
	byCur := false
	for _, d := range after {
		if d == cur {
			byCur = true
		}
		if d < p.base {
			continue // retired, hence done
		}
		dp := k - (j - d)
		if dp < 0 {
			dp += p.cap
		}
		if t := x.slot(r, int32(dp)); !t.done() {
			x.addSucc(p, t, dp, int32(k))
			waiting++
		}
	}
	s.waiting = waiting
	if waiting > 0 {
		return
	}
	if (len(after) == 0 && cur < 0) || byCur {
		x.start(r, int32(k))
		return
	}
	x.fail(fmt.Errorf("algos: run %s: rank %d op %d (%s) was ready before %v but outside the window of %d ops, which unfinished earlier ops filled; starting it late would change the result: the stream needs a larger window",
		x.algo, r, j, x.labels[c.label], x.m.Eng.Now(), p.cap))
}

// opBits packs an op's flags into a slot's bits (done and started clear).
func opBits(accumulate, inline, atomic, blockSync bool) uint8 {
	var b uint8
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

// fill copies into s and c what starting op (op i of rank r) needs.
func (x *executor) fill(s *slot, c *slotCold, op *Op, flag int32, r, i int) error {
	s.kind = op.Kind
	s.bits = opBits(op.Accumulate, op.Inline, op.Atomic, op.BlockSync)
	var ok1, ok2 bool
	var src xmem
	src, ok1 = toXmem(op.Src.Buf.At)
	s.a = int32(src)
	s.dst, ok2 = toXmem(op.Dst.Buf.At)
	switch op.Kind {
	case Signal, Wait:
		s.a, s.n = flag, op.Value
		s.dst, ok2 = toXmem(op.Flag.At)
	case Compute:
		s.n = int64(op.Dur)
	default:
		s.n = op.Src.Len
	}
	if !ok1 || !ok2 {
		return fmt.Errorf("algos: run %s: rank %d op %d: memory %s or %s out of range", x.algo, r, i, op.Src.Buf.At, op.Dst.Buf.At)
	}
	// Labels are few: the empty one, the last one, else a lookup.
	if op.Label == "" {
		c.label = 0
	} else if l := c.label; x.labels[l] != op.Label {
		c.label = x.label(op.Label)
	}
	// Kernels are few: the last one used, else a lookup.
	if k := c.kernel; int(k) < len(x.kernels) && x.kernels[k] == op.Kernel {
		return nil
	}
	c.kernel = x.kernel(op.Kernel)
	return nil
}

// label returns the ID of label l, interning it.
func (x *executor) label(l string) int32 {
	id, ok := x.labelID[l]
	if !ok {
		id = int32(len(x.labels))
		x.labels = append(x.labels, l)
		x.labelID[l] = id
	}
	return id
}

// kernel returns the ID of kernel k, interning it.
func (x *executor) kernel(k hw.Kernel) int32 {
	id, ok := x.kernelID[k]
	if !ok {
		id = int32(len(x.kernels))
		x.kernels = append(x.kernels, k)
		x.kernelID[k] = id
	}
	return id
}

func (x *executor) endIter(r int) {
	it := x.ranks[r].iter
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

// addSucc records that the op in window position k waits for t (at dp).
func (x *executor) addSucc(p *rankRun, t *slot, dp int, k int32) {
	if t.nsucc < uint16(len(t.succ)) {
		t.succ[t.nsucc] = k
	} else {
		if p.more == nil {
			p.more = make([][]int32, p.cap)
		}
		i := int(t.nsucc) - len(t.succ)
		if i == 0 {
			p.more[dp] = p.more[dp][:0]
		}
		p.more[dp] = append(p.more[dp], k)
	}
	t.nsucc++
}

// done handles the completion of the op in slot k of rank r.
func (x *executor) done(r int, k int32) {
	p := &x.ranks[r]
	s := x.slot(r, k)
	s.bits |= opDone
	idx := x.opIndex(r, k)
	if x.opt.Spans {
		x.res.Spans = append(x.res.Spans, Span{Rank: r, Op: idx, Iter: p.iter, Start: p.starts[k], End: x.m.Eng.Now()})
	}
	p.left--
	for i := 0; i < int(s.nsucc); i++ {
		var j int32
		if i < len(s.succ) {
			j = s.succ[i]
		} else {
			j = p.more[k][i-len(s.succ)]
		}
		t := x.slot(r, j)
		if t.waiting--; t.waiting == 0 {
			x.start(r, j)
		}
	}
	if idx == p.base {
		// Retire the finished ops at the bottom of the window and load
		// as many new ones.
		for p.base < p.next && x.slot(r, int32(p.basePos)).done() {
			p.base++
			if p.basePos++; p.basePos == p.cap {
				p.basePos = 0
			}
		}
		for p.next < p.n && p.next-p.base < p.cap {
			x.load(r, idx)
		}
	}
	if p.left == 0 {
		x.endIter(r)
	}
}

// start starts the op in window position k of rank r.
func (x *executor) start(r int, k int32) {
	if x.err != nil {
		return
	}
	p := &x.ranks[r]
	s := x.slot(r, k)
	s.bits |= opStarted
	m := x.m
	if p.starts != nil {
		p.starts[k] = m.Eng.Now()
	}
	c := x.coldOf(r, k)
	fin := c.fin
	var err error
	switch s.kind {
	case Launch:
		m.Eng.After(m.LaunchCost(x.opt.Launch), fin)
	case Compute:
		m.Eng.After(sim.Duration(s.n), fin)
	case Fence:
		var d sim.Duration
		d, err = m.FenceAfterLanding(r, s.dst.mem())
		if err == nil {
			m.Eng.After(d, fin)
		}
	case Read, Write, Copy, Reduce:
		n := sim.Bytes(s.n)
		switch {
		case n == 0:
			m.Eng.After(0, fin)
		case s.kind == Copy:
			err = x.copyOp(r, k, s, c)
		case s.a == int32(r) && s.dst == xmem(r):
			inputs := 1
			if s.bits&opAccumulate != 0 || s.kind == Reduce {
				inputs = 2
			}
			var d sim.Duration
			d, err = m.LocalTime(r, inputs, n, x.kernels[c.kernel])
			if err == nil {
				m.Eng.After(d, fin)
			}
		case s.kind == Read:
			err = m.Read(r, xmem(s.a).mem(), n, x.kernels[c.kernel], x.labels[c.label], fin)
		case s.kind == Write:
			err = m.Write(r, s.dst.mem(), n, x.kernels[c.kernel], x.labels[c.label], fin)
		default:
			err = fmt.Errorf("algos: %s rank %d op %d: a %s must be local to the rank", x.algo, r, x.opIndex(r, k), s.kind)
		}
	case Signal:
		f := x.flagVars[s.a]
		v := s.n + int64(p.iter)*x.stride[s.a]
		if s.bits&opInline != 0 {
			f.Set(v)
		} else {
			err = m.SignalFlag(r, s.dst.mem(), f, v)
		}
		var d sim.Duration
		if s.bits&opAtomic != 0 && err == nil {
			d, err = m.RoundTrip(r, s.dst.mem())
		}
		if err == nil {
			m.Eng.After(d, fin)
		}
	case Wait:
		v := s.n + int64(p.iter)*x.stride[s.a]
		var extra sim.Duration
		if s.bits&opBlockSync != 0 {
			extra = m.BarrierWaitExtra(s.bits&opAtomic != 0)
		}
		err = m.WaitFlag(r, s.dst.mem(), x.flagVars[s.a], v, &p.names[k], extra, hw.Poll{Atomic: s.bits&opAtomic != 0}, fin)
	}
	if err != nil {
		x.fail(fmt.Errorf("algos: run %s: rank %d op %d (%s): %w", x.algo, r, x.opIndex(r, k), x.labels[c.label], err))
	}
}

func (x *executor) copyOp(r int, k int32, s *slot, c *slotCold) error {
	n := sim.Bytes(s.n)
	label := x.labels[c.label]
	src, dst := xmem(s.a).mem(), s.dst.mem()
	own := func(a hw.Mem) bool { return !a.Host && a.Rank == r }
	switch {
	case own(src) && dst.Host:
		return x.m.Copy(r, hw.D2H, 0, n, label, c.fin)
	case src.Host && own(dst):
		return x.m.Copy(r, hw.H2D, 0, n, label, c.fin)
	case own(src) && !dst.Host:
		return x.m.Copy(r, hw.P2P, dst.Rank, n, label, c.fin)
	}
	op, _, err := x.src.load(r, x.opIndex(r, k))
	if err != nil {
		return err
	}
	return fmt.Errorf("copy %s ← %s: the copy engine of rank %d moves its own memory to host or peer, or host to its own", op.Dst, op.Src, r)
}

// windowStall reports a rank whose window is full while the first op
// beyond it has all its deps done: the run stalled because the window was
// too small, not because the schedule deadlocks.
func (x *executor) windowStall() error {
	for r := range x.ranks {
		p := &x.ranks[r]
		if p.next >= p.n || p.next-p.base < p.cap || x.finishedRank(r) {
			continue
		}
		op, _, err := x.src.load(r, p.next)
		if err != nil {
			return err
		}
		ready := true
		for _, d := range op.After {
			if d >= p.base {
				dp := (p.basePos + d - p.base) % p.cap
				ready = ready && x.slot(r, int32(dp)).done()
			}
		}
		if ready {
			return fmt.Errorf("algos: run %s: rank %d op %d (%s) is ready but outside the window of %d ops, which unfinished earlier ops (from op %d) fill: the run stalled; the stream needs a larger window",
				x.algo, r, p.next, op.Label, p.cap, p.base)
		}
	}
	return nil
}

func (x *executor) finishedRank(r int) bool {
	p := &x.ranks[r]
	return p.iter == x.opt.Iterations-1 && p.left == 0
}

// deadlock describes what is still blocked after the engine ran dry.
func (x *executor) deadlock() error {
	var blocked []string
	keys := x.src.flags()
	ids := make([]int, len(keys))
	for i := range ids {
		ids[i] = i
	}
	sort.Slice(ids, func(i, j int) bool { return keys[ids[i]].String() < keys[ids[j]].String() })
	for _, id := range ids {
		blocked = append(blocked, x.flagVars[id].Blocked()...)
	}
	var idle []string
	for r := range x.ranks {
		p := &x.ranks[r]
		for i := p.base; i < p.next && len(idle) < 5; i++ {
			if s := x.slot(r, int32(i%p.cap)); !s.started() {
				idle = append(idle, fmt.Sprintf("rank %d op %d", r, i))
			}
		}
		if p.next < p.n && !x.finishedRank(r) && len(idle) < 5 {
			idle = append(idle, fmt.Sprintf("rank %d ops %d–%d (not yet loaded)", r, p.next, p.n-1))
		}
	}
	if len(blocked) > 8 {
		blocked = append(blocked[:8], fmt.Sprintf("… %d more", len(blocked)-8))
	}
	return fmt.Errorf("algos: run %s: deadlock: the engine ran out of events with %d of %d ranks unfinished; blocked waits: %s; not started: %s",
		x.algo, x.nranks-x.finished, x.nranks, strings.Join(blocked, "; "), strings.Join(idle, ", "))
}
