package algos

import (
	"slices"

	"github.com/arsim/arsim/sim"
)

// Periodic steady state
//
// A run of many back-to-back allreduces (a verify pass: 122 between
// compute gaps) mostly repeats itself. Each time rank 0 begins an
// allreduce k, once every event of that instant T has run, the executor
// writes down the whole state of the run relative to T and to k: the
// engine's (every pending event, flag and flow, see sim.Snapshot, with
// flag values less k × their epoch stride; the events pending at one
// instant in a canonical order, Snapshot.Unordered, since nothing the
// run computes depends on their order) and its own (each rank's
// allreduce less k, its window and slots, times less T, and in eager mode
// the host's issue clock). When the state at allreduce k equals the state
// at an earlier allreduce k − c, the run from k on is the run from k − c
// on shifted by P = T_k − T_(k−c) and c allreduces, until the last
// allreduces, whose ends start none. The executor then moves the state
// forward by as many whole periods as end before them (sim.Engine.Advance
// and shift), writes down the skipped periods' results (each allreduce's
// end, every span) from those of the period it ran, and runs the rest.
// The results are bit for bit those of running every event; events are
// counted as if they ran.
//
// A run of one allreduce of a stream that says where its ops repeat (a
// ring's steps) is skipped the same way inside the allreduce, with marks
// in place of allreduce starts (periodic_step.go).
//
// Detection stays off where the state cannot be written down exactly: a
// pending closure that neither the engine nor the executor made, an
// observer on the network, a handler event of a handler other than the
// executor's (the physics layer's delayed flag landings and flow starts),
// or an op in flight whose completion is not found exactly once among the
// pending callbacks (it would be held somewhere the snapshot cannot see).
// A state too large to keep (more than maxKeptWords) turns it off.
type periodic struct {
	due  bool // rank 0 began allreduce k during the event now running
	k    int
	off  bool
	hist []*checkpoint // oldest first, at most maxCycle
	free []*checkpoint
	ends []iterEnd // every rank's allreduce ends since detection began, in order
	// hostBound counts the allreduces, since detection began, whose start
	// waited for the host to issue them (eager mode).
	hostBound int
	// step is set when detection runs inside one allreduce of a
	// repeating stream (see stepMode); checkpoints then come at its
	// marks, not at allreduce starts.
	step *stepMode
	// scratch
	base  []int64 // by flag Index: the flag's value that counts as zero
	seen  []uint8 // callbacksMatch's counts, by slot and then by rank
	refs  []uint64
	taken int // checkpoints taken so far
}

// iterEnd is a rank's end of allreduce iter at time at.
type iterEnd struct {
	iter int
	at   sim.Time
}

// checkpoint is the run's state when rank 0 began allreduce k.
type checkpoint struct {
	k      int
	snap   sim.Snapshot
	own    []uint64 // the executor's state
	events uint64   // events run by then
	spans  int      // spans recorded by then
	ends   int      // allreduce ends recorded by then
	bound  int      // host-bound starts by then
}

const (
	// maxCycle is how many past checkpoints each new one is compared
	// with: steady states that repeat every 1 to 16 allreduces are found
	// (on 8 GPUs some repeat every 8, the ranks' roles rotating).
	maxCycle = 16
	// maxMisses is how many checkpoints may pass without a match before
	// detection stops, so that a run that never repeats (the ranks'
	// phases drifting, never aligning) pays for few. In the presets'
	// verify passes and back-to-back runs (TestSteadyStateSkipIsExact
	// -steady.full) every match came by the 21st, with cycles of 2, 3, 4
	// and 8 allreduces.
	maxMisses = 3 * maxCycle
	// maxKeptWords bounds the checkpoints kept (8 bytes a word); fewer
	// are kept when each is large, none when one alone is larger.
	maxKeptWords = 1 << 21
)

func (c *checkpoint) size() int { return c.snap.Size() + len(c.own) }

