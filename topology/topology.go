package topology

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/simple"

	"github.com/arsim/arsim/sim"
)

// NodeID names a device of a machine: its index in creation order.
type NodeID int64

// Kind is what a device is.
type Kind uint8

// Device kinds.
const (
	GPU        Kind = iota
	PCIeSwitch      // a PCIe switch (PLX, Broadcom, Microchip)
	HostBridge      // a CPU root port / host bridge (root complex entry point)
	CPU             // a CPU socket (NUMA node): its internal fabric joins host bridges and memory
	HostMemory      // DRAM of one socket
	NVSwitch        // an NVLink switch
)

var kindNames = [...]string{"gpu", "switch", "hostbridge", "cpu", "hostmem", "nvswitch"}

// String returns the kind's name: gpu, switch, hostbridge, cpu, hostmem, nvswitch.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Node is a device. It implements gonum's graph.Node.
type Node struct {
	id      NodeID
	Kind    Kind
	Name    string       // unique, e.g. "gpu3", "sw0", "hb2", "cpu1", "mem1"
	Socket  int          // the NUMA node the device belongs to
	Latency sim.Duration // one-way traversal time for transit (switches, CPU fabric); a host bridge's per crossing of its PCIe side
}

// ID implements graph.Node.
func (n *Node) ID() int64 { return int64(n.id) }

// NodeID returns the node's ID.
func (n *Node) NodeID() NodeID { return n.id }

var _ graph.Node = (*Node)(nil)

// LinkType is the technology of a link.
type LinkType uint8

// Link types.
const (
	PCIe   LinkType = iota // PCI Express, Gen × width
	NVLink                 // NVLink: count × per-link rate
	SMP                    // socket interconnect (UPI, xGMI)
	Memory                 // a CPU socket to its DRAM (one shared resource for both directions)
	Fabric                 // inside a CPU: host bridge to the socket's fabric
)

var linkTypeNames = [...]string{"pcie", "nvlink", "smp", "memory", "fabric"}

// String returns the link type's name: pcie, nvlink, smp, memory, fabric.
func (t LinkType) String() string {
	if int(t) < len(linkTypeNames) {
		return linkTypeNames[t]
	}
	return "link(" + strconv.Itoa(int(t)) + ")"
}

// Link joins two devices. Bandwidth is the raw rate per direction (for
// Memory: the total of both directions).
type Link struct {
	ID        int
	A, B      NodeID
	Type      LinkType
	Gen       int // PCIe generation (3, 4, 5, 6)
	Width     int // PCIe lanes
	Count     int // NVLink links bonded
	Bandwidth sim.Rate
	Latency   sim.Duration // one-way wire + endpoint time
}

// Name returns "gpu0-hb0" style names.
func (l *Link) name(t *Topology) string { return t.nodes[l.A].Name + "-" + t.nodes[l.B].Name }

// Platform holds the machine-wide rules that are not links.
type Platform struct {
	// P2PThroughHostBridge: GPUs may read and write each other's memory
	// through a CPU root complex (paths PHB and NODE). Off on some platforms
	// (and NCCL does not use it by default).
	P2PThroughHostBridge bool
	// P2PAcrossSockets: GPU P2P may cross the socket interconnect (SYS).
	P2PAcrossSockets bool
	// WriteCollapse: posted P2P writes from one root port to GPUs behind two
	// or more other root complexes collapse to CollapseRate in aggregate.
	WriteCollapse bool
	CollapseRate  sim.Rate
}

// Topology is a machine: devices, links, GPUs in rank order, platform rules
// and the parameters everything was built from.
type Topology struct {
	Name        string
	Description string
	SystemIDs   []string // trace `system` ids this topology models
	Platform    Platform
	Params      *Params
	Notes       []string // what an importer assumed
	// HostCPU is the host CPU as NCCL's model classes it: "amd",
	// "intel-spr" (Sapphire/Emerald Rapids) or "intel"; "" when the
	// machine does not say (a preset: NCCL's model goes by its name).
	HostCPU string

	g     *simple.UndirectedGraph
	nodes []*Node
	links []*Link
	adj   [][]adjacent // by node, sorted by neighbour ID then link ID
	gpus  []NodeID
	mem   map[int]NodeID // socket → host memory node
}

type adjacent struct {
	to   NodeID
	link int
}

// Builder assembles a Topology and checks it.
type Builder struct {
	t    *Topology
	errs []string
}

// NewBuilder starts a topology named name with parameters ps.
func NewBuilder(name string, ps *Params) *Builder {
	if ps == nil {
		ps = &Params{}
	}
	return &Builder{t: &Topology{Name: name, Params: ps, g: simple.NewUndirectedGraph(), mem: map[int]NodeID{}}}
}

