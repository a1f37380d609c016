package sim

import (
	"cmp"
	"math"
	"slices"
)

// Snapshot is the state of an engine at one instant, written relative to
// that instant, for finding a run's periodic steady state: when two
// snapshots taken at instants T1 < T2 are Equal, everything from T2 on is
// what happened from T1 on, shifted by T2 − T1 (the engine, its flags and
// networks hold no other state, and a handler that keeps state of its own
// must compare it too). Advance then moves the engine forward by whole
// periods without running their events.
//
// A snapshot holds, in a canonical form:
//   - every pending event, in the order it will run: its time relative to
//     the instant, and what it runs: a handler event's handler and
//     argument, a closure made by Func as that handler event, a network's
//     own events by what they do;
//   - every flag made on the engine: its value and each waiter's value,
//     both less a base the caller gives per flag (the executor's epoch),
//     the waiter's polling delay and its callback;
//   - every network made on the engine: each resource's load and since
//     when, each active flow's spec (route, weights, cap, bytes, latency,
//     kind, class, label, callback), start, rate, bytes left and finish,
//     its ID relative to the next ID, and what awaits a settle.
//
// Taking one fails (TakeSnapshot returns false) when the state cannot be
// written down exactly: a pending closure that the engine did not make
// with Func (it may hold anything), or a network with an Observer (it
// sees every event). A new kind of state in this package must be added to
// the snapshot, or make it fail.
type Snapshot struct {
	// At is the instant the snapshot was taken.
	At Time
	// Unordered, set before TakeSnapshot, writes the events pending at
	// one instant sorted by what they do instead of in the order they
	// will run, for a caller whose instants' outcomes do not depend on
	// the order of their events (the executor's, see algos): two states
	// that differ only in that order are then equal.
	Unordered bool
	words     []uint64
	// refs lists the handler events the state names, as handler<<48|arg,
	// once per place they are pending (queue, flow, flag waiter).
	refs      []uint64
	processed uint64
	nets      []netMark
	scratch   [][3]uint64
}

// netMark is what Advance needs of a network beyond the snapshot's words.
type netMark struct {
	nextID            FlowID
	started, finished uint64
	logPos            int
}

// Equal reports whether s and o describe the same state (each relative to
// its own instant).
func (s *Snapshot) Equal(o *Snapshot) bool { return slices.Equal(s.words, o.words) }

// Grow makes room for n words, so that a snapshot of about that size
// allocates once.
func (s *Snapshot) Grow(n int) { s.words = slices.Grow(s.words[:0], n) }

// Size returns the snapshot's length in 64-bit words.
func (s *Snapshot) Size() int { return len(s.words) }

// Refs calls fn for every handler event the state names (pending in the
// queue, as a flow's callback or as a flag waiter's), once per place.
func (s *Snapshot) Refs(fn func(h HandlerID, arg int64)) {
	for _, w := range s.refs {
		fn(HandlerID(w>>argBits), int64(w&MaxArg))
	}
}

func (s *Snapshot) put(v ...uint64) { s.words = append(s.words, v...) }

func (s *Snapshot) putTime(t Time) { s.words = append(s.words, uint64(t-s.At)) }

func (s *Snapshot) putFloat(f float64) { s.words = append(s.words, math.Float64bits(f)) }

func (s *Snapshot) putString(v string) {
	s.put(uint64(len(v)))
	for i := 0; i < len(v); i += 8 {
		var w uint64
		for j := i; j < i+8 && j < len(v); j++ {
			w = w<<8 | uint64(v[j])
		}
		s.put(w)
	}
}

// Tags of what a pending callback is.
const (
	tagNone = iota
	tagHandler
	tagSettle
	tagTick
	tagStaleTick
)

// TakeSnapshot writes the engine's state now into s (reusing its storage)
// and reports whether it could. flagBase[i] is the base value of the
// flag of Index i (0 beyond its end: a flag the caller does not know). The first snapshot starts a log of
// the bytes each resource carries, which Advance replays; the log is kept
// from the oldest snapshot the caller still holds (see Forget), up to a
// limit past which no snapshot can be taken.
func (e *Engine) TakeSnapshot(s *Snapshot, flagBase []int64) bool {
	s.At, s.words, s.refs, s.nets = e.now, s.words[:0], s.refs[:0], s.nets[:0]
	s.processed = e.processed
	for _, n := range e.nets {
		if n.obs != nil || n.log.full {
			return false
		}
		n.log.on = true
	}
	names := e.funcNames()
	ok := true
	runAt, runFrom := Time(-1), 0
	e.q.each(func(at Time, ev *event) {
		if s.Unordered && at != runAt {
			s.sortRun(runFrom)
			runAt, runFrom = at, len(s.words)
		}
		s.putTime(at)
		if ev.fn != nil {
			ok = ok && s.putFunc(names, ev.fn)
			return
		}
		if nh, isNet := e.handlers[ev.arg>>argBits].(*netHandler); isNet {
			s.putNetEvent((*Network)(nh), int64(ev.arg&MaxArg))
			return
		}
		s.put(tagHandler, ev.arg)
		s.refs = append(s.refs, ev.arg)
	})
	if !ok {
		return false
	}
	if s.Unordered {
		s.sortRun(runFrom)
	}
	s.put(uint64(len(e.flags)))
	for i, f := range e.flags {
		if !s.putFlag(names, f, at(flagBase, i)) {
			return false
		}
	}
	s.put(uint64(len(e.nets)))
	for _, n := range e.nets {
		if !s.putNetwork(names, n) {
			return false
		}
	}
	return true
}

