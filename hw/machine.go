package hw

import (
	"fmt"
	"math"

	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
)

// Mem names a memory: a GPU's (by rank) or a socket's host memory.
type Mem struct {
	Host   bool
	Rank   int // GPU rank when !Host
	Socket int // socket when Host
}

// GPUMem is rank r's device memory.
func GPUMem(r int) Mem { return Mem{Rank: r} }

// HostMem is the host memory of socket s.
func HostMem(s int) Mem { return Mem{Host: true, Socket: s} }

// String returns "gpu3" or "host1".
func (m Mem) String() string {
	if m.Host {
		return fmt.Sprintf("host%d", m.Socket)
	}
	return fmt.Sprintf("gpu%d", m.Rank)
}

// Physics holds the parameter values the machine uses, resolved once.
type Physics struct {
	TLPOverhead, LinkEfficiency             float64
	ReadRequest, MaxReadRequest             float64
	CEPayload, SMWritePayload, ReadCpl      float64
	GPUMemLatency, HostMemLatency           sim.Duration
	GPUMemBandwidth                         sim.Rate
	SMs                                     int
	MaxBlocksPerSM                          int
	LoadsInFlight                           float64
	SMStoreRate                             sim.Rate
	LaunchEager, LaunchGraph                sim.Duration
	ReduceLoopOverhead, ReduceLoopExtraPCIe sim.Duration
	FenceLocal, FenceExtraNVLink            sim.Duration
	FenceExtraPCIe, KernelPrologue          sim.Duration
	FencePCIeRoundTrip                      bool
	FencePostedExtra                        sim.Duration
	BarrierSync, AtomicPollExtra            sim.Duration
	HostPollService, HostAtomicService      sim.Duration
	LLIterOverhead, LLIterPerWarp           sim.Duration
	VectorLoadExtraPCIe, CopyIterOverhead   sim.Duration
	SMLoadRate                              sim.Rate
	VectorIssue, VectorIssuePerWarp         sim.Duration
	PollLoopOverhead                        sim.Duration
	IOMMUHostLatency                        sim.Duration
	CEWindow                                float64
	CESetup, CEP2PSetup                     sim.Duration
	NVLinkSMEff, NVLinkCEEff                float64
	SMPFlowCap                              sim.Rate
	CUDAMemcpyIssue                         sim.Duration
	TorchIssue                              [3]sim.Duration // by CopyDir
	TorchP2POverhead, TorchP2PLarge         sim.Duration
	TorchP2PLargeFrom                       sim.Bytes
}

func resolve(ps *topology.Params) Physics {
	us, ns := sim.Micros, sim.Nanos
	g := ps.Get
	return Physics{
		TLPOverhead: g("pcie.tlp_overhead"), LinkEfficiency: g("pcie.link_efficiency"),
		ReadRequest: g("pcie.read_request"), MaxReadRequest: g("pcie.max_read_request"),
		CEPayload: g("pcie.ce_payload"), SMWritePayload: g("pcie.sm_write_payload"), ReadCpl: g("pcie.read_completion_payload"),
		GPUMemLatency: ns(g("gpu.mem_latency")), HostMemLatency: ns(g("hostmem.latency")),
		GPUMemBandwidth: sim.Rate(g("gpu.mem_bandwidth")) * sim.GBps,
		SMs:             int(g("gpu.sms")), MaxBlocksPerSM: int(g("gpu.max_blocks_per_sm")),
		LoadsInFlight: g("gpu.loads_in_flight"), SMStoreRate: sim.Rate(g("gpu.sm_store_bandwidth")) * sim.GBps,
		LaunchEager: us(g("gpu.launch_eager")), LaunchGraph: us(g("gpu.launch_graph")),
		ReduceLoopOverhead: ns(g("gpu.reduce_loop_overhead")), ReduceLoopExtraPCIe: ns(g("gpu.reduce_loop_extra_pcie")),
		FenceLocal: ns(g("gpu.fence_sys_local")), FenceExtraNVLink: ns(g("gpu.fence_extra_nvlink")), FenceExtraPCIe: ns(g("gpu.fence_extra_pcie")),
		KernelPrologue:     us(g("gpu.kernel_prologue")),
		FencePCIeRoundTrip: g("gpu.fence_pcie_round_trip") != 0, FencePostedExtra: ns(g("gpu.fence_posted_extra")),
		BarrierSync: ns(g("gpu.barrier_sync")), AtomicPollExtra: ns(g("gpu.atomic_poll_extra")),
		HostPollService: ns(g("hostmem.poll_service")), HostAtomicService: ns(g("hostmem.atomic_service")),
		LLIterOverhead: ns(g("gpu.ll_iter_overhead")), LLIterPerWarp: ns(g("gpu.ll_iter_per_warp")),
		VectorLoadExtraPCIe: ns(g("gpu.vector_load_extra_pcie")), CopyIterOverhead: ns(g("gpu.copy_iter_overhead")),
		SMLoadRate:  sim.Rate(g("gpu.sm_load_bandwidth")) * sim.GBps,
		VectorIssue: ns(g("gpu.vector_issue")), VectorIssuePerWarp: ns(g("gpu.vector_issue_per_warp")),
		PollLoopOverhead: ns(g("gpu.poll_loop_overhead")), IOMMUHostLatency: ns(g("platform.iommu_host_latency")),
		CEWindow: g("ce.window"), CESetup: us(g("ce.setup")), CEP2PSetup: us(g("ce.p2p_setup")),
		CUDAMemcpyIssue:  us(g("host.cuda_memcpy_issue")),
		TorchIssue:       [3]sim.Duration{us(g("torch.copy_issue_h2d")), us(g("torch.copy_issue_d2h")), us(g("torch.copy_issue_p2p"))},
		TorchP2POverhead: us(g("torch.p2p_copy_overhead")), TorchP2PLarge: us(g("torch.p2p_copy_overhead_large")),
		TorchP2PLargeFrom: sim.Bytes(g("torch.p2p_copy_large")),
		NVLinkSMEff:       g("nvlink.sm_efficiency"), NVLinkCEEff: g("nvlink.ce_efficiency"),
		SMPFlowCap: sim.Rate(g("smp.p2p_flow_cap")) * sim.GBps,
	}
}

