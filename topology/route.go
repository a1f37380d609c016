package topology

import (
	"fmt"
	"strconv"
	"sync"

	"github.com/arsim/arsim/internal/minheap"
	"github.com/arsim/arsim/sim"
)

// RouteMode restricts which links a route may use.
type RouteMode uint8

const (
	// RouteAny takes the lowest-latency path over any links (NVLink where present).
	RouteAny RouteMode = iota
	// RoutePCIe avoids NVLink and NVSwitches: the path data takes through the
	// host side (PCIe, host bridges, CPU fabric, socket interconnect).
	RoutePCIe
)

// Step is one link of a route, crossed From → To.
type Step struct {
	Link     *Link
	From, To NodeID
}

// Forward reports whether the step crosses its link from A to B.
func (s Step) Forward() bool { return s.From == s.Link.A }

// Route is a path between two devices.
type Route struct {
	Steps []Step
	// Latency is the one-way time for a byte: the links' latencies plus the
	// traversal latency of every device passed through (not the endpoints),
	// a host bridge's once for each PCIe link the route takes into or out
	// of it (transitLatency).
	Latency sim.Duration
}

// Nodes returns the devices along the route, endpoints included.
func (r Route) Nodes() []NodeID {
	if len(r.Steps) == 0 {
		return nil
	}
	out := []NodeID{r.Steps[0].From}
	for _, s := range r.Steps {
		out = append(out, s.To)
	}
	return out
}

// Route returns the path from a to b: least latency, then fewest hops, ties
// broken by lower device IDs (deterministic). GPUs and host memories are
// never passed through.
func (t *Topology) Route(a, b NodeID, mode RouteMode) (Route, error) {
	if int(a) < 0 || int(a) >= len(t.nodes) || int(b) < 0 || int(b) >= len(t.nodes) {
		return Route{}, fmt.Errorf("topology %s: route %d→%d: no such device", t.Name, a, b)
	}
	if a == b {
		return Route{}, nil
	}
	sc := routeScratchPool.Get().(*routeScratch)
	defer routeScratchPool.Put(sc)
	lab := t.search(a, b, mode, sc)
	if !lab[b].set {
		return Route{}, fmt.Errorf("topology %s: no path from %s to %s", t.Name, t.nodes[a].Name, t.nodes[b].Name)
	}
	steps := t.stepsTo(lab, a, b, nil)
	return Route{Steps: steps, Latency: lab[b].lat}, nil
}

// search labels the devices by their best path from a (least latency,
// then fewest hops, ties to the lower device ID) and stops once b's label
// is final; with b < 0 it labels every device it reaches. A label is
// final when its device is popped, whatever the search stops at, so the
// path to any device labelled final is the one a search for it alone
// finds. The labels live in sc.
func (t *Topology) search(a, b NodeID, mode RouteMode, sc *routeScratch) []routeLabel {
	lab := sc.labels(len(t.nodes))
	lab[a] = routeLabel{set: true, prev: -1}
	pq := &sc.pq
	pq.Reset()
	pq.Push(hitem{id: a})
	for pq.Len() > 0 {
		it := pq.Pop()
		u := it.id
		if lab[u].done {
			continue
		}
		lab[u].done = true
		if u == b {
			break
		}
		if u != a && (t.nodes[u].Kind == GPU || t.nodes[u].Kind == HostMemory) {
			continue // endpoints only
		}
		for _, e := range t.adj[u] {
			l := t.links[e.link]
			if mode == RoutePCIe && (l.Type == NVLink || t.nodes[e.to].Kind == NVSwitch) {
				continue
			}
			lat := lab[u].lat + l.Latency + t.transitLatency(u, e.to, l, u != a)
			h := lab[u].hops + 1
			v := &lab[e.to]
			if v.done {
				continue
			}
			if !v.set || lat < v.lat || (lat == v.lat && h < v.hops) {
				*v = routeLabel{lat: lat, hops: h, prev: e.link, set: true}
				pq.Push(hitem{id: e.to, lat: lat, hops: h})
			}
		}
	}
	return lab
}

