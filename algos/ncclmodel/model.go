package ncclmodel

import (
	"fmt"
	"io"
	"math"
	"math/bits"
)

// Model is NCCL's AllReduce cost table for one communicator, as
// ncclTopoTuneModel fills comm->latencies and comm->bandwidths, plus the
// thread and channel limits topoGetAlgoInfo reads. Build it with [Tune].
type Model struct {
	cfg        Config                       // normalized: Release is never the zero value
	graphCh    int                          // graphs[a]->nChannels = min(ring, tree)
	channels   int                          // comm->nChannels at runtime
	lat        [NumAlgos][NumProtos]float64 // µs
	bw         [NumAlgos][NumProtos]float64 // algorithm bandwidth, GB/s; 0 = disabled
	maxThreads [NumAlgos][NumProtos]int
	threshold  [NumAlgos][NumProtos]int64
}

// Tune computes NCCL's AllReduce latency and algorithm-bandwidth table for
// c, following ncclTopoTuneModel (src/graph/tuning.cc, NCCL 2.30.7; the
// constants of c.Release where they differ, [Release]):
//
//	busBw = nChannels · bw           (bw = bwIntra, or bwInter when nNodes > 2)
//	Ring LL:    min(llMaxBw, busBw·0.5)
//	Ring LL128: min(busBw·0.92, nChannels·perChMaxRingLL128Bw)
//	Tree (all): min(busBw·0.92, nChannels·perChMaxTreeBw), then
//	  LL:    min(busBw/3.8, llMaxBw)
//	  LL128: min(busBw·7/9 (1 node) or ·120/128, nChannels·perChMaxTreeLL128Bw)
//	  PureTree pattern: ·0.85
//	algBw = busBw · n/(2(n−1)) for Ring, · 0.5 for Tree
//
//	latency = baseLat[a][p] + Ring: (nsteps−nInterSteps)·intraLat + nInterSteps·interLat
//	                          Tree: 2·((n/nNodes − 1)·intraLat + log2(nNodes)·interLat)
//
// with nsteps = 2(n−1), intraLat from the NVLINK or PCI hwLatencies row and
// interLat from the NET row. Disabled pairs keep their latency and get
// bandwidth 0, as in NCCL.
func Tune(c Config) (*Model, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c = c.normalized()
	m := &Model{cfg: c}
	m.tuneChannels()
	m.tuneThreads()

	r := c.Release
	cc := r.CompCap(c.SM)
	index2 := 2
	if c.NNodes <= 2 {
		index2 = c.NNodes - 1
	}
	index1 := int(cc)
	if c.NNodes > 1 {
		index1 = 0
		if c.CPU == CPUAMD {
			index1 = 1
		}
	}
	caps := r.caps(index1, cc, index2)
	for _, a := range algoList {
		for _, p := range protoList {
			m.bw[a][p] = 0
			if c.enabled(a, p) {
				m.bw[a][p] = m.algoBw(a, p, caps)
			}
			m.lat[a][p] = m.latency(a, p)
		}
	}
	return m, nil
}

// tuneChannels sets the graph and runtime channel counts.
func (m *Model) tuneChannels() {
	c := &m.cfg
	// init.cc: comm->nChannels = treeGraph->nChannels = ringGraph->nChannels =
	// min(tree, ring), before ncclTopoTuneModel runs.
	// NCCL_MAX_NCHANNELS does not reach the search or the tuning model
	// (Config.MaxChannels): NCCL 2.28.9's init.cc sets ringGraph->maxChannels
	// to MAXCHANNELS/2 and applies the cap to comm->nChannels only
	// (connect.cc).
	m.graphCh = min(c.RingChannels, c.TreeChannels)
	// connect.cc: "Duplication should be complete now",
	// nChannels = min(MAXCHANNELS, nChannels*2).
	most := c.Release.MaxChannels()
	m.channels = min(most, 2*m.graphCh)
	// connect.cc: "Use 4 compute channels per search channel to reach peak
	// BW on <8 PPN" (sm ≥ 90, several nodes, ring bwIntra > 45).
	if c.SM >= 90 && c.NNodes > 1 && c.RingBwIntra > 45.0 && m.channels < 16 {
		m.channels = min(most, 2*m.channels)
	}
	// NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS (init.cc, connect.cc).
	if c.MinChannels > 0 {
		m.channels = max(m.channels, c.MinChannels)
	}
	if c.MaxChannels > 0 {
		m.channels = min(m.channels, c.MaxChannels)
	}
}

