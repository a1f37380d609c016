package topology

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/arsim/arsim/sim"
)

// Preset is a named machine: a parameter table (every value with its unit
// and source) and the layout built from it.
type Preset struct {
	Name        string
	Description string
	SystemIDs   []string // trace `system` ids this preset models
	params      func() *Params
	layout      layout
}

// DefaultParams returns a fresh copy of the preset's parameters.
func (p *Preset) DefaultParams() *Params { return p.params() }

// Build builds the machine from the default parameters.
func (p *Preset) Build() (*Topology, error) { return p.BuildWith(p.params()) }

// BuildWith builds the machine from ps (the defaults with overrides applied).
func (p *Preset) BuildWith(ps *Params) (*Topology, error) {
	t, err := buildLayout(p.Name, ps, p.layout)
	if err != nil {
		return nil, err
	}
	t.Description = p.Description
	t.SystemIDs = append([]string(nil), p.SystemIDs...)
	return t, nil
}

var presets = map[string]*Preset{}

func register(p *Preset) { presets[p.Name] = p }

// Presets returns the preset names, sorted.
func Presets() []string { return slices.Sorted(maps.Keys(presets)) }

// Lookup returns the preset called name, or an error listing the valid names.
func Lookup(name string) (*Preset, error) {
	if p, ok := presets[name]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("topology: unknown preset %q (valid: %s)", name, strings.Join(Presets(), ", "))
}

// ForSystem returns the preset that declares it models trace system id.
func ForSystem(id string) (*Preset, bool) {
	for _, name := range Presets() {
		for _, s := range presets[name].SystemIDs {
			if s == id {
				return presets[name], true
			}
		}
	}
	return nil, false
}

// Load builds the preset called name with default parameters.
func Load(name string) (*Topology, error) {
	p, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	return p.Build()
}

// layout is the shape shared by all presets: sockets, each with host
// memory, GPUs either directly on host bridges or behind PCIe switches, and
// optionally NVLink (direct pairs or one NVSwitch).
type layout struct {
	sockets           int
	gpusPerSocket     int
	switchesPerSocket int // 0: each GPU on its own host bridge (root port)
	gpuGen, gpuWidth  int // GPU's PCIe link
	upGen, upWidth    int // switch uplink
	nvswitch          bool
}

