package ncclmodel

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pcie8 is an 8-GPU single-node PCIe Gen5 box (48 GB/s per GPU, no NVLink)
// with Blackwell (sm120) GPUs; GraphFor(48, 120, false) gives 2 ring
// channels at 24 GB/s (see TestGraphForPCIeGen5Blackwell).
func pcie8() Config {
	return Config{
		NRanks: 8, SM: 120,
		RingChannels: 2, TreeChannels: 2,
		RingBwIntra: 24, TreeBwIntra: 24,
	}
}

func tune(t *testing.T, c Config) *Model {
	t.Helper()
	m, err := Tune(c)
	require.NoError(t, err)
	return m
}

func TestStrings(t *testing.T) {
	// The lower-case names are the CLI's vocabulary; the brief fixes them.
	assert.Equal(t, "tree", Tree.String())
	assert.Equal(t, "ring", Ring.String())
	assert.Equal(t, "ll", LL.String())
	assert.Equal(t, "ll128", LL128.String())
	assert.Equal(t, "simple", Simple.String())
	assert.Equal(t, "pci", PCI.String())
}

func TestCompCapOf(t *testing.T) {
	// tuning.cc: minCompCap >= 100 Blackwell, >= 90 Hopper, >= 80 Ampere,
	// else Volta; sm120 (RTX PRO 6000) is in the Blackwell row.
	assert.Equal(t, Volta, CompCapOf(70))
	assert.Equal(t, Ampere, CompCapOf(80))
	assert.Equal(t, Ampere, CompCapOf(89))
	assert.Equal(t, Hopper, CompCapOf(90))
	assert.Equal(t, Blackwell, CompCapOf(100))
	assert.Equal(t, Blackwell, CompCapOf(120))
}

func TestRingLLLatencyPCI8Ranks(t *testing.T) {
	// The worked example of NCCL's tuning model: baseLat Ring/LL 6.6 + nsteps 2(8−1) = 14
	// steps × PCI hwLat Ring/LL 1.0 = 20.6 µs.
	m := tune(t, pcie8())
	assert.InDelta(t, 20.6, m.Latency(Ring, LL), 1e-9)
	// Same composition for LL128 (14 + 14×2.5) and Simple (8.4 + 14×5.7).
	assert.InDelta(t, 49.0, m.Latency(Ring, LL128), 1e-9)
	assert.InDelta(t, 88.2, m.Latency(Ring, Simple), 1e-9)
}

func TestTreeLatencySingleNode(t *testing.T) {
	// Tree AllReduce: base + 2·((nRanks/nNodes − 1)·intraLat + log2(1)·interLat)
	// = base + 2×(7×hwLat) on one node with 8 ranks.
	m := tune(t, pcie8())
	assert.InDelta(t, 6.8+2*(7*1.0), m.Latency(Tree, LL), 1e-9)     // 20.8
	assert.InDelta(t, 14.0+2*(7*1.9), m.Latency(Tree, LL128), 1e-9) // 40.6
	assert.InDelta(t, 8.4+2*(7*4.0), m.Latency(Tree, Simple), 1e-9) // 64.4

	// With typeIntra NVL the NVLINK row is used: 6.8 + 2×7×0.6 = 15.2.
	c := pcie8()
	c.IntraNVLink = true
	m = tune(t, c)
	assert.InDelta(t, 15.2, m.Latency(Tree, LL), 1e-9)
}

func TestAlgBwConversion(t *testing.T) {
	m := tune(t, pcie8())
	// Ring Simple: busBw = 2 ch × 24 = 48 GB/s, algBw = 48 × n/(2(n−1)) =
	// 48 × 8/14 = 27.428… GB/s (inverse of nccl-tests' busbw factor).
	assert.InDelta(t, 48.0*8/14, m.Bandwidth(Ring, Simple), 1e-9)
	// Ring LL: min(llMaxBw Blackwell-N1 282, 48×0.5) = 24, × 8/14.
	assert.InDelta(t, 24.0*8/14, m.Bandwidth(Ring, LL), 1e-9)
	// Tree Simple: min(48×0.92, 2×perChMaxTreeBw 70) = 44.16, × 0.5 = 22.08.
	assert.InDelta(t, 22.08, m.Bandwidth(Tree, Simple), 1e-9)
	// Tree LL: 44.16/3.8 (under llMaxBw), × 0.5.
	assert.InDelta(t, 44.16/3.8*0.5, m.Bandwidth(Tree, LL), 1e-9)

	// Hopper NVLink, 12 channels × 60 GB/s tree: 720×0.92 = 662.4 exceeds
	// 12 × perChMaxTreeBw(Hopper N1) 38.7 = 464.4, so the cap binds: 232.2.
	c := Config{NRanks: 2, SM: 90, IntraNVLink: true, RingChannels: 12, TreeChannels: 12,
		RingBwIntra: 30, TreeBwIntra: 60}
	m = tune(t, c)
	assert.InDelta(t, 464.4*0.5, m.Bandwidth(Tree, Simple), 1e-9)
	// Pure TREE pattern multiplies tree busBw by 0.85.
	c.TreePattern = PureTree
	m = tune(t, c)
	assert.InDelta(t, 464.4*0.85*0.5, m.Bandwidth(Tree, Simple), 1e-9)
}

