package sim

import (
	"fmt"
	"math"
)

// ResourceID names a resource of a Network: its index in creation order.
type ResourceID int

// FlowID names a flow of a Network, in order of creation (from 1).
type FlowID uint64

// FlowKind says what kind of transfer a flow is. The engine treats the kinds
// alike except for collapse rules; the kind is carried for observers and
// for the physics layer that sets caps and weights.
type FlowKind uint8

// Flow kinds.
const (
	// Write is a posted write: streams at its fair share, needs no answer.
	Write FlowKind = iota
	// Read is the completion stream of non-posted reads: its rate is capped
	// at bytes in flight / round-trip time by whoever starts it.
	Read
	// Copy is a copy-engine transfer (DMA), with its own window and setup cost.
	Copy
	// Flag is a tiny posted write that signals a flag.
	Flag
)

var kindNames = [...]string{"write", "read", "copy", "flag"}

// String returns "write", "read", "copy" or "flag".
func (k FlowKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Collapse describes a resource whose capacity drops when posted writes of
// several classes cross it at once: the posted-write collapse seen on some
// platforms when one root port writes to GPUs behind two or more other root
// complexes. Class is the flow's destination root complex.
type Collapse struct {
	Kind       FlowKind // flows of this kind count (normally Write)
	MinClasses int      // distinct classes at once that trigger the collapse (≥ 2)
	Capacity   Rate     // aggregate capacity while collapsed, bytes/s
}

// Resource is one direction of a link, a memory or any other shared
// capacity. Fields are read-only after creation.
type Resource struct {
	ID       ResourceID
	Name     string
	Capacity Rate // bytes per second of wire traffic
	Collapse *Collapse

	load  float64   // wire bytes/s carried now
	since Time      // when load last changed
	bytes float64   // wire bytes carried so far
	rem   float64   // scratch for the fair-share solver
	wsum  float64   // scratch
	mark  uint64    // solver stamp
	visit uint64    // component-search stamp
	dirty bool      // its set of flows changed since the last settle
	flows []flowRef // active flows crossing it, one entry per hop
}

// flowRef is one hop of an active flow, as listed by the hop's resource.
type flowRef struct {
	f   *Flow
	hop int32
}

// Load returns the wire bytes per second the resource carries now.
func (r *Resource) Load() Rate { return Rate(r.load) }

// Carried returns the wire bytes the resource carried up to the last change of its load.
func (r *Resource) Carried() float64 { return r.bytes }

// Hop is one resource of a flow's route and the wire bytes the flow puts on
// it per payload byte (1 when zero; 16/15 for 120-of-128-byte lines, 2 for
// 8-of-16, 1+24/128 for PCIe TLPs of 128 B).
type Hop struct {
	Res    ResourceID
	Weight float64
}

// FlowSpec describes a transfer to start.
type FlowSpec struct {
	Label   string   // for observers and error messages
	Kind    FlowKind // write, read, copy or flag
	Class   int      // for collapse rules (destination root complex); ≤ 0: not counted
	Route   []Hop    // resources crossed; may be empty if Cap > 0
	Bytes   Bytes    // payload bytes, ≥ 0
	Cap     Rate     // the flow's own rate limit in payload bytes/s; 0 = none
	Latency Duration // Done runs this long after the last byte leaves
	Done    func()   // called at delivery; may be nil
	Sent    func()   // called when the last byte leaves (an event at that instant); may be nil
	// Started, when set, is called with the flow as it starts, after it
	// joined the network (for SetCap; a Launch's record is reused once
	// the flow finishes, so keep its ID with it).
	Started func(*Flow)
	Meta    any // carried for observers
}

// inlineHops is how many hops a flow keeps without a separate allocation.
const inlineHops = 4

// Flow is an active or finished transfer.
type Flow struct {
	ID    FlowID
	Spec  FlowSpec
	Start Time

	rate      float64 // payload bytes/s
	next      float64 // rate computed by the current solve
	remaining float64 // payload bytes left at time since
	since     Time
	finish    Time // when the last byte leaves at the current rate
	visit     uint64
	dueG      *dueGroup // the flow's group in the due set, nil if not there
	dueI      int32     // its position in dueG.flows
	index     int32     // position in Network.routeless (a flow without a route), −1 when inactive
	frozen    bool
	active    bool
	pooled    bool    // started by Launch: the record is reused after it finishes
	slots     []int32 // slots[i]: position in the flows list of hop i's resource
	rh        []hop   // rh[i]: hop i's resource and weight (normalised)
	routeID   int32   // its prepared route's number (memo.go), 0 for a route of its own
	hopBuf    [inlineHops]Hop
	slotBuf   [inlineHops]int32
	rhBuf     [inlineHops]hop
	// Longer routes' storage, kept with a reused record: PCIe routes of
	// reads have 5–8 hops.
	hopMore  []Hop
	slotMore []int32
	rhMore   []hop
}

// hop is a hop of a flow's route as the solver reads it: its resource
// and its weight (Spec.Route's, normalised).
type hop struct {
	r *Resource
	w float64
}

// Rate returns the flow's current payload rate.
func (f *Flow) Rate() Rate { return Rate(f.rate) }

// Finish returns when the last byte leaves at the current rate.
func (f *Flow) Finish() Time { return f.finish }

// Active reports whether the flow has started and not finished.
func (f *Flow) Active() bool { return f.active }

// SetCap sets active flow f's own rate cap (0: none) from now on, its
// component solved again at this instant, if f is still the flow numbered
// id and has not finished; it reports whether it did.
func (n *Network) SetCap(f *Flow, id FlowID, c Rate) (bool, error) {
	if f == nil || f.ID != id || !f.active {
		return false, nil
	}
	if !(c >= 0 && c <= math.MaxFloat64) { // NaN fails both
		return false, fmt.Errorf("sim: flow %q: cap must be a finite rate ≥ 0, got %v", f.Spec.Label, float64(c))
	}
	if c == 0 && len(f.rh) == 0 {
		return false, fmt.Errorf("sim: flow %q: needs a route or a rate cap", f.Spec.Label)
	}
	if f.Spec.Cap == c {
		return true, nil
	}
	f.Spec.Cap = c
	if len(f.rh) > 0 {
		n.markDirty(f.rh[0].r)
	} else {
		n.dirtyFlows = append(n.dirtyFlows, f)
	}
	n.dirty()
	return true, nil
}

// Observer receives everything the network does. Calls arrive in simulated
// time order. Implementations must not start or stop flows.
type Observer interface {
	FlowStarted(t Time, f *Flow)
	FlowRateChanged(t Time, f *Flow)
	// FlowFinished runs when the last byte leaves; delivery follows after
	// f.Spec.Latency.
	FlowFinished(t Time, f *Flow)
	// ResourceBusy reports that r carried load wire bytes/s during [from, to).
	ResourceBusy(r *Resource, from, to Time, load Rate)
}

// Network is a set of resources shared by flows under weighted max-min
// fairness. It runs on one Engine.
//
// Rates are solved per connected component: two active flows are in one
// component when they cross a common resource, directly or through other
// flows. When flows start or finish, only the components that contain
// their resources are solved again; every other flow keeps its rate, which
// is bit for bit what solving it again would give (see solve). A
// component's flows are solved in canonical order (see canonical), so the
// rates do not depend on the order in which the flows of one instant
// started, and every event of the network settles it (see settle), so
// nothing depends on which of an instant's events ran first.
type Network struct {
	eng       *Engine
	res       []*Resource
	active    int     // flows now active
	routeless []*Flow // active flows without a route, in no particular order
	obs       Observer
	nextID    FlowID
	started   uint64
	finished  uint64
	handler   HandlerID // settles the network: argument 0 now, else a completion tick
	pending   bool      // a settle is queued for this instant
	// The completion tick: one event at the earliest finish (dueNext); it
	// carries a generation so that ticks superseded by a later settle do
	// nothing.
	tickGen  int64
	tickAt   Time
	tickLive bool
	// Flows that have a rate, by finish (due.go): the next completion is
	// dueHeap[0]'s.
	dueHeap   []*dueGroup
	dueRecent [dueRecentSize]*dueGroup
	dueFree   []*dueGroup
	dueTaken  []*Flow
	// What changed since the last settle: resources whose flows changed,
	// and started flows without a route (each its own component).
	dirtyRes   []*Resource
	dirtyFlows []*Flow
	// Stamps and scratch, reused so that a settle allocates nothing.
	epoch, solveEpoch uint64
	act, touch        []*Resource
	comp, all, done   []*Flow
	changed           []*Flow // flows whose rate changed, for observers
	classes           []int
	byIDScratch       []*Flow
	free              []*Flow // finished Launch records, for reuse
	// log of the wire bytes added to resources, for Advance (see Snapshot).
	log       loadLog
	replayAcc []float64 // scratch of replay
	// Solved components kept (memo.go), and the numbers of prepared
	// routes by their hops.
	memo        map[uint64]int32
	memoEntries []memoEntry
	sig         []uint64
	routeIDs    map[string]int32
	// reference makes every settle solve every component from scratch
	// (tests compare it with the incremental path).
	reference bool
}

// NewNetwork returns an empty network driven by e. The engine lists it,
// so that a Snapshot covers it.
func NewNetwork(e *Engine) *Network {
	n := &Network{eng: e}
	n.handler = e.Register((*netHandler)(n))
	e.nets = append(e.nets, n)
	return n
}

// netHandler runs the network's events: a settle at the instant a flow
// started (argument 0) and completion ticks (their generation).
type netHandler Network

func (h *netHandler) Handle(arg int64) {
	n := (*Network)(h)
	if arg == 0 {
		n.pending = false
	} else if !n.tickLive || arg != n.tickGen {
		return // superseded by a later settle
	} else {
		n.tickLive = false
	}
	n.settle()
}

// Engine returns the engine the network runs on.
func (n *Network) Engine() *Engine { return n.eng }

// SetObserver installs o (nil removes it).
func (n *Network) SetObserver(o Observer) { n.obs = o }

// AddResource adds a resource with the given capacity in bytes per second.
func (n *Network) AddResource(name string, capacity Rate) (ResourceID, error) {
	if !(capacity > 0) || math.IsInf(float64(capacity), 0) {
		return 0, fmt.Errorf("sim: resource %q: capacity must be a positive finite rate, got %v B/s", name, float64(capacity))
	}
	id := ResourceID(len(n.res))
	n.res = append(n.res, &Resource{ID: id, Name: name, Capacity: capacity})
	return id, nil
}

// SetCollapse attaches a collapse rule to resource id.
func (n *Network) SetCollapse(id ResourceID, c Collapse) error {
	r, err := n.resource(id)
	if err != nil {
		return err
	}
	if c.MinClasses < 2 || !(c.Capacity > 0) {
		return fmt.Errorf("sim: resource %q: collapse needs MinClasses ≥ 2 and a positive capacity, got %d and %v B/s", r.Name, c.MinClasses, float64(c.Capacity))
	}
	r.Collapse = &c
	n.memo, n.memoEntries = nil, nil // kept rates assumed the old capacity
	return nil
}

// Resource returns the resource with the given id, or nil.
func (n *Network) Resource(id ResourceID) *Resource {
	if int(id) < 0 || int(id) >= len(n.res) {
		return nil
	}
	return n.res[id]
}

// Resources returns all resources in ID order. The slice is shared.
func (n *Network) Resources() []*Resource { return n.res }

// Active returns the number of flows now moving bytes.
func (n *Network) Active() int { return n.active }

// activeFlows appends every active flow to fs, in no particular order:
// those with a route as listed by the resource of their first hop, then
// the routeless ones.
func (n *Network) activeFlows(fs []*Flow) []*Flow {
	for _, r := range n.res {
		for _, ref := range r.flows {
			if ref.hop == 0 {
				fs = append(fs, ref.f)
			}
		}
	}
	return append(fs, n.routeless...)
}

// Counts returns how many flows have started and finished.
func (n *Network) Counts() (started, finished uint64) { return n.started, n.finished }

func (n *Network) resource(id ResourceID) (*Resource, error) {
	if r := n.Resource(id); r != nil {
		return r, nil
	}
	return nil, fmt.Errorf("sim: no resource %d (network has %d)", id, len(n.res))
}

// Start begins a flow now. It returns an error, and starts nothing, when the
// spec is invalid: negative bytes or latency, a route naming an unknown
// resource, a negative weight, or neither a route nor a cap.
func (n *Network) Start(spec FlowSpec) (*Flow, error) { return n.start(&spec, nil, false) }

// Launch is Start for callers that do not keep the flow: the network
// reuses the flow's record once it has finished, so a long run allocates
// no memory per flow. Observers must not keep the *Flow they are given
// beyond the call.
func (n *Network) Launch(spec FlowSpec) error {
	_, err := n.start(&spec, nil, true)
	return err
}

// start takes the spec by reference (it copies it into the flow): Launch,
// inlined into its callers, then passes the caller's spec without a copy.
// With a prepared route pr (LaunchOn) the flow crosses pr, whose hops
// were checked when it was prepared, instead of spec.Route.
func (n *Network) start(spec *FlowSpec, pr *PreparedRoute, pooled bool) (*Flow, error) {
	if err := n.checkSpec(spec, pr); err != nil {
		return nil, err
	}
	n.nextID++
	n.started++
	now := n.eng.Now()
	var f *Flow
	if k := len(n.free); pooled && k > 0 {
		f = n.free[k-1]
		n.free[k-1] = nil
		n.free = n.free[:k-1]
	} else {
		f = new(Flow)
	}
	// f is new or cleared when it last finished: set what is not zero.
	f.ID, f.Spec, f.Start = n.nextID, *spec, now
	f.remaining, f.since = float64(spec.Bytes), now
	f.active, f.pooled, f.dueI, f.index = true, pooled, -1, -1
	if pr != nil {
		// The prepared route's hops and resources, shared: nothing
		// writes them.
		k := len(pr.hops)
		f.Spec.Route, f.rh, f.routeID = pr.hops, pr.rh, pr.id
		if k <= inlineHops {
			f.slots = f.slotBuf[:k:k]
		} else {
			if k > cap(f.slotMore) {
				f.slotMore = make([]int32, k)
			}
			f.slots = f.slotMore[:k:k]
		}
	} else {
		n.copyRoute(f, spec.Route)
		f.routeID = 0
	}
	if n.obs != nil {
		n.obs.FlowStarted(now, f)
	}
	if spec.Bytes == 0 {
		n.finish(f, now)
		return f, nil
	}
	n.attach(f)
	n.dirty()
	if spec.Started != nil {
		spec.Started(f)
	}
	return f, nil
}

// checkSpec returns the error of a spec that Start refuses (with a
// prepared route pr, the route is pr's, checked when it was prepared).
func (n *Network) checkSpec(spec *FlowSpec, pr *PreparedRoute) error {
	if spec.Bytes < 0 {
		return fmt.Errorf("sim: flow %q: bytes must be ≥ 0, got %d", spec.Label, spec.Bytes)
	}
	if spec.Latency < 0 {
		return fmt.Errorf("sim: flow %q: latency must be ≥ 0, got %v", spec.Label, spec.Latency)
	}
	if !(spec.Cap >= 0 && spec.Cap <= math.MaxFloat64) { // NaN fails both
		return fmt.Errorf("sim: flow %q: cap must be a finite rate ≥ 0, got %v", spec.Label, float64(spec.Cap))
	}
	route := spec.Route
	if pr != nil {
		if pr.n != n {
			return fmt.Errorf("sim: flow %q: its prepared route belongs to another network", spec.Label)
		}
		route = pr.hops
	}
	if len(route) == 0 && spec.Cap == 0 && spec.Bytes > 0 {
		return fmt.Errorf("sim: flow %q: needs a route or a rate cap", spec.Label)
	}
	if pr != nil {
		return nil
	}
	for i, h := range route {
		if uint(h.Res) >= uint(len(n.res)) || !(h.Weight >= 0 && h.Weight <= math.MaxFloat64) { // NaN fails both
			return n.badHop(spec, i)
		}
	}
	return nil
}

// copyRoute gives f its own copy of route, weights normalised, and the
// resources of its hops.
func (n *Network) copyRoute(f *Flow, route []Hop) {
	var own []Hop
	switch k := len(route); {
	case k <= inlineHops:
		own = f.hopBuf[:k:k]
		f.slots = f.slotBuf[:k:k]
		f.rh = f.rhBuf[:k:k]
	case k <= cap(f.hopMore) && k <= cap(f.rhMore):
		own = f.hopMore[:k:k]
		f.slots = f.slotMore[:k:k]
		f.rh = f.rhMore[:k:k]
	default:
		f.hopMore, f.slotMore, f.rhMore = make([]Hop, k), make([]int32, k), make([]hop, k)
		own, f.slots, f.rh = f.hopMore, f.slotMore, f.rhMore
	}
	for i, h := range route {
		if h.Weight == 0 {
			h.Weight = 1
		}
		own[i] = h
		f.rh[i] = hop{n.res[h.Res], h.Weight}
	}
	f.Spec.Route = own
}

// badHop words the error of a spec whose hop i names no resource or has
// a weight that is not finite and ≥ 0.
func (n *Network) badHop(spec *FlowSpec, i int) error {
	h := spec.Route[i]
	if _, err := n.resource(h.Res); err != nil {
		return fmt.Errorf("sim: flow %q hop %d: %w", spec.Label, i, err)
	}
	return fmt.Errorf("sim: flow %q hop %d (%s): weight must be finite and ≥ 0, got %v", spec.Label, i, n.res[h.Res].Name, h.Weight)
}

// attach makes f active: listed by the network and by every resource it
// crosses, which become dirty.
func (n *Network) attach(f *Flow) {
	n.active++
	for i, h := range f.rh {
		r := h.r
		f.slots[i] = int32(len(r.flows))
		r.flows = append(r.flows, flowRef{f: f, hop: int32(i)})
		n.markDirty(r)
	}
	if len(f.Spec.Route) == 0 {
		f.index = int32(len(n.routeless))
		n.routeless = append(n.routeless, f)
		n.dirtyFlows = append(n.dirtyFlows, f)
	}
}

// detach removes an active flow from the network's and its resources' lists.
func (n *Network) detach(f *Flow) {
	n.active--
	if len(f.Spec.Route) == 0 {
		k := len(n.routeless) - 1
		last := n.routeless[k]
		n.routeless[f.index] = last
		last.index = f.index
		n.routeless[k] = nil
		n.routeless = n.routeless[:k]
		f.index = -1
	}
	for i, h := range f.rh {
		r := h.r
		p := f.slots[i]
		k := len(r.flows) - 1
		moved := r.flows[k]
		r.flows[p] = moved
		moved.f.slots[moved.hop] = p
		r.flows[k] = flowRef{}
		r.flows = r.flows[:k]
		n.markDirty(r)
	}
}

func (n *Network) markDirty(r *Resource) {
	if !r.dirty {
		r.dirty = true
		n.dirtyRes = append(n.dirtyRes, r)
	}
}

// dirty asks for one settle at the current instant, after every other
// event already queued for it: flows that start or end at the same
// picosecond share one solve. Rates read before it runs are stale.
func (n *Network) dirty() {
	if n.pending {
		return
	}
	n.pending = true
	n.eng.CallAt(n.eng.Now(), n.handler, 0)
}

// finish ends a flow whose last byte leaves now.
func (n *Network) finish(f *Flow, now Time) {
	f.active = false
	f.remaining = 0
	f.rate = 0
	f.since = now
	f.finish = now
	n.finished++
	if n.obs != nil {
		n.obs.FlowFinished(now, f)
	}
	if sent := f.Spec.Sent; sent != nil {
		n.eng.After(0, sent)
	}
	if done := f.Spec.Done; done != nil {
		n.eng.After(f.Spec.Latency, done)
	}
	if f.pooled {
		f.clear()
		n.free = append(n.free, f)
	}
}

// clear readies a finished flow's record for reuse without rewriting all
// of it: what observers can see is zeroed (finish zeroed the rate and the
// bytes left), references are dropped, and the solver's scratch (next,
// frozen, the visit stamp) and the inline hop buffers are left, as start
// and solve write them before they are read.
func (f *Flow) clear() {
	f.ID, f.Start, f.since, f.finish = 0, 0, 0, 0
	f.Spec.Label, f.Spec.Route, f.Spec.Done, f.Spec.Sent, f.Spec.Meta, f.Spec.Started = "", nil, nil, nil, nil, nil
	f.dueG, f.dueI, f.index, f.active, f.pooled = nil, 0, 0, false, false
	f.slots, f.rh = nil, nil
}