func buildLayout(name string, ps *Params, l layout) (*Topology, error) {
	if err := ps.Validate(); err != nil {
		return nil, fmt.Errorf("topology %s: %w", name, err)
	}
	b := NewBuilder(name, ps)
	ns := sim.Nanos
	port := ns(ps.Get("pcie.gpu_port_latency"))
	gbps := func(n string) sim.Rate { return sim.Rate(ps.Get(n)) * sim.GBps }
	cpus := make([]NodeID, l.sockets)
	var gpuList []NodeID
	for s := 0; s < l.sockets; s++ {
		cpus[s] = b.Node(CPU, fmt.Sprintf("cpu%d", s), s, ns(ps.Get("cpu.fabric_latency")))
		mem := b.Node(HostMemory, fmt.Sprintf("mem%d", s), s, 0)
		b.PlainLink(cpus[s], mem, Memory, gbps("hostmem.bandwidth"), 0)
	}
	for s := 0; s < l.sockets; s++ {
		hb := func(i int) NodeID {
			h := b.Node(HostBridge, fmt.Sprintf("hb%d", i), s, ns(ps.Get("pcie.hostbridge_latency")))
			b.PlainLink(h, cpus[s], Fabric, gbps("cpu.fabric_bandwidth"), 0)
			return h
		}
		if l.switchesPerSocket == 0 {
			for i := 0; i < l.gpusPerSocket; i++ {
				r := s*l.gpusPerSocket + i
				h := hb(r)
				g := b.Node(GPU, fmt.Sprintf("gpu%d", r), s, 0)
				b.PCIeLink(g, h, l.gpuGen, l.gpuWidth, port)
				gpuList = append(gpuList, g)
			}
			continue
		}
		per := l.gpusPerSocket / l.switchesPerSocket
		for w := 0; w < l.switchesPerSocket; w++ {
			k := s*l.switchesPerSocket + w
			h := hb(k)
			sw := b.Node(PCIeSwitch, fmt.Sprintf("sw%d", k), s, ns(ps.Get("pcie.switch_latency")))
			b.PCIeLink(sw, h, l.upGen, l.upWidth, 0)
			for i := 0; i < per; i++ {
				r := k*per + i
				g := b.Node(GPU, fmt.Sprintf("gpu%d", r), s, 0)
				b.PCIeLink(g, sw, l.gpuGen, l.gpuWidth, port)
				gpuList = append(gpuList, g)
			}
		}
	}
	for s := 1; s < l.sockets; s++ {
		b.PlainLink(cpus[s-1], cpus[s], SMP, gbps("smp.bandwidth"), ns(ps.Get("smp.latency")))
	}
	if l.nvswitch {
		nvs := b.Node(NVSwitch, "nvswitch0", 0, 0)
		count := int(ps.Get("nvlink.count"))
		half := ns(ps.Get("nvlink.latency") / 2)
		for _, g := range gpuList {
			b.NVLinkLink(g, nvs, count, gbps("nvlink.link_bandwidth"), half)
		}
	}
	t := b.Topology()
	t.Platform = Platform{
		P2PThroughHostBridge: ps.Get("p2p.through_host_bridge") != 0,
		P2PAcrossSockets:     ps.Get("p2p.across_sockets") != 0,
		WriteCollapse:        ps.Get("collapse.enabled") != 0,
		CollapseRate:         gbps("collapse.bandwidth"),
	}
	return b.Build()
}

// Sources used in parameter tables.
const (
	srcPCIeSpec   = "spec: PCI-SIG base spec; Intel AN 708 (TLP overhead 20–24 B)"
	srcOwnCap     = "our capture: testdata/h200x2-arsim/"
	srcRTX6K      = "published: rtx6kpro wiki hardware pages"
	srcEstimate   = "estimate: "
	srcRTXSpec    = "spec: RTX PRO 6000 Blackwell (188 SMs, 512-bit GDDR7 at 28 Gbps)"
	srcNCCLBase   = "published: NCCL 2.30 src/graph/tuning.cc baseLat (NCCL's own estimate of its per-call fixed cost)"
	srcFlagFitted = "estimate fitted to published one-way flag latencies (rtx6kpro: 633–727 ns same switch, 1057–1116 ns via root complex, 1.27–1.36 µs cross-NUMA)"
)

func p(name, unit string, v, lo, hi float64, src, doc string) Param {
	return Param{Name: name, Unit: unit, Value: v, Min: lo, Max: hi, Source: src, Doc: doc}
}