// funcNames returns the closures made by Func, by key.
func (e *Engine) funcNames() map[uintptr]uint64 {
	if e.names == nil {
		e.names = make(map[uintptr]uint64, len(e.funcs))
	}
	for _, f := range e.funcs[len(e.names):] {
		e.names[f.key] = f.arg
	}
	return e.names
}

// putFunc writes a callback: nothing, or a closure made by Func.
func (s *Snapshot) putFunc(names map[uintptr]uint64, fn func()) bool {
	if fn == nil {
		s.put(tagNone)
		return true
	}
	w, ok := names[funcKey(fn)]
	if !ok {
		return false
	}
	s.put(tagHandler, w)
	s.refs = append(s.refs, w)
	return true
}

func (s *Snapshot) putNetEvent(n *Network, arg int64) {
	switch {
	case arg == 0:
		s.put(tagSettle)
	case n.tickLive && arg == n.tickGen:
		s.put(tagTick)
	default:
		s.put(tagStaleTick)
	}
}

func (s *Snapshot) putFlag(names map[uintptr]uint64, f *FlagVar, base int64) bool {
	s.put(uint64(f.value-base), uint64(len(f.waiters)))
	for _, w := range f.waiters {
		s.put(uint64(w.want-base), uint64(w.delay))
		if !s.putFunc(names, w.fn) {
			return false
		}
	}
	return true
}

func (s *Snapshot) putNetwork(names map[uintptr]uint64, n *Network) bool {
	s.nets = append(s.nets, netMark{nextID: n.nextID, started: n.started, finished: n.finished, logPos: n.log.base + len(n.log.recs)})
	s.put(b2u(n.pending), b2u(n.tickLive))
	if n.tickLive {
		s.putTime(n.tickAt)
	}
	s.put(uint64(len(n.dirtyRes)))
	for _, r := range n.dirtyRes {
		s.put(uint64(r.ID))
	}
	s.put(uint64(len(n.dirtyFlows)))
	for _, f := range n.dirtyFlows {
		s.put(uint64(n.nextID - f.ID))
	}
	s.put(uint64(len(n.res)))
	for _, r := range n.res {
		s.putFloat(r.load)
		if r.load > 0 {
			s.putTime(r.since)
		}
	}
	flows := n.activeFlows(nil)
	slices.SortFunc(flows, byID)
	s.put(uint64(len(flows)))
	for _, f := range flows {
		s.put(uint64(n.nextID-f.ID), b2u(f.dueG != nil))
		s.putTime(f.Start)
		s.putTime(f.since)
		s.putTime(f.finish)
		s.putFloat(f.rate)
		s.putFloat(f.remaining)
		sp := &f.Spec
		s.put(uint64(sp.Kind), uint64(sp.Class), uint64(sp.Bytes), uint64(sp.Latency))
		s.putFloat(float64(sp.Cap))
		s.putString(sp.Label)
		s.put(uint64(len(sp.Route)))
		for _, h := range sp.Route {
			s.put(uint64(h.Res))
			s.putFloat(h.Weight)
		}
		if !s.putFunc(names, sp.Done) {
			return false
		}
		if sp.Sent != nil {
			return false // a closure: what it does is not named
		}
	}
	return true
}