// tuneThreads sets the maximum threads and the thread thresholds of each
// algorithm and protocol (tuning.cc).
func (m *Model) tuneThreads() {
	c := &m.cfg
	// With NCCL_NTHREADS unset, Ring/Simple drops to 256 when the whole
	// ring graph carries no more than PCI_BW (12 GB/s).
	ringSimpleThreads := simpleMaxNThreads
	if c.RingBwIntra*float64(c.RingChannels) <= pciBw {
		ringSimpleThreads = 256
	}
	treeSimpleThreads, llThreads := simpleMaxNThreads, llMaxNThreads
	if c.NThreads > 0 { // NCCL_NTHREADS replaces the defaults of Simple and LL
		ringSimpleThreads, treeSimpleThreads, llThreads = c.NThreads, c.NThreads, c.NThreads
	}
	m.maxThreads[Ring] = [NumProtos]int{llThreads, ll128MaxNThreads, ringSimpleThreads}
	m.maxThreads[Tree] = [NumProtos]int{llThreads, ll128MaxNThreads, treeSimpleThreads}
	for _, a := range algoList {
		m.threshold[a] = [NumProtos]int64{llThreadThreshold, ll128ThreadThreshold, simpleThreadThreshold}
	}
	m.threshold[Ring][LL] *= int64(c.NRanks)
}

// bwCaps are the bandwidth ceilings of tuning.cc's tables for this
// compute capability and node count, GB/s.
type bwCaps struct {
	llMax, perChTree, perChRingLL128, perChTreeLL128 float64
}

// algoBw returns the algorithm bandwidth of a with protocol p, GB/s: the
// graph's bus bandwidth per channel times the channels, capped and
// derated per protocol as tuning.cc does, converted to algorithm
// bandwidth.
func (m *Model) algoBw(a Algo, p Proto, caps bwCaps) float64 {
	c := &m.cfg
	n, nNodes := c.NRanks, c.NNodes
	nCh := float64(m.graphCh)
	bwIntra, bwInter := c.RingBwIntra, c.RingBwInter
	if a == Tree {
		bwIntra, bwInter = c.TreeBwIntra, c.TreeBwInter
	}
	bw := bwIntra
	if nNodes > 2 {
		bw = bwInter
	}
	busBw := nCh * bw
	if a == Ring && p == LL {
		busBw = math.Min(caps.llMax, busBw*c.Release.ringLLShare())
	}
	if a == Ring && p == LL128 {
		busBw = math.Min(busBw*0.92, nCh*caps.perChRingLL128)
	}
	if a == Tree {
		busBw = math.Min(busBw*.92, nCh*caps.perChTree)
	}
	if a == Tree && p == LL {
		busBw = math.Min(busBw*1.0/3.8, caps.llMax)
	}
	if a == Tree && p == LL128 {
		f := 120.0 / 128.0
		if nNodes == 1 {
			f = 7.0 / 9.0
		}
		busBw = math.Min(busBw*f, nCh*caps.perChTreeLL128)
	}
	if a == Tree && c.TreePattern == PureTree {
		busBw *= .85
	}
	// Convert bus bandwidth to algorithm bandwidth.
	if a == Ring {
		return busBw * float64(n) / float64(2*(n-1))
	}
	return busBw * .5
}

// latency returns the base latency of a with protocol p, µs: the
// protocol's base plus each step's hardware latency (tuning.cc).
func (m *Model) latency(a Algo, p Proto) float64 {
	c := &m.cfg
	n, nNodes := c.NRanks, c.NNodes
	intraHw := PCI
	if c.IntraNVLink {
		intraHw = NVLink
	}
	r := c.Release
	lat := r.baseLat(a, p)
	intraLat := r.hwLat(intraHw, a, p)
	// "With ppn=1 latencies are fully exposed, use the Tree network latency"
	interLat := r.hwLat(Net, a, p)
	if n == nNodes { // ppn == 1
		interLat = r.hwLat(Net, Tree, p)
	}
	interLat += c.LatencyInter
	if p == Simple {
		interLat += c.LatencyInter // flush
	}
	switch a {
	case Ring:
		netOverhead := 0.0
		if nNodes > 1 {
			netOverhead = 1.0 // getNetOverhead: Intel and other 1.0 µs
			if c.CPU == CPUAMD {
				netOverhead = 2.0
			}
			if p == Simple {
				netOverhead *= 3
			}
		}
		intraLat = math.Max(intraLat, netOverhead)
		nInterSteps := 0
		if nNodes > 1 {
			nInterSteps = 2 * (nNodes - 1)
		}
		lat += float64(2*(n-1)-nInterSteps)*intraLat + float64(nInterSteps)*interLat
	case Tree:
		lat += 2 * (float64(n/nNodes-1)*intraLat + float64(log2Down(int64(nNodes)))*interLat)
	}
	return lat
}

