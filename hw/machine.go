package hw

import (
	"fmt"
	"slices"

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
	StoreIssue                              sim.Duration // gpu.store_issue
	BarrierSync, AtomicPollExtra            sim.Duration
	BarrierMeet, BarrierMeetPerWarp         sim.Duration
	PostedWriteBuffer                       sim.Bytes    // pcie.posted_write_buffer
	StoreShareBytes                         sim.Bytes    // pcie.store_share_bytes
	FirstBurstHeld                          sim.Bytes    // pcie.first_burst_held
	PostedWaitPerDoubling                   sim.Duration // pcie.posted_wait_per_doubling
	PostedWaitSpanKnee                      sim.Bytes    // pcie.posted_wait_span_knee
	PostedWaitSpanDoublings                 float64      // pcie.posted_wait_span_doublings
	PostedWaitSpanKneeChase                 sim.Bytes    // pcie.posted_wait_span_knee_chase
	PostedWaitSpanPartChase                 sim.Bytes    // pcie.posted_wait_span_part_chase
	PostedWaitOwnSM                         sim.Duration // pcie.posted_wait_own_sm
	PostedWaitWriterOnSM                    float64      // pcie.posted_wait_writer_on_sm
	PostedWaitOwnHalf                       sim.Duration // pcie.posted_wait_own_half
	PostedWaitOwnHalfPerDoubling            sim.Duration // pcie.posted_wait_own_half_per_doubling
	PostedWaitOtherHalf                     sim.Duration // pcie.posted_wait_other_half
	PostedWaitOtherHalfBesideOwn            float64      // pcie.posted_wait_other_half_beside_own
	PostedWaitUnevenStride                  float64      // pcie.posted_wait_uneven_stride
	PostedWaitUnevenStrideOther             float64      // pcie.posted_wait_uneven_stride_other
	PostedWaitUnevenStrideWarp              float64      // pcie.posted_wait_uneven_stride_warp
	PostedWaitUnevenStrideWarpOther         float64      // pcie.posted_wait_uneven_stride_warp_other
	UnevenStrideLargeTPCs                   int          // pcie.uneven_stride_large_tpcs
	UnevenStrideLargeDepth                  float64      // pcie.uneven_stride_large_depth
	PostedWaitLoneLoadHalves                float64      // pcie.posted_wait_lone_load_halves
	PostedWaitLoneLoadHalvesPerDoubling     float64      // pcie.posted_wait_lone_load_halves_per_doubling
	PostedWaitLoneLoadHalvesOther           float64      // pcie.posted_wait_lone_load_halves_other
	PostedWaitLoneLoadHalvesSpan0           float64      // pcie.posted_wait_lone_load_halves_span0
	PostedWaitOne                           sim.Duration // pcie.posted_wait_one
	PostedWaitLoneLoad                      float64      // pcie.posted_wait_lone_load
	HostLoadsBesideStores                   sim.Bytes    // gpu.host_loads_beside_stores
	HostLoadsWriterOnSMRate                 sim.Rate     // gpu.host_loads_writer_on_sm_rate; 0: none
	HostLoadsOutstanding                    sim.Bytes    // gpu.host_loads_outstanding; 0: no limit
	HostRequestsOutstanding                 float64      // gpu.host_requests_outstanding; 0: no limit
	HostRequestsOutstanding8bit             float64      // gpu.host_requests_outstanding_8bit; 0: no limit
	MemLoadedLatency                        sim.Duration // gpu.mem_loaded_latency
	HostPollService, HostAtomicService      sim.Duration
	HostAtomicServiceLines                  sim.Duration // hostmem.atomic_service_lines: a line's atomic while they span several lines
	HostLineContention                      sim.Duration // hostmem.line_contention
	HostChangingFlagWait                    sim.Duration // hostmem.changing_flag_wait
	HostChangingFlagCap                     sim.Duration // hostmem.changing_flag_cap
	HostSlotService                         sim.Duration // hostmem.slot_service
	SpinStoreService                        sim.Duration // gpu.spin_store_service
	HostStoreService                        sim.Duration // gpu.host_store_service
	HostPollLoad                            sim.Duration // gpu.host_poll_load
	HostSectorCollision                     sim.Duration // hostmem.sector_collision
	HostCollisionMask                       int          // hostmem.collision_mask, address bits
	HostForeignStoreCollision               sim.Duration // hostmem.foreign_store_collision
	HostForeignCollisionCap                 sim.Duration // hostmem.foreign_collision_cap
	HostCrowdedLineCollision                sim.Duration // hostmem.crowded_line_collision
	HostCrowdedLineCap                      sim.Duration // hostmem.crowded_line_cap
	LLIterOverhead, LLIterPerWarp           sim.Duration
	LL128IterOverhead, LL128IterPerWarp     sim.Duration
	VectorLoadExtraPCIe, CopyIterOverhead   sim.Duration
	CopyDRAMExtra                           sim.Duration // gpu.copy_dram_extra
	LoadWaitHost                            sim.Duration // gpu.load_wait_host
	LoadWaitL2                              sim.Duration // gpu.load_wait_l2
	VectorIssueL2                           sim.Duration // gpu.vector_issue_l2
	LoopStart, LoopStartPerLoad             sim.Duration // gpu.loop_start, gpu.loop_start_per_load
	LoopStartLoads                          float64      // gpu.loop_start_loads
	SMLoadRate                              sim.Rate
	SMLocalStoreRate                        sim.Rate // gpu.sm_local_store_bandwidth
	VectorIssue, VectorIssuePerWarp         sim.Duration
	HostStoreIssuePerWarp                   sim.Duration // gpu.host_store_issue_per_warp
	PollLoopOverhead                        sim.Duration
	PollRelaxedSaving                       sim.Duration // gpu.poll_relaxed_saving
	SpillReloadWait                         sim.Duration // gpu.spill_reload_wait
	AtomicSlowPageExtra                     sim.Duration // gpu.atomic_slow_page_extra
	IOMMUHostLatency                        sim.Duration
	FreshLineSaving                         sim.Duration // hostmem.fresh_line_saving
	LLStepOverhead                          sim.Duration // nccl.ll_step_overhead
	LL128StepOverhead                       sim.Duration // nccl.ll128_step_overhead
	LL128IterExtra                          sim.Duration // nccl.ll128_iter_extra
	LLIterExtra                             sim.Duration // nccl.ll_iter_extra
	LLRuntimeOp                             sim.Duration // capture.ll_runtime_op
	FenceLoopCode                           sim.Duration // capture.fence_loop_code
	FencePollWaitGrowth                     float64      // gpu.fence_poll_wait_growth, of a round trip per doubling
	LL128ReduceExtra                        sim.Duration // gpu.ll128_reduce_extra
	DRAMSrcExtra                            sim.Duration // gpu.dram_src_extra
	CEWindow                                float64
	CESetup, CEP2PSetup                     sim.Duration
	NVLinkSMEff, NVLinkCEEff                float64
	SMPFlowCap                              sim.Rate
	SMHostRate                              sim.Rate // pcie.sm_host_bandwidth; 0: none
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
		GPUMemBandwidth: sim.Rate(g("gpu.mem_bandwidth")*g("gpu.mem_efficiency")) * sim.GBps,
		SMs:             int(g("gpu.sms")), MaxBlocksPerSM: int(g("gpu.max_blocks_per_sm")),
		LoadsInFlight: g("gpu.loads_in_flight"), SMStoreRate: sim.Rate(g("gpu.sm_store_bandwidth")) * sim.GBps,
		LaunchEager: us(g("gpu.launch_eager")), LaunchGraph: us(g("gpu.launch_graph")),
		ReduceLoopOverhead: ns(g("gpu.reduce_loop_overhead")), ReduceLoopExtraPCIe: ns(g("gpu.reduce_loop_extra_pcie")),
		FenceLocal: ns(g("gpu.fence_sys_local")), FenceExtraNVLink: ns(g("gpu.fence_extra_nvlink")), FenceExtraPCIe: ns(g("gpu.fence_extra_pcie")),
		KernelPrologue:     us(g("gpu.kernel_prologue")),
		FencePCIeRoundTrip: g("gpu.fence_pcie_round_trip") != 0, FencePostedExtra: ns(g("gpu.fence_posted_extra")), StoreIssue: ns(g("gpu.store_issue")),
		BarrierSync: ns(g("gpu.barrier_sync")), AtomicPollExtra: ns(g("gpu.atomic_poll_extra")),
		BarrierMeet: ns(g("gpu.barrier_meet")), BarrierMeetPerWarp: ns(g("gpu.barrier_meet_per_warp")),
		HostPollService: ns(g("hostmem.poll_service")), HostAtomicService: ns(g("hostmem.atomic_service")), HostAtomicServiceLines: ns(g("hostmem.atomic_service_lines")),
		PostedWriteBuffer: sim.Bytes(g("pcie.posted_write_buffer")), StoreShareBytes: sim.Bytes(g("pcie.store_share_bytes")), FirstBurstHeld: sim.Bytes(g("pcie.first_burst_held")),
		PostedWaitPerDoubling: ns(g("pcie.posted_wait_per_doubling")), PostedWaitSpanKnee: sim.Bytes(g("pcie.posted_wait_span_knee")), PostedWaitSpanDoublings: g("pcie.posted_wait_span_doublings"), PostedWaitSpanKneeChase: sim.Bytes(g("pcie.posted_wait_span_knee_chase")), PostedWaitSpanPartChase: sim.Bytes(g("pcie.posted_wait_span_part_chase")), PostedWaitOwnSM: ns(g("pcie.posted_wait_own_sm")), PostedWaitWriterOnSM: g("pcie.posted_wait_writer_on_sm"), PostedWaitOwnHalf: ns(g("pcie.posted_wait_own_half")), PostedWaitOwnHalfPerDoubling: ns(g("pcie.posted_wait_own_half_per_doubling")), PostedWaitOtherHalf: ns(g("pcie.posted_wait_other_half")), PostedWaitOtherHalfBesideOwn: g("pcie.posted_wait_other_half_beside_own"), PostedWaitUnevenStride: g("pcie.posted_wait_uneven_stride"), PostedWaitUnevenStrideOther: g("pcie.posted_wait_uneven_stride_other"), PostedWaitUnevenStrideWarp: g("pcie.posted_wait_uneven_stride_warp"), PostedWaitUnevenStrideWarpOther: g("pcie.posted_wait_uneven_stride_warp_other"), UnevenStrideLargeTPCs: int(g("pcie.uneven_stride_large_tpcs")), UnevenStrideLargeDepth: g("pcie.uneven_stride_large_depth"), PostedWaitLoneLoadHalves: g("pcie.posted_wait_lone_load_halves"), PostedWaitLoneLoadHalvesSpan0: g("pcie.posted_wait_lone_load_halves_span0"), PostedWaitLoneLoadHalvesPerDoubling: g("pcie.posted_wait_lone_load_halves_per_doubling"), PostedWaitLoneLoadHalvesOther: g("pcie.posted_wait_lone_load_halves_other"), PostedWaitOne: ns(g("pcie.posted_wait_one")), PostedWaitLoneLoad: g("pcie.posted_wait_lone_load"), HostLoadsBesideStores: sim.Bytes(g("gpu.host_loads_beside_stores")), HostLoadsWriterOnSMRate: sim.Rate(g("gpu.host_loads_writer_on_sm_rate")) * sim.GBps,
		HostLoadsOutstanding: sim.Bytes(g("gpu.host_loads_outstanding")), HostRequestsOutstanding: g("gpu.host_requests_outstanding"), HostRequestsOutstanding8bit: g("gpu.host_requests_outstanding_8bit"),
		MemLoadedLatency:   ns(g("gpu.mem_loaded_latency")),
		HostLineContention: ns(g("hostmem.line_contention")), HostChangingFlagWait: ns(g("hostmem.changing_flag_wait")), HostChangingFlagCap: ns(g("hostmem.changing_flag_cap")), HostSlotService: ns(g("hostmem.slot_service")),
		SpinStoreService: ns(g("gpu.spin_store_service")), HostStoreService: ns(g("gpu.host_store_service")),
		HostPollLoad:        ns(g("gpu.host_poll_load")),
		HostSectorCollision: ns(g("hostmem.sector_collision")), HostCollisionMask: int(g("hostmem.collision_mask")),
		HostForeignStoreCollision: ns(g("hostmem.foreign_store_collision")), HostForeignCollisionCap: ns(g("hostmem.foreign_collision_cap")),
		HostCrowdedLineCollision: ns(g("hostmem.crowded_line_collision")), HostCrowdedLineCap: ns(g("hostmem.crowded_line_cap")),
		LLIterOverhead: ns(g("gpu.ll_iter_overhead")), LLIterPerWarp: ns(g("gpu.ll_iter_per_warp")),
		LL128IterOverhead: ns(g("gpu.ll128_iter_overhead")), LL128IterPerWarp: ns(g("gpu.ll128_iter_per_warp")),
		VectorLoadExtraPCIe: ns(g("gpu.vector_load_extra_pcie")), CopyIterOverhead: ns(g("gpu.copy_iter_overhead")), CopyDRAMExtra: ns(g("gpu.copy_dram_extra")), LoadWaitHost: ns(g("gpu.load_wait_host")), LoadWaitL2: ns(g("gpu.load_wait_l2")), VectorIssueL2: ns(g("gpu.vector_issue_l2")),
		LoopStart: ns(g("gpu.loop_start")), LoopStartPerLoad: ns(g("gpu.loop_start_per_load")), LoopStartLoads: g("gpu.loop_start_loads"),
		SMLoadRate: sim.Rate(g("gpu.sm_load_bandwidth")) * sim.GBps, SMLocalStoreRate: sim.Rate(g("gpu.sm_local_store_bandwidth")) * sim.GBps,
		VectorIssue: ns(g("gpu.vector_issue")), VectorIssuePerWarp: ns(g("gpu.vector_issue_per_warp")), HostStoreIssuePerWarp: ns(g("gpu.host_store_issue_per_warp")),
		PollLoopOverhead: ns(g("gpu.poll_loop_overhead")), PollRelaxedSaving: ns(g("gpu.poll_relaxed_saving")), SpillReloadWait: ns(g("gpu.spill_reload_wait")), AtomicSlowPageExtra: ns(g("gpu.atomic_slow_page_extra")), IOMMUHostLatency: ns(g("platform.iommu_host_latency")),
		FreshLineSaving: ns(g("hostmem.fresh_line_saving")), LLStepOverhead: ns(g("nccl.ll_step_overhead")),
		LL128StepOverhead: ns(g("nccl.ll128_step_overhead")), LL128IterExtra: ns(g("nccl.ll128_iter_extra")), LLIterExtra: ns(g("nccl.ll_iter_extra")), LLRuntimeOp: ns(g("capture.ll_runtime_op")), FenceLoopCode: ns(g("capture.fence_loop_code")), FencePollWaitGrowth: g("gpu.fence_poll_wait_growth"), LL128ReduceExtra: ns(g("gpu.ll128_reduce_extra")), DRAMSrcExtra: ns(g("gpu.dram_src_extra")),
		CEWindow: g("ce.window"), CESetup: us(g("ce.setup")), CEP2PSetup: us(g("ce.p2p_setup")),
		// host issue costs at the simulated host's core clock
		CUDAMemcpyIssue:  us(ps.HostIssue("host.cuda_memcpy_issue")),
		TorchIssue:       [3]sim.Duration{us(ps.HostIssue("torch.copy_issue_h2d")), us(ps.HostIssue("torch.copy_issue_d2h")), us(ps.HostIssue("torch.copy_issue_p2p"))},
		TorchP2POverhead: us(g("torch.p2p_copy_overhead")), TorchP2PLarge: us(g("torch.p2p_copy_overhead_large")),
		TorchP2PLargeFrom: sim.Bytes(g("torch.p2p_copy_large")),
		NVLinkSMEff:       g("nvlink.sm_efficiency"), NVLinkCEEff: g("nvlink.ce_efficiency"),
		SMPFlowCap: sim.Rate(g("smp.p2p_flow_cap")) * sim.GBps,
		SMHostRate: sim.Rate(g("pcie.sm_host_bandwidth")) * sim.GBps,
	}
}