// Machine is a topology running on an engine.
type Machine struct {
	Top  *topology.Topology
	Eng  *sim.Engine
	Net  *sim.Network
	Phys Physics

	linkRes [][2]sim.ResourceID // by link ID: A→B, B→A (equal for memory links)
	routes  map[[2]topology.NodeID]*path
	p2p     map[[2]int]error // p2pCheck results by (rank, peer)
	// capGroups: the shared rate-cap resource of each Kernel.CapGroup
	// (every transfer of a group must ask for the same RateCap).
	capGroups map[string]sim.ResourceID
	// lastPath[r] is the path GPU r's memory last took (to lastTo[r]):
	// ranks of a collective mostly talk to the same peer, and this spares
	// the map lookup.
	lastPath []*path
	lastTo   []Mem
	// flagGroups: the sector group of each flag made by NewFlag with one;
	// pollers: the waits polling each sector group of host memory now.
	flagGroups map[*sim.FlagVar]string
	pollers    map[sectorKey]int // poll loops on each sector group now
	waits      map[pollerKey]int // pending waits of each poll loop
}

// path is a route prepared for flows: resources in both directions.
type path struct {
	route   topology.Route
	fwd     []sim.ResourceID // from → to
	back    []sim.ResourceID // to → from, in order of travel
	types   []topology.LinkType
	smp     bool // crosses the socket interconnect
	destHB  int  // host bridge ID above the destination (for collapse), 0 if none
	latency sim.Duration

	p2pErr  error // whether GPU-to-GPU access along this path is allowed, once checked
	p2pDone bool
	cached  []cachedHops // weighted hops per access kind, wire factor and requests
}

type cachedHops struct {
	a        access
	wire     float64
	requests bool
	hops     []sim.Hop
}

// New builds a machine: one resource per direction of every link (one for
// both directions of a memory link), with collapse rules where the platform
// has them.
func New(top *topology.Topology) (*Machine, error) {
	eng := sim.NewEngine()
	net := sim.NewNetwork(eng)
	m := &Machine{Top: top, Eng: eng, Net: net, Phys: resolve(top.Params), routes: map[[2]topology.NodeID]*path{}}
	for _, l := range top.Links() {
		name := top.LinkName(l)
		a, b := top.Node(l.A).Name, top.Node(l.B).Name
		if l.Type == topology.Memory {
			id, err := net.AddResource(name, l.Bandwidth)
			if err != nil {
				return nil, fmt.Errorf("hw: %w", err)
			}
			m.linkRes = append(m.linkRes, [2]sim.ResourceID{id, id})
			continue
		}
		f, err := net.AddResource(a+"→"+b, l.Bandwidth)
		if err != nil {
			return nil, fmt.Errorf("hw: %w", err)
		}
		r, err := net.AddResource(b+"→"+a, l.Bandwidth)
		if err != nil {
			return nil, fmt.Errorf("hw: %w", err)
		}
		m.linkRes = append(m.linkRes, [2]sim.ResourceID{f, r})
		if top.Platform.WriteCollapse && l.Type == topology.PCIe {
			// Writes climbing towards a host bridge collapse when they
			// fan out to GPUs behind two or more other root complexes.
			up := f
			if top.Node(l.A).Kind == topology.HostBridge {
				up = r
			}
			if top.Node(l.A).Kind == topology.HostBridge || top.Node(l.B).Kind == topology.HostBridge {
				// The published collapse rates are payload rates of SM stores.
				wire := top.Platform.CollapseRate * sim.Rate(m.storeWeight())
				if err := net.SetCollapse(up, sim.Collapse{Kind: sim.Write, MinClasses: 2, Capacity: wire}); err != nil {
					return nil, fmt.Errorf("hw: %w", err)
				}
			}
		}
	}
	return m, nil
}