// newPeriodic returns the detector of a run, or nil when a run is too
// short to skip anything (three allreduces at least, or one of a
// repeating stream).
func newPeriodic(x *executor) *periodic {
	if x.nranks == 0 || x.opt.EveryEvent {
		return nil
	}
	if x.opt.Iterations == 1 {
		if sm := newStepMode(x); sm != nil {
			return &periodic{step: sm}
		}
	}
	if x.opt.Iterations < 3 {
		return nil
	}
	return &periodic{}
}

// mark notes that rank 0 begins allreduce it; the checkpoint is taken once
// the event now running has returned.
func (pd *periodic) mark(x *executor, it int) {
	if pd.off {
		return
	}
	pd.due, pd.k = true, it
	x.eng.StopAfterInstant()
}

// checkpoint writes down the state, compares it with the past ones and,
// on a match, skips ahead.
func (pd *periodic) checkpoint(x *executor) {
	pd.due = false
	if pd.off || x.err != nil {
		return
	}
	if pd.step != nil {
		defer pd.step.next(x, pd)
	}
	var c *checkpoint
	if k := len(pd.free); k > 0 {
		c, pd.free = pd.free[k-1], pd.free[:k-1]
	} else {
		c = new(checkpoint)
		if k := len(pd.hist); k > 0 {
			// The state's size changes little from one allreduce to
			// the next: allocate it once.
			c.own = make([]uint64, 0, cap(pd.hist[k-1].own))
			c.snap.Grow(pd.hist[k-1].snap.Size())
		}
	}
	c.k = pd.k
	if pd.taken++; pd.taken > maxMisses {
		if pd.step != nil {
			pd.step.done = true // give the stretch up, watch the next
			pd.free = append(pd.free, c)
			return
		}
		pd.stop(x)
		return
	}
	if !pd.take(x, c) {
		pd.free = append(pd.free, c)
		return
	}
	for i := len(pd.hist) - 1; i >= 0; i-- {
		h := pd.hist[i]
		if h.snap.Equal(&c.snap) && slices.Equal(h.own, c.own) {
			skipped := false
			if pd.step != nil {
				skipped = pd.step.skip(x, pd, h, c)
			} else {
				skipped = pd.skip(x, h, c)
			}
			if skipped {
				pd.free = append(pd.free, c)
				if pd.step != nil {
					pd.step.done = true // on to the next stretch
					return
				}
				pd.stop(x)
				return
			}
			break
		}
	}
	pd.hist = append(pd.hist, c)
	kept := 0
	for _, h := range pd.hist {
		kept += h.size()
	}
	for len(pd.hist) > maxCycle || kept > maxKeptWords {
		kept -= pd.hist[0].size()
		pd.free = append(pd.free, pd.hist[0])
		pd.hist = append(pd.hist[:0], pd.hist[1:]...)
	}
	x.eng.Forget(&pd.hist[0].snap)
}

// stop ends detection for the rest of the run.
func (pd *periodic) stop(x *executor) {
	pd.off, pd.hist, pd.free, pd.ends = true, nil, nil, nil
	x.eng.EndSnapshots()
}

// take writes the state now into c; false when it cannot be written down.
func (pd *periodic) take(x *executor, c *checkpoint) bool {
	if !x.m.InOrderIdle() || !x.m.HostStoresIdle() || !x.m.HostStreamsIdle() {
		return false // in-order loop groups', small stores' and streaming stores' queues are not in the snapshot
	}
	base, iter, shift := pd.flagValues(x, int64(c.k)), c.k, 0
	if pd.step != nil {
		// Mark c.k of a stretch, in allreduce 0.
		base, iter, shift = pd.step.flagValues(x, pd, int64(c.k)), 0, c.k*pd.step.unit
	}
	c.snap.Unordered = true
	if !x.eng.TakeSnapshot(&c.snap, base) {
		return false
	}
	if !pd.callbacksMatch(x, &c.snap) {
		return false
	}
	c.own = x.appendState(c.own[:0], c.snap.At, iter, shift)
	if c.size() > maxKeptWords {
		pd.off = true
		return false
	}
	c.events, c.spans, c.ends, c.bound = x.eng.Processed(), len(x.res.Spans), len(pd.ends), pd.hostBound
	return true
}

