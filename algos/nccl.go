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
		{Name: "max_channels", Int: channelsRange, Doc: "NCCL_MAX_NCHANNELS: at most this many channels at run time (1..64); NCCL picks its algorithm and protocol as if uncapped"},
		{Name: "transport", Values: []string{"p2p", "shm"}, Doc: "shm = NCCL_P2P_DISABLE: every pair over SHM, whatever p2p_level says; p2p: as p2p_level decides"},
		{Name: "shm", Values: []string{"on", "off"}, Default: "on", Doc: "off = NCCL_SHM_DISABLE: a pair without P2P cannot run (NCCL would use its network transport, not modelled)"},
		{Name: "p2p_read", Values: []string{"on", "off"}, Doc: "NCCL_P2P_READ_ENABLE=1|0: every P2P pair's Simple FIFO in the sender's GPU memory, loaded by the receiver (on), or written by the sender into the receiver's (off); default NCCL's: read where NVLink joins two sm80 GPUs"},
		{Name: "nthreads", Int: IntRange{Min: 64, Max: 512, Step: 32, Why: "NCCL's largest Simple block (NCCL_SIMPLE_MAX_NTHREADS)"},
			Doc: "NCCL_NTHREADS: block size before NCCL's size-based halving, Simple and LL (64..512, a multiple of 32; default NCCL's)"},
		graphMixingOption,
		graphCallsOption,
		{Name: "graph_channels", Int: graphChannelsRange, Doc: "NCCL_GRAPH_FILE's ring graph: its channels (before NCCL's run-time doubling), instead of NCCL's ring search; with graph_speed and graph_type"},
		{Name: "graph_speed", Int: graphSpeedRange, Doc: "the ring graph's speedintra, MB/s per channel (24000 for 24 GB/s)"},
		{Name: "graph_type", Values: ncclGraphTypeValues, Doc: "the ring graph's typeintra (nvl selects NCCL's NVLink latencies, every other type its PCI ones)"},
		{Name: "graph_tree_channels", Int: graphChannelsRange, Doc: "NCCL_GRAPH_FILE's tree graph: its channels, with graph_tree_speed (default: the ring's graph)"},
		{Name: "graph_tree_speed", Int: graphSpeedRange, Doc: "the tree graph's speedintra, MB/s per channel"},
		{Name: "graph_gpus", Int: IntRange{Min: 2, Max: 1 << 16, Why: "65,536 GPUs"}, Doc: "the GPUs each channel of NCCL_GRAPH_FILE lists: it must be the run's ranks"},
		{Name: "nccl_version", Values: ncclVersionValues, Doc: "the NCCL release whose choices and constants apply (default " + ncclmodel.Version + "): its tuning tables, LL128 and P2P defaults, search speeds, MAXCHANNELS, Tree threads, Simple unroll (docs/NCCL_RELEASES.md)"},
	}
}

// ncclVersionValues are the releases nccl_version takes, 2.18 to 2.30: the
// rules change between minor releases only.
var ncclVersionValues = func() []string {
	var v []string
	for m := ncclmodel.OldestMinor; m <= ncclmodel.NewestMinor; m++ {
		v = append(v, fmt.Sprintf("2.%d", m))
	}
	return v
}()

// ncclRelease is the release req's nccl_version names; the zero value
// (ncclmodel.Version) when it names none.
func ncclRelease(req Request) (ncclmodel.Release, error) {
	v, ok := req.Opts["nccl_version"]
	if !ok {
		return ncclmodel.Release{}, nil
	}
	r, err := ncclmodel.ParseRelease(v)
	if err != nil {
		return r, fmt.Errorf("algos: nccl: option nccl_version: %w", err)
	}
	return r, nil
}

// The ranges and values of the graph options (NCCL_GRAPH_FILE).
var (
	graphChannelsRange  = IntRange{Min: 1, Max: maxGraphChannels, Why: "a ring graph's most channels, MAXCHANNELS/2"}
	graphSpeedRange     = IntRange{Min: 1, Max: 10_000_000, Why: "10 TB/s per channel"}
	ncclGraphTypeValues = []string{"nvl", "nvb", "c2c", "pix", "pxb", "pxn", "p2c", "phb", "sys"}
)

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
	e, err := NCCLEstimate(req)
	return e.Us, e.Note, err
}

