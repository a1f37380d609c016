package sim

import (
	"fmt"
	"math"
	"unsafe"
)

// Engine is a single-threaded discrete-event loop. Events run in order of
// (time, sequence): the sequence is the order in which they were
// scheduled, so ties never depend on heap internals. The zero Engine is not
// usable; call NewEngine.
//
// An event is either a closure (At, After) or a handler event (CallAt,
// CallAfter): a registered Handler and an integer argument. Handler events
// allocate nothing, and a Snapshot can name them, which it cannot do for an
// arbitrary closure.
//
// The engine also keeps a list of the flags and networks made on it, so
// that a Snapshot covers them all by construction.
type Engine struct {
	now       Time
	q         queue
	processed uint64
	maxEvents uint64
	running   bool // inside Run or RunUntil
	stop      bool // Stop was called: Run returns after the current event
	instant   bool // StopAfterInstant was called: Run returns after the instant's last event
	handlers  []Handler
	funcs     []funcRec          // closures made by Func, for snapshots
	names     map[uintptr]uint64 // funcs by key, made by the first snapshot
	flags     []*FlagVar
	nets      []*Network
}

// Handler runs events that carry an argument instead of a closure. Many
// events of one kind (an executor's op completions) share one Handler and
// differ by their argument.
type Handler interface {
	Handle(arg int64)
}

// HandlerID names a Handler registered with an engine.
type HandlerID int32

// MaxArg is the largest argument a handler event can carry: the handler's
// ID and the argument share one 64-bit word (16 and 48 bits).
const MaxArg = 1<<argBits - 1

const (
	argBits     = 48
	maxHandlers = 1 << (64 - argBits)
)

// event is a closure, or (fn nil) a handler event: handler ID << argBits |
// argument in arg.
type event struct {
	fn  func()
	arg uint64
}

// funcRec names a closure made by Func: its closure record's address and
// the handler event it runs.
type funcRec struct {
	key uintptr
	arg uint64 // as in event
}

// NewEngine returns an engine at time zero with an empty queue.
func NewEngine() *Engine { return &Engine{} }

// Now returns the current simulated time.
func (e *Engine) Now() Time { return e.now }

// Processed returns the number of events run so far.
func (e *Engine) Processed() uint64 { return e.processed }

// Pending returns the number of events still queued.
func (e *Engine) Pending() int { return e.q.pending }

// SetEventLimit makes Run stop with an error after n events (0: no limit).
// It guards against schedules that loop forever.
func (e *Engine) SetEventLimit(n uint64) { e.maxEvents = n }

// EventLimit returns the limit set by SetEventLimit (0: none).
func (e *Engine) EventLimit() uint64 { return e.maxEvents }

// At schedules fn to run at time t. Scheduling in the past is a bug in the
// caller and panics with a message naming both times.
func (e *Engine) At(t Time, fn func()) {
	if t < e.now {
		e.past(t)
	}
	e.q.push(t, event{fn: fn})
}

// After schedules fn to run d after now. A negative d panics.
func (e *Engine) After(d Duration, fn func()) { e.At(e.now.Add(d), fn) }

// Register adds h to the engine's handlers and returns its ID, for
// CallAt, CallAfter and Func. An engine takes up to 65,536 handlers.
func (e *Engine) Register(h Handler) HandlerID {
	if len(e.handlers) == maxHandlers {
		panic("sim: more than 65536 handlers registered on one engine")
	}
	e.handlers = append(e.handlers, h)
	return HandlerID(len(e.handlers) - 1)
}

// handlerArg packs a handler event's word, checking both parts.
func (e *Engine) handlerArg(h HandlerID, arg int64) uint64 {
	if uint(h) >= uint(len(e.handlers)) || uint64(arg) > MaxArg {
		e.badHandlerArg(h, arg)
	}
	return uint64(h)<<argBits | uint64(arg)
}

// badHandlerArg panics: h is not registered, or arg is outside 0–MaxArg.
func (e *Engine) badHandlerArg(h HandlerID, arg int64) {
	if uint(h) >= uint(len(e.handlers)) {
		panic(fmt.Sprintf("sim: handler %d is not registered (%d are)", h, len(e.handlers)))
	}
	panic(fmt.Sprintf("sim: handler argument %d outside 0–%d", arg, int64(MaxArg)))
}

