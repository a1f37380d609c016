package hw

import "github.com/arsim/arsim/sim"

// Delayed flow starts and flag landings are handler events of the
// machine's (sim.Engine.CallAt) whose argument is a slot in a table of
// what they do, reused once they have run: unlike a closure per call,
// they allocate nothing. So are the two steps of a wait polling host
// memory (WaitFlag): the flag's waiter, a closure made once per slot by
// sim.Engine.Func, and the end of the poll period that sees the value. A
// snapshot names them by slot, which says nothing of their content, so,
// as with closures, none is taken while one is pending (the executor's
// periodic detection finds callbacks of other handlers and waits for a
// later allreduce).

// pending is the machine's table of delayed starts, landings and polls.
type pending struct {
	registered bool
	hStart     sim.HandlerID
	hLand      sim.HandlerID
	starts     slotTable[pendingStart]
	lands      slotTable[landing]
	// Waits polling host memory (WaitFlag): the wait's state, and the
	// flag waiter each slot hands its flag (made once per slot).
	hSeen, hPolled sim.HandlerID
	polls          slotTable[pollWait]
	pollSeen       []func()
}

// slotTable keeps values in slots that are reused once taken.
type slotTable[T any] struct {
	items []T
	free  []int32
}

// put keeps v in a free slot, or a new one (fresh), and returns the slot.
func (t *slotTable[T]) put(v T) (i int32, fresh bool) {
	if k := len(t.free); k > 0 {
		i = t.free[k-1]
		t.free = t.free[:k-1]
		t.items[i] = v
		return i, false
	}
	t.items = append(t.items, v)
	return int32(len(t.items) - 1), true
}

// take returns slot i's value and frees the slot.
func (t *slotTable[T]) take(i int64) T {
	v := t.items[i]
	var zero T
	t.items[i] = zero
	t.free = append(t.free, int32(i))
	return v
}

// pollWait is a wait polling a flag in host memory: its poll loop's rank
// (r), the sector it polls, the loop's round trip and the memory's service
// time per poll, what the wait adds (extra: a block barrier's
// synchronisation, the sector's slots and their collisions) and its
// callback.
type pollWait struct {
	r                     int
	sec                   int32
	rtt, svc, line, extra sim.Duration
	inLine                int8 // sectors of its line polled and written (sectorPolls.lineSectors)
	fn                    func()
}

// seenHandler runs when a polled flag holds the value waited for: the
// loop sees it one poll period later, the period set by the sector's
// pollers now.
type seenHandler Machine

func (h *seenHandler) Handle(arg int64) {
	m := (*Machine)(h)
	w := &m.pend.polls.items[arg]
	sp := &m.sectorPolls[w.sec]
	period := slotsPeriod(w.rtt, w.svc, w.line, sp.pollers, int(w.inLine), sp.slots)
	m.Eng.CallAfter(period+w.extra, m.pend.hPolled, arg)
}

// polledHandler ends a wait polling host memory: its loop leaves the
// sector's pollers when it was the rank's last wait on the sector.
type polledHandler Machine

func (h *polledHandler) Handle(arg int64) {
	m := (*Machine)(h)
	w := m.pend.polls.take(arg)
	sp := &m.sectorPolls[w.sec]
	if sp.waits[w.r]--; sp.waits[w.r] == 0 {
		sp.pollers--
	}
	w.fn()
}

// newPoll keeps w in a free slot and returns the slot.
func (m *Machine) newPoll(w pollWait) int32 {
	m.registerPending()
	i, fresh := m.pend.polls.put(w)
	if fresh {
		m.pend.pollSeen = append(m.pend.pollSeen, m.Eng.Func(m.pend.hSeen, int64(i)))
	}
	return i
}

// pendingStart is a flow to start: its spec, and its prepared route when
// not nil.
type pendingStart struct {
	spec sim.FlowSpec
	pr   *sim.PreparedRoute
}

// landing is a flag store on its way: f is set to value when it lands.
type landing struct {
	f     *sim.FlagVar
	value int64
}

type startHandler Machine

func (h *startHandler) Handle(arg int64) {
	m := (*Machine)(h)
	st := m.pend.starts.take(arg)
	// The route and sizes were checked when it was scheduled; the launch
	// cannot fail here.
	_ = m.launchNow(0, st.spec, st.pr, true)
}

type landHandler Machine

func (h *landHandler) Handle(arg int64) {
	m := (*Machine)(h)
	l := m.pend.lands.take(arg)
	l.f.Set(l.value)
}

func (m *Machine) registerPending() {
	if !m.pend.registered {
		m.pend.registered = true
		m.pend.hStart = m.Eng.Register((*startHandler)(m))
		m.pend.hLand = m.Eng.Register((*landHandler)(m))
		m.pend.hSeen = m.Eng.Register((*seenHandler)(m))
		m.pend.hPolled = m.Eng.Register((*polledHandler)(m))
	}
}

// launchAfter starts spec's flow d from now (on prepared route pr, when
// not nil).
func (m *Machine) launchAfter(d sim.Duration, spec *sim.FlowSpec, pr *sim.PreparedRoute) {
	m.registerPending()
	i, _ := m.pend.starts.put(pendingStart{*spec, pr})
	m.Eng.CallAfter(d, m.pend.hStart, int64(i))
}

// setAfter sets flag f to value d from now.
func (m *Machine) setAfter(d sim.Duration, f *sim.FlagVar, value int64) {
	m.registerPending()
	i, _ := m.pend.lands.put(landing{f: f, value: value})
	m.Eng.CallAfter(d, m.pend.hLand, int64(i))
}
