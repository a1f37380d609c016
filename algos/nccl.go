package algos

import (
	"fmt"
	"math"
	"strings"

	"github.com/arsim/arsim/algos/ncclmodel"
	"github.com/arsim/arsim/topology"
)

// nccl is what NCCL would run on the machine: the transport of every ring
// connection by NCCL's P2P rule, the algorithm, protocol, channels and
// threads by NCCL's tuning model (package ncclmodel), then the ring or
// tree schedule with those settings.
type nccl struct{ anyRanks }

func init() { Register(nccl{}) }

func (nccl) Name() string { return "nccl" }

func (nccl) Describe() string {
	return "what NCCL would run here: P2P/SHM by NCCL's P2P level, ring or tree and LL/LL128/Simple by NCCL's tuning model"
}

func (nccl) Options() []OptionSpec {
	return []OptionSpec{
		{Name: "p2p_level", Values: []string{"loc", "nvl", "pix", "pxb", "phb", "sys"}, Doc: "NCCL_P2P_LEVEL: P2P where the pair's NCCL path class is at most this (NODE counts as PHB); default NCCL's PXB (SYS on AMD hosts with ≤ 2 GPUs); loc = NCCL_P2P_DISABLE"},
		{Name: "proto", Values: []string{"ll", "ll128", "simple", "ll+ll128", "ll+simple", "ll128+simple", "ll+ll128+simple"}, Doc: "NCCL_PROTO: the protocol, or the set NCCL chooses from (naming ll128 turns it on, as NCCL_PROTO does)"},
		{Name: "algo", Values: []string{"ring", "tree"}, Doc: "force the algorithm (NCCL_ALGO)"},
		{Name: "channels", Int: channelsRange, Doc: "force the channel count (default: NCCL's choice for the size)"},
		{Name: "min_channels", Int: channelsRange, Doc: "NCCL_MIN_NCHANNELS: at least this many channels at run time (1..64)"},
		{Name: "max_channels", Int: channelsRange, Doc: "NCCL_MAX_NCHANNELS: at most this many channels, in the search and at run time (1..64)"},
		{Name: "shm", Values: []string{"on", "off"}, Default: "on", Doc: "off = NCCL_SHM_DISABLE: a pair without P2P cannot run (NCCL would use its network transport, not modelled)"},
		{Name: "nthreads", Int: IntRange{Min: 64, Max: 512, Step: 32, Why: "NCCL's largest Simple block (NCCL_SIMPLE_MAX_NTHREADS)"},
			Doc: "NCCL_NTHREADS: block size before NCCL's size-based halving, Simple and LL (64..512, a multiple of 32; default NCCL's)"},
	}
}

func (a nccl) Plan(req Request) (*Schedule, error) {
	d, err := ncclDecide(req)
	if err != nil {
		return nil, err
	}
	var s *Schedule
	if d.choice.Algo == ncclmodel.Tree {
		s, err = planTree(req, d.spec)
	} else {
		s, err = planRing(req, d.spec)
	}
	if err != nil {
		return nil, err
	}
	s.Notes = append(d.notes, s.Notes...)
	return s, nil
}

// NCCLModel returns NCCL's own time estimate (ncclmodel) for the choice
// the nccl algorithm makes for req, in µs, and a note saying what it chose.
func NCCLModel(req Request) (us float64, note string, err error) {
	if err := Validate(nccl{}, req); err != nil {
		return 0, "", err
	}
	d, err := ncclDecide(req)
	if err != nil {
		return 0, "", err
	}
	return d.choice.Us, d.notes[0], nil
}

type ncclDecision struct {
	spec   ncclSpec
	choice ncclmodel.Choice
	notes  []string
}

// smFromSMs infers the compute capability from gpu.sms, since topologies
// carry no architecture: the GPU table's class with that SM count (188 →
// sm120 RTX PRO 6000, 170 → sm120 RTX 5090, 132 → sm90 H100/H200, …).
func smFromSMs(sms int) (int, bool) {
	if sm, ok := topology.SMForSMCount(sms); ok {
		return sm, true
	}
	return 80, false
}

// hostCPU guesses the host CPU from the preset name, since topologies carry
// no vendor: the RTX PRO 6000 presets are AMD EPYC hosts (NCCL's AMD_BW 16
// GB/s across sockets), H200 hosts Sapphire/Emerald Rapids (SRP_QPI_BW 22),
// anything else an Intel Skylake-class host (SKL_QPI_BW 10). Values from
// NCCL's topo.h.
func hostCPU(top *topology.Topology) (vendor ncclmodel.CPUVendor, sysBw float64, what string) {
	switch top.HostCPU { // an imported machine says
	case "amd":
		return ncclmodel.CPUAMD, 16, "AMD EPYC host (SYS 16 GB/s)"
	case "intel-spr":
		return ncclmodel.CPUIntel, 22, "Intel Sapphire Rapids host (SYS 22 GB/s)"
	case "intel":
		return ncclmodel.CPUIntel, 10, "Intel Skylake-class host (SYS 10 GB/s)"
	}
	switch {
	case strings.HasPrefix(top.Name, "rtxpro"):
		return ncclmodel.CPUAMD, 16, "AMD EPYC host (SYS 16 GB/s)"
	case strings.HasPrefix(top.Name, "h200"):
		return ncclmodel.CPUIntel, 22, "Intel Sapphire Rapids host (SYS 22 GB/s)"
	}
	return ncclmodel.CPUIntel, 10, "Intel Skylake-class host (SYS 10 GB/s)"
}