// NCCLEstimateInfo is NCCL's own estimate for a request: the time in µs,
// a note saying what it chose, and whether NCCL's ring search found no
// speed and fell back to its 0.1 GB/s graph ("Could not find a path"),
// which makes the estimate's bandwidth term that graph's, not the
// machine's. Choice is what it chose, which the nccl schedule runs:
// algorithm/protocol and channels, e.g. "ring/simple, 4 channels".
type NCCLEstimateInfo struct {
	Us       float64
	Note     string
	Fallback bool
	Choice   string
}

// NCCLEstimate is NCCLModel with whether the search fell back.
func NCCLEstimate(req Request) (NCCLEstimateInfo, error) {
	if err := Validate(nccl{}, req); err != nil {
		return NCCLEstimateInfo{}, err
	}
	d, err := ncclDecide(req)
	if err != nil {
		return NCCLEstimateInfo{}, err
	}
	c := d.choice
	return NCCLEstimateInfo{Us: c.Us, Note: d.notes[0], Fallback: d.fallback,
		Choice: fmt.Sprintf("%v/%v, %d channels", c.Algo, c.Proto, d.spec.channels)}, nil
}

type ncclDecision struct {
	spec     ncclSpec
	choice   ncclmodel.Choice
	notes    []string
	fallback bool // the ring search found no speed (ncclmodel.Graph.Fallback)
}

// computeCapability is the machine's GPU architecture as NCCL writes its
// compute capability (gpu.compute_capability: 120 for RTX PRO 6000, 90
// for H100/H200, …), which NCCL's tuning constants and unroll follow.
func computeCapability(top *topology.Topology) int {
	return int(top.Params.Get(topology.ComputeCapability))
}

// releaseNote names the NCCL release whose rules the choice follows when
// nccl_version gave one.
func releaseNote(req Request, rel ncclmodel.Release) string {
	if _, ok := req.Opts["nccl_version"]; !ok {
		return ""
	}
	return fmt.Sprintf(", NCCL %s's rules (nccl_version)", rel)
}

