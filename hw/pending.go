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
	starts     []pendingStart
	startFree  []int32
	lands      []landing
	landFree   []int32
	// Waits polling host memory (WaitFlag): the wait's state, and the
	// flag waiter each slot hands its flag (made once per slot).
	hSeen, hPolled sim.HandlerID
	polls          []pollWait
	pollSeen       []func()
	pollFree       []int32
}

// pollWait is a wait polling a flag in host memory: its poll loop's
// share of the flag's pollers (fp, rank r), the sector it polls, the
// loop's round trip and the memory's service time per poll, what the
// wait adds (extra) and its callback.
type pollWait struct {
	fp              *flagPoll
	r               int
	sec             int32
	rtt, svc, extra sim.Duration
	fn              func()
}

// seenHandler runs when a polled flag holds the value waited for: the
// loop sees it one poll period later, the period set by the sector's
// pollers now.
type seenHandler Machine

func (h *seenHandler) Handle(arg int64) {
	m := (*Machine)(h)
	w := &m.pend.polls[arg]
	period := pollPeriod(w.rtt, m.pollers[w.sec], w.svc)
	m.Eng.CallAfter(period+w.extra, m.pend.hPolled, arg)
}

// polledHandler ends a wait polling host memory: its loop leaves the
// sector's pollers when it was the rank's last wait on the flag.
type polledHandler Machine

func (h *polledHandler) Handle(arg int64) {
	m := (*Machine)(h)
	w := m.pend.polls[arg]
	m.pend.polls[arg] = pollWait{}
	m.pend.pollFree = append(m.pend.pollFree, int32(arg))
	if w.fp.waits[w.r]--; w.fp.waits[w.r] == 0 {
		m.pollers[w.sec]--
	}
	w.fn()
}

// newPoll keeps w in a free slot and returns the slot.
func (m *Machine) newPoll(w pollWait) int32 {
	m.registerPending()
	if k := len(m.pend.pollFree); k > 0 {
		i := m.pend.pollFree[k-1]
		m.pend.pollFree = m.pend.pollFree[:k-1]
		m.pend.polls[i] = w
		return i
	}
	i := int32(len(m.pend.polls))
	m.pend.polls = append(m.pend.polls, w)
	m.pend.pollSeen = append(m.pend.pollSeen, m.Eng.Func(m.pend.hSeen, int64(i)))
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
	st := m.pend.starts[arg]
	m.pend.starts[arg] = pendingStart{}
	m.pend.startFree = append(m.pend.startFree, int32(arg))
	// The route and sizes were checked when it was scheduled; Launch
	// cannot fail here.
	if st.pr != nil {
		_ = m.Net.LaunchOn(st.pr, &st.spec)
	} else {
		_ = m.Net.Launch(st.spec)
	}
}

type landHandler Machine

func (h *landHandler) Handle(arg int64) {
	m := (*Machine)(h)
	l := m.pend.lands[arg]
	m.pend.lands[arg] = landing{}
	m.pend.landFree = append(m.pend.landFree, int32(arg))
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
	var i int32
	if k := len(m.pend.startFree); k > 0 {
		i = m.pend.startFree[k-1]
		m.pend.startFree = m.pend.startFree[:k-1]
		m.pend.starts[i] = pendingStart{*spec, pr}
	} else {
		i = int32(len(m.pend.starts))
		m.pend.starts = append(m.pend.starts, pendingStart{*spec, pr})
	}
	m.Eng.CallAfter(d, m.pend.hStart, int64(i))
}

// setAfter sets flag f to value d from now.
func (m *Machine) setAfter(d sim.Duration, f *sim.FlagVar, value int64) {
	m.registerPending()
	var i int32
	if k := len(m.pend.landFree); k > 0 {
		i = m.pend.landFree[k-1]
		m.pend.landFree = m.pend.landFree[:k-1]
		m.pend.lands[i] = landing{f: f, value: value}
	} else {
		i = int32(len(m.pend.lands))
		m.pend.lands = append(m.pend.lands, landing{f: f, value: value})
	}
	m.Eng.CallAfter(d, m.pend.hLand, int64(i))
}