// Machine is a topology running on an engine.
type Machine struct {
	Top  *topology.Topology
	Eng  *sim.Engine
	Net  *sim.Network
	Phys Physics

	linkRes [][2]sim.ResourceID // by link ID: A→B, B→A (equal for memory links)
	// twinMemBusy: the time the per-block twins of all-local loops keep
	// the GPU's memory busy (PerBlockEnds).
	twinMemBusy sim.Duration
	routes      map[[2]topology.NodeID]*path
	p2p         map[[2]int]error // p2pCheck results by (rank, peer)
	// capGroups: the shared rate-cap resource of each Kernel.CapGroup
	// (every transfer of a group must ask for the same RateCap).
	capGroups map[string]sim.ResourceID
	// loopGroups: the shared loop resource of each Kernel.LoopGroup, by
	// rank.
	loopGroups map[loopGroupKey]loopGroup
	// smHost[r]: GPU r's SM loads of and stores to host memory together
	// (pcie.sm_host_bandwidth); nil when unbounded.
	smHost []sim.ResourceID
	// order: the queue of each in-order loop group (Kernel.InOrder).
	order map[loopGroupKey]*orderQueue
	// orderByRank: the queues of order by GPU rank (orderOf).
	orderByRank [][]*orderQueue
	// hostStoring[r]: the blocks of GPU r streaming SM stores to host
	// memory now (hostqueue.go), nil until one does.
	hostStoring []float64
	// hostStoreSpan[r]: the bytes those streaming stores sweep together
	// (Kernel.StoreSpan, else each write's bytes), nil until one does.
	hostStoreSpan []sim.Bytes
	// hostReads: SM reads of host memory under way, whose caps change as
	// the storing blocks do (hostqueue.go); finished ones are dropped
	// lazily.
	hostReads    []*hostRead
	hostReadFree []*hostRead
	// hostReadsOn: scratch for one rank's reads that queue together
	// (queueHostReads)
	hostReadsOn []*hostRead
	mvaScratch  []mvaClass
	mvaMemo     []mvaMemo
	mvaNext     int
	// hostWrites: streaming writes to host memory under way, whose caps
	// follow the reads beside them (hostshare.go); hostShared[r]: rank r's
	// flows took shared caps, not their own
	hostWrites    []*hostWrite
	hostWriteFree []*hostWrite
	hostShared    []bool
	// loadedBesideStreams: some SM read of host memory took its rate
	// beside streaming stores (readSpec with StoringBlocks ≥ 1), so the
	// run's timing rests on hostqueue.go's model (LoadedBesideStreams).
	loadedBesideStreams bool
	// loopRates caches LoopRate (it depends on the machine, which does
	// not change, the rank and the kernel only).
	loopRates map[loopRateKey]sim.Rate
	loopMemo  []loopMemos // by rank: its last loop rates, before loopRates
	// lastPath[r] is the path GPU r's memory last took (to lastTo[r]):
	// ranks of a collective mostly talk to the same peer, and this spares
	// the map lookup.
	lastPath []*path
	lastTo   []Mem
	// pathTab[memIndex(from) × pathW + memIndex(to)] is the path between
	// two memories, on a machine of at most maxPathW memories (pathW
	// wide; 0 on larger machines, which use lastPath and routes).
	pathTab []*path
	pathW   int
	nGPU    int          // Top.NumGPUs()
	wmemo   []*flowMemos // by rank: its writes' flows (writeFlow)
	rmemo   []*flowMemos // by rank: its reads' flows (readFlow)
	pend    pending      // delayed flow starts and flag landings
	// flagGroups: the sector group of each flag made by NewFlag with one;
	// sectorPolls: each sector group's poll loops and slots.
	flagGroups  map[*sim.FlagVar]string
	sectors     map[sectorKey]int32 // each sector group's index in sectorPolls
	sectorPolls []sectorPolls       // by sector group: its pollers now and its slots
	flagPolls   []*flagPoll         // by flag index: its sector
	// foreignMemo: blockForeignCollision's results by (blocks, block
	// stride, slots), a pure function of them.
	foreignMemo map[[3]int]sim.Duration
	storeFree   []sim.Time // by rank: when its queued small stores to host memory are served (hostStoreQueue)
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
	land    sim.Duration // latency plus an access of the destination memory (StoreLanding)
	rtt     sim.Duration // twice latency plus that access (RoundTrip)

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
	m := &Machine{Top: top, Eng: eng, Net: net, Phys: resolve(top.Params), routes: map[[2]topology.NodeID]*path{}, nGPU: top.NumGPUs()}
	if socks := top.Sockets(); len(socks) > 0 && socks[len(socks)-1] >= 0 {
		if w := top.NumGPUs() + socks[len(socks)-1] + 1; w <= maxPathW {
			m.pathW, m.pathTab = w, make([]*path, w*w)
		}
	} else if w := top.NumGPUs(); w > 0 && w <= maxPathW {
		m.pathW, m.pathTab = w, make([]*path, w*w)
	}
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
	if m.Phys.SMHostRate > 0 {
		// Each GPU's SM traffic with host memory, loads and stores
		// together: either alone is bound by its link direction, both at
		// once by this (measured on one H200: 65 GB/s where each alone
		// moves 51–52 and copy engines both ways 101).
		m.smHost = make([]sim.ResourceID, top.NumGPUs())
		for r := range m.smHost {
			id, err := net.AddResource(fmt.Sprintf("gpu%d SM host traffic", r), m.Phys.SMHostRate)
			if err != nil {
				return nil, fmt.Errorf("hw: %w", err)
			}
			m.smHost[r] = id
		}
	}
	return m, nil
}