func TestTreeCorrectionFactor(t *testing.T) {
	m := tune(t, pcie8())
	// 64 KiB: log2(65536>>6) = log2(1024) = 10, treeCorrectionFactor
	// Simple[10] = 0.6, so the effective tree bandwidth is 0.6×.
	const kib64 = 64 << 10
	us, ok := m.Time(Tree, Simple, kib64)
	require.True(t, ok)
	assert.InDelta(t, 64.4+float64(kib64)/(1000*22.08*0.6), us, 1e-9)
	// LL at the same size: factor LL[10] = 0.6 too.
	us, ok = m.Time(Tree, LL, kib64)
	require.True(t, ok)
	assert.InDelta(t, 20.8+float64(kib64)/(1000*m.Bandwidth(Tree, LL)*0.6), us, 1e-9)
	// 256 MiB: index 22 is still corrected (Simple[22] = 0.9).
	const mib256 = 256 << 20
	us, _ = m.Time(Tree, Simple, mib256)
	assert.InDelta(t, 64.4+float64(mib256)/(1000*22.08*0.9), us, 1e-6)
	// 2^23·64 B = 512 MiB: index 23 is past "logSize < 23", no correction.
	const big = int64(1<<23) * 64
	us, _ = m.Time(Tree, Simple, big)
	assert.InDelta(t, 64.4+float64(big)/(1000*22.08), us, 1e-6)
	// Below 64 B, log2i(0) = −1: no correction either.
	us, _ = m.Time(Tree, Simple, 32)
	assert.InDelta(t, 64.4+32/(1000*22.08), us, 1e-9)
	// Rings are never corrected.
	us, _ = m.Time(Ring, Simple, kib64)
	assert.InDelta(t, 88.2+float64(kib64)/(1000*48.0*8/14), us, 1e-9)
}

func TestRingPlateauOnlyMultiNode(t *testing.T) {
	// ncclTopoGetAlgoTime multiplies Ring/Simple latency by 1.4 (sm ≥ 80)
	// only when nNodes > 1 and bytes/(nChannels·nRanks) ≥ 64.
	c := Config{NRanks: 16, NNodes: 2, SM: 90, RingChannels: 2, TreeChannels: 2,
		RingBwIntra: 12, TreeBwIntra: 12}
	m := tune(t, c)
	bw := m.Bandwidth(Ring, Simple)
	lat := m.Latency(Ring, Simple)
	small := int64(m.Channels()*16*64 - 1)
	us, _ := m.Time(Ring, Simple, small)
	assert.InDelta(t, lat+float64(small)/(1000*bw), us, 1e-9)
	large := int64(1 << 20)
	us, _ = m.Time(Ring, Simple, large)
	assert.InDelta(t, 1.4*lat+float64(large)/(1000*bw), us, 1e-9)
	// Single node: never.
	m = tune(t, pcie8())
	us, _ = m.Time(Ring, Simple, large)
	assert.InDelta(t, 88.2+float64(large)/(1000*48.0*8/14), us, 1e-9)
}

func TestMultiNodeLatency(t *testing.T) {
	// 2 nodes × 8 GPUs, PCI intra, Intel CPU: ring AllReduce has
	// nsteps 30, nInterSteps 2(2−1) = 2; Simple intraLat = max(5.7, 1.0×3)
	// = 5.7 and interLat = NET Ring Simple 14.0 (ppn 8 ≠ 1):
	// 8.4 + 28×5.7 + 2×14 = 196.0 µs. Tree: 8.4 + 2×(7×4.0 + 1×14) = 92.4.
	c := Config{NRanks: 16, NNodes: 2, SM: 90, CPU: CPUIntel, RingChannels: 2, TreeChannels: 2,
		RingBwIntra: 12, TreeBwIntra: 12}
	m := tune(t, c)
	assert.InDelta(t, 196.0, m.Latency(Ring, Simple), 1e-9)
	assert.InDelta(t, 92.4, m.Latency(Tree, Simple), 1e-9)
	// Ring LL on 2 nodes uses llMaxBws[Intel row 0][N2] = 39: 2×12×0.5 = 12
	// stays under it; algBw = 12 × 16/30.
	assert.InDelta(t, 12.0*16/30, m.Bandwidth(Ring, LL), 1e-9)
}