// NumRanks returns the number of GPUs.
func (m *Machine) NumRanks() int { return m.Top.NumGPUs() }

func (m *Machine) node(x Mem) (topology.NodeID, error) {
	if x.Host {
		id, ok := m.Top.HostMemoryOf(x.Socket)
		if !ok {
			return 0, fmt.Errorf("hw: %s: socket %d has no host memory (sockets: %v)", m.Top.Name, x.Socket, m.Top.Sockets())
		}
		return id, nil
	}
	if x.Rank < 0 || x.Rank >= m.Top.NumGPUs() {
		return 0, fmt.Errorf("hw: %s: no GPU rank %d (ranks 0–%d)", m.Top.Name, x.Rank, m.Top.NumGPUs()-1)
	}
	return m.Top.GPUs()[x.Rank], nil
}

// LocalSocket returns the socket of rank r's GPU.
func (m *Machine) LocalSocket(r int) int { return m.Top.GPU(r).Socket }

// path returns the prepared route between two memories seen from a GPU.
func (m *Machine) path(from, to Mem) (*path, error) {
	if r := from.Rank; !from.Host && r >= 0 && r < len(m.lastPath) && m.lastTo[r] == to && m.lastPath[r] != nil {
		return m.lastPath[r], nil
	}
	a, err := m.node(from)
	if err != nil {
		return nil, err
	}
	b, err := m.node(to)
	if err != nil {
		return nil, err
	}
	key := [2]topology.NodeID{a, b}
	if p, ok := m.routes[key]; ok {
		m.remember(from, to, p)
		return p, nil
	}
	mode := topology.RouteAny
	if from.Host || to.Host {
		mode = topology.RoutePCIe
	}
	r, err := m.Top.Route(a, b, mode)
	if err != nil {
		return nil, fmt.Errorf("hw: %w", err)
	}
	p := &path{route: r, latency: r.Latency}
	for _, s := range r.Steps {
		ids := m.linkRes[s.Link.ID]
		if s.Forward() {
			p.fwd = append(p.fwd, ids[0])
		} else {
			p.fwd = append(p.fwd, ids[1])
		}
		p.types = append(p.types, s.Link.Type)
		if s.Link.Type == topology.SMP {
			p.smp = true
		}
	}
	for i := len(r.Steps) - 1; i >= 0; i-- {
		s := r.Steps[i]
		ids := m.linkRes[s.Link.ID]
		if s.Forward() {
			p.back = append(p.back, ids[1])
		} else {
			p.back = append(p.back, ids[0])
		}
	}
	if !to.Host {
		nodes := r.Nodes()
		for i := len(nodes) - 1; i >= 0; i-- {
			if m.Top.Node(nodes[i]).Kind == topology.HostBridge {
				p.destHB = int(nodes[i]) + 1
				break
			}
		}
	}
	m.routes[key] = p
	m.remember(from, to, p)
	return p, nil
}

func (m *Machine) remember(from, to Mem, p *path) {
	if !from.Host {
		if m.lastPath == nil {
			m.lastPath = make([]*path, m.Top.NumGPUs())
			m.lastTo = make([]Mem, m.Top.NumGPUs())
		}
		m.lastPath[from.Rank], m.lastTo[from.Rank] = p, to
	}
}

// access kinds, for wire weights.
type access uint8

const (
	smStore access = iota
	smLoad
	ceXfer
)

// storeWeight is the PCIe wire bytes per payload byte of SM stores.
func (m *Machine) storeWeight() float64 {
	ph := &m.Phys
	return (ph.SMWritePayload + ph.TLPOverhead) / ph.SMWritePayload / ph.LinkEfficiency
}