// transitLatency is what crossing link l from u to v adds besides the
// link's own latency: u's traversal latency when u is a device passed
// through (mid), except that a host bridge charges its latency on each
// crossing of its PCIe side instead, into it or out of it. A write from one
// root port to another of the same root complex crosses it twice; a load
// of host memory crosses once. (The rtx6kpro wiki's GPU ping-pongs through
// two PCIe switches on one root complex and on two differ by 10 ns, where
// one charge per host bridge would make them differ by a whole one.)
func (t *Topology) transitLatency(u, v NodeID, l *Link, mid bool) sim.Duration {
	var lat sim.Duration
	if mid && t.nodes[u].Kind != HostBridge {
		lat += t.nodes[u].Latency
	}
	if l.Type == PCIe {
		if t.nodes[u].Kind == HostBridge {
			lat += t.nodes[u].Latency
		}
		if t.nodes[v].Kind == HostBridge {
			lat += t.nodes[v].Latency
		}
	}
	return lat
}

// stepsTo walks the labels of a search from a back from b, appending the
// route's steps to steps[:0] in order from a.
func (t *Topology) stepsTo(lab []routeLabel, a, b NodeID, steps []Step) []Step {
	steps = steps[:0]
	for v := b; v != a; {
		l := t.links[lab[v].prev]
		from := l.A
		if from == v {
			from = l.B
		}
		steps = append(steps, Step{Link: l, From: from, To: v})
		v = from
	}
	for i, j := 0, len(steps)-1; i < j; i, j = i+1, j-1 {
		steps[i], steps[j] = steps[j], steps[i]
	}
	return steps
}

type hitem struct {
	id   NodeID
	lat  sim.Duration
	hops int
}

type routeLabel struct {
	lat  sim.Duration
	hops int
	prev int // link ID, -1 none
	done bool
	set  bool
}

// routeScratch is Route's working memory, reused between calls (a
// topology may be routed from several goroutines, hence the pool): at a
// thousand GPUs a route's labels are 40 KB.
type routeScratch struct {
	lab []routeLabel
	pq  minheap.Heap[hitem]
}

var routeScratchPool = sync.Pool{New: func() any { return new(routeScratch) }}

func (sc *routeScratch) labels(n int) []routeLabel {
	if cap(sc.lab) < n {
		sc.lab = make([]routeLabel, n)
	}
	sc.lab = sc.lab[:n]
	clear(sc.lab)
	return sc.lab
}

// Less orders route labels by (latency, hops, node): a total order, since a
// node is pushed again only with a better label, so the order of pops does
// not depend on the heap's layout.
func (a hitem) Less(b hitem) bool {
	if a.lat != b.lat {
		return a.lat < b.lat
	}
	if a.hops != b.hops {
		return a.hops < b.hops
	}
	return a.id < b.id
}

// HostMemoryOf returns the host memory node of a socket.
func (t *Topology) HostMemoryOf(socket int) (NodeID, bool) {
	id, ok := t.mem[socket]
	return id, ok
}

// HostRoute returns the path from a GPU to the host memory of its own
// socket (pinned buffers are allocated NUMA-local), over PCIe.
func (t *Topology) HostRoute(gpu NodeID) (Route, error) {
	m, ok := t.mem[t.nodes[gpu].Socket]
	if !ok {
		return Route{}, fmt.Errorf("socket %d of %s has no host memory", t.nodes[gpu].Socket, t.nodes[gpu].Name)
	}
	return t.Route(gpu, m, RoutePCIe)
}

// PathKind is the class of the connection between two GPUs, as nvidia-smi
// topo -m prints it.
type PathKind uint8

// Path kinds, from nearest to farthest.
const (
	PathNV   PathKind = iota // NVLink (direct or through NVSwitch)
	PathPIX                  // at most one PCIe switch
	PathPXB                  // several PCIe switches, no host bridge
	PathPHB                  // through one PCIe host bridge (CPU root complex)
	PathNODE                 // between host bridges of one NUMA node
	PathSYS                  // across the socket interconnect
)

var pathNames = [...]string{"NV", "PIX", "PXB", "PHB", "NODE", "SYS"}

// String returns nvidia-smi's name for the kind: NV, PIX, PXB, PHB, NODE, SYS.
func (k PathKind) String() string { return pathNames[k] }

// PathClass is a GPU pair's path kind, with the bonded NVLink count for NV.
type PathClass struct {
	Kind    PathKind
	NVLinks int
}