func TestLL128Enablement(t *testing.T) {
	// tuning.cc: LL128 auto-enables only for typeIntra ≤ NVB (NVLink), so
	// never on a PCIe-only box; sm90 NVLink gets it.
	assert.False(t, LL128DefaultEnabled(false, 120))
	assert.False(t, LL128DefaultEnabled(false, 90))
	assert.True(t, LL128DefaultEnabled(true, 90))
	assert.True(t, LL128DefaultEnabled(true, 80))
	assert.False(t, LL128DefaultEnabled(true, 60)) // minCompCap < 70

	// Disabled LL128 has bandwidth 0 and no time, but keeps its latency as
	// NCCL's table does.
	m := tune(t, pcie8())
	assert.Zero(t, m.Bandwidth(Ring, LL128))
	_, ok := m.Time(Ring, LL128, 1<<20)
	assert.False(t, ok)
	assert.InDelta(t, 49.0, m.Latency(Ring, LL128), 1e-9)

	// Forcing it (NCCL_PROTO naming LL128) gives Ring LL128:
	// min(48×0.92, 2×perChMaxRingLL128Bw 40) × 8/14.
	c := pcie8()
	c.LL128Enabled = true
	m = tune(t, c)
	assert.InDelta(t, 48*0.92*8/14, m.Bandwidth(Ring, LL128), 1e-9)
	// Tree LL128 on one node: min(44.16×7/9, 2×55.6) × 0.5.
	assert.InDelta(t, 44.16*7/9*0.5, m.Bandwidth(Tree, LL128), 1e-9)
}

func TestAllowLists(t *testing.T) {
	c := pcie8()
	c.Algos = []Algo{Ring}
	c.Protocols = []Proto{Simple}
	m := tune(t, c)
	for _, a := range algoList {
		for _, p := range protoList {
			if a == Ring && p == Simple {
				assert.Positive(t, m.Bandwidth(a, p))
			} else {
				assert.Zero(t, m.Bandwidth(a, p), "%v/%v", a, p)
			}
		}
	}
	// Only Ring/Simple is left, so even 1 KiB picks it (NCCL_ALGO=ring
	// NCCL_PROTO=Simple): 4 channels trimmed to 1 (1024 < nc·512·64), 512
	// threads halved 256 → 128 → 64 (64 % 128 ≠ 0 stops), + 1 sync warp.
	ch := m.Choose(1024)
	assert.Equal(t, Ring, ch.Algo)
	assert.Equal(t, Simple, ch.Proto)
	assert.Equal(t, 1, ch.Channels)
	assert.Equal(t, 64+32, ch.Threads)
}

func TestChooseSmallAndLarge(t *testing.T) {
	m := tune(t, pcie8())
	require.Equal(t, 4, m.Channels()) // 2 graph channels doubled by connect.cc
	require.EqualValues(t, 64, m.ThreadThreshold(Ring, LL))

	// 1 KiB: Ring LL wins (20.6 µs latency beats Tree LL's 20.8 and every
	// Simple). Channel trimming: 1024 < nc·512·64 for every nc, so 4 → 1;
	// thread halving 512 → 256 → 128 → 64 (64 % 128 ≠ 0 stops), then the
	// 3-warp minimum gives 96.
	ch := m.Choose(1 << 10)
	assert.Equal(t, Ring, ch.Algo)
	assert.Equal(t, LL, ch.Proto)
	assert.Equal(t, 1, ch.Channels)
	assert.Equal(t, 96, ch.Threads)
	assert.InDelta(t, 20.6+1024/(1000*24.0*8/14), ch.Us, 1e-9)
	require.Len(t, ch.Table, 6)
	assert.Equal(t, Entry{Algo: Tree, Proto: LL128, LatencyUs: ch.Table[1].LatencyUs, Us: -1}, ch.Table[1])
	assert.Equal(t, Ring, ch.Table[5].Algo)
	assert.Equal(t, Simple, ch.Table[5].Proto)

	// 16 KiB: nc stops at 1 (16384 < 2·512·64), nt halves once to 256
	// (16384 < 1·512·64, not < 1·256·64).
	ch = m.Choose(16 << 10)
	assert.Equal(t, LL, ch.Proto)
	assert.Equal(t, 1, ch.Channels)
	assert.Equal(t, 256, ch.Threads)

	// 1 GiB: bandwidth dominates; Ring Simple (27.4 GB/s) beats Tree Simple
	// (22.08 × 0.9 at most) and LL (13.7). All 4 channels, 512 + 32 sync.
	ch = m.Choose(1 << 30)
	assert.Equal(t, Ring, ch.Algo)
	assert.Equal(t, Simple, ch.Proto)
	assert.Equal(t, 4, ch.Channels)
	assert.Equal(t, 544, ch.Threads)
}

