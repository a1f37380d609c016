package topology

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

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
	// build, when set, builds the machine instead of layout (an imported
	// machine: ImportPreset).
	build func(*Params) (*Topology, error)
}

// DefaultParams returns a fresh copy of the preset's parameters.
func (p *Preset) DefaultParams() *Params { return p.params() }

// Build builds the machine from the default parameters.
func (p *Preset) Build() (*Topology, error) { return p.BuildWith(p.params()) }

// BuildWith builds the machine from ps (the defaults with overrides applied).
func (p *Preset) BuildWith(ps *Params) (*Topology, error) {
	if p.build != nil {
		return p.build(ps)
	}
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
		b.PlainLink(cpus[s], mem, Memory, gbps("hostmem.bandwidth"), ns(ps.Get("cpu.memory_path_latency")))
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

// commonParams are the parameters every preset has (params/base.txt),
// with the values of a PCIe Gen5 Blackwell workstation GPU on an AMD EPYC
// host; presets change some (the other tables).
func commonParams() *Params { return baseTable().Clone() }

// baseTable is params/base.txt, read the first time a preset or the GPU
// table needs it (not at start-up: a run that reads no preset pays
// nothing).
var baseTable = sync.OnceValue(func() *Params { return mustTable("base.txt") })

// fromH200Prefix marks a value of the base table measured on the H200
// machine of testdata and used for other GPUs as an estimate.
const fromH200Prefix = "estimate for this machine, measured on H200 — "

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

// h200Params are the H200 machine's: the base table with its own
// measurements' plain sources, and params/h200.txt.
var h200Params = withChanges(func() *Params { return h200Measured(commonParams()) }, "h200.txt")

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
		params:      withChanges(commonParams, "a800.txt"),
		layout:      layout{sockets: 2, gpusPerSocket: 4, switchesPerSocket: 1, gpuGen: 4, gpuWidth: 16, upGen: 4, upWidth: 16},
	})
	register(&Preset{
		Name:        "v100x4-plx",
		Description: "4 × V100 PCIe (Gen3 x16) behind one PLX switch on one socket",
		params:      withChanges(commonParams, "v100.txt"),
		layout:      layout{sockets: 1, gpusPerSocket: 4, switchesPerSocket: 1, gpuGen: 3, gpuWidth: 16, upGen: 3, upWidth: 16},
	})
	register(&Preset{
		Name:        "h200x2",
		Description: "2 × H200 SXM in one VM: NVLink 18 × 26.562 GB/s through NVSwitch, each GPU on its own Gen5 x16 host link, one socket (the machine of testdata/h200x2)",
		SystemIDs:   []string{"h200x2-vm"},
		params:      h200Params,
		layout:      layout{sockets: 1, gpusPerSocket: 2, gpuGen: 5, gpuWidth: 16, nvswitch: true},
	})
	register(&Preset{
		Name:        "h200x1",
		Description: "1 × H200 SXM in a VM without NVLink peers, Gen5 x16 host link, one socket (the machine of testdata/h200x1-arsim: per-block measurements)",
		SystemIDs:   []string{"h200x1-vm"},
		params:      withChanges(h200Params, "h200x1.txt"),
		layout:      layout{sockets: 1, gpusPerSocket: 1, gpuGen: 5, gpuWidth: 16},
	})
	register(&Preset{
		Name:        "h100x1",
		Description: "1 × H100 SXM (80 GB HBM3) in a VM without NVLink peers, Gen5 x16 host link, one socket (the machine of testdata/h100x1-arsim): h200x1 with the H100's memory bandwidth, every per-block cost the H200's",
		SystemIDs:   []string{"h100x1-vm"},
		params:      withChanges(withChanges(h200Params, "h200x1.txt"), "h100x1.txt"),
		layout:      layout{sockets: 1, gpusPerSocket: 1, gpuGen: 5, gpuWidth: 16},
	})
	register(&Preset{
		Name:        "h200x8-nvswitch",
		Description: "8 × H200 SXM on NVSwitch (18 NVLinks each), Gen5 x16 host links, GPUs 0–3 on socket 0 and 4–7 on socket 1",
		params:      h200Params,
		layout:      layout{sockets: 2, gpusPerSocket: 4, gpuGen: 5, gpuWidth: 16, nvswitch: true},
	})
}