// Topology gives access to the topology under construction (to set fields).
func (b *Builder) Topology() *Topology { return b.t }

// Node adds a device and returns its ID.
func (b *Builder) Node(k Kind, name string, socket int, latency sim.Duration) NodeID {
	t := b.t
	id := NodeID(len(t.nodes))
	for _, n := range t.nodes {
		if n.Name == name {
			b.errs = append(b.errs, fmt.Sprintf("device name %q used twice", name))
		}
	}
	if latency < 0 {
		b.errs = append(b.errs, fmt.Sprintf("device %s: latency must be ≥ 0, got %v", name, latency))
	}
	n := &Node{id: id, Kind: k, Name: name, Socket: socket, Latency: latency}
	t.nodes = append(t.nodes, n)
	t.adj = append(t.adj, nil)
	t.g.AddNode(n)
	if k == GPU {
		t.gpus = append(t.gpus, id)
	}
	if k == HostMemory {
		if _, dup := t.mem[socket]; dup {
			b.errs = append(b.errs, fmt.Sprintf("socket %d has two host memories", socket))
		}
		t.mem[socket] = id
	}
	return id
}

// Link joins a and b. For PCIe give gen and width (bandwidth is derived
// unless bw > 0); for NVLink give count and per-link bandwidth in bw... use
// the typed helpers PCIeLink, NVLinkLink and PlainLink instead.
func (b *Builder) link(l Link) {
	t := b.t
	if int(l.A) >= len(t.nodes) || int(l.B) >= len(t.nodes) || l.A < 0 || l.B < 0 {
		b.errs = append(b.errs, fmt.Sprintf("link %d joins unknown device", len(t.links)))
		return
	}
	name := t.nodes[l.A].Name + "-" + t.nodes[l.B].Name
	if l.A == l.B {
		b.errs = append(b.errs, fmt.Sprintf("link %s joins a device to itself", name))
		return
	}
	if !(l.Bandwidth > 0) {
		b.errs = append(b.errs, fmt.Sprintf("link %s: bandwidth must be > 0, got %v GB/s", name, l.Bandwidth.GB()))
		return
	}
	if l.Latency < 0 {
		b.errs = append(b.errs, fmt.Sprintf("link %s: latency must be ≥ 0, got %v", name, l.Latency))
		return
	}
	l.ID = len(t.links)
	t.links = append(t.links, &l)
	t.adj[l.A] = append(t.adj[l.A], adjacent{to: l.B, link: l.ID})
	t.adj[l.B] = append(t.adj[l.B], adjacent{to: l.A, link: l.ID})
	if !t.g.HasEdgeBetween(int64(l.A), int64(l.B)) {
		t.g.SetEdge(t.g.NewEdge(t.nodes[l.A], t.nodes[l.B]))
	}
}

// PCIeRate returns the raw rate per direction of a PCIe link: lanes × the
// generation's transfer rate × line-code efficiency (Gen3–5: 128b/130b;
// Gen6: FLIT mode, 236 of 256 bytes carry TLPs). Source: PCI-SIG base specs;
// Gen5 x16 = 63.0 GB/s per direction.
func PCIeRate(gen, width int) (sim.Rate, error) {
	r, err := pcieRate(gen, width)
	if err != nil {
		return 0, fmt.Errorf("topology: %w", err)
	}
	return r, nil
}

// pcieRate is PCIeRate with errors that name no package, for callers here
// that add their own context.
func pcieRate(gen, width int) (sim.Rate, error) {
	var gts, code float64
	switch gen {
	case 1:
		gts, code = 2.5, 8.0/10
	case 2:
		gts, code = 5, 8.0/10
	case 3:
		gts, code = 8, 128.0/130
	case 4:
		gts, code = 16, 128.0/130
	case 5:
		gts, code = 32, 128.0/130
	case 6:
		gts, code = 64, 236.0/256
	default:
		return 0, fmt.Errorf("PCIe generation %d is not one of 1–6", gen)
	}
	switch width {
	case 1, 2, 4, 8, 16, 32:
	default:
		return 0, fmt.Errorf("PCIe width x%d is not one of x1, x2, x4, x8, x16, x32", width)
	}
	return sim.Rate(gts * code / 8 * float64(width) * 1e9), nil
}

// PCIeLink joins a and b with a PCIe link of the given generation and width.
func (b *Builder) PCIeLink(a, c NodeID, gen, width int, latency sim.Duration) {
	r, err := pcieRate(gen, width)
	if err != nil {
		b.errs = append(b.errs, fmt.Sprintf("link %s-%s: %v", b.nodeName(a), b.nodeName(c), err))
		return
	}
	b.link(Link{A: a, B: c, Type: PCIe, Gen: gen, Width: width, Bandwidth: r, Latency: latency})
}