// withSMHost adds GPU r's SM host-traffic resource to the route of an SM
// access of host memory.
func (m *Machine) withSMHost(r int, route []sim.Hop) []sim.Hop {
	if m.smHost == nil || r < 0 || r >= len(m.smHost) {
		return route
	}
	out := make([]sim.Hop, len(route), len(route)+1)
	copy(out, route)
	return append(out, sim.Hop{Res: m.smHost[r], Weight: 1})
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
	if m.pathW > 0 {
		a, okA := m.memIndex(from)
		b, okB := m.memIndex(to)
		if okA && okB {
			i := a*m.pathW + b
			if p := m.pathTab[i]; p != nil {
				return p, nil
			}
			p, err := m.findPath(from, to)
			if err == nil {
				m.pathTab[i] = p
			}
			return p, err
		}
	}
	if r := from.Rank; !from.Host && r >= 0 && r < len(m.lastPath) && m.lastTo[r] == to && m.lastPath[r] != nil {
		return m.lastPath[r], nil
	}
	return m.findPath(from, to)
}

// tablePath returns the path from GPU r's memory to memory to if the
// table holds it, nil otherwise (then path finds it).
func (m *Machine) tablePath(r int, to Mem) *path {
	if uint(r) < uint(m.nGPU) && m.pathW > 0 {
		if b, ok := m.memIndex(to); ok {
			return m.pathTab[r*m.pathW+b]
		}
	}
	return nil
}