// route returns the weighted hops of a transfer of kind a along p, with
// the protocol's wire factor and, for reads, the requests' share of the
// reverse direction; cached on the path (the network copies routes).
func (m *Machine) route(p *path, a access, wire float64, requests bool) []sim.Hop {
	for _, c := range p.cached {
		if c.a == a && c.wire == wire && c.requests == requests {
			return c.hops
		}
	}
	h := m.hops(p.fwd, p.types, a)
	if requests {
		granule := m.Phys.ReadCpl
		if a == ceXfer {
			granule = m.Phys.MaxReadRequest
		}
		h = m.withRequests(h, p, granule)
	}
	h = scale(h, wire)
	p.cached = append(p.cached, cachedHops{a, wire, requests, h})
	return h
}

// hops returns the flow route over resources with wire weights for the access kind.
func (m *Machine) hops(res []sim.ResourceID, types []topology.LinkType, a access) []sim.Hop {
	ph := &m.Phys
	var pcie, nvl float64
	switch a {
	case smStore:
		pcie = m.storeWeight()
		nvl = 1 / ph.NVLinkSMEff
	case smLoad:
		pcie = (ph.ReadCpl + ph.TLPOverhead) / ph.ReadCpl / ph.LinkEfficiency
		nvl = 1 / ph.NVLinkSMEff
	case ceXfer:
		pcie = (ph.CEPayload + ph.TLPOverhead) / ph.CEPayload / ph.LinkEfficiency
		nvl = 1 / ph.NVLinkCEEff
	}
	out := make([]sim.Hop, len(res))
	for i, id := range res {
		w := 1.0
		switch types[i] {
		case topology.PCIe:
			w = pcie
		case topology.NVLink:
			w = nvl
		}
		out[i] = sim.Hop{Res: id, Weight: w}
	}
	return out
}

// withRequests adds the read requests' share of the reverse PCIe hops to a
// read's route: one request TLP per granule bytes of data.
func (m *Machine) withRequests(h []sim.Hop, p *path, granule float64) []sim.Hop {
	w := m.Phys.ReadRequest / granule / m.Phys.LinkEfficiency
	n := len(p.types)
	for i, id := range p.back {
		if p.types[n-1-i] == topology.PCIe {
			h = append(h, sim.Hop{Res: id, Weight: w})
		}
	}
	return h
}

func (m *Machine) memLatency(x Mem) sim.Duration {
	if x.Host {
		// A host whose IOMMU translates the GPUs' accesses (no
		// pass-through) adds a translation to each (platform.iommu_host_latency).
		return m.Phys.HostMemLatency + m.Phys.IOMMUHostLatency
	}
	return m.Phys.GPUMemLatency
}

// RoundTrip returns the time of one dependent read by rank r of memory x:
// request out, memory access, completion back.
func (m *Machine) RoundTrip(r int, x Mem) (sim.Duration, error) {
	if !x.Host && x.Rank == r {
		return m.Phys.GPUMemLatency, nil
	}
	p, err := m.path(GPUMem(r), x)
	if err != nil {
		return 0, err
	}
	return 2*p.latency + m.memLatency(x), nil
}

// ResidentThreads returns how many of blocks × threads run at once on one GPU.
func (m *Machine) ResidentThreads(blocks, threads int) int {
	b := min(blocks, m.Phys.SMs*m.Phys.MaxBlocksPerSM)
	return b * threads
}

