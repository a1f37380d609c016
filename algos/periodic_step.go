package algos

import (
	"slices"

	"github.com/arsim/arsim/sim"
)

// Periodic steady state inside one allreduce
//
// A streamed ring of n ranks runs 2(n − 1) alike steps: once its pipeline
// fills, the state at step s + 1 is the state at step s one step later.
// A RepeatingStream says where its ops repeat (Repeat: a stretch of every
// rank's program in which op i + Ops is op i one period on), and a run of
// one allreduce then finds the steady state as back-to-back allreduces do
// (periodic.go), with marks in place of allreduce starts: each time rank
// 0 starts op From + j × unit of the stretch, the executor writes down
// the state relative to that instant, to the j × unit ops before it and
// to j × unit / Ops periods of each flag's Step. unit is the least common
// multiple of the stretch's period and the window, so that an op comes
// back to its own window position (the pending completions name window
// positions). When the state at mark j equals the state at an earlier
// mark, the run moves on by as many whole cycles as keep every op it
// loads inside the stretch, and watches the next stretch. As for
// allreduces, the results are bit for bit those of running every event.
type stepMode struct {
	reps []Repeat
	cap  int  // every rank's window
	si   int  // the stretch watched
	unit int  // ops a rank runs from one mark to the next
	j    int  // the mark awaited, counted from the stretch's start
	done bool // the stretch is finished with (skipped or given up)
}

// newStepMode returns the step detector of a run of a repeating stream,
// or nil.
func newStepMode(x *executor) *stepMode {
	src, ok := x.src.(*streamSource)
	if !ok || len(src.repeats) == 0 {
		return nil
	}
	sm := &stepMode{reps: src.repeats, cap: x.ranks[0].cap, si: -1, done: true}
	for r := range x.ranks {
		if x.ranks[r].cap != sm.cap {
			return nil
		}
	}
	x.stepAt = -1
	return sm
}

// next arms the mark after the one just taken, or the first of the next
// stretch that has room for three, or none (detection then ends). The run
// calls it once the executor is made, to arm the first.
func (sm *stepMode) next(x *executor, pd *periodic) {
	if !sm.done {
		sm.j++
		rp := sm.reps[sm.si]
		if at := rp.From + sm.j*sm.unit; at+sm.unit < rp.To {
			x.stepAt = at
			return
		}
	}
	pd.reset(x)
	for sm.si++; sm.si < len(sm.reps); sm.si++ {
		rp := sm.reps[sm.si]
		sm.unit = lcm(rp.Ops, sm.cap)
		sm.j, sm.done = 0, false
		if rp.From+3*sm.unit < rp.To {
			x.stepAt = rp.From
			return
		}
	}
	x.stepAt = -1
	pd.stop(x)
}

// mark notes that rank 0 starts the marked op: the checkpoint is taken
// once the event now running has returned.
func (sm *stepMode) mark(x *executor, pd *periodic) {
	x.stepAt = -1
	pd.due, pd.k = true, sm.j
	x.eng.StopAfterInstant()
}

// flagValues returns, by flag Index, each executor flag's rise over k
// marks of the stretch watched (0 for flags it did not make).
func (sm *stepMode) flagValues(x *executor, pd *periodic, k int64) []int64 {
	rp := sm.reps[sm.si]
	per := k * int64(sm.unit/rp.Ops)
	for _, f := range x.flagVars {
		for len(pd.base) <= f.Index() {
			pd.base = append(pd.base, 0)
		}
	}
	for id, f := range x.flagVars {
		v := int64(0)
		if id < len(rp.Step) {
			v = per * rp.Step[id]
		}
		pd.base[f.Index()] = v
	}
	return pd.base
}

// skip moves the run forward by whole cycles from mark h to mark c (c is
// now), as many as keep every op loaded inside the stretch, and writes
// down their spans. It reports whether it skipped.
func (sm *stepMode) skip(x *executor, pd *periodic, h, c *checkpoint) bool {
	rp := sm.reps[sm.si]
	cyc := c.k - h.k
	ops := cyc * sm.unit
	period := c.snap.At.Sub(h.snap.At)
	if cyc <= 0 || c.ends != h.ends || period <= 0 {
		return false
	}
	// The window's ops at h (base at c less a cycle) must lie in the
	// stretch, and so must every op loaded by c, moved m cycles on.
	lo, hi := x.ranks[0].base, x.ranks[0].next
	for r := range x.ranks {
		lo, hi = min(lo, x.ranks[r].base), max(hi, x.ranks[r].next)
	}
	if lo-ops < rp.From {
		return false
	}
	m := withinEventLimit(x, h, c, (rp.To-hi)/ops)
	if m <= 0 {
		return false
	}
	x.eng.Advance(&h.snap, &c.snap, m, sm.flagValues(x, pd, int64(cyc)))
	d := sim.Duration(m) * period
	moved := m * ops
	rise := int64(m) * int64(ops/rp.Ops)
	src, _ := x.src.(*streamSource)
	for r := range x.ranks {
		p := &x.ranks[r]
		for k := range int32(p.cap) {
			s := x.slot(r, k)
			if s.done() {
				s.link = uint64(s.doneAt().Add(d))
			}
			if p.starts != nil {
				p.starts[k] = p.starts[k].Add(d)
			}
		}
		// The window's ops become those moved cycles on: a Signal's or
		// Wait's value rises by its flag's steps.
		for i, k := p.base, p.basePos; i < p.next; i++ {
			if s := x.slot(r, int32(k)); (s.kind == Signal || s.kind == Wait) && int(s.a) < len(rp.Step) {
				s.n += rise * rp.Step[s.a]
				if s.kind == Signal && src != nil {
					// The skipped ops' signals count as loaded: the
					// window's are the latest of them.
					src.seen[s.a] = max(src.seen[s.a], s.n)
				}
			}
			if k++; k == p.cap {
				k = 0
			}
		}
		p.base += moved
		p.next += moved
		p.left -= moved
	}
	x.res.SkippedOps += moved
	spans := slices.Clone(x.res.Spans[h.spans:c.spans])
	for j := 1; j <= m; j++ {
		dt := sim.Duration(j) * period
		for _, sp := range spans {
			sp.Op += j * ops
			sp.Start, sp.End = sp.Start.Add(dt), sp.End.Add(dt)
			x.res.Spans = append(x.res.Spans, sp)
		}
	}
	return true
}

// reset forgets the checkpoints kept, for a new stretch.
func (pd *periodic) reset(x *executor) {
	if k := len(pd.hist); k > 0 {
		x.eng.Forget(&pd.hist[k-1].snap)
	}
	pd.free = append(pd.free, pd.hist...)
	pd.hist = pd.hist[:0]
	pd.taken = 0
}

func lcm(a, b int) int {
	g, h := a, b
	for h != 0 {
		g, h = h, g%h
	}
	return a / g * b
}
