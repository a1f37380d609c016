package sim

import (
	"fmt"
	"math"
	"slices"
)

// settle brings the network up to date at the current instant: the flows
// whose last byte has left by now finish, the components that changed
// since the last settle are solved again, and the completion tick is
// scheduled at the earliest finish. Every event of the network is a
// settle, so what a settle leaves does not depend on which of the
// instant's events ran before it: a flow due now finishes now, even if a
// flow that started at this instant shares its resources. Finished flows
// report in ID order, after the solve.
func (n *Network) settle() {
	now := n.eng.Now()
	done := n.takeDue(now, n.done[:0])
	for _, f := range done {
		n.detach(f)
	}
	if n.reference || len(n.dirtyRes) > 0 || len(n.dirtyFlows) > 0 {
		n.reshare(now)
	}
	if len(n.dueHeap) > 0 && (!n.tickLive || n.tickAt != n.dueNext()) {
		n.tickGen++
		n.tickAt, n.tickLive = n.dueNext(), true
		n.eng.CallAt(n.tickAt, n.handler, n.tickGen)
	}
	for _, f := range done {
		n.finish(f, now)
	}
	n.done = done[:0] // not cleared: at most one settle's flows
}

// canonical orders the flows of a component for the solver: by start
// time, then by what the solver reads of them (route, weights, cap, kind,
// class), then by ID. Flows that tie up to the ID are alike to the solver,
// so the solver's sums do not depend on the order in which flows started
// within one instant.
func canonical(a, b *Flow) int {
	if a.Start != b.Start {
		if a.Start < b.Start {
			return -1
		}
		return 1
	}
	ra, rb := a.Spec.Route, b.Spec.Route
	if len(ra) > 0 && len(ra) == len(rb) && &ra[0] == &rb[0] {
		ra, rb = nil, nil // one route (a prepared one, shared): equal hop by hop
	}
	for i := 0; i < len(ra) && i < len(rb); i++ {
		if ra[i].Res != rb[i].Res {
			if ra[i].Res < rb[i].Res {
				return -1
			}
			return 1
		}
		if ra[i].Weight != rb[i].Weight {
			if ra[i].Weight < rb[i].Weight {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(ra) != len(rb):
		return len(ra) - len(rb)
	case a.Spec.Cap != b.Spec.Cap:
		if a.Spec.Cap < b.Spec.Cap {
			return -1
		}
		return 1
	case a.Spec.Kind != b.Spec.Kind:
		return int(a.Spec.Kind) - int(b.Spec.Kind)
	case a.Spec.Class != b.Spec.Class:
		if a.Spec.Class < b.Spec.Class {
			return -1
		}
		return 1
	}
	return byID(a, b)
}

func byID(a, b *Flow) int {
	switch {
	case a.ID < b.ID:
		return -1
	case a.ID > b.ID:
		return 1
	}
	return 0
}

// reshare solves again the components that changed since the last settle
// (weighted max-min fairness with per-flow caps, by progressive filling),
// updates rates and finish times, and reports changes in flow ID and
// resource ID order.
func (n *Network) reshare(now Time) {
	if n.reference {
		for _, r := range n.res {
			n.markDirty(r)
		}
		n.dirtyFlows = append(n.dirtyFlows, n.routeless...)
	}
	all, touch := n.solveDirty()
	n.applyRates(now, all)
	n.updateLoads(now, all, touch)
	// The scratch slices are not cleared: the resources live as long as
	// the network, and the flows they name are at most one settle's.
	n.all = all[:0]
	n.touch = touch[:0]
}

// solveDirty solves every component holding a dirty resource or a dirty
// routeless flow. It returns the flows solved, each component's in
// canonical order, and the resources of those components.
func (n *Network) solveDirty() (all []*Flow, touch []*Resource) {
	n.epoch++
	ep := n.epoch
	all = n.all[:0]
	touch = n.touch[:0]
	for _, f := range n.dirtyFlows {
		if f.active && f.visit != ep {
			f.visit = ep
			comp := append(n.comp[:0], f)
			n.solve(comp)
			n.comp = comp
			all = append(all, f)
		}
	}
	clear(n.dirtyFlows)
	n.dirtyFlows = n.dirtyFlows[:0]
	for _, r0 := range n.dirtyRes {
		r0.dirty = false
		if r0.visit == ep {
			continue
		}
		// Breadth-first search of r0's component over resources and flows.
		r0.visit = ep
		touch = append(touch, r0)
		if len(r0.flows) == 0 {
			continue // its flows finished: its load is now zero
		}
		if f := r0.flows[0].f; len(r0.flows) == 1 && lone(f) {
			touch = n.solveLone(f, ep, touch)
			all = append(all, f)
			continue
		}
		if comp, ok := n.soleAlike(r0, ep); ok {
			n.solveAlike(comp)
			all = append(all, comp...)
			continue
		}
		var comp []*Flow
		comp, touch = n.component(r0, ep, touch)
		switch {
		case len(comp) == 0:
		case alike(comp):
			n.solveAlike(comp)
			all = append(all, comp...)
		default:
			slices.SortFunc(comp, canonical)
			n.solveKept(comp)
			all = append(all, comp...)
		}
		n.comp = comp
	}
	n.dirtyRes = n.dirtyRes[:0] // not cleared: resources live as long as the network
	return all, touch
}

// component returns r0's component, found by a breadth-first search over
// flows (each flow's resources, then their flows), every flow and
// resource marked visited by ep, the resources other than r0 appended to
// touch.
func (n *Network) component(r0 *Resource, ep uint64, touch []*Resource) ([]*Flow, []*Resource) {
	comp := n.comp[:0]
	for _, ref := range r0.flows {
		if f := ref.f; f.visit != ep {
			f.visit = ep
			comp = append(comp, f)
		}
	}
	for i := 0; i < len(comp); i++ {
		for _, h := range comp[i].rh {
			r := h.r
			if r.visit == ep {
				continue
			}
			r.visit = ep
			touch = append(touch, r)
			for _, ref := range r.flows {
				if f := ref.f; f.visit != ep {
					f.visit = ep
					comp = append(comp, f)
				}
			}
		}
	}
	n.comp = comp
	return comp, touch
}

// applyRates gives each solved flow its new rate: the bytes it moved at
// the old rate are counted, and its finish time is computed again.
func (n *Network) applyRates(now Time, all []*Flow) {
	changed := n.changed[:0]
	// Alike flows follow each other with the same bytes left and rate:
	// the last finish's duration is kept for them.
	lastRem, lastRate, lastD := -1.0, 0.0, Duration(0)
	for _, f := range all {
		if f.next == f.rate && f.dueG != nil {
			continue
		}
		f.remaining -= f.rate * now.Sub(f.since).Seconds()
		if f.remaining < 0 {
			f.remaining = 0
		}
		f.since = now
		f.rate = f.next
		if f.remaining != lastRem || f.rate != lastRate {
			d, err := FromSeconds(f.remaining / f.rate)
			if err != nil || f.rate <= 0 {
				noBandwidth(f)
			}
			lastRem, lastRate, lastD = f.remaining, f.rate, d
		}
		f.finish = now.Add(lastD)
		n.fixDue(f)
		if n.obs != nil {
			changed = append(changed, f)
		}
	}
	if n.obs != nil {
		// Observers hear of rate changes in flow ID order.
		slices.SortFunc(changed, byID)
		for _, f := range changed {
			n.obs.FlowRateChanged(now, f)
		}
		clear(changed)
	}
	n.changed = changed[:0]
}

// noBandwidth panics: f got no rate.
func noBandwidth(f *Flow) {
	panic(fmt.Sprintf("sim: flow %q got no bandwidth (rate %v B/s); a resource on its route has no capacity", f.Spec.Label, f.rate))
}

// solve computes the rates of one component, whose flows comp holds in
// canonical order, into each flow's next field. It is progressive filling
// written for the component alone: the resources are visited in order of
// first use (flows in canonical order, hops in route order), the level
// starts at zero, and
// every sum, product and comparison is the one a solver of this component
// alone would do, in the same order. The rates are therefore a function of
// the component's flows and capacities only, whatever else is active, and
// solving a component again that did not change gives the same bits.
func (n *Network) solve(comp []*Flow) {
	const eps = 1e-9
	n.solveEpoch++
	ep := n.solveEpoch
	act := n.act[:0]
	for _, f := range comp {
		f.frozen = false
		f.next = 0
		for _, h := range f.rh {
			r := h.r
			if r.mark != ep {
				r.mark = ep
				r.wsum = 0
				act = append(act, r)
			}
			r.wsum += h.w
		}
	}
	n.act = act
	for _, r := range act {
		r.rem = n.capOf(r)
	}
	level := 0.0
	left := len(comp)
	for left > 0 {
		delta := math.Inf(1)
		for _, r := range act {
			if r.wsum > 0 {
				if d := r.rem / r.wsum; d < delta {
					delta = d
				}
			}
		}
		for _, f := range comp {
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
		for _, f := range comp {
			if f.frozen {
				continue
			}
			hit := f.Spec.Cap > 0 && float64(f.Spec.Cap)-level <= eps*float64(f.Spec.Cap)
			for _, h := range f.rh {
				if r := h.r; r.rem <= eps*float64(r.Capacity) {
					hit = true
					break
				}
			}
			if !hit {
				continue
			}
			// Frozen flows leave the weight sums.
			f.frozen = true
			f.next = level
			left--
			for _, h := range f.rh {
				h.r.wsum -= h.w
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
}

// capOf is capacity as a float64, inlined where r has no collapse rule.
func (n *Network) capOf(r *Resource) float64 {
	if r.Collapse == nil {
		return float64(r.Capacity)
	}
	return float64(n.capacity(r))
}

// capacity returns r's capacity now, lowered by its collapse rule if the
// active flows crossing it trigger it.
func (n *Network) capacity(r *Resource) Rate {
	c := r.Collapse
	if c == nil {
		return r.Capacity
	}
	classes := n.classes[:0]
	for _, ref := range r.flows {
		f := ref.f
		if f.Spec.Kind != c.Kind || f.Spec.Class <= 0 || slices.Contains(classes, f.Spec.Class) {
			continue
		}
		classes = append(classes, f.Spec.Class)
	}
	n.classes = classes
	if len(classes) >= c.MinClasses && c.Capacity < r.Capacity {
		return c.Capacity
	}
	return r.Capacity
}

// updateLoads closes the busy interval of each resource in touch whose
// load changed. The loads are summed over the solved flows all, which hold
// every flow crossing those resources, in canonical order per resource.
func (n *Network) updateLoads(now Time, all []*Flow, touch []*Resource) {
	for _, r := range touch {
		r.wsum = 0 // reused as the new load
	}
	for _, f := range all {
		for _, h := range f.rh {
			h.r.wsum += f.rate * h.w
		}
	}
	if n.obs != nil {
		// Deterministic order: by resource ID.
		slices.SortFunc(touch, func(a, b *Resource) int { return int(a.ID - b.ID) })
	}
	for _, r := range touch {
		if r.wsum != r.load {
			if r.load > 0 && now > r.since {
				inc := r.load * now.Sub(r.since).Seconds()
				r.bytes += inc
				if n.log.on {
					n.log.add(r, inc)
				}
				if n.obs != nil {
					n.obs.ResourceBusy(r, r.since, now, Rate(r.load))
				}
			}
			r.load = r.wsum
			r.since = now
		}
	}
}