// commonParams are the parameters every preset has, with the values of a
// PCIe Gen5 Blackwell workstation GPU on an AMD EPYC host; presets override.
func commonParams() *Params {
	ps := &Params{}
	for _, x := range []Param{
		// PCIe protocol.
		p("pcie.tlp_overhead", "B", 24, 0, 64, srcPCIeSpec, "header+framing+LCRC bytes per TLP (4-DW header)"),
		p("pcie.link_efficiency", "ratio", 0.9635, 0.5, 1, fromH200(srcOwnCap+"measurements.jsonl host_link_concurrency ce_h2d, 1 GPU: 55.39 GB/s at 256-B TLPs ⇒ DLLP/SKP share 3.6 %"), "share of raw link time left to TLPs after DLLPs and ordered sets"),
		p("pcie.ce_payload", "B", 256, 64, 4096, "spec: typical max payload size 256 B (facts §3.1)", "TLP payload of copy-engine transfers"),
		p("pcie.sm_write_payload", "B", 128, 16, 4096, "estimate: GPU-issued peer writes are 64–128 B TLPs (facts §3.1)", "TLP payload of SM stores over PCIe"),
		p("pcie.read_completion_payload", "B", 128, 16, 4096, "estimate: read completion boundary 128 B (facts §3.1)", "completion payload of SM loads over PCIe"),
		p("pcie.read_request", "B", 24, 0, 64, srcPCIeSpec, "bytes of one memory-read request TLP on the reverse direction"),
		p("pcie.max_read_request", "B", 512, 64, 4096, "published: max read request size 512 B is common (facts §3.1)", "bytes a copy engine asks for per read request"),
		p("pcie.gpu_port_latency", "ns", 130, 0, 5000, srcFlagFitted, "one way: GPU PCIe endpoint and its link"),
		p("pcie.switch_latency", "ns", 120, 0, 5000, "published: switch cut-through ~100–150 ns (rtx6kpro topology page; datasheets)", "one way through a PCIe switch"),
		p("pcie.hostbridge_latency", "ns", 200, 0, 5000, srcFlagFitted, "one way through a CPU root port / host bridge"),
		p("cpu.fabric_latency", "ns", 120, 0, 5000, srcFlagFitted, "one way across the CPU's internal fabric (host bridge to host bridge or memory)"),
		p("cpu.fabric_bandwidth", "GB/s", 256, 1, 0, srcEstimate+"IOD fabric per host bridge, not a bottleneck at x16", "host bridge to CPU fabric, per direction"),
		p("smp.latency", "ns", 110, 0, 5000, srcFlagFitted, "one way across the socket interconnect (xGMI/UPI)"),
		p("smp.bandwidth", "GB/s", 95, 1, 0, srcEstimate+"4 concurrent cross-socket flows × 23.75 GB/s (flashinfer PR 4870)", "socket interconnect, per direction, for PCIe P2P traffic"),
		p("smp.p2p_flow_cap", "GB/s", 50.5, 1, 0, "published: dual Turin cross-NUMA P2P 50.2–51.0 GB/s (rtx6kpro pcie-bandwidth)", "one P2P flow crossing sockets"),
		p("hostmem.bandwidth", "GB/s", 400, 1, 0, srcEstimate+"12-channel DDR5-6000 = 576 GB/s peak, ~70 % usable", "DRAM of one socket, reads and writes together"),
		p("hostmem.latency", "ns", 110, 0, 5000, srcEstimate+"loaded DDR5 access", "DRAM access time seen by a PCIe read"),
		p("p2p.through_host_bridge", "bool", 1, 0, 1, "published: P2P through the root complex works on RTX PRO 6000 EPYC hosts (rtx6kpro)", "GPU P2P allowed across host bridges"),
		p("p2p.across_sockets", "bool", 1, 0, 1, "published: cross-NUMA P2P measured at 39–51 GB/s (rtx6kpro)", "GPU P2P allowed across sockets"),
		p("collapse.enabled", "bool", 0, 0, 1, "published: seen on some switch platforms only (rtx6kpro collapse-report); off by default", "posted-write collapse"),
		p("collapse.bandwidth", "GB/s", 6.5, 0.1, 0, "published: 2.7–13.5 GB/s aggregate in collapse (rtx6kpro collapse-report)", "aggregate rate of a collapsed root port"),
		// GPU.
		p("gpu.sms", "count", 188, 1, 0, srcRTXSpec, "streaming multiprocessors"),
		p("gpu.mem_bandwidth", "GB/s", 1792, 1, 0, srcRTXSpec, "local memory bandwidth"),
		p("gpu.mem_latency", "ns", 150, 0, 5000, srcEstimate+"taken equal to H200's 146 ns local pointer chase ("+srcOwnCap+"measurements.jsonl)", "local memory access time"),
		p("gpu.loads_in_flight", "count", 1.86, 0.1, 64, srcEstimate+"from H200 ("+srcOwnCap+"measurements.jsonl): 1 block × 512 threads reads 17.8 GB/s over an 854-ns round trip", "16-byte loads each thread keeps in flight"),
		p("gpu.sm_store_bandwidth", "GB/s", 50.3, 1, 0, srcEstimate+"from H200 ("+srcOwnCap+"measurements.jsonl): one block writes peer memory at 50.3 GB/s", "remote (peer or host) store rate of one SM"),
		p("gpu.launch_eager", "µs", 5, 0, 1000, "published: CUDA kernel launch overhead ~5 µs (rtx6kpro; pegainfer 4–6 µs)", "back-to-back eager kernel launch interval"),
		p("gpu.launch_graph", "µs", 0.51, 0, 1000, fromH200("our capture: h200x2-arsim micro2, graph of 100 empty kernels, 0.511 µs per node"), "per-kernel gap inside a replayed CUDA graph"),
		p("gpu.reduce_loop_overhead", "ns", 121, 0, 100000, fromH200("our capture: h200x2-arsim micro2 read_reduce 1×512 over NVLink, 971 ns per iteration − 850 ns round trip"), "time a pull-and-reduce loop iteration adds to its remote load's round trip"),
		p("gpu.reduce_loop_extra_pcie", "ns", 155, 0, 100000, fromH200("our capture: h200x2-arsim micro2 read_reduce 1×512 of host memory, 1379 − 1104 ns round trip = 275 ns, minus the NVLink 121 ns"), "what a pull-and-reduce loop iteration adds beyond that when its loads cross PCIe"),
		p("gpu.fence_sys_local", "ns", 583, 0, 100000, fromH200("our capture: h200x2-arsim micro2 fence, store + __threadfence_system to local HBM"), "system-scope fence after stores to the GPU's own memory"),
		p("gpu.fence_extra_nvlink", "ns", 70, 0, 100000, fromH200("our capture: h200x2-arsim micro2 fence to peer memory (919 ns) − peer round trip (850 ns)"), "a system-scope fence after stores over NVLink: this beyond the round trip"),
		p("gpu.fence_extra_pcie", "ns", 290, 0, 100000, fromH200("our capture: h200x2-arsim micro2 fence to pinned host memory (1393 ns) − host round trip (1104 ns)"), "a system-scope fence after stores over PCIe: this beyond the round trip"),
		p("gpu.barrier_sync", "ns", 133, 0, 100000, fromH200(srcOwnCap+"barrier.jsonl: a flag barrier between the two GPUs, 1 block × 512 threads, takes 779 ns (17 against 1 barrier per launch), the model's flag exchange 646 ns"), "what a thread block's barrier with its peers adds after the flag is seen: the block's __syncthreads around the flag exchange"),
		p("gpu.atomic_poll_extra", "ns", 91.9, 0, 100000, fromH200(srcOwnCap+"barrier.jsonl: a compare-and-swap barrier, 1 block × 512 threads, takes 1225 ns, the model's exchange with gpu.barrier_sync 1133 ns"), "what a compare-and-swap poll that consumes a barrier token adds over a load poll"),
		p("gpu.kernel_prologue", "µs", 1.27, 0, 100, fromH200(srcOwnCap+"measurements.jsonl line 39, flag one-shot over NVLink, 1 KiB, 1×512 (4.31 µs) minus every other modelled part (graph gap, two barriers with their block synchronisation, one pull): one record; every other record is out of sample for it. The barrier-only kernel of barrier.jsonl spends 0.81 µs here (2.10 µs per launch − 0.51 gap − 0.78 barrier)"), "device time a kernel spends beyond the graph gap before and after its useful work (argument, pointer and epoch loads; draining stores at its end)"),
		// Host costs of PyTorch calls differ from one process launch to the
		// next and, more, between machine instances of the same type
		// (testdata/h200x2-arsim/README.md): each value is the median over
		// instances of each instance's median, and a host-paced record of
		// another process or instance can sit 30 % or more from it.
		p("torch.nccl_eager_issue", "µs", 41.3, 0, 10000, fromH200(srcOwnCap+"host_costs_[a-e].jsonl: eager NCCL auto allreduce ≤ 4 KiB, median over 4 machine instances of each one's median (41.3, 41.4, 37.0, 42.9 µs; 30 process launches, per-process medians 25.0–48.6 µs)"), "host time to issue one eager NCCL allreduce through PyTorch"),
		p("torch.symm_mem_one_shot_eager_issue", "µs", 13.0, 0, 10000, fromH200(srcOwnCap+"host_costs_[a-e].jsonl: eager one_shot_all_reduce ≤ 4 KiB, median over 4 machine instances (13.6, 9.1, 13.5, 12.5 µs; 15 process launches)"), "host time to issue one eager symmetric-memory one-shot allreduce (it allocates its output)"),
		p("torch.symm_mem_two_shot_eager_issue", "µs", 9.34, 0, 10000, fromH200(srcOwnCap+"host_costs_[a-e].jsonl: eager two_shot_all_reduce_ ≤ 4 KiB, median over 4 machine instances (9.6, 8.1, 9.5, 9.2 µs; 15 process launches)"), "host time to issue one eager symmetric-memory two-shot allreduce (in place)"),
		p("gpu.max_blocks_per_sm", "count", 1, 1, 64, srcEstimate+"custom-allreduce kernels use __launch_bounds__(512,1)", "resident blocks per SM for communication kernels"),
		// Copy engines.
		p("ce.window", "B", 262144, 4096, 0, srcEstimate+"copy engine keeps enough reads in flight to saturate x16", "bytes in flight of a copy-engine read"),
		p("ce.setup", "µs", 1.4, 0, 1000, fromH200("our capture: h200x2-arsim raw cudaMemcpyAsync d2h/h2d 1–256 MiB intercepts"), "device-side fixed cost of a host copy-engine transfer"),
		p("ce.p2p_setup", "µs", 1.65, 0, 1000, fromH200("our capture: h200x2-arsim raw cudaMemcpyAsync p2p 1 MiB − transfer time"), "device-side fixed cost of a P2P copy-engine transfer"),
		p("host.cuda_launch_issue", "µs", 4.15, 0, 1000, fromH200("our capture: h200x2-arsim micro2, back-to-back eager launches of an empty kernel through CuPy (4.03–4.30 µs)"), "host time to issue one eager kernel launch through the CUDA driver API"),
		p("host.cuda_memcpy_issue", "µs", 2.1, 0, 1000, fromH200("our capture: h200x2-arsim raw cudaMemcpyAsync d2h/p2p floors 2.1–2.2 µs"), "host time to issue one eager cudaMemcpyAsync"),
		// PyTorch's tensor.copy_ path costs more on the host than
		// cudaMemcpyAsync, and for peer copies adds work the device waits
		// for (the overhead, seen on the instance whose host was fastest).
		p("torch.copy_issue_h2d", "µs", 6.55, 0, 1000, fromH200(srcOwnCap+"host_costs_[a-e].jsonl: eager h2d tensor.copy_ 4 B–64 KiB, median over 5 machine instances (7.6, 3.7, 6.3, 6.6, 7.2 µs)"), "host time to issue one eager H2D tensor.copy_"),
		p("torch.copy_issue_d2h", "µs", 6.01, 0, 1000, fromH200(srcOwnCap+"host_costs_[a-e].jsonl: eager d2h tensor.copy_ 4 B–64 KiB, median over 5 machine instances (4.0, 3.7, 6.0, 6.0, 6.2 µs)"), "host time to issue one eager D2H tensor.copy_"),
		p("torch.copy_issue_p2p", "µs", 19.5, 0, 1000, fromH200(srcOwnCap+"host_costs_[a-e].jsonl: eager p2p tensor.copy_ 4 B–64 KiB, median over 5 machine instances (20.9, 12.0, 18.7, 19.5, 19.6 µs)"), "host time to issue one eager P2P tensor.copy_"),
		p("torch.p2p_copy_overhead", "µs", 9.81, 0, 1000, fromH200(srcOwnCap+"host_costs_[a-e].jsonl tensor.copy_ p2p (the fastest instance's median per size) minus measurements.jsonl cudaMemcpyAsync p2p, median over 4 B–256 KiB"), "serialized extra time of a P2P tensor.copy_"),
		p("torch.p2p_copy_overhead_large", "µs", 13.2, 0, 1000, fromH200(srcOwnCap+"the same difference, median over 512 KiB–256 MiB"), "serialized extra time of a P2P tensor.copy_ from torch.p2p_copy_large on"),
		p("torch.p2p_copy_large", "B", 524288, 1, 0, fromH200(srcOwnCap+"host_costs_[a-e].jsonl: the difference steps up from 10.3 to 13.6 µs between 256 and 512 KiB"), "size from which the large P2P overhead applies"),
		// NCCL's fixed cost per call (kernel prologue and epilogue, work
		// descriptors, channel setup), charged once per allreduce before
		// the data steps. NCCL's own tuning model calls it baseLat.
		p("nccl.ll_max_bw", "GB/s", 282, 1, 0, "published: NCCL 2.30 tuning.cc llMaxBws, Blackwell single node (2 × 141)", "most NCCL's LL protocol moves per rank, all channels together"),
		p("nccl.simple_step_sync", "µs", 4.47, 0, 100, fromH200(srcOwnCap+"nccl_simple_threads.jsonl, fitted by arsim calibrate --fit nccl.simple_step_sync --holdout-every 3 (NCCL 2.28.9 ring and tree Simple, 2 KiB–256 KiB, NCCL_NTHREADS 64–512 and 1 channel; 40 records fit, 20 held out: median |error| 7.9 % → 4.1 %). Refitted when fences stopped counting the stores' flight twice (was 3.72 µs, fitted with the double count; 1.2 µs from tuning.cc's Simple-over-LL hop latency before that, too low on every Simple record)"), "per-step overhead of NCCL's Simple protocol beyond its fence and flag"),
		p("nccl.base_latency.ring.ll", "µs", 6.6, 0, 1000, srcNCCLBase, "NCCL ring LL fixed cost per call"),
		p("nccl.base_latency.ring.ll128", "µs", 14.0, 0, 1000, srcNCCLBase, "NCCL ring LL128 fixed cost per call"),
		p("nccl.base_latency.ring.simple", "µs", 8.4, 0, 1000, srcNCCLBase, "NCCL ring Simple fixed cost per call"),
		p("nccl.base_latency.tree.ll", "µs", 6.8, 0, 1000, srcNCCLBase, "NCCL tree LL fixed cost per call"),
		p("nccl.base_latency.tree.ll128", "µs", 14.0, 0, 1000, srcNCCLBase, "NCCL tree LL128 fixed cost per call"),
		p("nccl.base_latency.tree.simple", "µs", 8.4, 0, 1000, srcNCCLBase, "NCCL tree Simple fixed cost per call"),
		// NVLink (none unless a preset sets a count).
		p("nvlink.count", "count", 0, 0, 64, "spec: RTX PRO 6000 has no NVLink", "NVLinks per GPU"),
		p("nvlink.link_bandwidth", "GB/s", 26.562, 1, 0, "spec: NVLink 4 per link per direction (nvidia-smi nvlink -s, "+srcOwnCap+"system/nvlink_status.txt)", "one NVLink, per direction"),
		p("nvlink.latency", "ns", 354, 0, 5000, srcOwnCap+"measurements.jsonl (peer pointer chase 853.7 ns − local 146.2 ns) / 2", "GPU to GPU one way over NVLink (through the NVSwitch)"),
		p("nvlink.sm_efficiency", "ratio", 0.737, 0.1, 1, srcOwnCap+"measurements.jsonl 264×512 peer reads/writes 351.8/352.9 GB/s of 478.1 raw", "payload share of NVLink for SM loads/stores"),
		p("nvlink.ce_efficiency", "ratio", 0.84, 0.1, 1, srcOwnCap+"measurements.jsonl cudaMemcpyAsync p2p slope 64→256 MiB, 401.6 GB/s of 478.1 raw", "payload share of NVLink for copy-engine transfers"),
	} {
		ps.Add(x)
	}
	return ps
}

