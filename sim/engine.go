package sim

import "fmt"

// Engine is a single-threaded discrete-event loop. Events run in order of
// (time, sequence): the sequence number is the order in which they were
// scheduled, so ties never depend on heap internals. The zero Engine is not
// usable; call NewEngine.
type Engine struct {
	now       Time
	seq       uint64
	heap      []event
	processed uint64
	maxEvents uint64
	cur       uint64 // sequence number of the event running now
}

type event struct {
	at  Time
	seq uint64
	fn  func()
}

// NewEngine returns an engine at time zero with an empty queue.
func NewEngine() *Engine { return &Engine{} }

// Now returns the current simulated time.
func (e *Engine) Now() Time { return e.now }

// Processed returns the number of events run so far.
func (e *Engine) Processed() uint64 { return e.processed }

// Pending returns the number of events still queued.
func (e *Engine) Pending() int { return len(e.heap) }

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
	e.push(event{at: t, seq: e.seq, fn: fn})
	return e.seq
}

// After schedules fn to run d after now. A negative d panics.
func (e *Engine) After(d Duration, fn func()) { e.At(e.now.Add(d), fn) }

// Step runs the next event and reports whether there was one.
func (e *Engine) Step() bool {
	if len(e.heap) == 0 {
		return false
	}
	ev := e.pop()
	e.now = ev.at
	e.cur = ev.seq
	e.processed++
	ev.fn()
	return true
}

// Run runs events until the queue is empty. It returns an error only when
// the event limit set by SetEventLimit is reached.
func (e *Engine) Run() error {
	for len(e.heap) > 0 {
		if e.maxEvents > 0 && e.processed >= e.maxEvents {
			return fmt.Errorf("sim: stopped after %d events at %v with %d still queued (event limit)", e.processed, e.now, len(e.heap))
		}
		e.Step()
	}
	return nil
}

// RunUntil runs every event at or before t, then sets the clock to t.
func (e *Engine) RunUntil(t Time) error {
	for len(e.heap) > 0 && e.heap[0].at <= t {
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

func less(a, b *event) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

func (e *Engine) push(ev event) {
	e.heap = append(e.heap, ev)
	h := e.heap
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !less(&h[i], &h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (e *Engine) pop() event {
	h := e.heap
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h[n] = event{}
	h = h[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && less(&h[r], &h[l]) {
			m = r
		}
		if !less(&h[m], &h[i]) {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	e.heap = h
	return top
}