// log2Down is NCCL's log2i: floor(log2(x)) for x > 0, −1 for x ≤ 0.
func log2Down(x int64) int {
	if x <= 0 {
		return -1
	}
	return bits.Len64(uint64(x)) - 1
}

// Config returns the configuration the model was built from, defaults
// filled in.
func (m *Model) Config() Config { return m.cfg }

// GraphChannels returns graphs[a]->nChannels as the tuning model sees it:
// min(RingChannels, TreeChannels).
func (m *Model) GraphChannels() int { return m.graphCh }

// Channels returns comm->nChannels, the runtime channel count that
// topoGetAlgoInfo starts from: the graph channels doubled (connect.cc),
// capped at MAXCHANNELS = 64, doubled once more on multi-node sm ≥ 90
// systems with ring bwIntra > 45 GB/s while below 16, then clamped to
// NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS (Config.MinChannels, MaxChannels).
func (m *Model) Channels() int { return m.channels }

// Latency returns comm->latencies[AllReduce][a][p] in µs.
func (m *Model) Latency(a Algo, p Proto) float64 {
	if !a.valid() || !p.valid() {
		return 0
	}
	return m.lat[a][p]
}

// Bandwidth returns comm->bandwidths[AllReduce][a][p], the algorithm
// bandwidth in GB/s (bytes of the buffer per ns); 0 when the pair is
// disabled.
func (m *Model) Bandwidth(a Algo, p Proto) float64 {
	if !a.valid() || !p.valid() {
		return 0
	}
	return m.bw[a][p]
}

// MaxThreads returns comm->maxThreads[a][p], the block size before
// topoGetAlgoInfo's halving (NCCL_NTHREADS unset).
func (m *Model) MaxThreads(a Algo, p Proto) int {
	if !a.valid() || !p.valid() {
		return 0
	}
	return m.maxThreads[a][p]
}

// ThreadThreshold returns comm->threadThresholds[a][p] in bytes per thread:
// LL 8 (Ring: 8·nRanks), LL128 8, Simple 64.
func (m *Model) ThreadThreshold(a Algo, p Proto) int64 {
	if !a.valid() || !p.valid() {
		return 0
	}
	return m.threshold[a][p]
}

// Time is ncclTopoGetAlgoTime for one AllReduce of bytes bytes (the buffer
// size, count × element size) and numPipeOps = 1:
//
//	bw  = Bandwidth(a,p) × treeCorrectionFactor[p][log2(bytes>>6)]  (Tree, log2 in 0..22)
//	lat = Latency(a,p) × 1.4 (×1.9 below sm80)  (Ring Simple, nNodes > 1,
//	      bytes/(Channels·nRanks) ≥ 64: "plateau effect of ring")
//	us  = lat + bytes/(1000·bw)
//
// ok is false when the pair is disabled (NCCL's time −1) or unknown.
func (m *Model) Time(a Algo, p Proto, bytes int64) (us float64, ok bool) {
	if !a.valid() || !p.valid() {
		return -1, false
	}
	bw := m.bw[a][p]
	lat := m.lat[a][p]
	if bw == 0 {
		return -1, false
	}
	if bytes < 0 {
		bytes = 0
	}
	logSize := log2Down(bytes >> 6)
	if a == Tree && logSize >= 0 && logSize < treeCorrectionMaxLog {
		bw *= treeCorrectionFactor[p][logSize]
	}
	if a == Ring && p == Simple && m.cfg.NNodes > 1 &&
		bytes/int64(m.channels*m.cfg.NRanks) >= 64 {
		if m.cfg.SM < 80 {
			lat *= 1.9
		} else {
			lat *= 1.4
		}
	}
	const latCount = 1 // numPipeOps = 1: no aggregation
	return lat*latCount + float64(bytes)/(1000*bw), true
}

// Entry is one cell of the cost table for a given message size.
type Entry struct {
	Algo  Algo
	Proto Proto
	// LatencyUs is the model latency in µs (set even when disabled).
	LatencyUs float64
	// AlgBwGBs is the algorithm bandwidth in GB/s; 0 when disabled.
	AlgBwGBs float64
	// Us is the estimated time in µs; −1 when disabled.
	Us float64
	// Enabled is false for pairs NCCL would ignore (bandwidth 0).
	Enabled bool
}

// Choice is NCCL's decision for one AllReduce, as topoGetAlgoInfo makes it.
type Choice struct {
	Algo  Algo
	Proto Proto
	// Channels is the number of channels (CTAs, the kernel's grid[0]).
	Channels int
	// Threads is the block size (the kernel's block[0]), sync warps included.
	Threads int
	// Us is the model's time estimate for the chosen pair, µs.
	Us float64
	// Table lists every (algo, proto) in NCCL index order (Tree LL, Tree
	// LL128, Tree Simple, Ring LL, Ring LL128, Ring Simple).
	Table []Entry
}