// fromH200Prefix marks a value measured on the H200 machine of testdata
// and used for other GPUs as an estimate.
const fromH200Prefix = "estimate for this machine, measured on H200 — "

func fromH200(src string) string { return fromH200Prefix + src }

// h200Measured restores the plain capture source of the values measured on
// the H200 machine itself.
func h200Measured(ps *Params) *Params {
	for _, p := range ps.All() {
		if strings.HasPrefix(p.Source, fromH200Prefix) {
			p.Source = strings.TrimPrefix(p.Source, fromH200Prefix)
			ps.Add(p)
		}
	}
	return ps
}

func with(base func() *Params, sets ...Param) func() *Params {
	return func() *Params {
		ps := base()
		for _, s := range sets {
			old, ok := ps.Lookup(s.Name)
			if !ok {
				panic("topology: preset overrides unknown parameter " + s.Name)
			}
			if s.Unit == "" {
				s.Unit, s.Min, s.Max, s.Doc = old.Unit, old.Min, old.Max, old.Doc
			}
			ps.Add(s)
		}
		return ps
	}
}

// set overrides a parameter's value and source, keeping unit and range.
func set(name string, v float64, src string) Param { return Param{Name: name, Value: v, Source: src} }

func h200Params() *Params {
	return with(func() *Params { return h200Measured(commonParams()) },
		set("gpu.sms", 132, "spec: H200 SXM (132 SMs)"),
		set("nccl.ll_max_bw", 141, "published: NCCL 2.30 tuning.cc llMaxBws, Hopper single node"),
		set("gpu.mem_bandwidth", 4800, "spec: H200 HBM3e 4.8 TB/s"),
		set("gpu.mem_latency", 146.2, srcOwnCap+"measurements.jsonl pointer_chase local 146.16 ns"),
		set("gpu.loads_in_flight", 1.86, srcOwnCap+"measurements.jsonl sm_access read peer 1×512: 17.81 GB/s × 853.7 ns / (512 × 16 B)"),
		set("gpu.sm_store_bandwidth", 50.3, srcOwnCap+"measurements.jsonl sm_access write peer 1×512: 50.31 GB/s"),
		set("gpu.launch_eager", 6.22, srcOwnCap+"measurements.jsonl empty_kernel single: one launch between two events, 6.22 µs"),
		set("pcie.gpu_port_latency", 168, srcOwnCap+"measurements.jsonl pointer_chase host 1085.9 ns = 2×(port+bridge+fabric) + DRAM"),
		set("hostmem.bandwidth", 157.6, srcOwnCap+"measurements.jsonl host_link_concurrency ce_bidir 2 GPUs: 157.6 GB/s"),
		set("nvlink.count", 18, "spec: H200 SXM, 18 NVLinks (nvidia-smi topo: NV18)"),
		set("p2p.through_host_bridge", 1, srcEstimate+"one socket, NVML reports P2P OK"),
		set("p2p.across_sockets", 1, srcEstimate+"assumed allowed"),
		set("smp.bandwidth", 60, srcEstimate+"Sapphire/Emerald Rapids UPI 2.0, ~60 GB/s per direction for PCIe P2P"),
	)()
}