// Kernel describes the launch configuration of the kernel issuing accesses.
type Kernel struct {
	Blocks, Threads int
	// Wire multiplies the wire bytes per payload byte of the accesses:
	// 2 for NCCL's LL protocol (8 B of data per 16-B line), 128/120 for
	// LL128; 0 or 1 for plain data.
	Wire float64
	// Share is the fraction of the kernel's loads in flight and store
	// rate that this transfer gets when the kernel moves data to or from
	// several places at once (1/(n−1) for a pull from n−1 peers); 0 or 1:
	// all of it.
	Share float64
	// LoadsInFlight is the 16-byte loads each thread keeps in flight for
	// this transfer; 0 means the GPU's default (gpu.loads_in_flight,
	// measured for a streaming copy loop). A kernel whose loop loads from
	// n−1 peers independently keeps about one load in flight per peer.
	LoadsInFlight float64
	// RateCap, if > 0, caps each transfer of the kernel (a protocol's own
	// throughput limit, e.g. NCCL's LL per channel).
	RateCap sim.Rate
	// CapGroup, if set, makes RateCap a limit on all the kernel's transfers
	// with the same group together (those in flight share it) instead of
	// a limit on each: a protocol loop whose throughput is bounded however
	// many of its steps are in flight at once (NCCL LL on one connection).
	// Every transfer of a group must carry the same RateCap.
	CapGroup string
	// ReduceLoop: the loads feed a load-reduce-store loop, whose every
	// iteration adds gpu.reduce_loop_overhead (gpu.reduce_loop_overhead_pcie
	// over PCIe) to the load round trip: the in-flight bytes turn over once
	// per round trip plus that.
	ReduceLoop bool
	// Loop is the per-thread loop the transfer runs in (see LoopRate):
	// its rate bounds the transfer, and, for a loop with a wire factor,
	// the SM's store rate counts wire bytes.
	Loop LoopKind
	// LoopAt is where the loop's iteration waits: the memory its LL lines
	// live in (the incoming FIFO), or its sources' memory (Simple).
	LoopAt Mem
	// Unroll: 16-byte loads per source each thread keeps in flight
	// (LoopSimple).
	Unroll int
	// Sources: loads per output element (1 copy, 2 reduction; LoopSimple).
	Sources int
	// Polled: the loads are the ones a poll loop has just made (NCCL LL
	// lines carry their own flags): the wait before them paid the round
	// trip, and the data streams at the read's rate from the start.
	Polled bool
	// LoopGroup, if set, makes the loop's rate a limit on all the
	// transfers of the group together (the steps in flight that one
	// block's loop moves, as an NCCL connection's FIFO steps) instead of
	// on each.
	LoopGroup string
	// Ranks and RanksInHost: the buffers a LoopRanks loop visits.
	Ranks       int
	RanksInHost bool
}

// capped applies the kernel's RateCap to a transfer: on the flow itself,
// or, with a CapGroup, as one more hop over a resource of that capacity
// which every transfer of the group crosses (payload bytes, weight 1).
func (m *Machine) capped(route []sim.Hop, capr sim.Rate, k Kernel) ([]sim.Hop, sim.Rate, error) {
	if k.RateCap <= 0 {
		return route, capr, nil
	}
	if k.CapGroup == "" {
		return route, min(capr, k.RateCap), nil
	}
	id, ok := m.capGroups[k.CapGroup]
	if ok {
		if c := m.Net.Resource(id).Capacity; c != k.RateCap {
			return nil, 0, fmt.Errorf("hw: rate cap group %s: a transfer asks for %v, the group was made with %v", k.CapGroup, k.RateCap, c)
		}
	} else {
		var err error
		id, err = m.Net.AddResource("cap:"+k.CapGroup, k.RateCap)
		if err != nil {
			return nil, 0, fmt.Errorf("hw: rate cap group %s: %w", k.CapGroup, err)
		}
		if m.capGroups == nil {
			m.capGroups = map[string]sim.ResourceID{}
		}
		m.capGroups[k.CapGroup] = id
	}
	out := make([]sim.Hop, len(route), len(route)+1)
	copy(out, route)
	return append(out, sim.Hop{Res: id, Weight: 1}), capr, nil
}

// loopBound applies the kernel's loop rate (LoopRate) to a transfer: on the
// flow itself, or, with a LoopGroup, as one more hop over a resource of
// that capacity which every transfer of the group crosses.
func (m *Machine) loopBound(r int, route []sim.Hop, capr sim.Rate, k Kernel) ([]sim.Hop, sim.Rate, error) {
	if k.Loop == LoopNone {
		return route, capr, nil
	}
	loop, err := m.LoopRate(r, k)
	if err != nil || loop <= 0 {
		return route, capr, err
	}
	if k.LoopGroup == "" {
		return route, min(capr, loop), nil
	}
	key := fmt.Sprintf("loop:%d:%s@%d", r, k.LoopGroup, int64(loop))
	id, ok := m.capGroups[key]
	if !ok {
		id, err = m.Net.AddResource(key, loop)
		if err != nil {
			return nil, 0, fmt.Errorf("hw: loop group %s: %w", k.LoopGroup, err)
		}
		if m.capGroups == nil {
			m.capGroups = map[string]sim.ResourceID{}
		}
		m.capGroups[key] = id
	}
	out := make([]sim.Hop, len(route), len(route)+1)
	copy(out, route)
	return append(out, sim.Hop{Res: id, Weight: 1}), capr, nil
}

func (k Kernel) share() float64 {
	if k.Share <= 0 || k.Share > 1 {
		return 1
	}
	return k.Share
}

func (k Kernel) wire() float64 {
	if k.Wire <= 0 {
		return 1
	}
	return k.Wire
}

