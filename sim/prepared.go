package sim

import "math"

// PreparedRoute is a route checked once for the many flows that cross it
// (LaunchOn): its hops' resources found and weights normalised, held by
// every flow that crosses it instead of a copy each. A physics layer that
// starts the same transfer again and again (hw keeps each rank's recent
// writes and reads) prepares its route once.
type PreparedRoute struct {
	n    *Network
	hops []Hop // weights normalised (0 → 1)
	rh   []hop
	id   int32 // its number among routes of equal hops (memo.go)
}

// Prepare checks route as Start would (every hop names a resource of the
// network, every weight is finite and ≥ 0) and returns it prepared.
func (n *Network) Prepare(route []Hop) (*PreparedRoute, error) {
	for i, h := range route {
		if uint(h.Res) >= uint(len(n.res)) || !(h.Weight >= 0 && h.Weight <= math.MaxFloat64) { // NaN fails both
			return nil, n.badHop(&FlowSpec{Route: route}, i)
		}
	}
	pr := &PreparedRoute{n: n, hops: make([]Hop, len(route)), rh: make([]hop, len(route))}
	for i, h := range route {
		if h.Weight == 0 {
			h.Weight = 1
		}
		pr.hops[i] = h
		pr.rh[i] = hop{n.res[h.Res], h.Weight}
	}
	pr.id = n.routeID(pr.hops)
	return pr, nil
}

// LaunchOn is Launch of a flow that crosses pr (spec.Route is not read):
// it starts nothing and returns an error if spec is otherwise invalid or
// pr was prepared by another network.
func (n *Network) LaunchOn(pr *PreparedRoute, spec *FlowSpec) error {
	_, err := n.start(spec, pr, true)
	return err
}