// maxPathW bounds the memories of a machine whose paths are kept in a
// table (pathTab): GPUs and host memories.
const maxPathW = 64

// memIndex returns x's row and column in pathTab: a GPU's rank, or the
// GPUs' count plus a socket.
func (m *Machine) memIndex(x Mem) (int, bool) {
	n := m.nGPU
	if !x.Host {
		return x.Rank, uint(x.Rank) < uint(n)
	}
	return n + x.Socket, uint(x.Socket) < uint(m.pathW-n)
}

// findPath is path without the table: the map of paths by nodes, or the
// route computed and prepared.
func (m *Machine) findPath(from, to Mem) (*path, error) {
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
	p := &path{route: r, latency: r.Latency, land: r.Latency + m.memLatency(to), rtt: 2*r.Latency + m.memLatency(to)}
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
	return appendBackPCIe(h, p, m.Phys.ReadRequest/granule/m.Phys.LinkEfficiency)
}

// withOwnStores adds to a read of host memory the stores its own loop
// makes to host memory, per byte it reads: SM stores' wire bytes
// (storeWeight) on the path's PCIe hops towards the host, which the read's
// requests cross too (Kernel.OwnStoresHost). h is not changed (routes are
// cached on their path).
func (m *Machine) withOwnStores(h []sim.Hop, p *path, per float64) []sim.Hop {
	return appendBackPCIe(slices.Clip(h), p, m.storeWeight()*per)
}

// appendBackPCIe appends to h each PCIe hop of p's reverse direction at
// weight w.
func appendBackPCIe(h []sim.Hop, p *path, w float64) []sim.Hop {
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
	if p := m.tablePath(r, x); p != nil {
		return p.rtt, nil
	}
	p, err := m.path(GPUMem(r), x)
	if err != nil {
		return 0, err
	}
	return p.rtt, nil
}

// ResidentThreads returns how many of blocks × threads run at once on one GPU.
func (m *Machine) ResidentThreads(blocks, threads int) int {
	b := min(blocks, m.Phys.SMs*m.Phys.MaxBlocksPerSM)
	return b * threads
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