func scale(h []sim.Hop, w float64) []sim.Hop {
	if w != 1 {
		for i := range h {
			h[i].Weight *= w
		}
	}
	return h
}

func (k Kernel) check(op, label string) error {
	if k.Blocks <= 0 || k.Threads <= 0 {
		return fmt.Errorf("hw: %s %s: blocks and threads must be > 0, got %d × %d", op, label, k.Blocks, k.Threads)
	}
	return nil
}

// Write streams bytes of SM stores from rank r to memory dst and calls done
// when the last byte has landed.
func (m *Machine) Write(r int, dst Mem, bytes sim.Bytes, k Kernel, label string, done func()) error {
	if err := k.check("write", label); err != nil {
		return err
	}
	p, err := m.path(GPUMem(r), dst)
	if err != nil {
		return err
	}
	if err := m.p2pOn(p, r, dst, "write"); err != nil {
		return err
	}
	sms := min(k.Blocks, m.Phys.SMs)
	capr := sim.Rate(float64(sms)*k.share()) * m.Phys.SMStoreRate
	if k.Loop == LoopLL || k.Loop == LoopSimple {
		capr /= sim.Rate(k.wire()) // the SMs store wire bytes (LL's flags, LL128's flag words)
	}
	if p.smp && !dst.Host {
		capr = min(capr, m.Phys.SMPFlowCap)
	}
	route, capr, err := m.capped(m.route(p, smStore, k.wire(), false), capr, k)
	if err != nil {
		return err
	}
	if k.Loop != LoopRanks { // a pull loop bounds its loads, not the kernel's stores
		route, capr, err = m.loopBound(r, route, capr, k)
		if err != nil {
			return err
		}
	}
	class := 0
	if !dst.Host {
		class = p.destHB
	}
	spec := sim.FlowSpec{
		Label: label, Kind: sim.Write, Class: class,
		Route: route, Bytes: bytes, Cap: capr,
		Latency: p.latency + m.memLatency(dst), Done: done,
	}
	if k.Loop == LoopSimple {
		// A copy loop's first stores wait for its first loads.
		it, err := m.copyIterTimeFor(r, k, bytes)
		if err != nil {
			return err
		}
		return m.startAfter(it, spec)
	}
	return m.Net.Launch(spec)
}

// Read pulls bytes from memory src into rank r with SM loads and calls done
// when the last completion is back. The rate is capped at bytes in flight /
// round trip (Little's law).
func (m *Machine) Read(r int, src Mem, bytes sim.Bytes, k Kernel, label string, done func()) error {
	if err := k.check("read", label); err != nil {
		return err
	}
	p, err := m.path(src, GPUMem(r))
	if err != nil {
		return err
	}
	if err := m.p2pOn(p, r, src, "read"); err != nil {
		return err
	}
	rtt := 2*p.latency + m.memLatency(src)
	loads := m.Phys.LoadsInFlight
	if k.LoadsInFlight > 0 {
		loads = k.LoadsInFlight
	}
	inflight := float64(m.ResidentThreads(k.Blocks, k.Threads)) * 16 * loads * k.share()
	if k.ReduceLoop {
		rtt += m.Phys.ReduceLoopOverhead
		if !p.nvlink() {
			rtt += m.Phys.ReduceLoopExtraPCIe
		}
	}
	capr := sim.Rate(inflight / rtt.Seconds())
	if p.smp && !src.Host {
		capr = min(capr, m.Phys.SMPFlowCap)
	}
	route, capr, err := m.capped(m.route(p, smLoad, k.wire(), true), capr, k)
	if err != nil {
		return err
	}
	route, capr, err = m.loopBound(r, route, capr, k)
	if err != nil {
		return err
	}
	spec := sim.FlowSpec{
		Label: label, Kind: sim.Read,
		Route: route, Bytes: bytes, Cap: capr,
		Latency: p.latency, Done: done,
	}
	if k.Polled {
		spec.Latency = 0
		return m.startAfter(0, spec)
	}
	// The first request reaches the data one way plus a memory access in.
	return m.startAfter(p.latency+m.memLatency(src), spec)
}

// p2pOn is p2pCheck with its answer kept on the path.
func (m *Machine) p2pOn(p *path, r int, x Mem, op string) error {
	if x.Host || x.Rank == r {
		return nil
	}
	if !p.p2pDone {
		p.p2pErr, p.p2pDone = m.p2pAllowed(r, x, op), true
	}
	return p.p2pErr
}

