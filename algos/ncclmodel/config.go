package ncclmodel

import (
	"errors"
	"fmt"
	"math"
)

// Config is the input of [Tune]: the communicator shape and the graph
// results of NCCL's topology search. Zero values of optional fields select
// the documented default.
type Config struct {
	// NRanks is the number of GPUs in the communicator (nRanks). Required,
	// ≥ 2: NCCL skips the model for one rank.
	NRanks int
	// NNodes is the number of hosts (nNodes). Default 1 when 0. NRanks must
	// be a multiple of it (NCCL divides nRanks/nNodes in integers).
	NNodes int
	// SM is the minimum compute capability of the GPUs as an integer, e.g.
	// 80 (A100), 90 (H100/H200), 100 (B200), 120 (RTX PRO 6000). Required,
	// ≥ 60. It selects the CompCap row of the bandwidth caps and, in
	// [GraphFor], the search speed array.
	SM int
	// IntraNVLink reports whether the graphs' typeIntra is NVL (the GRAPH
	// log's "type NVL/..."). True selects the NVLINK row of hwLatencies;
	// false (the default) the PCI row, which NCCL uses for every other
	// typeIntra, NVB included.
	IntraNVLink bool

	// RingChannels is the ring graph's nChannels as printed by the search
	// ("Pattern 4, ..., nChannels N"), after the search's own
	// ncclTopoDupChannels but before the runtime doubling in connect.cc.
	// Required, 1..32 (the ring graph's maxChannels is MAXCHANNELS/2).
	RingChannels int
	// TreeChannels is the tree graph's nChannels ("Pattern 1|2|3, ...").
	// Required, 1..32. NCCL searches the tree with max = ring channels and
	// then sets both graphs to min(ring, tree) (init.cc), so [Tune] uses
	// that minimum for both algorithms.
	TreeChannels int
	// RingBwIntra is the ring graph's bwIntra in GB/s per channel (the first
	// number of "bw X/Y"). Required, > 0.
	RingBwIntra float64
	// TreeBwIntra is the tree graph's bwIntra in GB/s per channel. Required,
	// > 0.
	TreeBwIntra float64
	// RingBwInter and TreeBwInter are the graphs' bwInter in GB/s per
	// channel. NCCL uses them instead of bwIntra when NNodes > 2. Default:
	// the matching BwIntra when 0.
	RingBwInter, TreeBwInter float64
	// LatencyInter is the graphs' latencyInter in µs, added to every network
	// step (twice for Simple: the flush). Default 0, NCCL's value unless a
	// net plugin reports a latency.
	LatencyInter float64
	// TreePattern is the tree graph's pattern (comm->maxTreePattern).
	// Default BalancedTree; PureTree multiplies tree busBw by 0.85.
	TreePattern TreePattern
	// CPU is the host CPU vendor. Only used when NNodes > 1 (llMaxBw row,
	// ring network overhead). Default CPUOther, which NCCL treats as Intel.
	CPU CPUVendor
	// LL128Enabled enables the LL128 protocol. NCCL's default ("2", auto)
	// is [LL128DefaultEnabled]; setting NCCL_PROTO to a list that names
	// LL128 forces it on, which this field models. Default false.
	LL128Enabled bool
	// Protocols is an allow-list like NCCL_PROTO="LL,Simple". Default (nil
	// or empty): all protocols. LL128 additionally needs LL128Enabled.
	Protocols []Proto
	// Algos is an allow-list like NCCL_ALGO="ring". Default (nil or empty):
	// Tree and Ring.
	Algos []Algo
	// NThreads is NCCL_NTHREADS: the block size before the size-based
	// halving for Simple (ring and tree) and LL (tuning.cc getNthreads;
	// LL128 has its own variable). Default 0: unset. Otherwise 64..512, a
	// multiple of 32.
	NThreads int
	// MinChannels and MaxChannels are NCCL_MIN_NCHANNELS and
	// NCCL_MAX_NCHANNELS: the runtime channel count is clamped to
	// [MinChannels, MaxChannels] after NCCL's duplication (connect.cc,
	// ncclTopoPostset). The search and the tuning model do not see them:
	// the ring search looks for up to MAXCHANNELS/2 channels whatever
	// they say (init.cc, ringGraph->maxChannels), and ncclTopoTuneModel's
	// bandwidths are the graph's (tuning.cc, busBw = graphs[a]->nChannels
	// × bw), so NCCL picks its algorithm and protocol as if uncapped and
	// runs the pick on the capped channels. 0: unset.
	MinChannels, MaxChannels int
	// Release is the NCCL release whose constants and rules apply
	// ([Release]). Default (zero): [Version].
	Release Release
}

// LL128DefaultEnabled is NCCL's default (NCCL_PROTO unset) LL128 rule for a
// single-node communicator, from the protocol-enable loop of
// ncclTopoTuneModel (tuning.cc 2.30.7): LL128 needs typeIntra ≤ PATH_NVB
// (NVLink, possibly through a GPU), a compute capability ≥ 70, and equal
// compute capabilities or ≥ 90 (always true for one SM). The typeInter
// condition (≤ PXN on sm ≥ 90, ≤ PXB otherwise) holds on one node. The
// CUDA 11.8 / sm90 / 2-rank ring exception is ignored. So LL128 is off on
// every PCIe-only machine and on for NVLink from Volta on.
func LL128DefaultEnabled(intraNVLink bool, sm int) bool {
	return defaultRelease.LL128DefaultEnabled(intraNVLink, sm)
}