// Choose is topoGetAlgoInfo for one AllReduce of bytes bytes:
//
//  1. the enabled (algo, proto) with the smallest [Model.Time], scanning
//     algorithms in index order (Tree, Ring) and protocols (LL, LL128,
//     Simple) with a strict <, so ties keep the first;
//  2. nc = Channels(), nt = MaxThreads; while bytes < nc·nt·threshold and
//     nc ≥ 2: nc−−;
//  3. while bytes < nc·nt·threshold and nt%128 == 0: nt /= 2;
//  4. Simple adds one sync warp on Ring (+32) and four on Tree (+128); at
//     least three warps; Tree always runs NCCL_MAX_NTHREADS = 640 (from
//     2.22, [Release.TreeRunsAllThreads]).
//
// The model validates that at least one pair is enabled, so a choice always
// exists.
func (m *Model) Choose(bytes int64) Choice {
	if bytes < 0 {
		bytes = 0
	}
	ch := Choice{Us: math.MaxFloat32, Table: make([]Entry, 0, NumAlgos*NumProtos)}
	found := false
	for _, a := range algoList {
		for _, p := range protoList {
			us, ok := m.Time(a, p, bytes)
			ch.Table = append(ch.Table, Entry{
				Algo: a, Proto: p, LatencyUs: m.lat[a][p], AlgBwGBs: m.bw[a][p], Us: us, Enabled: ok,
			})
			if ok && us < ch.Us {
				ch.Algo, ch.Proto, ch.Us = a, p, us
				found = true
			}
		}
	}
	if !found { // unreachable for a validated model
		ch.Us = -1
		return ch
	}

	nc := int64(m.channels)
	nt := int64(m.maxThreads[ch.Algo][ch.Proto])
	th := m.threshold[ch.Algo][ch.Proto]
	for bytes < nc*nt*th && nc >= 2 {
		nc--
	}
	for bytes < nc*nt*th && nt%128 == 0 {
		nt /= 2
	}
	if ch.Proto == Simple {
		switch ch.Algo {
		case Ring:
			nt += warpSize // extra warp for sync
		case Tree:
			nt += 4 * warpSize // split thread model
		}
	}
	if nt/warpSize < 3 {
		nt = 3 * warpSize
	}
	if ch.Algo == Tree && m.cfg.Release.TreeRunsAllThreads() {
		nt = maxNThreads // "Tree now uses all threads always."
	}
	ch.Channels, ch.Threads = int(nc), int(nt)
	return ch
}

// Format writes the AllReduce part of NCCL's TUNING table (the block NCCL
// prints at NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING on rank 0, in the same
// column widths: cells are "%8.1f/%6.1f" latency µs / algBw GB/s), limited
// to the Tree and Ring columns, followed by NCCL's INIT lines for the thread
// thresholds and the runtime channel count.
func (m *Model) Format(w io.Writer) error {
	line := "  Algorithm   |"
	for _, a := range algoList {
		line += fmt.Sprintf(" %14s   %14s   %14s |", "", a.ncclName(), "")
	}
	if _, err := fmt.Fprintln(w, line); err != nil {
		return err
	}
	line = "  Protocol    |"
	for range algoList {
		for _, p := range protoList {
			line += fmt.Sprintf(" %14s |", p.ncclName())
		}
	}
	if _, err := fmt.Fprintln(w, line); err != nil {
		return err
	}
	line = " Max NThreads |"
	for _, a := range algoList {
		for _, p := range protoList {
			line += fmt.Sprintf(" %14d |", m.maxThreads[a][p])
		}
	}
	if _, err := fmt.Fprintln(w, line); err != nil {
		return err
	}
	line = fmt.Sprintf("%13s |", "AllReduce")
	for _, a := range algoList {
		for _, p := range protoList {
			line += fmt.Sprintf("%8.1f/%6.1f |", m.lat[a][p], m.bw[a][p])
		}
	}
	if _, err := fmt.Fprintln(w, line); err != nil {
		return err
	}
	// tuning.cc INIT line; the two trailing numbers are CollNet's fixed 512.
	if _, err := fmt.Fprintf(w, "threadThresholds %d/%d/%d | %d/%d/%d | 512 | 512\n",
		m.threshold[Tree][LL], m.threshold[Tree][LL128], m.threshold[Tree][Simple],
		m.threshold[Ring][LL], m.threshold[Ring][LL128], m.threshold[Ring][Simple]); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d coll channels\n", m.channels)
	return err
}
