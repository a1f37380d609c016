package hw

import "github.com/arsim/arsim/sim"

// Delayed flow starts and flag landings are handler events of the
// machine's (sim.Engine.CallAt) whose argument is a slot in a table of
// what they do, reused once they have run: unlike a closure per call,
// they allocate nothing. A snapshot names them by slot, which says
// nothing of their content, so, as with closures, none is taken while
// one is pending (the executor's periodic detection finds callbacks of
// other handlers and waits for a later allreduce).

// pending is the machine's table of delayed starts and landings.
type pending struct {
	registered bool
	hStart     sim.HandlerID
	hLand      sim.HandlerID
	starts     []pendingStart
	startFree  []int32
	lands      []landing
	landFree   []int32
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