func init() {
	rtx := layout{sockets: 2, gpusPerSocket: 4, gpuGen: 5, gpuWidth: 16, upGen: 5, upWidth: 16}
	register(&Preset{
		Name:        "rtxpro6000x8-2numa",
		Description: "8 × RTX PRO 6000 Blackwell (PCIe Gen5 x16, no NVLink), GPUs 0–3 on socket 0 and 4–7 on socket 1, each on its own CPU root port",
		params:      commonParams,
		layout:      rtx,
	})
	sw := rtx
	sw.switchesPerSocket = 1
	register(&Preset{
		Name:        "rtxpro6000x8-switches",
		Description: "8 × RTX PRO 6000 Blackwell behind two Gen5 PCIe switches of four (one per socket), switch uplinks Gen5 x16",
		params:      commonParams,
		layout:      sw,
	})
	one := layout{sockets: 1, gpusPerSocket: 4, gpuGen: 5, gpuWidth: 16}
	register(&Preset{
		Name:        "rtxpro6000x4-1numa",
		Description: "4 × RTX PRO 6000 Blackwell on one socket, each on its own CPU root port",
		params:      commonParams,
		layout:      one,
	})
	register(&Preset{
		Name:        "a800x8-2islands",
		Description: "8 × A800 PCIe (Gen4 x16, no NVLink bridges), two PCIe-switch islands of four, one per socket (Intel)",
		params: with(commonParams,
			set("gpu.sms", 108, "spec: A800 (GA100, 108 SMs)"),
			set("nccl.ll_max_bw", 87.7, "published: NCCL 2.30 tuning.cc llMaxBws, Ampere single node"),
			set("gpu.mem_bandwidth", 1935, "spec: A800 PCIe 80 GB HBM2e 1,935 GB/s"),
			set("gpu.launch_eager", 5, srcEstimate+"typical eager launch"),
			set("smp.bandwidth", 40, srcEstimate+"Ice Lake UPI, 3 links, PCIe P2P share"),
			set("smp.p2p_flow_cap", 20, srcEstimate+"Gen4 cross-socket P2P well below x16"),
			set("hostmem.bandwidth", 250, srcEstimate+"8-channel DDR4-3200 per socket"),
			set("p2p.across_sockets", 1, srcEstimate+"assumed allowed (NCCL avoids it by default)"),
		),
		layout: layout{sockets: 2, gpusPerSocket: 4, switchesPerSocket: 1, gpuGen: 4, gpuWidth: 16, upGen: 4, upWidth: 16},
	})
	register(&Preset{
		Name:        "v100x4-plx",
		Description: "4 × V100 PCIe (Gen3 x16) behind one PLX switch on one socket",
		params: with(commonParams,
			set("gpu.sms", 80, "spec: V100 (80 SMs)"),
			set("nccl.ll_max_bw", 39, "published: NCCL 2.30 tuning.cc llMaxBws, Volta single node"),
			set("gpu.mem_bandwidth", 900, "spec: V100 HBM2 900 GB/s"),
			set("gpu.launch_eager", 5, srcEstimate+"typical eager launch"),
			set("hostmem.bandwidth", 100, srcEstimate+"6-channel DDR4-2666 per socket"),
		),
		layout: layout{sockets: 1, gpusPerSocket: 4, switchesPerSocket: 1, gpuGen: 3, gpuWidth: 16, upGen: 3, upWidth: 16},
	})
	register(&Preset{
		Name:        "h200x2",
		Description: "2 × H200 SXM in one VM: NVLink 18 × 26.562 GB/s through NVSwitch, each GPU on its own Gen5 x16 host link, one socket (the machine of testdata/h200x2)",
		SystemIDs:   []string{"h200x2-vm"},
		params:      h200Params,
		layout:      layout{sockets: 1, gpusPerSocket: 2, gpuGen: 5, gpuWidth: 16, nvswitch: true},
	})
	register(&Preset{
		Name:        "h200x8-nvswitch",
		Description: "8 × H200 SXM on NVSwitch (18 NVLinks each), Gen5 x16 host links, GPUs 0–3 on socket 0 and 4–7 on socket 1",
		params:      h200Params,
		layout:      layout{sockets: 2, gpusPerSocket: 4, gpuGen: 5, gpuWidth: 16, nvswitch: true},
	})
}