// at returns v[i], or 0 beyond v's end.
func at(v []int64, i int) int64 {
	if i < len(v) {
		return v[i]
	}
	return 0
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// Advance moves the engine forward by periods times the period between
// from and to, two Equal snapshots of which to was taken now, without
// running the events in between: every pending event, flow and busy
// interval moves later by that time, flow IDs and the counts of events
// and flows grow by what one period added, each flag's value and waits by
// periods × flagStep[its Index] (0 beyond the slice's end), and each
// resource's carried bytes by the
// period's busy intervals, added again in order. The state is then the one
// running those periods would have left.
func (e *Engine) Advance(from, to *Snapshot, periods int, flagStep []int64) {
	k := uint64(periods)
	d := Duration(to.At-from.At) * Duration(periods)
	e.q.shift(d)
	e.now = e.now.Add(d)
	e.processed += k * (to.processed - from.processed)
	for i, f := range e.flags {
		dv := int64(periods) * at(flagStep, i)
		f.value += dv
		for i := range f.waiters {
			f.waiters[i].want += dv
		}
	}
	for i, n := range e.nets {
		n.advance(from.nets[i], to.nets[i], periods, d)
	}
}

func (n *Network) advance(from, to netMark, periods int, d Duration) {
	k := uint64(periods)
	dID := FlowID(k) * (to.nextID - from.nextID)
	n.nextID += dID
	n.started += k * (to.started - from.started)
	n.finished += k * (to.finished - from.finished)
	for _, f := range n.activeFlows(nil) {
		f.ID += dID
		f.Start = f.Start.Add(d)
		f.since = f.since.Add(d)
		f.finish = f.finish.Add(d)
	}
	n.shiftDue(d)
	for _, r := range n.res {
		r.since = r.since.Add(d)
	}
	n.tickAt = n.tickAt.Add(d)
	n.replay(n.log.recs[from.logPos-n.log.base:to.logPos-n.log.base], periods)
}

// replay adds the wire bytes of recs, a period's log, to their resources
// periods times over, in order: record by record, as they were added,
// into a dense table of the resources' sums (the resources' fields are
// written once at the end), so each resource's additions are those of
// running the periods.
func (n *Network) replay(recs []loadRec, periods int) {
	if len(recs) == 0 || periods <= 0 {
		return
	}
	acc := n.replayAcc[:0]
	for _, r := range n.res {
		acc = append(acc, r.bytes)
	}
	replayInto(acc, recs, periods)
	for i, r := range n.res {
		r.bytes = acc[i]
	}
	n.replayAcc = acc
}

// replayInto adds recs' increments to acc by resource, periods times
// over. Kept out of line, its loop runs in registers.
//
//go:noinline
func replayInto(acc []float64, recs []loadRec, periods int) {
	for range periods {
		for _, x := range recs {
			acc[x.res] += x.inc
		}
	}
}

// Forget tells the engine that no snapshot older than s will be passed to
// Advance: the log of carried bytes before it is dropped.
func (e *Engine) Forget(s *Snapshot) {
	for i, n := range e.nets {
		if i < len(s.nets) {
			n.log.trim(s.nets[i].logPos)
		}
	}
}

// EndSnapshots tells the engine that no more snapshots will be taken or
// passed to Advance: the log of carried bytes stops.
func (e *Engine) EndSnapshots() {
	for _, n := range e.nets {
		n.log = loadLog{full: true}
	}
}

// loadLog records the wire bytes added to each resource, in order, while
// snapshots are taken, so that Advance can add a period's again.
type loadLog struct {
	on   bool
	full bool // it passed maxLoadLog records: no more snapshots
	base int  // position of recs[0] in the whole log
	recs []loadRec
}

type loadRec struct {
	res int32
	inc float64
}

// maxLoadLog bounds the log (16 bytes a record): a run whose periods
// change loads more often than this is not skipped.
const maxLoadLog = 1 << 18

func (l *loadLog) add(r *Resource, inc float64) {
	if len(l.recs) == maxLoadLog {
		l.on, l.full, l.recs = false, true, nil
		return
	}
	if len(l.recs) == cap(l.recs) {
		// Double: append grows a long slice by a quarter at a time, and
		// the log's copies are most of what a run allocates.
		recs := make([]loadRec, len(l.recs), max(1024, 2*cap(l.recs)))
		copy(recs, l.recs)
		l.recs = recs
	}
	l.recs = append(l.recs, loadRec{res: int32(r.ID), inc: inc})
}

func (l *loadLog) trim(pos int) {
	k := pos - l.base
	if k <= 0 || l.full {
		return
	}
	l.recs = l.recs[:copy(l.recs, l.recs[k:])]
	l.base = pos
}

// sortRun sorts the events written from word from on, all pending at one
// instant, by their words. An event is its time and two words (a
// handler event or a closure: tag and handler<<48|arg; none: tag and 0)
// or one (a network's own event).
func (s *Snapshot) sortRun(from int) {
	run := s.words[from:]
	if len(run) <= 3 {
		return
	}
	evs := s.scratch[:0]
	for i := 0; i < len(run); {
		var e [3]uint64
		e[0] = run[i+1]
		n := 2
		if e[0] == tagHandler {
			e[1] = run[i+2]
			n = 3
		}
		e[2] = uint64(n)
		evs = append(evs, e)
		i += n
	}
	slices.SortFunc(evs, func(a, b [3]uint64) int {
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		return cmp.Compare(a[1], b[1])
	})
	t := run[0]
	w := run[:0]
	for _, e := range evs {
		w = append(w, t, e[0])
		if e[2] == 3 {
			w = append(w, e[1])
		}
	}
	s.scratch = evs
}