// hostCPU guesses the host CPU from the preset name, since topologies carry
// no vendor: the RTX PRO 6000 presets are AMD EPYC hosts (NCCL's AMD_BW 16
// GB/s across sockets), H200 hosts Sapphire/Emerald Rapids (SRP_QPI_BW 22),
// anything else an Intel Skylake-class host (SKL_QPI_BW 10). Values from
// NCCL's topo.h, as release r has them (ncclmodel.Release.AMDSocketBw,
// IntelSocketBw).
func hostCPU(top *topology.Topology, r ncclmodel.Release) (vendor ncclmodel.CPUVendor, sysBw float64, what string) {
	amd := func() (ncclmodel.CPUVendor, float64, string) {
		bw := r.AMDSocketBw()
		if bw >= 5000 {
			return ncclmodel.CPUAMD, bw, "AMD EPYC host (SYS not limited: no AMD_BW before NCCL 2.19)"
		}
		return ncclmodel.CPUAMD, bw, fmt.Sprintf("AMD EPYC host (SYS %g GB/s)", bw)
	}
	spr := func() (ncclmodel.CPUVendor, float64, string) {
		bw := r.IntelSocketBw(true)
		return ncclmodel.CPUIntel, bw, fmt.Sprintf("Intel Sapphire Rapids host (SYS %g GB/s)", bw)
	}
	switch top.HostCPU { // an imported machine says
	case "amd":
		return amd()
	case "intel-spr":
		return spr()
	case "intel":
		return ncclmodel.CPUIntel, r.IntelSocketBw(false), "Intel Skylake-class host (SYS 10 GB/s)"
	}
	switch {
	case strings.HasPrefix(top.Name, "rtxpro"):
		return amd()
	case strings.HasPrefix(top.Name, "h200"):
		return spr()
	}
	return ncclmodel.CPUIntel, r.IntelSocketBw(false), "Intel Skylake-class host (SYS 10 GB/s)"
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

// ncclPaths is what NCCL's path and P2P rules decide for one call: which
// neighbour pairs use P2P (the others SHM), the ring's bottleneck bandwidth
// for the search, and what the notes say of it.
type ncclPaths struct {
	useP2P [][]bool
	// read: a P2P pair's Simple FIFO is read by the receiver (NCCL's P2P
	// read); readWhat says why
	read       [][]bool
	readWhat   string
	nRead      int // ring links read
	allNV      bool
	bottleneck float64 // GB/s, NCCL's unit
	classes    []string
	nP2P, nSHM int
	levelWhat  string
}

// ncclDecide plans NCCL's choice for req: paths and transports per pair,
// the ring search, the tuning model's algorithm, protocol and channels.
func ncclDecide(req Request) (*ncclDecision, error) {
	top := req.Top
	n := req.Ranks
	sm := computeCapability(top)
	rel, err := ncclRelease(req)
	if err != nil {
		return nil, err
	}
	vendor, sysBw, cpuWhat := hostCPU(top, rel)
	p, err := ncclDecidePaths(req, sm, vendor, sysBw, rel)
	if err != nil {
		return nil, err
	}
	g := rel.SearchRing(p.bottleneck, sm, p.allNV)
	given, err := givenGraphs(req)
	if err != nil {
		return nil, err
	}
	intraNV := p.allNV && !g.Fallback
	if given.ring != nil {
		g, intraNV = *given.ring, given.ring.NVLink
	}
	cfg, algoForced, protoForced := ncclTuneConfig(req, sm, vendor, g, intraNV, rel)
	if given.tree != nil {
		cfg.TreeChannels, cfg.TreeBwIntra = given.tree.Channels, given.tree.BwIntra
	}
	m, err := ncclmodel.Tune(cfg)
	if err != nil {
		return nil, fmt.Errorf("algos: nccl: %w", err)
	}
	ch := m.Choose(req.Bytes)
	channels := req.IntOpt("channels", ch.Channels)
	// From 2.22 NCCL's planner spreads the call over whole cells of its
	// channels rather than evenly (ncclmodel.Release.ChannelParts); a
	// channel count forced by the channels option splits evenly.
	var parts []int64
	first := 0
	if _, forced := req.Opts["channels"]; !forced {
		if elem := int64(req.DType.Size()); elem > 0 && req.Bytes%elem == 0 {
			first, parts = rel.ChannelParts(ch.Proto, req.Bytes/elem, elem, ch.Channels, m.Channels())
			if parts != nil {
				channels = len(parts)
			}
		}
	}
	useP2P, read := p.useP2P, p.read
	simple := ncclProto(ch.Proto) == protoSimple
	spec := ncclSpec{
		algo: "nccl", proto: ncclProto(ch.Proto), threads: ch.Threads, channels: channels,
		transport: func(a, b int) transport {
			switch {
			case !useP2P[a][b]:
				return shm
			case read[a][b] && simple:
				return p2pRead // LL and LL128 keep their buffers at the receiver
			}
			return p2p
		},
		chain:   true,
		unroll:  simpleUnroll(top, rel),
		release: rel,
		parts:   parts,
		first:   first,
	}
	over := "p2p"
	switch {
	case p.nP2P == 0:
		over = "shm"
	case p.nSHM > 0:
		over = fmt.Sprintf("p2p+shm (%d of %d ring links shm)", p.nSHM, n)
	}
	if p.nRead == 0 && req.Opts["p2p_read"] == "on" {
		over += " (p2p_read=on, but no ring link is P2P: nothing to read)"
	}
	if p.nRead > 0 {
		unused := ""
		if !simple {
			unused = "; not used by " + ch.Proto.String()
		}
		over += fmt.Sprintf(" (P2P read on %d of %d ring links, %s: Simple's FIFO at the sender%s)", p.nRead, n, p.readWhat, unused)
	}
	d := &ncclDecision{spec: spec, choice: ch, fallback: g.Fallback && given.ring == nil}
	d.notes = append(d.notes,
		fmt.Sprintf("NCCL: %s/%s over %s, %d channels; model estimate %.1f µs", ch.Algo, ch.Proto, over, channels, ch.Us),
		fmt.Sprintf("NCCL: algo%s %s, proto%s %s, %d threads; P2P level %s; ring path classes %s", algoForced, ch.Algo, protoForced, ch.Proto, ch.Threads, p.levelWhat, strings.Join(p.classes, " ")),
	)
	if given.ring != nil {
		d.notes = append(d.notes, fmt.Sprintf("NCCL: ring graph given (NCCL_GRAPH_FILE or graph_*), not searched: %d graph channels × %.1f GB/s, type %s%s; runtime channels %d; arsim's rings run in rank order",
			g.Channels, g.BwIntra, strings.ToUpper(req.Opts["graph_type"]), given.treeNote, m.Channels()))
	} else {
		d.notes = append(d.notes, fmt.Sprintf("NCCL: ring search on bottleneck %.1f GB/s (%s): %d graph channels × %.1f GB/s%s; runtime channels %d", p.bottleneck, cpuWhat, g.Channels, g.BwIntra, map[bool]string{true: " (fallback: no speed fits; NCCL_GRAPH_FILE or graph_* give NCCL a graph instead)", false: ""}[g.Fallback], m.Channels()))
	}
	d.notes = append(d.notes, fmt.Sprintf("NCCL: tuned for sm%d (%s)%s", sm, topology.ComputeCapability, releaseNote(req, rel)))
	if ch.Algo == ncclmodel.Tree {
		d.notes = append(d.notes, "NCCL: inside one node NCCL's tree is a chain of the ranks; planned as tree shape=chain")
	}
	return d, nil
}

// ncclGivenGraphs are the graphs a run gives NCCL instead of its search
// (NCCL_GRAPH_FILE, or the graph_* options): nil where NCCL searches.
type ncclGivenGraphs struct {
	ring, tree *ncclmodel.Graph
	treeNote   string
}

// givenGraphs reads the graph options: the ring graph needs its channels,
// speed and type together, the tree graph its channels and speed (and a
// ring graph); graph_gpus, where a file set it, must be the run's ranks.
func givenGraphs(req Request) (ncclGivenGraphs, error) {
	var out ncclGivenGraphs
	_, hasC := req.Opts["graph_channels"]
	_, hasS := req.Opts["graph_speed"]
	_, hasT := req.Opts["graph_type"]
	_, hasTC := req.Opts["graph_tree_channels"]
	_, hasTS := req.Opts["graph_tree_speed"]
	if !hasC && !hasS && !hasT && !hasTC && !hasTS {
		return out, nil
	}
	if !hasC || !hasS || !hasT {
		return out, fmt.Errorf("algos: nccl: a given ring graph needs graph_channels, graph_speed and graph_type together (NCCL_GRAPH_FILE's graph id 0 gives all three)")
	}
	if hasTC != hasTS {
		return out, fmt.Errorf("algos: nccl: a given tree graph needs graph_tree_channels and graph_tree_speed together")
	}
	if n := req.IntOpt("graph_gpus", 0); n > 0 && n != req.Ranks {
		return out, fmt.Errorf("algos: nccl: NCCL_GRAPH_FILE's channels list %d GPUs, the run has %d ranks (NCCL would fail to map the file's GPUs)", n, req.Ranks)
	}
	out.ring = &ncclmodel.Graph{Channels: req.IntOpt("graph_channels", 1), BwIntra: float64(req.IntOpt("graph_speed", 1)) / 1000,
		NVLink: req.Opts["graph_type"] == "nvl"}
	if hasTC {
		out.tree = &ncclmodel.Graph{Channels: req.IntOpt("graph_tree_channels", 1), BwIntra: float64(req.IntOpt("graph_tree_speed", 1)) / 1000}
		out.treeNote = fmt.Sprintf("; tree graph %d channels × %.1f GB/s", out.tree.Channels, out.tree.BwIntra)
	}
	return out, nil
}

// ncclDecidePaths applies NCCL's P2P level (paths.cc) to every ring and
// tree neighbour pair and finds the ring's bottleneck bandwidth as NCCL's
// search sees it (search.cc).
func ncclDecidePaths(req Request, sm int, vendor ncclmodel.CPUVendor, sysBw float64, rel ncclmodel.Release) (*ncclPaths, error) {
	top := req.Top
	n := req.Ranks
	gpus := top.GPUs()
	// paths.cc: "By default don't use P2P across CPU Host Bridges", but
	// on AMD hosts with at most two GPUs (every AMD host before 2.23)
	def := rel.DefaultP2PLevel(vendor, top.NumGPUs())
	level := p2pLevels[def]
	p := &ncclPaths{allNV: true, bottleneck: math.Inf(1), levelWhat: "NCCL default PXB"}
	switch {
	case def == "sys" && top.NumGPUs() <= 2:
		p.levelWhat = "NCCL default SYS (AMD, ≤ 2 GPUs)"
	case def == "sys":
		p.levelWhat = fmt.Sprintf("NCCL %s's default SYS (AMD)", rel)
	}
	if v, ok := req.Opts["p2p_level"]; ok {
		level, p.levelWhat = p2pLevels[v], "p2p_level="+v
	}
	if req.Opts["transport"] == "shm" { // NCCL_P2P_DISABLE overrides NCCL_P2P_LEVEL
		level, p.levelWhat = p2pLevels["loc"], "transport=shm (P2P disabled)"
	}
	p.useP2P, p.read = make([][]bool, n), make([][]bool, n)
	for i := range p.useP2P {
		p.useP2P[i], p.read[i] = make([]bool, n), make([]bool, n)
	}
	// NCCL's P2P read (paths.cc ncclTopoCheckP2p: "Enable P2P Read for
	// Ampere/NVLink only", a pair joined by NVLink of two sm80 GPUs;
	// p2p.cc p2pGetInfo: NCCL_P2P_READ_ENABLE, when set, decides for every
	// P2P pair)
	readOpt, readSet := req.Opts["p2p_read"]
	p.readWhat = "NCCL's default (NVLink between sm80 GPUs)"
	if readSet {
		p.readWhat = "p2p_read=" + readOpt
	}
	decide := func(a, b int) error {
		c, err := top.PathClass(gpus[a], gpus[b])
		if err != nil {
			return fmt.Errorf("algos: nccl: %w", err)
		}
		hwOK, _, err := top.P2PAllowed(gpus[a], gpus[b])
		if err != nil {
			return fmt.Errorf("algos: nccl: %w", err)
		}
		p.useP2P[a][b] = hwOK && ncclLevel(c) <= level
		p.read[a][b] = p.useP2P[a][b] && c.Kind == topology.PathNV && sm == 80
		if readSet {
			p.read[a][b] = p.useP2P[a][b] && readOpt == "on"
		}
		if !p.useP2P[a][b] && req.Opt("shm", "on") == "off" {
			return fmt.Errorf("algos: nccl: GPU%d→GPU%d (%s) is not P2P at %s and SHM is off (NCCL_SHM_DISABLE): NCCL would use its network transport, which arsim does not model", a, b, c.NCCL(), p.levelWhat)
		}
		return nil
	}
	for r := 0; r < n; r++ {
		a, b := r, (r+1)%n
		c, err := top.PathClass(gpus[a], gpus[b])
		if err != nil {
			return nil, fmt.Errorf("algos: nccl: %w", err)
		}
		p.classes = append(p.classes, c.NCCL())
		if err := decide(a, b); err != nil {
			return nil, err
		}
		bw, err := ncclPairBw(top, gpus[a], gpus[b], c, p.useP2P[a][b], rel.NVLinkBw(sm), vendor, sysBw)
		if err != nil {
			return nil, err
		}
		if !(c.Kind == topology.PathNV && p.useP2P[a][b]) {
			p.allNV = false
		}
		p.bottleneck = min(p.bottleneck, bw)
		if p.useP2P[a][b] {
			p.nP2P++
			if p.read[a][b] {
				p.nRead++
			}
		} else {
			p.nSHM++
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
	return p, nil
}

// ncclPairBw is the bandwidth NCCL's search gives one ring neighbour pair
// (GB/s): the NVLinks' (nvlinkBw a link, ncclTopoNVLinkBw) when P2P runs over them, else the narrowest PCIe or
// socket link of the path (without P2P NCCL routes the pair through the
// CPU, paths.cc, even where NVLink joins the GPUs), less Intel's P2P
// overhead on PHB paths.
func ncclPairBw(top *topology.Topology, ga, gb topology.NodeID, c topology.PathClass, useP2P bool, nvlinkBw float64, vendor ncclmodel.CPUVendor, sysBw float64) (float64, error) {
	if c.Kind == topology.PathNV && useP2P {
		return float64(c.NVLinks) * nvlinkBw, nil
	}
	mode := topology.RouteAny
	if !useP2P {
		mode = topology.RoutePCIe
	}
	route, err := top.Route(ga, gb, mode)
	if err != nil {
		return 0, fmt.Errorf("algos: nccl: %w", err)
	}
	bw := math.Inf(1)
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
	return bw, nil
}

// ncclTuneConfig is the tuning model's input for req: the search's graph,
// the CPU, LL128's default, and the forced algorithm, protocols and
// channel limits of the options (with the notes' "(forced)" markers).
func ncclTuneConfig(req Request, sm int, vendor ncclmodel.CPUVendor, g ncclmodel.Graph, intraNV bool, rel ncclmodel.Release) (cfg ncclmodel.Config, algoForced, protoForced string) {
	cfg = ncclmodel.Config{
		NRanks: req.Ranks, SM: sm, IntraNVLink: intraNV,
		RingChannels: g.Channels, TreeChannels: g.Channels,
		RingBwIntra: g.BwIntra, TreeBwIntra: g.BwIntra,
		CPU:          vendor,
		LL128Enabled: rel.LL128DefaultEnabled(intraNV, sm),
		Release:      rel,
		NThreads:     req.IntOpt("nthreads", 0),
		MinChannels:  req.IntOpt("min_channels", 0),
		MaxChannels:  req.IntOpt("max_channels", 0),
	}
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
	return cfg, algoForced, protoForced
}