// NVLinkLink joins a and b with count NVLinks of perLink bytes/s each way.
func (b *Builder) NVLinkLink(a, c NodeID, count int, perLink sim.Rate, latency sim.Duration) {
	if count <= 0 {
		b.errs = append(b.errs, fmt.Sprintf("link %s-%s: NVLink count must be > 0, got %d", b.nodeName(a), b.nodeName(c), count))
		return
	}
	b.link(Link{A: a, B: c, Type: NVLink, Count: count, Bandwidth: sim.Rate(count) * perLink, Latency: latency})
}

// PlainLink joins a and b with a link of type t (SMP, Memory, Fabric).
func (b *Builder) PlainLink(a, c NodeID, t LinkType, bw sim.Rate, latency sim.Duration) {
	b.link(Link{A: a, B: c, Type: t, Bandwidth: bw, Latency: latency})
}

func (b *Builder) nodeName(id NodeID) string {
	if int(id) >= 0 && int(id) < len(b.t.nodes) {
		return b.t.nodes[id].Name
	}
	return "#" + strconv.Itoa(int(id))
}

// Build checks the topology: at least one GPU, every GPU able to reach
// every other and a host memory, links of positive bandwidth, sane
// parameters. Errors name the element at fault.
func (b *Builder) Build() (*Topology, error) {
	t := b.t
	if len(b.errs) > 0 {
		return nil, fmt.Errorf("topology %s: %s", t.Name, strings.Join(b.errs, "; "))
	}
	if len(t.gpus) == 0 {
		return nil, fmt.Errorf("topology %s: no GPUs", t.Name)
	}
	if err := t.Params.Validate(); err != nil {
		return nil, fmt.Errorf("topology %s: %w", t.Name, err)
	}
	for i := range t.adj {
		sort.Slice(t.adj[i], func(x, y int) bool {
			a, c := t.adj[i][x], t.adj[i][y]
			if a.to != c.to {
				return a.to < c.to
			}
			return a.link < c.link
		})
	}
	// Every GPU reaches every other and its socket's host memory; checked
	// in time linear in the machine's size (same errors as a pair loop).
	if err := t.checkConnected(); err != nil {
		return nil, err
	}
	return t, nil
}

// Graph returns the device graph (gonum), for algorithms that want it.
func (t *Topology) Graph() graph.Undirected { return t.g }

// Node returns the device with the given ID.
func (t *Topology) Node(id NodeID) *Node { return t.nodes[id] }

// Nodes returns all devices in ID order.
func (t *Topology) Nodes() []*Node { return t.nodes }

// Links returns all links in ID order.
func (t *Topology) Links() []*Link { return t.links }

// GPUs returns the GPUs in rank order.
func (t *Topology) GPUs() []NodeID { return t.gpus }

// Placed returns the same machine with its ranks placed on the GPUs in
// another order: rank r is t's GPU perm[r]. Devices, links, parameters and
// platform are t's (shared, not copied); only which GPU each rank is
// changes. perm must be a permutation of 0…NumGPUs()−1.
func (t *Topology) Placed(perm []int) (*Topology, error) {
	if len(perm) != len(t.gpus) {
		return nil, fmt.Errorf("topology %s: placement of %d ranks on %d GPUs", t.Name, len(perm), len(t.gpus))
	}
	seen := make([]bool, len(perm))
	gpus := make([]NodeID, len(perm))
	for r, g := range perm {
		if g < 0 || g >= len(perm) || seen[g] {
			return nil, fmt.Errorf("topology %s: placement %v is not a permutation of the GPUs 0–%d", t.Name, perm, len(perm)-1)
		}
		seen[g] = true
		gpus[r] = t.gpus[g]
	}
	c := *t
	c.gpus = gpus
	return &c, nil
}

// NumGPUs returns the number of GPUs.
func (t *Topology) NumGPUs() int { return len(t.gpus) }

// GPU returns the node of GPU rank r.
func (t *Topology) GPU(r int) *Node { return t.nodes[t.gpus[r]] }

// LinkName returns a link's name, "gpu0-hb0".
func (t *Topology) LinkName(l *Link) string { return l.name(t) }

// Sockets returns the socket numbers that have host memory, sorted.
func (t *Topology) Sockets() []int {
	var s []int
	for k := range t.mem {
		s = append(s, k)
	}
	sort.Ints(s)
	return s
}