// flagValues returns, by flag Index, k epochs of each of the executor's
// flags (0 for flags it did not make).
func (pd *periodic) flagValues(x *executor, k int64) []int64 {
	for _, f := range x.flagVars {
		for len(pd.base) <= f.Index() {
			pd.base = append(pd.base, 0)
		}
	}
	for id, f := range x.flagVars {
		pd.base[f.Index()] = k * x.stride[id]
	}
	return pd.base
}

// callbacksMatch checks that the state names exactly the executor's
// callbacks that must be pending, each once: one per op in flight and one
// per rank waiting to begin its next allreduce. The state's are counted
// by slot (and rank), then each one that must be pending takes its count,
// which must be one.
func (pd *periodic) callbacksMatch(x *executor, s *sim.Snapshot) bool {
	nslots := len(x.slots)
	if len(pd.seen) != nslots+x.nranks {
		pd.seen = make([]uint8, nslots+x.nranks)
	}
	seen := pd.seen
	refs := pd.refs[:0]
	s.Refs(func(h sim.HandlerID, arg int64) { refs = append(refs, uint64(h)<<48|uint64(arg)) })
	pd.refs = refs
	ok := true
	done, start := uint64(x.hDone), uint64(x.hStart)
	for _, w := range refs {
		h, arg := w>>48, w&(1<<48-1)
		i := -1
		switch {
		case h == done && int(arg&uint64(x.rmask)) < x.nranks:
			i = int(arg>>x.rbits)*x.nranks + int(arg&uint64(x.rmask))
		case h == start:
			i = nslots + int(arg)
		}
		if i < 0 || i >= len(seen) || seen[i] == 255 {
			ok = false
			break
		}
		seen[i]++
	}
	want := 0
	for r := range x.ranks {
		p := &x.ranks[r]
		for i, k := p.base, p.basePos; i < p.next; i++ {
			if t := x.slot(r, int32(k)); t.started() && !t.done() {
				ok = ok && seen[k*x.nranks+r] == 1
				want++
			}
			if k++; k == p.cap {
				k = 0
			}
		}
		if p.left == 0 && p.iter+1 < x.opt.Iterations {
			ok = ok && seen[nslots+r] == 1
			want++
		}
	}
	clear(seen)
	return ok && len(refs) == want
}

// skip moves the run forward by whole periods of the cycle from h to c
// (c is now) and writes down their results. It reports whether it skipped.
func (pd *periodic) skip(x *executor, h, c *checkpoint) bool {
	cyc := c.k - h.k
	period := c.snap.At.Sub(h.snap.At)
	win := pd.ends[h.ends:c.ends]
	// A period ends allreduces up to last; shifted m times, the ends must
	// all still start a next allreduce (it+1 < Iterations), as in the
	// period that ran.
	last := -1
	for _, e := range win {
		last = max(last, e.iter)
	}
	left := x.opt.Iterations - 2 - last
	if cyc <= 0 || left < cyc || !hostAgrees(x.opt.IssueInterval, cyc, period, c.bound-h.bound) {
		return false
	}
	m := withinEventLimit(x, h, c, left/cyc)
	if m <= 0 {
		return false
	}
	x.eng.Advance(&h.snap, &c.snap, m, pd.flagValues(x, int64(cyc)))
	x.shift(sim.Duration(m)*period, m*cyc)
	x.res.Skipped = m * cyc
	spans := slices.Clone(x.res.Spans[h.spans:c.spans])
	for j := 1; j <= m; j++ {
		dt := sim.Duration(j) * period
		for _, e := range win {
			it := e.iter + j*cyc
			x.res.PerIter[it] = max(x.res.PerIter[it], e.at.Add(dt))
		}
		for _, sp := range spans {
			sp.Iter += j * cyc
			sp.Start, sp.End = sp.Start.Add(dt), sp.End.Add(dt)
			x.res.Spans = append(x.res.Spans, sp)
		}
	}
	return true
}