// String prints "NV18", "PIX", "SYS" and so on.
func (c PathClass) String() string {
	if c.Kind == PathNV {
		return "NV" + strconv.Itoa(c.NVLinks)
	}
	return c.Kind.String()
}

// NCCL returns NCCL's name for the class (NCCL has no NODE: it is PHB; NV
// paths are NVL).
func (c PathClass) NCCL() string {
	switch c.Kind {
	case PathNV:
		return "NVL"
	case PathNODE:
		return "PHB"
	}
	return c.Kind.String()
}

// PathClass classifies the connection between two GPUs.
func (t *Topology) PathClass(a, b NodeID) (PathClass, error) {
	r, err := t.Route(a, b, RouteAny)
	if err != nil {
		return PathClass{}, err
	}
	return t.classOf(r.Steps), nil
}

// classOf classifies the route of steps (RouteAny).
func (t *Topology) classOf(steps []Step) PathClass {
	nv := 0
	for _, s := range steps {
		if s.Link.Type == NVLink {
			if nv == 0 || s.Link.Count < nv {
				nv = s.Link.Count
			}
		}
	}
	if nv > 0 {
		return PathClass{Kind: PathNV, NVLinks: nv}
	}
	return t.pcieClass(Route{Steps: steps})
}

// PCIePathClass classifies the host-side (non-NVLink) path between two GPUs:
// what P2P over PCIe or SHM staging would cross.
func (t *Topology) PCIePathClass(a, b NodeID) (PathClass, error) {
	r, err := t.Route(a, b, RoutePCIe)
	if err != nil {
		return PathClass{}, err
	}
	return t.pcieClass(r), nil
}

func (t *Topology) pcieClass(r Route) PathClass {
	switches, bridges, cpus := 0, 0, 0
	for _, s := range r.Steps {
		if s.Link.Type == SMP {
			return PathClass{Kind: PathSYS}
		}
	}
	for i := -1; i < len(r.Steps); i++ { // the devices along the route, endpoints included
		var id NodeID
		if i < 0 {
			if len(r.Steps) == 0 {
				break
			}
			id = r.Steps[0].From
		} else {
			id = r.Steps[i].To
		}
		switch t.nodes[id].Kind {
		case PCIeSwitch:
			switches++
		case HostBridge:
			bridges++
		case CPU:
			cpus++
		}
	}
	switch {
	case cpus > 0 || bridges > 1:
		return PathClass{Kind: PathNODE}
	case bridges == 1:
		return PathClass{Kind: PathPHB}
	case switches > 1:
		return PathClass{Kind: PathPXB}
	}
	return PathClass{Kind: PathPIX}
}

// P2PAllowed reports whether GPU a may read or write GPU b's memory
// directly, under the platform's rules, and the class that decided it.
func (t *Topology) P2PAllowed(a, b NodeID) (bool, PathClass, error) {
	c, err := t.PathClass(a, b)
	if err != nil {
		return false, c, err
	}
	switch c.Kind {
	case PathPHB, PathNODE:
		return t.Platform.P2PThroughHostBridge, c, nil
	case PathSYS:
		return t.Platform.P2PAcrossSockets, c, nil
	}
	return true, c, nil
}

// ClassMatrix returns the path class of every GPU pair, by rank.
// One route search per GPU labels the paths to every other (see search),
// so the matrix costs n searches, not n²: an import of 256 GPUs is
// checked in milliseconds.
func (t *Topology) ClassMatrix() ([][]PathClass, error) {
	n := len(t.gpus)
	m := make([][]PathClass, n)
	sc := routeScratchPool.Get().(*routeScratch)
	defer routeScratchPool.Put(sc)
	var steps []Step
	for i := range m {
		m[i] = make([]PathClass, n)
		a := t.gpus[i]
		lab := t.search(a, -1, RouteAny, sc)
		for j := range m[i] {
			b := t.gpus[j]
			if i == j {
				continue
			}
			if !lab[b].set {
				return nil, fmt.Errorf("topology %s: no path from %s to %s", t.Name, t.nodes[a].Name, t.nodes[b].Name)
			}
			steps = t.stepsTo(lab, a, b, steps)
			m[i][j] = t.classOf(steps)
		}
	}
	return m, nil
}
