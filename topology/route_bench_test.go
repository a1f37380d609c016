package topology

import "testing"

// BenchmarkRoute routes every GPU to every other on a 64-GPU switch
// fabric and on the 8-GPU two-socket preset, and each GPU of a 1024-GPU
// ring to its neighbour (what a ring allreduce at scale asks for).
func BenchmarkRoute(b *testing.B) {
	fabric, err := SwitchFabric(64, 8)
	if err != nil {
		b.Fatal(err)
	}
	two, err := Load("rtxpro6000x8-2numa")
	if err != nil {
		b.Fatal(err)
	}
	ring, err := Ring(1024)
	if err != nil {
		b.Fatal(err)
	}
	allPairs := func(t *Topology) [][2]NodeID {
		var out [][2]NodeID
		for _, a := range t.GPUs() {
			for _, c := range t.GPUs() {
				out = append(out, [2]NodeID{a, c})
			}
		}
		return out
	}
	var neighbours [][2]NodeID
	for i, g := range ring.GPUs() {
		neighbours = append(neighbours, [2]NodeID{g, ring.GPUs()[(i+1)%len(ring.GPUs())]})
	}
	for _, tc := range []struct {
		name  string
		top   *Topology
		pairs [][2]NodeID
	}{{"fabric64", fabric, allPairs(fabric)}, {"rtxpro6000x8-2numa", two, allPairs(two)}, {"ring1024", ring, neighbours}} {
		b.Run(tc.name, func(b *testing.B) {
			routes := 0
			for b.Loop() {
				for _, p := range tc.pairs {
					if _, err := tc.top.Route(p[0], p[1], RouteAny); err != nil {
						b.Fatal(err)
					}
					routes++
				}
			}
			b.ReportMetric(float64(routes)/b.Elapsed().Seconds(), "routes/s")
		})
	}
}