func TestChooseTreeThreadsAndTies(t *testing.T) {
	// Tree always runs NCCL_MAX_NTHREADS = 640 threads.
	c := pcie8()
	c.Algos = []Algo{Tree}
	m := tune(t, c)
	ch := m.Choose(1 << 30)
	assert.Equal(t, Tree, ch.Algo)
	assert.Equal(t, 640, ch.Threads)

	// Tie: identical tree and ring times keep the first in index order
	// (Tree), because NCCL's scan uses a strict <.
	m = tune(t, pcie8())
	m.lat[Ring] = m.lat[Tree]
	m.bw[Ring] = m.bw[Tree]
	m.bw[Tree][LL], m.bw[Ring][LL] = 0, 0
	ch = m.Choose(1 << 40) // past the correction table: identical times
	assert.Equal(t, Tree, ch.Algo)
}

func TestRingSimpleThreadsOnSlowGraph(t *testing.T) {
	// tuning.cc: Ring/Simple max threads are 256 when ring bwIntra·nChannels
	// ≤ PCI_BW (12 GB/s), e.g. the 0.1 GB/s fallback graph.
	c := pcie8()
	c.RingChannels, c.RingBwIntra = 1, 0.1
	m := tune(t, c)
	assert.Equal(t, 256, m.MaxThreads(Ring, Simple))
	assert.Equal(t, 512, m.MaxThreads(Tree, Simple))
}

func TestChannelsUseMinOfGraphs(t *testing.T) {
	// init.cc sets both graphs to min(tree, ring) channels before tuning.
	c := pcie8()
	c.RingChannels = 4
	m := tune(t, c)
	assert.Equal(t, 2, m.GraphChannels())
	assert.Equal(t, 4, m.Channels())
	assert.InDelta(t, 48.0*8/14, m.Bandwidth(Ring, Simple), 1e-9)
}

// NCCL_MAX_NCHANNELS caps the channels a call runs on, not the graph the
// tuning model sees (init.cc searches up to MAXCHANNELS/2 ring channels
// whatever it says; connect.cc caps comm->nChannels): the bandwidths and
// so the pick stay the uncapped ones. On two H200s NCCL 2.28.9 capped at
// one or two channels ran ring/LL at 512 KiB, as uncapped, where a model
// tuned on the capped graph picks Simple (testdata/h200x2-arsim
// nccl_channels.jsonl).
func TestMaxChannelsCapsTheRunNotTheTuning(t *testing.T) {
	c := pcie8()
	uncapped := tune(t, c)
	c.MaxChannels = 1
	capped := tune(t, c)
	assert.Equal(t, uncapped.GraphChannels(), capped.GraphChannels())
	assert.Equal(t, 1, capped.Channels())
	for _, a := range algoList {
		for _, p := range protoList {
			assert.Equal(t, uncapped.Bandwidth(a, p), capped.Bandwidth(a, p), "%v/%v", a, p)
		}
	}
	for _, b := range []int64{1 << 10, 512 << 10, 1 << 30} {
		u, k := uncapped.Choose(b), capped.Choose(b)
		assert.Equal(t, u.Algo, k.Algo, "%d B", b)
		assert.Equal(t, u.Proto, k.Proto, "%d B", b)
		assert.Equal(t, 1, k.Channels, "%d B", b)
	}
}

