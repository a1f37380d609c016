package sim

import (
	"fmt"
	"math"
	"slices"
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

	load  float64 // wire bytes/s carried now
	since Time    // when load last changed
	bytes float64 // wire bytes carried so far
	rem   float64 // scratch for the fair-share solver
	wsum  float64 // scratch
	mark  uint64  // scratch
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
	Meta    any      // carried for observers
}

// Flow is an active or finished transfer.
type Flow struct {
	ID    FlowID
	Spec  FlowSpec
	Start Time

	rate      float64 // payload bytes/s
	remaining float64 // payload bytes left at time since
	since     Time
	finish    Time // when the last byte leaves at the current rate
	frozen    bool
	active    bool
	index     int // position in Network.flows
}

// Rate returns the flow's current payload rate.
func (f *Flow) Rate() Rate { return Rate(f.rate) }

// Finish returns when the last byte leaves at the current rate.
func (f *Flow) Finish() Time { return f.finish }

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
type Network struct {
	eng      *Engine
	res      []*Resource
	flows    []*Flow // active flows, in ID order
	obs      Observer
	nextID   FlowID
	version  uint64
	started  uint64
	finished uint64
	scratch  []float64
	// Solver bookkeeping: resources crossed by active flows, resources
	// carrying load, and a stamp to visit each once per pass.
	active, loaded, prevLoaded []*Resource
	epoch                      uint64
	pending                    bool // a reshare is queued for this instant
}

// NewNetwork returns an empty network driven by e.
func NewNetwork(e *Engine) *Network { return &Network{eng: e} }

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
func (n *Network) Active() int { return len(n.flows) }

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
func (n *Network) Start(spec FlowSpec) (*Flow, error) {
	if spec.Bytes < 0 {
		return nil, fmt.Errorf("sim: flow %q: bytes must be ≥ 0, got %d", spec.Label, spec.Bytes)
	}
	if spec.Latency < 0 {
		return nil, fmt.Errorf("sim: flow %q: latency must be ≥ 0, got %v", spec.Label, spec.Latency)
	}
	if spec.Cap < 0 || math.IsNaN(float64(spec.Cap)) || math.IsInf(float64(spec.Cap), 0) {
		return nil, fmt.Errorf("sim: flow %q: cap must be a finite rate ≥ 0, got %v", spec.Label, float64(spec.Cap))
	}
	if len(spec.Route) == 0 && spec.Cap == 0 && spec.Bytes > 0 {
		return nil, fmt.Errorf("sim: flow %q: needs a route or a rate cap", spec.Label)
	}
	route := make([]Hop, len(spec.Route))
	for i, h := range spec.Route {
		if _, err := n.resource(h.Res); err != nil {
			return nil, fmt.Errorf("sim: flow %q hop %d: %w", spec.Label, i, err)
		}
		if h.Weight < 0 || math.IsNaN(h.Weight) || math.IsInf(h.Weight, 0) {
			return nil, fmt.Errorf("sim: flow %q hop %d (%s): weight must be finite and ≥ 0, got %v", spec.Label, i, n.res[h.Res].Name, h.Weight)
		}
		if h.Weight == 0 {
			h.Weight = 1
		}
		route[i] = h
	}
	spec.Route = route
	n.nextID++
	n.started++
	now := n.eng.Now()
	f := &Flow{ID: n.nextID, Spec: spec, Start: now, remaining: float64(spec.Bytes), since: now, active: true}
	if n.obs != nil {
		n.obs.FlowStarted(now, f)
	}
	if spec.Bytes == 0 {
		n.finish(f, now)
		return f, nil
	}
	f.index = len(n.flows)
	n.flows = append(n.flows, f)
	n.dirty()
	return f, nil
}

// dirty asks for one reshare at the current instant, after every other
// event already queued for it: flows that start or end at the same
// picosecond share one solve. Rates read before it runs are stale.
func (n *Network) dirty() {
	if n.pending {
		return
	}
	n.pending = true
	n.eng.At(n.eng.Now(), func() {
		n.pending = false
		n.reshare()
	})
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
	if done := f.Spec.Done; done != nil {
		n.eng.After(f.Spec.Latency, done)
	}
}

// onTick completes the flows due now and reshares the rest.
func (n *Network) onTick(version uint64) {
	if version != n.version {
		return // superseded by a later reshare
	}
	now := n.eng.Now()
	kept := n.flows[:0]
	var done []*Flow
	for _, f := range n.flows {
		if f.finish <= now {
			done = append(done, f)
			continue
		}
		f.index = len(kept)
		kept = append(kept, f)
	}
	for i := len(kept); i < len(n.flows); i++ {
		n.flows[i] = nil
	}
	n.flows = kept
	// Take the finished flows' load off before they report, then report in ID order.
	n.reshare()
	for _, f := range done {
		n.finish(f, now)
	}
	n.pending = false
}