// nvlinkBw is ncclTopoNVLinkBw(cc), GB/s per link (topo.h).
func nvlinkBw(sm int) float64 {
	switch {
	case sm >= 100:
		return 40.1
	case sm >= 90:
		return 20.6
	case sm == 86:
		return 12
	case sm >= 70:
		return 20
	}
	return 18
}

// pciBw is NCCL's PCIe link figure: width × speed / 80 GB/s with speed 60
// (Gen3), 120 (Gen4), 240 (Gen5), 480 (Gen6) (topo.cc ncclTopoAddPci).
func pciBw(gen, width int) float64 {
	speed := map[int]float64{1: 15, 2: 30, 3: 60, 4: 120, 5: 240, 6: 480}[gen]
	if speed == 0 {
		speed = 60
	}
	if width == 0 {
		width = 16
	}
	return float64(width) * speed / 80
}

var p2pLevels = map[string]int{"loc": 0, "nvl": 1, "pix": 4, "pxb": 5, "phb": 8, "sys": 9}

func ncclDecide(req Request) (*ncclDecision, error) {
	top := req.Top
	n := req.Ranks
	gpus := top.GPUs()
	sms := int(top.Params.Get("gpu.sms"))
	sm, known := smFromSMs(sms)
	vendor, sysBw, cpuWhat := hostCPU(top)
	level := p2pLevels["pxb"] // paths.cc: "By default don't use P2P across CPU Host Bridges"
	levelWhat := "NCCL default PXB"
	if vendor == ncclmodel.CPUAMD && top.NumGPUs() <= 2 {
		level, levelWhat = p2pLevels["sys"], "NCCL default SYS (AMD, ≤ 2 GPUs)"
	}
	if v, ok := req.Opts["p2p_level"]; ok {
		level, levelWhat = p2pLevels[v], "p2p_level="+v
	}
	// Per ring neighbour pair: class, transport, NCCL bandwidth.
	useP2P := make([][]bool, n)
	for i := range useP2P {
		useP2P[i] = make([]bool, n)
	}
	allNV := true
	bottleneck := math.Inf(1)
	var classes []string
	nP2P, nSHM := 0, 0
	decide := func(a, b int) error {
		c, err := top.PathClass(gpus[a], gpus[b])
		if err != nil {
			return fmt.Errorf("algos: nccl: %w", err)
		}
		hwOK, _, err := top.P2PAllowed(gpus[a], gpus[b])
		if err != nil {
			return fmt.Errorf("algos: nccl: %w", err)
		}
		useP2P[a][b] = hwOK && ncclLevel(c) <= level
		if !useP2P[a][b] && req.Opt("shm", "on") == "off" {
			return fmt.Errorf("algos: nccl: GPU%d→GPU%d (%s) is not P2P at %s and SHM is off (NCCL_SHM_DISABLE): NCCL would use its network transport, which arsim does not model", a, b, c.NCCL(), levelWhat)
		}
		return nil
	}
	for r := 0; r < n; r++ {
		a, b := r, (r+1)%n
		c, err := top.PathClass(gpus[a], gpus[b])
		if err != nil {
			return nil, fmt.Errorf("algos: nccl: %w", err)
		}
		classes = append(classes, c.NCCL())
		if err := decide(a, b); err != nil {
			return nil, err
		}
		// Without P2P (disabled, or beyond the P2P level) NCCL routes the
		// pair through the CPU (paths.cc): the search sees the host-side
		// path, PCIe and the socket link, even where NVLink joins the GPUs.
		mode := topology.RouteAny
		if !useP2P[a][b] {
			mode = topology.RoutePCIe
		}
		route, err := top.Route(gpus[a], gpus[b], mode)
		if err != nil {
			return nil, fmt.Errorf("algos: nccl: %w", err)
		}
		bw := math.Inf(1)
		if c.Kind == topology.PathNV && useP2P[a][b] {
			bw = float64(c.NVLinks) * nvlinkBw(sm)
		} else {
			allNV = false
			for _, s := range route.Steps {
				switch s.Link.Type {
				case topology.PCIe:
					bw = min(bw, pciBw(s.Link.Gen, s.Link.Width))
				case topology.SMP:
					bw = min(bw, sysBw)
				}
			}
			phb := c.Kind == topology.PathPHB || c.Kind == topology.PathNODE
			if c.Kind == topology.PathNV {
				// P2P off over NVLink: the path through the CPU is PHB,
				// unless it crosses sockets (SYS).
				phb = true
				for _, st := range route.Steps {
					if st.Link.Type == topology.SMP {
						phb = false
					}
				}
			}
			if vendor != ncclmodel.CPUAMD && phb {
				bw /= 1.2 // INTEL_P2P_OVERHEAD on PHB paths (search.cc)
			}
		}
		bottleneck = min(bottleneck, bw)
		if useP2P[a][b] {
			nP2P++
		} else {
			nSHM++
		}
	}
	// Tree edges may join other pairs (the chain's reverse direction).
	for a := 0; a < n; a++ {
		for b := 0; b < n; b++ {
			if a != b && (b == a+1 || a == b+1 || (a == 0 && b == n-1) || (b == 0 && a == n-1)) {
				if err := decide(a, b); err != nil {
					return nil, err
				}
			}
		}
	}
	g := ncclmodel.SearchRing(bottleneck, sm, allNV)
	intraNV := allNV && !g.Fallback
	cfg := ncclmodel.Config{
		NRanks: n, SM: sm, IntraNVLink: intraNV,
		RingChannels: g.Channels, TreeChannels: g.Channels,
		RingBwIntra: g.BwIntra, TreeBwIntra: g.BwIntra,
		CPU:          vendor,
		LL128Enabled: ncclmodel.LL128DefaultEnabled(intraNV, sm),
		NThreads:     req.IntOpt("nthreads", 0),
		MinChannels:  req.IntOpt("min_channels", 0),
		MaxChannels:  req.IntOpt("max_channels", 0),
	}
	protoForced, algoForced := "", ""
	if v, ok := req.Opts["proto"]; ok {
		cfg.Protocols = nil
		for _, name := range strings.Split(v, "+") {
			p, _ := parseProto(name)
			cfg.Protocols = append(cfg.Protocols, ncclmodel.Proto(p)) // same index order as NCCL
			if p == protoLL128 {
				cfg.LL128Enabled = true // NCCL_PROTO naming LL128 forces it on
			}
		}
		protoForced = " (forced)"
		if len(cfg.Protocols) > 1 {
			protoForced = " (from " + v + ")"
		}
	}
	if v, ok := req.Opts["algo"]; ok {
		cfg.Algos = []ncclmodel.Algo{ncclmodel.Ring}
		if v == "tree" {
			cfg.Algos = []ncclmodel.Algo{ncclmodel.Tree}
		}
		algoForced = " (forced)"
	}
	m, err := ncclmodel.Tune(cfg)
	if err != nil {
		return nil, fmt.Errorf("algos: nccl: %w", err)
	}
	ch := m.Choose(req.Bytes)
	channels := req.IntOpt("channels", ch.Channels)
	spec := ncclSpec{
		algo: "nccl", proto: ncclProto(ch.Proto), threads: ch.Threads, channels: channels,
		transport: func(a, b int) transport {
			if useP2P[a][b] {
				return p2p
			}
			return shm
		},
		chain:  true,
		unroll: simpleUnroll(top),
	}
	over := "p2p"
	switch {
	case nP2P == 0:
		over = "shm"
	case nSHM > 0:
		over = fmt.Sprintf("p2p+shm (%d of %d ring links shm)", nSHM, n)
	}
	d := &ncclDecision{spec: spec, choice: ch}
	d.notes = append(d.notes,
		fmt.Sprintf("NCCL: %s/%s over %s, %d channels; model estimate %.1f µs", ch.Algo, ch.Proto, over, channels, ch.Us),
		fmt.Sprintf("NCCL: algo%s %s, proto%s %s, %d threads; P2P level %s; ring path classes %s", algoForced, ch.Algo, protoForced, ch.Proto, ch.Threads, levelWhat, strings.Join(classes, " ")),
		fmt.Sprintf("NCCL: ring search on bottleneck %.1f GB/s (%s): %d graph channels × %.1f GB/s%s; runtime channels %d", bottleneck, cpuWhat, g.Channels, g.BwIntra, map[bool]string{true: " (fallback: no speed fits)", false: ""}[g.Fallback], m.Channels()),
	)
	if known {
		d.notes = append(d.notes, fmt.Sprintf("NCCL: sm%d inferred from gpu.sms = %d", sm, sms))
	} else {
		d.notes = append(d.notes, fmt.Sprintf("NCCL: gpu.sms = %d is no known GPU; assuming sm%d", sms, sm))
	}
	if ch.Algo == ncclmodel.Tree {
		d.notes = append(d.notes, "NCCL: inside one node NCCL's tree is a chain of the ranks; planned as tree shape=chain")
	}
	return d, nil
}