// p2pCheck refuses GPU-to-GPU access the platform does not allow.
func (m *Machine) p2pCheck(r int, x Mem, op string) error {
	if x.Host || x.Rank == r {
		return nil
	}
	key := [2]int{r, x.Rank}
	if err, ok := m.p2p[key]; ok && (err == nil) {
		return nil
	}
	err := m.p2pAllowed(r, x, op)
	if m.p2p == nil {
		m.p2p = map[[2]int]error{}
	}
	m.p2p[key] = err
	return err
}

func (m *Machine) p2pAllowed(r int, x Mem, op string) error {
	a, err := m.node(GPUMem(r))
	if err != nil {
		return err
	}
	b, err := m.node(x)
	if err != nil {
		return err
	}
	ok, c, err := m.Top.P2PAllowed(a, b)
	if err != nil {
		return fmt.Errorf("hw: %w", err)
	}
	if !ok {
		return fmt.Errorf("hw: %s: GPU%d cannot %s GPU%d's memory: P2P over a %s path is not allowed on this platform", m.Top.Name, r, op, x.Rank, c)
	}
	return nil
}

// CopyDir is the direction of a copy-engine transfer.
type CopyDir uint8

// Copy directions.
const (
	H2D CopyDir = iota
	D2H
	P2P
)

// String returns h2d, d2h or p2p.
func (d CopyDir) String() string { return [...]string{"h2d", "d2h", "p2p"}[d] }

// Copy runs a copy-engine transfer of bytes owned by rank r: H2D reads the
// rank's NUMA-local host memory, D2H writes it, P2P writes to peer. done
// runs when the last byte has landed.
func (m *Machine) Copy(r int, dir CopyDir, peer int, bytes sim.Bytes, label string, done func()) error {
	ph := &m.Phys
	host := HostMem(m.LocalSocket(r))
	switch dir {
	case H2D:
		p, err := m.path(host, GPUMem(r))
		if err != nil {
			return err
		}
		rtt := 2*p.latency + ph.HostMemLatency
		spec := sim.FlowSpec{Label: label, Kind: sim.Copy, Route: m.route(p, ceXfer, 1, true), Bytes: bytes,
			Cap: sim.Rate(ph.CEWindow / rtt.Seconds()), Latency: p.latency, Done: done}
		return m.startAfter(ph.CESetup+p.latency+ph.HostMemLatency, spec)
	case D2H:
		p, err := m.path(GPUMem(r), host)
		if err != nil {
			return err
		}
		spec := sim.FlowSpec{Label: label, Kind: sim.Copy, Route: m.route(p, ceXfer, 1, false), Bytes: bytes,
			Latency: p.latency + ph.HostMemLatency, Done: done}
		return m.startAfter(ph.CESetup, spec)
	case P2P:
		if err := m.p2pCheck(r, GPUMem(peer), "copy to"); err != nil {
			return err
		}
		p, err := m.path(GPUMem(r), GPUMem(peer))
		if err != nil {
			return err
		}
		setup := ph.CEP2PSetup
		spec := sim.FlowSpec{Label: label, Kind: sim.Copy, Route: m.route(p, ceXfer, 1, false), Bytes: bytes,
			Latency: p.latency + ph.GPUMemLatency, Done: done}
		if p.smp {
			spec.Cap = ph.SMPFlowCap
		}
		return m.startAfter(setup, spec)
	}
	return fmt.Errorf("hw: copy %s: unknown direction %d", label, dir)
}

func (m *Machine) startAfter(d sim.Duration, spec sim.FlowSpec) error {
	if spec.Bytes < 0 {
		return fmt.Errorf("hw: %s: bytes must be ≥ 0, got %d", spec.Label, spec.Bytes)
	}
	m.Eng.After(d, func() {
		// The route and sizes were checked above; Start cannot fail here.
		_ = m.Net.Launch(spec)
	})
	return nil
}

// SignalFlag writes value into flag f, which lives in memory at, from rank
// r: the write lands one route latency plus a memory access later.
func (m *Machine) SignalFlag(r int, at Mem, f *sim.FlagVar, value int64) error {
	d, err := m.StoreLanding(r, at)
	if err != nil {
		return err
	}
	m.Eng.After(d, func() { f.Set(value) })
	return nil
}

// StoreLanding is how long a small store from rank r takes to land in
// memory at: one route latency plus a memory access.
func (m *Machine) StoreLanding(r int, at Mem) (sim.Duration, error) {
	if !at.Host && at.Rank == r {
		return m.Phys.GPUMemLatency, nil
	}
	p, err := m.path(GPUMem(r), at)
	if err != nil {
		return 0, err
	}
	return p.latency + m.memLatency(at), nil
}