// normalized returns c with defaults filled in.
func (c Config) normalized() Config {
	if c.NNodes == 0 {
		c.NNodes = 1
	}
	c.Release = c.Release.orDefault()
	if c.RingBwInter == 0 {
		c.RingBwInter = c.RingBwIntra
	}
	if c.TreeBwInter == 0 {
		c.TreeBwInter = c.TreeBwIntra
	}
	return c
}

func checkBw(name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return fmt.Errorf("ncclmodel: %s must be a finite bandwidth > 0 GB/s, got %v", name, v)
	}
	return nil
}

// Validate reports the first problem with c, after defaults are applied.
func (c Config) Validate() error {
	c = c.normalized()
	if c.NRanks < 2 {
		return fmt.Errorf("ncclmodel: NRanks must be ≥ 2, got %d", c.NRanks)
	}
	if c.NNodes < 1 {
		return fmt.Errorf("ncclmodel: NNodes must be ≥ 1, got %d", c.NNodes)
	}
	if c.NNodes > c.NRanks || c.NRanks%c.NNodes != 0 {
		return fmt.Errorf("ncclmodel: NRanks (%d) must be a multiple of NNodes (%d)", c.NRanks, c.NNodes)
	}
	if c.SM < 60 {
		return fmt.Errorf("ncclmodel: SM must be ≥ 60 (e.g. 90 for sm_90), got %d", c.SM)
	}
	if !c.Release.valid() {
		return fmt.Errorf("ncclmodel: Release 2.%d.%d: the model knows NCCL 2.%d to 2.%d", c.Release.Minor, c.Release.Patch, OldestMinor, NewestMinor)
	}
	most := c.Release.MaxChannels()
	if c.MinChannels < 0 || c.MinChannels > most || c.MaxChannels < 0 || c.MaxChannels > most {
		return fmt.Errorf("ncclmodel: MinChannels and MaxChannels (NCCL_MIN_NCHANNELS, NCCL_MAX_NCHANNELS) must be 0 (unset) or 1..%d (MAXCHANNELS of NCCL %s), got %d and %d",
			most, c.Release, c.MinChannels, c.MaxChannels)
	}
	if c.NThreads != 0 && (c.NThreads < 2*warpSize || c.NThreads > simpleMaxNThreads || c.NThreads%warpSize != 0) {
		return fmt.Errorf("ncclmodel: NThreads (NCCL_NTHREADS) must be 0 (unset) or a multiple of %d in %d..%d, got %d",
			warpSize, 2*warpSize, simpleMaxNThreads, c.NThreads)
	}
	if c.RingChannels < 1 || c.RingChannels > most/2 {
		return fmt.Errorf("ncclmodel: RingChannels must be in 1..%d (half of NCCL %s's MAXCHANNELS), got %d", most/2, c.Release, c.RingChannels)
	}
	if c.TreeChannels < 1 || c.TreeChannels > most/2 {
		return fmt.Errorf("ncclmodel: TreeChannels must be in 1..%d (half of NCCL %s's MAXCHANNELS), got %d", most/2, c.Release, c.TreeChannels)
	}
	for _, b := range []struct {
		name string
		v    float64
	}{
		{"RingBwIntra", c.RingBwIntra}, {"TreeBwIntra", c.TreeBwIntra},
		{"RingBwInter", c.RingBwInter}, {"TreeBwInter", c.TreeBwInter},
	} {
		if err := checkBw(b.name, b.v); err != nil {
			return err
		}
	}
	if math.IsNaN(c.LatencyInter) || math.IsInf(c.LatencyInter, 0) || c.LatencyInter < 0 {
		return fmt.Errorf("ncclmodel: LatencyInter must be a finite latency ≥ 0 µs, got %v", c.LatencyInter)
	}
	if c.TreePattern < BalancedTree || c.TreePattern > PureTree {
		return fmt.Errorf("ncclmodel: unknown TreePattern %d", int(c.TreePattern))
	}
	if c.CPU < CPUOther || c.CPU > CPUAMD {
		return fmt.Errorf("ncclmodel: unknown CPU vendor %d", int(c.CPU))
	}
	for _, p := range c.Protocols {
		if !p.valid() {
			return fmt.Errorf("ncclmodel: unknown protocol %d in Protocols", int(p))
		}
	}
	for _, a := range c.Algos {
		if !a.valid() {
			return fmt.Errorf("ncclmodel: unknown algorithm %d in Algos", int(a))
		}
	}
	anyOn := false
	for _, a := range algoList {
		for _, p := range protoList {
			anyOn = anyOn || c.enabled(a, p)
		}
	}
	if !anyOn {
		return errors.New("ncclmodel: no (algorithm, protocol) pair is enabled by Algos, Protocols and LL128Enabled")
	}
	return nil
}

// enabled reports whether the allow-lists and the LL128 switch permit (a, p).
func (c Config) enabled(a Algo, p Proto) bool {
	if p == LL128 && !c.LL128Enabled {
		return false
	}
	if len(c.Protocols) > 0 && !contains(c.Protocols, p) {
		return false
	}
	if len(c.Algos) > 0 && !contains(c.Algos, a) {
		return false
	}
	return true
}

func contains[T comparable](s []T, v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
