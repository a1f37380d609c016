package sim

import "fmt"

// Engine is a single-threaded discrete-event loop. Events run in order of
// (time, sequence): the sequence number is the order in which they were
// scheduled, so ties never depend on heap internals. The zero Engine is not
// usable; call NewEngine.
//
// Events are kept in groups of one time, each a FIFO in sequence order (a
// group only takes events scheduled after all it holds), and the groups in
// a heap by (time, first sequence number). Simulations of symmetric
// machines schedule thousands of events at a few instants; a group is
// found by its time in a small direct-mapped table, so such events cost a
// table probe and an append instead of a heap insertion each.
type Engine struct {
	now       Time
	seq       uint64
	heap      []groupRef
	pending   int
	processed uint64
	maxEvents uint64
	cur       uint64 // sequence number of the event running now
	// recent[h] is the newest group of a recent time hashing to h; only
	// the newest group of a time may take more events.
	recent [recentSize]*group
	free   []*group
}

const recentSize = 256

// group holds the pending events of one time, in sequence order.
type group struct {
	at     Time
	events []event // events[head:] are pending
	head   int
	live   bool // in the heap
}

type event struct {
	seq uint64
	fn  func()
}

// groupRef is a heap entry: a group and its key, kept by value so that
// comparisons need not load the group.
type groupRef struct {
	at  Time
	seq uint64 // sequence number of the group's first event
	g   *group
}

// NewEngine returns an engine at time zero with an empty queue.
func NewEngine() *Engine { return &Engine{} }

// Now returns the current simulated time.
func (e *Engine) Now() Time { return e.now }

// Processed returns the number of events run so far.
func (e *Engine) Processed() uint64 { return e.processed }

// Pending returns the number of events still queued.
func (e *Engine) Pending() int { return e.pending }

// SetEventLimit makes Run stop with an error after n events (0: no limit).
// It guards against schedules that loop forever.
func (e *Engine) SetEventLimit(n uint64) { e.maxEvents = n }

// At schedules fn to run at time t. Scheduling in the past is a bug in the
// caller and panics with a message naming both times.
func (e *Engine) At(t Time, fn func()) {
	if t < e.now {
		panic(fmt.Sprintf("sim: event scheduled at %v, before now (%v)", t, e.now))
	}
	e.at(t, fn)
}

// at schedules fn at t and returns its sequence number.
func (e *Engine) at(t Time, fn func()) uint64 {
	e.seq++
	e.pending++
	h := &e.recent[uint64(t)*0x9E3779B97F4A7C15>>(64-8)]
	g := *h
	if g == nil || g.at != t || !g.live {
		g = e.newGroup(t)
		*h = g
		e.push(groupRef{at: t, seq: e.seq, g: g})
	}
	g.events = append(g.events, event{seq: e.seq, fn: fn})
	return e.seq
}

func (e *Engine) newGroup(t Time) *group {
	var g *group
	if k := len(e.free); k > 0 {
		g = e.free[k-1]
		e.free = e.free[:k-1]
	} else {
		g = new(group)
	}
	g.at, g.live = t, true
	return g
}

// After schedules fn to run d after now. A negative d panics.
func (e *Engine) After(d Duration, fn func()) { e.At(e.now.Add(d), fn) }

// Step runs the next event and reports whether there was one.
func (e *Engine) Step() bool {
	if e.pending == 0 {
		return false
	}
	g := e.heap[0].g
	ev := g.events[g.head]
	g.events[g.head] = event{}
	g.head++
	if g.head == len(g.events) {
		// The group is spent: events scheduled for its time from now on
		// go to a new group, after those of any later-sequenced group.
		e.pop()
		g.live = false
		g.events = g.events[:0]
		g.head = 0
		e.free = append(e.free, g)
	}
	e.pending--
	e.now = g.at
	e.cur = ev.seq
	e.processed++
	ev.fn()
	return true
}

// Run runs events until the queue is empty. It returns an error only when
// the event limit set by SetEventLimit is reached.
func (e *Engine) Run() error {
	for e.pending > 0 {
		if e.maxEvents > 0 && e.processed >= e.maxEvents {
			return fmt.Errorf("sim: stopped after %d events at %v with %d still queued (event limit)", e.processed, e.now, e.pending)
		}
		e.Step()
	}
	return nil
}

// RunUntil runs every event at or before t, then sets the clock to t.
func (e *Engine) RunUntil(t Time) error {
	for e.pending > 0 && e.heap[0].at <= t {
		if e.maxEvents > 0 && e.processed >= e.maxEvents {
			return fmt.Errorf("sim: stopped after %d events at %v (event limit)", e.processed, e.now)
		}
		e.Step()
	}
	if t > e.now {
		e.now = t
	}
	return nil
}

func less(a, b *groupRef) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

// The groups' heap is 4-ary: shallower than a binary one, its children
// share cache lines.

func (e *Engine) push(x groupRef) {
	e.heap = append(e.heap, x)
	h := e.heap
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !less(&x, &h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = x
}

func (e *Engine) pop() {
	h := e.heap
	n := len(h) - 1
	x := h[n]
	h[n] = groupRef{}
	h = h[:n]
	e.heap = h
	if n == 0 {
		return
	}
	i := 0
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c
		for k := c + 1; k < c+4 && k < n; k++ {
			if less(&h[k], &h[m]) {
				m = k
			}
		}
		if !less(&h[m], &x) {
			break
		}
		h[i] = h[m]
		i = m
	}
	h[i] = x
}