// BarrierWaitExtra is what a wait that ends a thread block's barrier with
// its peers adds to seeing the flag: the block's threads meet at
// __syncthreads around the flag exchange (gpu.barrier_sync), and a
// compare-and-swap poll, which consumes the token, is slower than a load
// (gpu.atomic_poll_extra). Measured on h200x2 (barrier.jsonl): a flag
// barrier between two GPUs 779 ns, a compare-and-swap one 1225 ns.
func (m *Machine) BarrierWaitExtra(atomic bool) sim.Duration {
	d := m.Phys.BarrierSync
	if atomic {
		d += m.Phys.AtomicPollExtra
	}
	return d
}

// LaunchMode is how a kernel is launched.
type LaunchMode uint8

// Launch modes.
const (
	Graph LaunchMode = iota // a node of a replayed CUDA graph
	Eager                   // launched from the host one by one
)

// String returns graph or eager.
func (l LaunchMode) String() string { return [...]string{"graph", "eager"}[l] }

// LaunchCost is the device-side time a kernel launch adds before the
// kernel does useful work: the gap between kernels on a stream
// (gpu.launch_graph) and the kernel's prologue (gpu.kernel_prologue). In
// eager mode the host's issue rate also paces the kernels; see
// IssueInterval.
func (m *Machine) LaunchCost(LaunchMode) sim.Duration {
	return m.Phys.LaunchGraph + m.Phys.KernelPrologue
}

// FenceCost is the time a system-scope fence takes on rank r after stores
// to memory at: the stores must be acknowledged, about one round trip to
// that memory plus a per-fabric extra, and never less than a fence after
// local stores (gpu.fence_sys_local). Measured on h200x2 (micro2.jsonl):
// local 583 ns, peer over NVLink 919 ns, pinned host memory 1393 ns. Over
// PCIe, whether the fence waits for that round trip is a property of the
// platform (gpu.fence_pcie_round_trip): the single H200 of
// testdata/h200x1-arsim fences stores to host memory in 616 ns, its local
// fence (518 ns) plus gpu.fence_posted_extra, without a round trip.
func (m *Machine) FenceCost(r int, at Mem) (sim.Duration, error) {
	if !at.Host && at.Rank == r {
		return m.Phys.FenceLocal, nil
	}
	p, err := m.path(GPUMem(r), at)
	if err != nil {
		return 0, err
	}
	if !p.nvlink() && !m.Phys.FencePCIeRoundTrip {
		return m.Phys.FenceLocal + m.Phys.FencePostedExtra, nil
	}
	rtt, err := m.RoundTrip(r, at)
	if err != nil {
		return 0, err
	}
	extra := m.Phys.FenceExtraPCIe
	if p.nvlink() {
		extra = m.Phys.FenceExtraNVLink
	}
	return max(m.Phys.FenceLocal, rtt+extra), nil
}

// FenceAfterLanding is what a fence adds once the stores it orders have
// landed in memory at: FenceCost counts from the stores' issue (the
// measured loop is store, then fence), and a schedule's Fence follows the
// Write ops it orders, which end when their data has landed, so the
// landing time is already spent (StoreLanding). Over NVLink on h200x2:
// 919 − 500 = 419 ns, the acknowledgement's way back plus 70 ns.
func (m *Machine) FenceAfterLanding(r int, at Mem) (sim.Duration, error) {
	d, err := m.FenceCost(r, at)
	if err != nil {
		return 0, err
	}
	land, err := m.StoreLanding(r, at)
	if err != nil {
		return 0, err
	}
	return max(0, d-land), nil
}

// nvlink reports whether the path crosses NVLink.
func (p *path) nvlink() bool {
	for _, t := range p.types {
		if t == topology.NVLink {
			return true
		}
	}
	return false
}

// IssueInterval is the host time to issue one eager kernel launch
// (gpu.launch_eager): back-to-back eager kernels cannot start faster.
func (m *Machine) IssueInterval() sim.Duration { return m.Phys.LaunchEager }

// ReduceTime is the time to reduce: read inputs × bytes and write bytes of
// local memory at the GPU's memory bandwidth.
func (m *Machine) ReduceTime(inputs int, bytes sim.Bytes) sim.Duration {
	total := float64(inputs+1) * float64(bytes)
	d, err := sim.FromSeconds(total / float64(m.Phys.GPUMemBandwidth))
	if err != nil {
		return sim.Duration(math.MaxInt64 / 4)
	}
	return d
}