// CallAt schedules h.Handle(arg) at time t (see At).
func (e *Engine) CallAt(t Time, h HandlerID, arg int64) {
	if t < e.now || uint(h) >= uint(len(e.handlers)) || uint64(arg) > MaxArg {
		e.badCall(t, h, arg)
	}
	e.q.push(t, event{arg: uint64(h)<<argBits | uint64(arg)})
}

// badCall panics: CallAt was asked for a time before now, a handler not
// registered or an argument outside 0–MaxArg.
func (e *Engine) badCall(t Time, h HandlerID, arg int64) {
	if t < e.now {
		e.past(t)
	}
	e.badHandlerArg(h, arg)
}

// past panics: an event was scheduled at t, before now.
func (e *Engine) past(t Time) {
	panic(fmt.Sprintf("sim: event scheduled at %v, before now (%v)", t, e.now))
}

// CallAfter schedules h.Handle(arg) d after now.
func (e *Engine) CallAfter(d Duration, h HandlerID, arg int64) { e.CallAt(e.now.Add(d), h, arg) }

// Func returns a closure that runs h.Handle(arg), for APIs that take a
// callback (a flow's Done, a flag's waiter). A Snapshot names such a
// closure by its handler and argument wherever it is pending; it cannot
// name other closures. Make one per (handler, argument) and keep it: each
// call allocates.
func (e *Engine) Func(h HandlerID, arg int64) func() {
	w := e.handlerArg(h, arg)
	hd := e.handlers[h]
	fn := func() { hd.Handle(arg) }
	e.funcs = append(e.funcs, funcRec{key: funcKey(fn), arg: w})
	return fn
}

// funcKey returns the address of fn's closure record. A func value is a
// pointer to its closure record (the gc toolchain's representation), so
// two func values have the same key exactly when they are the same
// closure; Func keeps its closures alive, so their keys are not reused.
func funcKey(fn func()) uintptr { return uintptr(*(*unsafe.Pointer)(unsafe.Pointer(&fn))) }

// Stop makes the Run or RunUntil now running return, without error, after
// the event now running; outside them it does nothing. The queue is kept:
// calling Run again continues.
func (e *Engine) Stop() {
	if e.running {
		e.stop = true
	}
}

// StopAfterInstant makes the Run now running return, without error, once
// every event at the current instant has run (those it schedules at the
// instant too): the state is then the instant's end, which does not depend
// on the order of the instant's events. Outside Run it does nothing.
func (e *Engine) StopAfterInstant() {
	if e.running {
		e.stop, e.instant = true, true
	}
}

// Step runs the next event and reports whether there was one.
func (e *Engine) Step() bool {
	if e.q.pending == 0 {
		return false
	}
	e.step()
	return true
}

// step runs the next event; the queue must not be empty.
func (e *Engine) step() {
	at, ev := e.q.pop()
	e.now = at
	e.processed++
	if ev.fn != nil {
		ev.fn()
	} else {
		e.handlers[ev.arg>>argBits].Handle(int64(ev.arg & MaxArg))
	}
}

// Run runs events until the queue is empty or Stop is called. It returns
// an error only when the event limit set by SetEventLimit is reached.
func (e *Engine) Run() error {
	e.running = true
	defer e.halt()
	limit := e.maxEvents
	if limit == 0 {
		limit = math.MaxUint64
	}
	for e.q.pending > 0 {
		if e.processed >= limit {
			return fmt.Errorf("sim: stopped after %d events at %v with %d still queued (event limit)", e.processed, e.now, e.q.pending)
		}
		e.step()
		if e.stop && (!e.instant || e.q.pending == 0 || e.q.next() > e.now) {
			break
		}
	}
	return nil
}

func (e *Engine) halt() { e.running, e.stop, e.instant = false, false, false }

// RunUntil runs every event at or before t, then sets the clock to t; if
// Stop is called it returns after that event, clock unchanged.
func (e *Engine) RunUntil(t Time) error {
	e.running = true
	defer e.halt()
	for e.q.pending > 0 && e.q.next() <= t {
		if e.maxEvents > 0 && e.processed >= e.maxEvents {
			return fmt.Errorf("sim: stopped after %d events at %v (event limit)", e.processed, e.now)
		}
		e.Step()
		if e.stop {
			return nil
		}
	}
	if t > e.now {
		e.now = t
	}
	return nil
}