// reshare recomputes every active flow's rate by weighted max-min fairness
// with per-flow caps (progressive filling), updates finish times, reports
// changes and schedules the next completion.
func (n *Network) reshare() {
	now := n.eng.Now()
	const eps = 1e-9
	// The resources some active flow crosses, each once.
	n.epoch++
	act := n.active[:0]
	for _, f := range n.flows {
		f.frozen = false
		for _, h := range f.Spec.Route {
			r := n.res[h.Res]
			if r.mark != n.epoch {
				r.mark = n.epoch
				r.wsum = 0
				act = append(act, r)
			}
			r.wsum += h.Weight
		}
	}
	n.active = act
	for _, r := range act {
		r.rem = float64(n.capacity(r))
	}
	if cap(n.scratch) < len(n.flows) {
		n.scratch = make([]float64, len(n.flows), 2*len(n.flows))
	}
	newRate := n.scratch[:len(n.flows)]
	clear(newRate)
	level := 0.0
	left := len(n.flows)
	for left > 0 {
		delta := math.Inf(1)
		for _, r := range act {
			if r.wsum > 0 {
				if d := r.rem / r.wsum; d < delta {
					delta = d
				}
			}
		}
		for _, f := range n.flows {
			if !f.frozen && f.Spec.Cap > 0 {
				if d := float64(f.Spec.Cap) - level; d < delta {
					delta = d
				}
			}
		}
		if delta < 0 {
			delta = 0
		}
		level += delta
		for _, r := range act {
			if r.wsum > 0 {
				r.rem -= delta * r.wsum
			}
		}
		for i, f := range n.flows {
			if f.frozen {
				continue
			}
			hit := f.Spec.Cap > 0 && float64(f.Spec.Cap)-level <= eps*float64(f.Spec.Cap)
			for _, h := range f.Spec.Route {
				r := n.res[h.Res]
				if r.rem <= eps*float64(r.Capacity) {
					hit = true
					break
				}
			}
			if !hit {
				continue
			}
			// Frozen flows leave the weight sums.
			f.frozen = true
			newRate[i] = level
			left--
			for _, h := range f.Spec.Route {
				n.res[h.Res].wsum -= h.Weight
			}
		}
		// Guard the sums against rounding: a resource no unfrozen flow
		// crosses has weight exactly zero.
		if left > 0 {
			for _, r := range act {
				if r.wsum < 1e-12 {
					r.wsum = 0
				}
			}
		}
	}
	next := Time(math.MaxInt64)
	for i, f := range n.flows {
		if newRate[i] != f.rate {
			f.remaining -= f.rate * now.Sub(f.since).Seconds()
			if f.remaining < 0 {
				f.remaining = 0
			}
			f.since = now
			f.rate = newRate[i]
			d, err := FromSeconds(f.remaining / f.rate)
			if err != nil || f.rate <= 0 {
				panic(fmt.Sprintf("sim: flow %q got no bandwidth (rate %v B/s); a resource on its route has no capacity", f.Spec.Label, f.rate))
			}
			f.finish = now.Add(d)
			if n.obs != nil {
				n.obs.FlowRateChanged(now, f)
			}
		}
		if f.finish < next {
			next = f.finish
		}
	}
	n.updateLoads(now)
	if len(n.flows) > 0 {
		n.version++
		v := n.version
		n.eng.At(next, func() { n.onTick(v) })
	}
}

// capacity returns r's capacity now, lowered by its collapse rule if the
// active flows trigger it.
func (n *Network) capacity(r *Resource) Rate {
	c := r.Collapse
	if c == nil {
		return r.Capacity
	}
	var classes []int
	for _, f := range n.flows {
		if f.Spec.Kind != c.Kind || f.Spec.Class <= 0 {
			continue
		}
		for _, h := range f.Spec.Route {
			if h.Res == r.ID {
				seen := false
				for _, k := range classes {
					if k == f.Spec.Class {
						seen = true
						break
					}
				}
				if !seen {
					classes = append(classes, f.Spec.Class)
				}
				break
			}
		}
	}
	if len(classes) >= c.MinClasses && c.Capacity < r.Capacity {
		return c.Capacity
	}
	return r.Capacity
}

// updateLoads closes each resource's busy interval whose load changed. Only
// resources that carried load or carry it now are visited.
func (n *Network) updateLoads(now Time) {
	n.epoch++
	touched := n.loaded[:0]
	for _, r := range n.active {
		if r.mark != n.epoch {
			r.mark = n.epoch
			r.wsum = 0 // reused as the new load
			touched = append(touched, r)
		}
	}
	for _, r := range n.prevLoaded {
		if r.mark != n.epoch {
			r.mark = n.epoch
			r.wsum = 0
			touched = append(touched, r)
		}
	}
	for _, f := range n.flows {
		for _, h := range f.Spec.Route {
			n.res[h.Res].wsum += f.rate * h.Weight
		}
	}
	// Deterministic order: by resource ID.
	slices.SortFunc(touched, func(a, b *Resource) int { return int(a.ID - b.ID) })
	kept := n.prevLoaded[:0:0]
	for _, r := range touched {
		if r.wsum != r.load {
			if r.load > 0 && now > r.since {
				r.bytes += r.load * now.Sub(r.since).Seconds()
				if n.obs != nil {
					n.obs.ResourceBusy(r, r.since, now, Rate(r.load))
				}
			}
			r.load = r.wsum
			r.since = now
		}
		if r.load > 0 {
			kept = append(kept, r)
		}
	}
	n.loaded = touched
	n.prevLoaded = kept
}