// withinEventLimit returns m, or fewer periods of the cycle from h to c
// if m would take the run's event count to its limit (0: none fits).
func withinEventLimit(x *executor, h, c *checkpoint, m int) int {
	if lim, per := x.eng.EventLimit(), c.events-h.events; lim > 0 && per > 0 {
		if c.events+1 >= lim {
			return 0
		}
		m = min(m, int((lim-1-c.events)/per))
	}
	return m
}

// hostAgrees reports whether the host's issue clock (eager mode: allreduce
// j starts no earlier than j × interval) repeats with the cycle or never
// matters in it. The snapshots leave the clock out; the periods that
// follow take the same decisions as the one that ran if the host keeps
// pace exactly (period = cyc × interval), or if it kept no start waiting
// in the period that ran and falls behind no faster than the device
// (period ≥ cyc × interval: a start it did not hold is held later still
// by less).
func hostAgrees(interval sim.Duration, cyc int, period sim.Duration, bound int) bool {
	if interval == 0 {
		return true
	}
	per := interval * sim.Duration(cyc)
	return period == per || (bound == 0 && period >= per)
}

// appendState writes the executor's state relative to instant at and
// allreduce k: what the engine's snapshot does not hold. An op's own
// fields (kind, memories, bytes, kernel, label) are not written: they are
// a function of its rank and index (a source gives the same op every time
// it is asked), which the window's bounds give. What is written is what
// changes as ops run: for each op in the window whether it started and
// finished, its deps not yet done and its waiting successors (a rank's
// loaded from its program image are the image's: not written), when it
// started (for spans) and, while ops are still to be loaded, when the
// finished ones finished (load compares it with the time).
//
// Inside one allreduce (a repeating stream's stretch, stepMode), op
// indices are written less shift, the ops of the periods before.
func (x *executor) appendState(w []uint64, at sim.Time, k, shift int) []uint64 {
	for r := range x.ranks {
		p := &x.ranks[r]
		w = append(w, uint64(p.iter-k), uint64(p.left+shift), uint64(p.base-shift), uint64(p.next-shift), uint64(p.basePos), uint64(p.nextPos))
		loading := p.next < p.n
		if loading {
			// Finished ops before base whose slots still hold them.
			for i := max(p.next-p.cap, 0); i < p.base; i++ {
				w = append(w, uint64(x.slots[(i%p.cap)*x.nranks+r].doneAt().Sub(at)))
			}
		}
		// The successors of a rank loaded from its image are the image's
		// until the op finishes (nothing else changes them): a function
		// of the op's position, not written.
		imaged := x.images != nil && x.images[r].ok
		for i, q := p.base, p.basePos; i < p.next; i++ {
			s := &x.slots[q*x.nranks+r]
			w = append(w, uint64(s.bits)|uint64(s.nsucc)<<8|uint64(uint32(s.waiting))<<24)
			switch {
			case s.done():
				if loading {
					w = append(w, uint64(s.doneAt().Sub(at)))
				}
			default:
				for j := 0; j < int(s.nsucc) && !imaged; j++ {
					if j < inlineSucc {
						w = append(w, uint64(s.succ(j)))
					} else {
						w = append(w, uint64(p.more[q][j-inlineSucc]))
					}
				}
				if s.started() && p.starts != nil {
					w = append(w, uint64(p.starts[q].Sub(at)))
				}
			}
			if q++; q == p.cap {
				q = 0
			}
		}
	}
	return w
}

// shift moves the executor's state d later and its allreduces iters on.
func (x *executor) shift(d sim.Duration, iters int) {
	for r := range x.ranks {
		p := &x.ranks[r]
		p.iter += iters
		for k := range int32(p.cap) {
			if s := x.slot(r, k); s.done() {
				s.link = uint64(s.doneAt().Add(d))
			}
			if p.starts != nil {
				p.starts[k] = p.starts[k].Add(d)
			}
		}
	}
}
