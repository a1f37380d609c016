package sim

import "fmt"

// FlagVar is a flag in some memory: a counter that writers raise and waiters
// poll. A wait for value v ends when the flag holds at least v, plus the
// waiter's polling delay (the time its poll loop needs to see the new value,
// set by the physics layer: about one read round trip to the flag's memory).
// Flags only grow, like the epoch counters of custom-allreduce barriers.
type FlagVar struct {
	eng     *Engine
	index   int
	Name    string
	value   int64
	waiters []flagWaiter
}

type flagWaiter struct {
	want  int64
	delay Duration
	who   fmt.Stringer
	fn    func()
}

// NewFlag returns a flag holding 0. The engine lists it, so that a
// Snapshot covers every flag.
func NewFlag(e *Engine, name string) *FlagVar {
	f := &FlagVar{eng: e, Name: name, index: len(e.flags)}
	e.flags = append(e.flags, f)
	return f
}

// Index returns the flag's number on its engine: flags are numbered from
// 0 in the order they were made (for Snapshot and Advance).
func (f *FlagVar) Index() int { return f.index }

// Value returns the flag's current value.
func (f *FlagVar) Value() int64 { return f.value }

// Set stores v now (a write landing). Values lower than the current one are
// ignored: flags only grow. Waiters whose value is reached are released
// after their polling delay.
func (f *FlagVar) Set(v int64) {
	if v <= f.value {
		return
	}
	f.value = v
	ws := f.waiters
	kept := 0
	for i := range ws {
		if w := &ws[i]; w.want <= v {
			f.eng.After(w.delay, w.fn)
		} else {
			if kept < i {
				ws[kept] = *w
			}
			kept++
		}
	}
	for i := kept; i < len(ws); i++ {
		ws[i] = flagWaiter{}
	}
	f.waiters = ws[:kept]
}

// Wait runs fn once the flag holds at least want, pollDelay after the value
// lands (or pollDelay from now if it already holds). who names the waiter in
// deadlock reports; it is only formatted then.
func (f *FlagVar) Wait(want int64, pollDelay Duration, who fmt.Stringer, fn func()) {
	if f.value >= want {
		f.eng.After(pollDelay, fn)
		return
	}
	f.waiters = append(f.waiters, flagWaiter{want: want, delay: pollDelay, who: who, fn: fn})
}

// Blocked lists the waits still pending, as "who waits for flag ≥ v (holds u)".
func (f *FlagVar) Blocked() []string {
	out := make([]string, 0, len(f.waiters))
	for _, w := range f.waiters {
		out = append(out, fmt.Sprintf("%s waits for %s ≥ %d (holds %d)", w.who, f.Name, w.want, f.value))
	}
	return out
}

// Name is a fixed waiter name for FlagVar.Wait.
type Name string

func (n Name) String() string { return string(n) }
