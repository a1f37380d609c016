package topology

import (
	"fmt"
	"sort"

	"github.com/arsim/arsim/sim"
)

// Generated machines for scale experiments hold up to MaxGenerated GPUs.
const MaxGenerated = 4096

// SwitchFabric generates a machine of n GPUs for scale experiments: leaf
// PCIe switches of perSwitch GPUs each (the last may hold fewer), all leaf
// switches under one root switch on one socket's host bridge, Gen5 x16
// everywhere, with the default parameters of the RTX PRO 6000 presets.
// It is named "fabric-N". n may be up to 4096.
func SwitchFabric(n, perSwitch int) (*Topology, error) {
	if n < 1 || n > MaxGenerated {
		return nil, fmt.Errorf("topology: fabric of %d GPUs: want 1–%d", n, MaxGenerated)
	}
	if perSwitch < 1 {
		return nil, fmt.Errorf("topology: fabric: GPUs per switch must be ≥ 1, got %d", perSwitch)
	}
	ps := commonParams()
	b := NewBuilder(fmt.Sprintf("fabric-%d", n), ps)
	ns := sim.Nanos
	hb := hostSide(b, ps)
	root := b.Node(PCIeSwitch, "swroot", 0, ns(ps.Get("pcie.switch_latency")))
	b.PCIeLink(root, hb, 5, 16, 0)
	port := ns(ps.Get("pcie.gpu_port_latency"))
	var leaf NodeID
	for g := 0; g < n; g++ {
		if g%perSwitch == 0 {
			leaf = b.Node(PCIeSwitch, fmt.Sprintf("sw%d", g/perSwitch), 0, ns(ps.Get("pcie.switch_latency")))
			b.PCIeLink(leaf, root, 5, 16, 0)
		}
		gpu := b.Node(GPU, fmt.Sprintf("gpu%d", g), 0, 0)
		b.PCIeLink(gpu, leaf, 5, 16, port)
	}
	t := b.Topology()
	t.Description = fmt.Sprintf("generated: %d GPUs in PCIe switches of %d under one root switch, Gen5 x16", n, perSwitch)
	t.Platform = Platform{P2PThroughHostBridge: true, P2PAcrossSockets: true}
	return b.Build()
}

// RingNVLinks is the number of NVLinks bonded between ring neighbours in
// Ring: 4 × 26.6 GB/s ≈ 106 GB/s per direction.
const RingNVLinks = 4

// Ring generates a machine of n GPUs joined in a ring by direct NVLink
// bonds of RingNVLinks links between neighbours (GPU i to GPU i+1 mod n),
// each GPU also on its own Gen5 x16 link to one host bridge of one socket
// (its host link; P2P between non-neighbours goes through it, class PHB).
// It uses the RTX PRO 6000 presets' default parameters with NVLink
// latency and per-link rate from the parameter table. It is named
// "ring-N". n may be up to 4096.
func Ring(n int) (*Topology, error) {
	if n < 1 || n > MaxGenerated {
		return nil, fmt.Errorf("topology: ring of %d GPUs: want 1–%d", n, MaxGenerated)
	}
	ps := commonParams()
	if err := ps.Set("nvlink.count", RingNVLinks, "generated: ring neighbours bonded by RingNVLinks links"); err != nil {
		return nil, fmt.Errorf("topology: ring: %w", err)
	}
	b := NewBuilder(fmt.Sprintf("ring-%d", n), ps)
	ns := sim.Nanos
	hb := hostSide(b, ps)
	port := ns(ps.Get("pcie.gpu_port_latency"))
	gpus := make([]NodeID, n)
	for g := range gpus {
		gpus[g] = b.Node(GPU, fmt.Sprintf("gpu%d", g), 0, 0)
		b.PCIeLink(gpus[g], hb, 5, 16, port)
	}
	perLink := sim.Rate(ps.Get("nvlink.link_bandwidth")) * sim.GBps
	lat := ns(ps.Get("nvlink.latency"))
	for g := 0; g < n; g++ {
		next := (g + 1) % n
		if next == g || (n == 2 && g == 1) {
			continue // one GPU: no link; two GPUs: one bond, not two
		}
		b.NVLinkLink(gpus[g], gpus[next], RingNVLinks, perLink, lat)
	}
	t := b.Topology()
	t.Description = fmt.Sprintf("generated: %d GPUs in a ring of NVLink×%d bonds, each on its own PCIe Gen5 x16 link to one host bridge", n, RingNVLinks)
	t.Platform = Platform{P2PThroughHostBridge: true, P2PAcrossSockets: true}
	return b.Build()
}

