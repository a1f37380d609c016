package algos

import (
	"fmt"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/sim"
)

// executor runs a source's ops on a machine (see run).
//
// Completions at the current instant that take no time (an inline
// Signal's, a zero-byte transfer's) are not engine events: they wait in
// ready and are handled before the event that caused them returns.
// Nothing the run computes depends on the order of the work within one
// instant (the network's solver orders flows canonically, spans are
// sorted, flags are compared by value), so this changes no result, only
// the number of events.
type executor struct {
	m         *hw.Machine
	eng       *sim.Engine
	src       source
	compact   *streamSource // src when it is a compact stream (called directly)
	algo      string
	nranks    int
	opt       RunOptions
	flagVars  []*sim.FlagVar // by flag ID
	stride    []int64        // by flag ID
	kernels   []hw.Kernel    // the distinct kernels of the ops loaded
	kernelID  map[hw.Kernel]int32
	kernelMRU recent
	labels    []string // the distinct labels of the ops loaded
	labelID   map[string]int32
	ranks     []rankRun
	slots     []slot     // window position k of rank r at k × nranks + r
	cold      []slotCold // likewise
	rbits     uint8      // bits of a rank in opArg
	rmask     int64
	hDone     sim.HandlerID
	hStart    sim.HandlerID
	ready     []int64 // ops (opArg) that finished now, not yet handled
	finished  int
	err       error
	res       *Result
	per       *periodic   // steady-state detection; nil when off
	stepAt    int         // rank 0's op whose start is the next step mark (periodic_step.go); −1 when none
	images    []rankImage // by rank, for a stored schedule (image.go); nil for a stream
}

// completion handles op completions: the argument is the op's window
// position and rank (opArg).
type completion executor

func (h *completion) Handle(arg int64) {
	x := (*executor)(h)
	x.done(int(arg&x.rmask), int32(arg>>x.rbits))
	if len(x.ready) > 0 {
		x.drain()
	}
}

// opArg is the event argument naming window position k of rank r: k and r
// packed in the bits of a slot index (k × 2^rbits + r < 2 × slots).
func (x *executor) opArg(r int, k int32) int64 { return int64(k)<<x.rbits | int64(r) }

// iterStart starts a rank's next allreduce: the argument is the rank.
type iterStart executor

func (h *iterStart) Handle(arg int64) {
	x := (*executor)(h)
	r := int(arg)
	x.startIter(r, x.ranks[r].iter+1)
	x.drain()
}

// drain handles the completions at this instant that took no time.
func (x *executor) drain() {
	for i := 0; i < len(x.ready); i++ {
		a := x.ready[i]
		x.done(int(a&x.rmask), int32(a>>x.rbits))
	}
	x.ready = x.ready[:0]
}

// finishIn makes the op in window position k of rank r finish d from now.
func (x *executor) finishIn(r int, k int32, d sim.Duration) {
	if d == 0 {
		x.ready = append(x.ready, x.opArg(r, k))
		return
	}
	x.eng.CallAfter(d, x.hDone, x.opArg(r, k))
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
	if r == 0 && x.per != nil && x.per.step == nil {
		x.per.mark(x, it)
	}
	if p.n == 0 {
		x.endIter(r)
		return
	}
	p.base, p.next, p.basePos, p.nextPos = 0, 0, 0, 0
	if x.loadImage(r) {
		return
	}
	for p.next < p.n && p.next-p.base < p.cap {
		x.load(r, -1)
	}
}

// load brings op next of rank r into the window. cur is the op whose
// completion is being handled (−1 at the start of an allreduce). An op
// whose deps are all done may start now only if one of them finished now
// (its last one did), or if it has none and the allreduce is starting;
// otherwise it should have started earlier, and the window was too small
// to see it.
func (x *executor) load(r, cur int) {
	p := &x.ranks[r]
	j, k := p.next, p.nextPos
	p.next++
	if p.nextPos++; p.nextPos == p.cap {
		p.nextPos = 0
	}
	s := x.slot(r, int32(k))
	c := x.coldOf(r, int32(k))
	var after []int
	var err error
	if x.compact != nil {
		after, err = x.compact.fillCompact(r, j, s, c)
	} else {
		after, err = x.src.fill(x, r, j, s, c)
	}
	if err != nil {
		x.fail(err)
		return
	}
	s.nsucc = 0
	waiting := int32(0)
	now := x.eng.Now()
	readyNow := false
	for _, d := range after {
		if uint(d) >= uint(j) {
			x.fail(x.src.badDep(r, j, d))
			return
		}
		if j-d >= p.cap {
			continue // retired long ago, hence done
		}
		dp := k - (j - d)
		if dp < 0 {
			dp += p.cap
		}
		if t := x.slot(r, int32(dp)); d >= p.base && !t.done() {
			x.addSucc(p, t, dp, int32(k))
			waiting++
		} else if t.doneAt() == now {
			readyNow = true
		}
	}
	s.waiting = waiting
	if waiting > 0 {
		return
	}
	if (len(after) == 0 && cur < 0) || readyNow {
		x.start(r, int32(k))
		return
	}
	x.late(r, j, c)
}