func TestValidate(t *testing.T) {
	ok := pcie8()
	require.NoError(t, ok.Validate())
	cases := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"one rank", func(c *Config) { c.NRanks = 1 }, "ncclmodel: NRanks must be ≥ 2, got 1"},
		{"nodes", func(c *Config) { c.NNodes = 3 }, "ncclmodel: NRanks (8) must be a multiple of NNodes (3)"},
		{"negative nodes", func(c *Config) { c.NNodes = -1 }, "ncclmodel: NNodes must be ≥ 1, got -1"},
		{"sm", func(c *Config) { c.SM = 0 }, "ncclmodel: SM must be ≥ 60 (e.g. 90 for sm_90), got 0"},
		{"ring channels", func(c *Config) { c.RingChannels = 0 }, "ncclmodel: RingChannels must be in 1..32 (half of NCCL 2.30.7's MAXCHANNELS), got 0"},
		{"tree channels", func(c *Config) { c.TreeChannels = 33 }, "ncclmodel: TreeChannels must be in 1..32 (half of NCCL 2.30.7's MAXCHANNELS), got 33"},
		{"tree channels of 2.24", func(c *Config) { c.Release = Release{Minor: 24, Patch: 3}; c.TreeChannels = 17 },
			"ncclmodel: TreeChannels must be in 1..16 (half of NCCL 2.24.3's MAXCHANNELS), got 17"},
		{"release", func(c *Config) { c.Release = Release{Minor: 17} }, "ncclmodel: Release 2.17.0: the model knows NCCL 2.18 to 2.30"},
		{"bw", func(c *Config) { c.TreeBwIntra = -1 }, "ncclmodel: TreeBwIntra must be a finite bandwidth > 0 GB/s, got -1"},
		{"proto", func(c *Config) { c.Protocols = []Proto{7} }, "ncclmodel: unknown protocol 7 in Protocols"},
		{"nothing enabled", func(c *Config) { c.Protocols = []Proto{LL128} },
			"ncclmodel: no (algorithm, protocol) pair is enabled by Algos, Protocols and LL128Enabled"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := pcie8()
			tc.mod(&c)
			require.EqualError(t, c.Validate(), tc.want)
			_, err := Tune(c)
			require.EqualError(t, err, tc.want)
		})
	}
}

func TestFormatLayout(t *testing.T) {
	// Column widths are NCCL's: "%13s |" then "%8.1f/%6.1f |" per cell.
	var b bytes.Buffer
	require.NoError(t, tune(t, pcie8()).Format(&b))
	assert.Contains(t, b.String(),
		"    AllReduce |    20.8/   5.8 |    40.6/   0.0 |    64.4/  22.1 |    20.6/  13.7 |    49.0/   0.0 |    88.2/  27.4 |\n")
	assert.Contains(t, b.String(), "threadThresholds 8/8/64 | 64/8/64 | 512 | 512\n")
}

// NCCL_NTHREADS sets the block size of Simple (ring and tree) and LL, not
// LL128 (tuning.cc getNthreads), as NCCL 2.28.9's TUNING table shows with
// NCCL_NTHREADS=128 on two H200s (testdata/h200x2-arsim/nccl_simple_threads.jsonl):
// Max NThreads 128 | 640 | 128 for Tree and Ring. With fewer threads the
// halving rule keeps more channels: 32 KiB runs on 4 channels of 128 (+32)
// threads, as NCCL logged ({0..3}), instead of 1 channel of 512 (+32).
func TestNThreads(t *testing.T) {
	c := Config{NRanks: 2, SM: 90, IntraNVLink: true, RingChannels: 12, TreeChannels: 12,
		RingBwIntra: 30, TreeBwIntra: 30, LL128Enabled: true, Protocols: []Proto{Simple}, Algos: []Algo{Ring}}
	def, err := Tune(c)
	require.NoError(t, err)
	c.NThreads = 128
	m, err := Tune(c)
	require.NoError(t, err)
	for _, a := range []Algo{Tree, Ring} {
		assert.Equal(t, 128, m.MaxThreads(a, Simple))
		assert.Equal(t, 128, m.MaxThreads(a, LL))
		assert.Equal(t, 640, m.MaxThreads(a, LL128))
	}
	d, got := def.Choose(32768), m.Choose(32768)
	assert.Equal(t, [2]int{1, 544}, [2]int{d.Channels, d.Threads})
	assert.Equal(t, [2]int{4, 160}, [2]int{got.Channels, got.Threads})
	for _, bad := range []int{32, 100, 544, -64} {
		c.NThreads = bad
		_, err := Tune(c)
		assert.ErrorContains(t, err, "NCCL_NTHREADS", "%d", bad)
	}
}