// hostSide adds socket 0's CPU, host memory and host bridge and returns
// the host bridge.
func hostSide(b *Builder, ps *Params) NodeID {
	ns := sim.Nanos
	cpu := b.Node(CPU, "cpu0", 0, ns(ps.Get("cpu.fabric_latency")))
	mem := b.Node(HostMemory, "mem0", 0, 0)
	b.PlainLink(cpu, mem, Memory, sim.Rate(ps.Get("hostmem.bandwidth"))*sim.GBps, ns(ps.Get("cpu.memory_path_latency")))
	hb := b.Node(HostBridge, "hb0", 0, ns(ps.Get("pcie.hostbridge_latency")))
	b.PlainLink(hb, cpu, Fabric, sim.Rate(ps.Get("cpu.fabric_bandwidth"))*sim.GBps, 0)
	return hb
}

// checkConnected verifies what Build's pair loop verifies — every GPU has
// a route (RouteAny) to every other GPU, and a route to its socket's host
// memory (HostRoute) — in time linear in the size of the machine when the
// GPUs share one piece of fabric, and returns the error Build would return
// first otherwise.
//
// Routes never pass through GPUs or host memories, so GPU a reaches GPU b
// exactly when they are linked directly, or both are linked to the same
// connected component of the transit devices (everything but GPUs and host
// memories). Host routes are the same over the PCIe side only: without
// NVLink links and NVSwitches.
func (t *Topology) checkConnected() error {
	transit := func(id NodeID) bool { k := t.nodes[id].Kind; return k != GPU && k != HostMemory }
	anyComp := t.transitComponents(transit, false)
	pcieOK := func(id NodeID) bool { return transit(id) && t.nodes[id].Kind != NVSwitch }
	pcieComp := t.transitComponents(pcieOK, true)
	// The transit components each GPU touches (RouteAny), sorted.
	touches := make([][]int, len(t.gpus))
	for i, g := range t.gpus {
		for _, e := range t.adj[g] {
			if c := anyComp[e.to]; c >= 0 {
				touches[i] = append(touches[i], c)
			}
		}
		sort.Ints(touches[i])
		touches[i] = compactInts(touches[i])
	}
	// A component every GPU touches connects all pairs.
	common := make(map[int]int)
	for _, cs := range touches {
		for _, c := range cs {
			common[c]++
		}
	}
	allPairs := false
	for _, k := range common {
		if k == len(t.gpus) {
			allPairs = true
			break
		}
	}
	linked := func(a, c NodeID) bool {
		for _, e := range t.adj[a] {
			if e.to == c {
				return true
			}
		}
		return false
	}
	for i, a := range t.gpus {
		if !allPairs {
			for j, c := range t.gpus {
				if a != c && !linked(a, c) && !shareInt(touches[i], touches[j]) {
					return fmt.Errorf("topology %s: %s has no path to %s", t.Name, t.nodes[a].Name, t.nodes[c].Name)
				}
			}
		}
		if err := t.hostReachable(a, pcieComp); err != nil {
			return fmt.Errorf("topology %s: %s has no path to host memory: %w", t.Name, t.nodes[a].Name, err)
		}
	}
	return nil
}

// transitComponents labels the nodes for which ok holds by connected
// component over links between them (without NVLink links if pcieOnly);
// other nodes get −1.
func (t *Topology) transitComponents(ok func(NodeID) bool, pcieOnly bool) []int {
	comp := make([]int, len(t.nodes))
	for i := range comp {
		comp[i] = -1
	}
	next := 0
	var stack []NodeID
	for s := range t.nodes {
		if comp[s] >= 0 || !ok(NodeID(s)) {
			continue
		}
		comp[s] = next
		stack = append(stack[:0], NodeID(s))
		for len(stack) > 0 {
			u := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, e := range t.adj[u] {
				if comp[e.to] >= 0 || !ok(e.to) || (pcieOnly && t.links[e.link].Type == NVLink) {
					continue
				}
				comp[e.to] = next
				stack = append(stack, e.to)
			}
		}
		next++
	}
	return comp
}

// hostReachable reports, as HostRoute would, whether GPU g reaches its
// socket's host memory over the PCIe side; comp labels the PCIe-side
// transit components.
func (t *Topology) hostReachable(g NodeID, comp []int) error {
	m, ok := t.mem[t.nodes[g].Socket]
	if !ok {
		return fmt.Errorf("socket %d of %s has no host memory", t.nodes[g].Socket, t.nodes[g].Name)
	}
	var fromGPU []int
	for _, e := range t.adj[g] {
		if t.links[e.link].Type == NVLink {
			continue
		}
		if e.to == m {
			return nil
		}
		if c := comp[e.to]; c >= 0 {
			fromGPU = append(fromGPU, c)
		}
	}
	for _, e := range t.adj[m] {
		if t.links[e.link].Type == NVLink {
			continue
		}
		if c := comp[e.to]; c >= 0 {
			for _, x := range fromGPU {
				if x == c {
					return nil
				}
			}
		}
	}
	return fmt.Errorf("topology %s: no path from %s to %s", t.Name, t.nodes[g].Name, t.nodes[m].Name)
}

func compactInts(s []int) []int {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// shareInt reports whether two sorted lists have a common element.
func shareInt(a, b []int) bool {
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] == b[j]:
			return true
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return false
}