// late stops the run at op j of rank r (its cold slot c), which was ready
// before it was loaded.
func (x *executor) late(r, j int, c *slotCold) {
	x.fail(fmt.Errorf("algos: run %s: rank %d op %d (%s) was ready before %v but outside the window of %d ops, which unfinished earlier ops filled; starting it late would change the result: the stream needs a larger window",
		x.algo, r, j, x.labels[c.label], x.eng.Now(), x.ranks[r].cap))
}

// fill copies into s and c what starting op (op i of rank r) needs.
func (x *executor) fill(s *slot, c *slotCold, op *Op, flag int32, r, i int) error {
	s.kind = op.Kind
	s.bits = opBits(op.Accumulate, op.Inline, op.Atomic, op.BlockSync, op.Fenced, op.Fused && op.Kind == Write)
	var ok1, ok2 bool
	var src xmem
	src, ok1 = toXmem(op.Src.Buf.At)
	s.a = int32(src)
	s.dst, ok2 = toXmem(op.Dst.Buf.At)
	switch op.Kind {
	case Fence:
		s.a = int32(fenceLoadsOf(op, s.dst, r))
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
	if id, ok := findRecent(&x.kernelMRU, x.kernels, k); ok {
		return id
	}
	id, ok := x.kernelID[k]
	if !ok {
		id = int32(len(x.kernels))
		x.kernels = append(x.kernels, k)
		x.kernelID[k] = id
	}
	x.kernelMRU.push(id)
	return id
}

// recent holds the IDs an interning lookup found last, newest first: a
// rank's ops use a few kernels and flags in turn, and comparing with
// those is cheaper than hashing a large key.
type recent struct {
	ids [4]int32
	n   int
}

// findRecent returns the ID of k among m's recent ones of keys.
func findRecent[K comparable](m *recent, keys []K, k K) (int32, bool) {
	for _, id := range m.ids[:m.n] {
		if keys[id] == k {
			return id, true
		}
	}
	return 0, false
}

// push makes id the newest.
func (m *recent) push(id int32) {
	copy(m.ids[1:], m.ids[:len(m.ids)-1])
	m.ids[0] = id
	m.n = min(m.n+1, len(m.ids))
}

// endIter ends rank r's allreduce and starts its next one, after the gap
// and not before the host has issued it.
func (x *executor) endIter(r int) {
	it := x.ranks[r].iter
	now := x.eng.Now()
	x.res.PerIter[it] = max(x.res.PerIter[it], now)
	if x.per != nil {
		x.per.ends = append(x.per.ends, iterEnd{iter: it, at: now})
	}
	if it+1 < x.opt.Iterations {
		at := now.Add(x.opt.Gap)
		if host := sim.Time(0).Add(x.opt.IssueInterval * sim.Duration(it+1)); host > at {
			at = host
			if x.per != nil {
				x.per.hostBound++
			}
		}
		if at > now {
			x.eng.CallAt(at, x.hStart, int64(r))
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
	if t.nsucc < inlineSucc {
		t.setSucc(int(t.nsucc), k)
	} else {
		p.addMore(t, dp, k)
	}
	t.nsucc++
}

// addMore records a successor beyond the slot's own.
func (p *rankRun) addMore(t *slot, dp int, k int32) {
	if p.more == nil {
		p.more = make([][]int32, p.cap)
	}
	if t.nsucc == inlineSucc {
		p.more[dp] = p.more[dp][:0]
	}
	p.more[dp] = append(p.more[dp], k)
}

// done handles the completion of the op in window position k of rank r.
func (x *executor) done(r int, k int32) {
	p := &x.ranks[r]
	s := &x.slots[int(k)*x.nranks+r]
	s.bits |= opDone
	now := x.eng.Now()
	if x.opt.Spans {
		x.res.Spans = append(x.res.Spans, Span{Rank: r, Op: x.opIndex(r, k), Iter: p.iter, Start: p.starts[k], End: now})
	}
	p.left--
	if n := int(s.nsucc); n > 0 {
		x.notify(r, s.succ(0))
		if n > 1 {
			x.notify(r, s.succ(1))
			if n > inlineSucc {
				for _, j := range p.more[k][:n-inlineSucc] {
					x.notify(r, j)
				}
			}
		}
	}
	s.link = uint64(now) // the successors are notified: the word holds doneAt
	if int(k) == p.basePos && p.next < p.n {
		// Retire the finished ops at the bottom of the window and load
		// as many new ones. (With nothing left to load, base stays:
		// the ops before it are done, those after it may be.)
		cur := p.base
		base, pos, next, nr := p.base, p.basePos, p.next, x.nranks
		slots := x.slots
		for i := pos*nr + r; base < next && slots[i].bits&opDone != 0; {
			base++
			i += nr
			if pos++; pos == p.cap {
				pos, i = 0, r
			}
		}
		p.base, p.basePos = base, pos
		for k := min(p.n-next, p.cap-(next-base)); k > 0; k-- {
			x.load(r, cur) // each loads op p.next and advances it
		}
	}
	if p.left == 0 {
		x.endIter(r)
	}
}

// notify tells op j of rank r that one of its deps is done: the last
// starts it.
func (x *executor) notify(r int, j int32) {
	if t := &x.slots[int(j)*x.nranks+r]; t.waiting == 1 {
		t.waiting = 0
		x.start(r, j)
	} else {
		t.waiting--
	}
}

// start starts the op in window position k of rank r.
func (x *executor) start(r int, k int32) {
	if x.err != nil {
		return
	}
	p := &x.ranks[r]
	s := &x.slots[int(k)*x.nranks+r]
	s.bits |= opStarted
	if r == 0 && x.stepAt >= 0 && x.opIndex(0, k) == x.stepAt {
		x.per.step.mark(x, x.per)
	}
	m := x.m
	if p.starts != nil {
		p.starts[k] = x.eng.Now()
	}
	var err error
	switch s.kind {
	case Launch:
		x.finishIn(r, k, m.LaunchCost(x.opt.Launch))
	case Compute:
		x.finishIn(r, k, sim.Duration(s.n))
	case Fence:
		var d sim.Duration
		if s.bits&opFenced != 0 {
			// its Fenced stores paid for it, but not for the other
			// blocks' loads of a peer the kernel pulled from (fenceLoadsOf)
			var w sim.Duration
			if w, err = m.FenceBesidePolls(r, xmem(s.a).mem(), x.besideLoads(r, k, s)); err == nil {
				x.finishIn(r, k, w)
			}
		} else if d, err = m.FenceAfterLanding(r, s.dst.mem()); err == nil {
			// each block's fence waits for the kernel's other blocks'
			// loads of memory outside the GPU (hw.Machine.FenceBesidePolls):
			// slot a holds which memory (fenceLoadsOf)
			var w sim.Duration
			if w, err = m.FenceBesidePolls(r, xmem(s.a).mem(), x.besideLoads(r, k, s)); err == nil {
				x.finishIn(r, k, d+w)
			}
		}
	case Read, Write, Copy, Reduce:
		err = x.transfer(r, k, s)
	case Signal:
		err = x.signal(r, k, s)
	case Wait:
		v := s.n + int64(p.iter)*x.stride[s.a]
		var extra sim.Duration
		kern := &x.kernels[x.coldOf(r, k).kernel]
		if s.bits&opBlockSync != 0 {
			extra = m.BarrierWaitExtra(s.bits&opAtomic != 0, kern.Threads, true) // a rank is a GPU
		}
		err = m.WaitFlag(r, s.dst.mem(), x.flagVars[s.a], v, &p.names[k], extra, hw.Poll{Atomic: s.bits&opAtomic != 0, Blocks: kern.Blocks}, x.cold[int(k)*x.nranks+r].fin)
	}
	if err != nil {
		x.fail(fmt.Errorf("algos: run %s: rank %d op %d (%s): %w", x.algo, r, x.opIndex(r, k), x.labels[x.coldOf(r, k).label], err))
	}
}

// transfer starts a Read, Write, Copy or Reduce.
func (x *executor) transfer(r int, k int32, s *slot) error {
	m, c := x.m, x.coldOf(r, k)
	n := sim.Bytes(s.n)
	switch {
	case n == 0 && s.bits&opFenced != 0:
		d, err := m.FenceCost(r, s.dst.mem())
		if err != nil {
			return err
		}
		x.finishIn(r, k, d)
	case n == 0:
		x.finishIn(r, k, 0)
	case s.kind == Copy:
		return x.copyOp(r, k, s, c)
	case s.a == int32(r) && s.dst == xmem(r):
		inputs := 1
		if s.bits&opAccumulate != 0 || s.kind == Reduce {
			inputs = 2
		}
		kern := x.kernels[c.kernel]
		if kern.LoopGroup != "" {
			// A pass of a block's loop that its other transfers share.
			return m.LocalPass(r, inputs, n, kern, x.labels[c.label], x.cold[int(k)*x.nranks+r].fin)
		}
		d, err := m.LocalTime(r, inputs, n, kern)
		if err != nil {
			return err
		}
		x.finishIn(r, k, d)
	case s.kind == Read:
		return m.Read(r, xmem(s.a).mem(), n, x.kernels[c.kernel], x.labels[c.label], x.cold[int(k)*x.nranks+r].fin)
	case s.kind == Write:
		return x.write(r, k, s, c)
	default:
		return fmt.Errorf("algos: %s rank %d op %d: a %s must be local to the rank", x.algo, r, x.opIndex(r, k), s.kind)
	}
	return nil
}

// write starts a Write. When the rank's last write had the same
// destination, kernel and fencing, hw is told so (WriteAgain) and spared
// comparing them.
func (x *executor) write(r int, k int32, s *slot, c *slotCold) error {
	m, n, fin := x.m, sim.Bytes(s.n), x.cold[int(k)*x.nranks+r].fin
	fenced := s.bits&opFenced != 0
	w := lastWrite{ok: true, fenced: fenced, dst: s.dst, kernel: c.kernel}
	if p := &x.ranks[r]; p.lastWrite == w {
		return m.WriteAgain(r, n, x.labels[c.label], fin)
	}
	var err error
	if fenced {
		err = m.WriteFenced(r, s.dst.mem(), n, x.kernels[c.kernel], x.labels[c.label], fin)
	} else {
		err = m.Write(r, s.dst.mem(), n, x.kernels[c.kernel], x.labels[c.label], fin)
	}
	if err == nil {
		x.ranks[r].lastWrite = w
	}
	return err
}

// signal starts a Signal: the flag is raised now (inline with data
// already landed) or once the store lands; the op ends now, or after a
// round trip for an atomic.
func (x *executor) signal(r int, k int32, s *slot) error {
	f := x.flagVars[s.a]
	v := s.n + int64(x.ranks[r].iter)*x.stride[s.a]
	if s.bits&opInline != 0 {
		f.Set(v)
	} else if err := x.m.SignalFlag(r, s.dst.mem(), f, v, x.kernels[x.coldOf(r, k).kernel].Blocks); err != nil {
		return err
	}
	var d sim.Duration
	if s.bits&opAtomic != 0 {
		var err error
		if d, err = x.m.RoundTrip(r, s.dst.mem()); err != nil {
			return err
		}
	}
	x.finishIn(r, k, d)
	return nil
}

func (x *executor) copyOp(r int, k int32, s *slot, c *slotCold) error {
	n := sim.Bytes(s.n)
	label := x.labels[c.label]
	fin := x.cold[int(k)*x.nranks+r].fin
	src, dst := xmem(s.a).mem(), s.dst.mem()
	own := func(a hw.Mem) bool { return !a.Host && a.Rank == r }
	switch {
	case own(src) && dst.Host:
		return x.m.Copy(r, hw.D2H, 0, n, label, fin)
	case src.Host && own(dst):
		return x.m.Copy(r, hw.H2D, 0, n, label, fin)
	case own(src) && !dst.Host:
		return x.m.Copy(r, hw.P2P, dst.Rank, n, label, fin)
	}
	op, _, err := x.src.load(r, x.opIndex(r, k))
	if err != nil {
		return err
	}
	return fmt.Errorf("copy %s ← %s: the copy engine of rank %d moves its own memory to host or peer, or host to its own", op.Dst, op.Src, r)
}

// besideLoads is how many loads of the memory a Fence in window
// position k of rank r waits for (slot a, fenceLoadsOf) the kernel's other
// blocks keep in flight (hw.Machine.FenceBesidePolls counts loads): of a
// peer's memory, the pulls the fence follows, every thread's loads in
// flight (hw.Kernel.LoadsInFlight, at least one), as a fence beside pulls
// of host memory waits by the pullers' loads in flight
// (testdata/h200x1-arsim/fence_pulls.jsonl); of host memory, a barrier's
// poll each, one a block: after a kernel's even shares of a host pull
// every block's next store ends about when the last share has come back,
// and the last fence 0.58–1.44 µs after it, where one poll a block
// charges 1.19–1.58 µs and the others' loads in flight 2–169
// (fence_after_pull.jsonl).
func (x *executor) besideLoads(r int, k int32, s *slot) int {
	kern := &x.kernels[x.coldOf(r, k).kernel]
	others := max(kern.Blocks, 1) - 1
	if at := xmem(s.a).mem(); at.Host || at.Rank == r {
		return others
	}
	return others * max(kern.Threads, 1) * max(int(kern.LoadsInFlight), 1)
}
