package sim

import "math"

// Components of alike flows
//
// Symmetric collectives start many flows at once that the solver cannot
// tell apart: a ring's ranks each write their chunks' parts to the next
// rank over the same link, with the same weights and cap. When every flow
// of a component has the same route (resources and weights) and cap, the
// solver's sums and comparisons are the same whatever the flows' order,
// and every flow gets the same rate: the component needs no canonical
// sort, and progressive filling needs to follow one flow only
// (solveAlike). The loads summed afterwards (updateLoads) add equal terms,
// so their order does not matter either.

// alike reports whether every flow of comp has comp[0]'s route, weights
// and cap.
func alike(comp []*Flow) bool {
	f0 := comp[0]
	r0, c0 := f0.Spec.Route, f0.Spec.Cap
	for _, f := range comp[1:] {
		r := f.Spec.Route
		if f.Spec.Cap != c0 || len(r) != len(r0) {
			return false
		}
		for i := range r {
			if r[i] != r0[i] {
				return false
			}
		}
	}
	return true
}

// soleAlike returns r0's flows as a component of alike flows, each
// marked visited by ep, when each crosses r0 only, with the same weight
// and cap (then they are the whole component, which the search would
// find in the same order). Otherwise it marks nothing and returns false.
func (n *Network) soleAlike(r0 *Resource, ep uint64) ([]*Flow, bool) {
	f0 := r0.flows[0].f
	if len(f0.Spec.Route) != 1 {
		return nil, false
	}
	h0, c0 := f0.Spec.Route[0], f0.Spec.Cap
	for _, ref := range r0.flows[1:] {
		if r := ref.f.Spec.Route; len(r) != 1 || r[0] != h0 || ref.f.Spec.Cap != c0 {
			return nil, false
		}
	}
	comp := n.comp[:0]
	for _, ref := range r0.flows {
		ref.f.visit = ep
		comp = append(comp, ref.f)
	}
	n.comp = comp
	return comp, true
}

// solveAlike is solve for a component of alike flows (see alike), in any
// order: it makes the sums solve makes, flow by flow and hop by hop, and
// then the same progressive filling, whose every step is the same for
// each flow, so that all freeze at once at the same level.
func (n *Network) solveAlike(comp []*Flow) {
	const eps = 1e-9
	n.solveEpoch++
	ep := n.solveEpoch
	rh := comp[0].rh
	act := n.act[:0]
	for range comp {
		for _, h := range rh {
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
	capr := comp[0].Spec.Cap
	level := 0.0
	for {
		delta := math.Inf(1)
		for _, r := range act {
			if r.wsum > 0 {
				if d := r.rem / r.wsum; d < delta {
					delta = d
				}
			}
		}
		if capr > 0 {
			if d := float64(capr) - level; d < delta {
				delta = d
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
		hit := capr > 0 && float64(capr)-level <= eps*float64(capr)
		for _, h := range rh {
			if r := h.r; !hit && r.rem <= eps*float64(r.Capacity) {
				hit = true
			}
		}
		if hit {
			break
		}
		for _, r := range act {
			if r.wsum < 1e-12 {
				r.wsum = 0
			}
		}
	}
	for _, f := range comp {
		f.frozen = true
		f.next = level
	}
}

// lone reports whether f is alone on every resource of its route, each
// crossed once: then it is a component of its own.
func lone(f *Flow) bool {
	for _, h := range f.rh {
		if len(h.r.flows) != 1 {
			return false
		}
	}
	return true
}

// solveLone is solveAlike for a lone flow f (see lone), its resources
// marked visited by ep and appended to touch (but for the one already
// there, which is marked). Progressive filling of one flow ends at its
// first step: the level rises from zero by the least of each resource's
// capacity over the flow's weight on it (its weight sum, 0 + weight) and
// of the flow's cap, in the order solveAlike compares them, and that step
// freezes the flow (the resource that set it is left with at most a
// rounding error of its capacity, the cap with none), so its rate is that
// least value, bit for bit what solveAlike computes.
func (n *Network) solveLone(f *Flow, ep uint64, touch []*Resource) []*Resource {
	f.visit = ep
	delta := math.Inf(1)
	for _, h := range f.rh {
		if r := h.r; r.visit != ep {
			r.visit = ep
			touch = append(touch, r)
		}
		if w := 0 + h.w; w > 0 {
			if d := n.capOf(h.r) / w; d < delta {
				delta = d
			}
		}
	}
	if capr := f.Spec.Cap; capr > 0 {
		if d := float64(capr) - 0; d < delta {
			delta = d
		}
	}
	if delta < 0 {
		delta = 0
	}
	f.frozen = true
	f.next = 0 + delta
	return touch
}
