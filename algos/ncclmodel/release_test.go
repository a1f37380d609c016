package ncclmodel

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func rel(t *testing.T, s string) Release {
	t.Helper()
	r, err := ParseRelease(s)
	require.NoError(t, err)
	return r
}

func TestParseRelease(t *testing.T) {
	for in, want := range map[string]Release{
		"2.21.5": {21, 5}, "2.21": {21, 0}, "v2.28.9-1": {28, 9}, "22907": {29, 7}, " 2.30.7 ": {30, 7},
	} {
		r, err := ParseRelease(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, r, in)
	}
	assert.Equal(t, "2.21.5", Release{21, 5}.String())
	assert.Equal(t, "2.21", Release{21, 0}.String())
	assert.Equal(t, Version, Release{}.String(), "the zero value is the release the model follows")
	for in, why := range map[string]string{
		"2.17.3": "knows releases 2.18 to 2.30", "2.31": "knows releases 2.18 to 2.30", "3.0.1": "NCCL 2.x only",
		"2.x": "minor release is not a number", "2.21.y": "patch release is not a number", "latest": "not a version",
		"1234": "not a version", "": "not a version",
	} {
		_, err := ParseRelease(in)
		assert.ErrorContains(t, err, why, in)
	}
}

// NCCL's Tree/Simple latency on 8 GPUs over NVLink, the worked example of
// tuning.cc's tables: baseLat + 2·7·hwLat is 0 + 14·4 = 56 µs in 2.18,
// 0 + 14·28 = 392 µs in 2.19–2.22, 8.4 + 14·4 = 64.4 µs from 2.23; Ring
// Simple is 8.4 + 14·3.4 = 56 µs in all of them.
func TestTreeSimpleLatencyByRelease(t *testing.T) {
	c := Config{NRanks: 8, SM: 90, IntraNVLink: true, RingChannels: 16, TreeChannels: 16, RingBwIntra: 20, TreeBwIntra: 20}
	for r, want := range map[string]float64{"2.18.3": 56, "2.19.4": 392, "2.22.3": 392, "2.23.4": 64.4, "2.30.7": 64.4} {
		c.Release = rel(t, r)
		m := tune(t, c)
		assert.InDelta(t, want, m.Latency(Tree, Simple), 1e-9, r)
		assert.InDelta(t, 56, m.Latency(Ring, Simple), 1e-9, r)
	}
	c.IntraNVLink = false // PCI row: 6 µs a step in 2.18
	c.Release = rel(t, "2.18")
	assert.InDelta(t, 84, tune(t, c).Latency(Tree, Simple), 1e-9)
}

// Ring/LL's bus bandwidth: a quarter up to 2.20, a half from 2.21; Hopper's
// LL ceiling 87.7 GB/s up to 2.20, 141 from 2.21.
func TestRingLLBandwidthByRelease(t *testing.T) {
	pci := pcie8() // 2 × 24 GB/s, Blackwell
	pci.SM = 89
	n := 8.0
	toAlg := n / (2 * (n - 1))
	for r, share := range map[string]float64{"2.20.5": .25, "2.21.5": .5, "2.30.7": .5} {
		pci.Release = rel(t, r)
		assert.InDelta(t, 48*share*toAlg, tune(t, pci).Bandwidth(Ring, LL), 1e-9, r)
	}
	nvl := Config{NRanks: 8, SM: 90, IntraNVLink: true, RingChannels: 16, TreeChannels: 16, RingBwIntra: 40, TreeBwIntra: 40}
	nvl.Release = rel(t, "2.20.5") // 640 × .25 = 160 > 87.7
	assert.InDelta(t, 87.7*toAlg, tune(t, nvl).Bandwidth(Ring, LL), 1e-9)
	nvl.Release = rel(t, "2.21.5") // 640 × .5 = 320 > 141
	assert.InDelta(t, 141*toAlg, tune(t, nvl).Bandwidth(Ring, LL), 1e-9)
}

// Blackwell has a row of its own from 2.25 (sm ≥ 100 is Hopper before),
// Hopper's doubled until its tree rows are cut in 2.28 and its ring LL128
// row in 2.29.
func TestBlackwellCapsByRelease(t *testing.T) {
	assert.Equal(t, Hopper, rel(t, "2.24.3").CompCap(120))
	assert.Equal(t, Blackwell, rel(t, "2.25.1").CompCap(100))
	assert.Equal(t, Ampere, rel(t, "2.18.3").CompCap(89))
	for r, want := range map[string]bwCaps{
		"2.24.3": {llMax: 141, perChTree: 38.7, perChRingLL128: 36.7, perChTreeLL128: 36.7},
		"2.25.1": {llMax: 282, perChTree: 77.4, perChRingLL128: 73.4, perChTreeLL128: 73.4},
		"2.28.9": {llMax: 282, perChTree: 70.0, perChRingLL128: 73.4, perChTreeLL128: 55.6},
		"2.29.7": {llMax: 282, perChTree: 70.0, perChRingLL128: 40.0, perChTreeLL128: 55.6},
	} {
		x := rel(t, r)
		cc := x.CompCap(120)
		assert.Equal(t, want, x.caps(int(cc), cc, 0), r)
	}
}

// LL128 by default needs NVLink in every release, and the architecture
// the release lists.
func TestLL128DefaultByRelease(t *testing.T) {
	for _, c := range []struct {
		r    string
		sm   int
		nvl  bool
		want bool
	}{
		{"2.24.3", 90, true, true}, {"2.24.3", 100, true, false}, {"2.25.1", 100, true, true},
		{"2.26.2", 86, true, false}, {"2.27.7", 86, true, true}, {"2.30.7", 120, false, false},
		{"2.18.3", 80, true, true}, {"2.18.3", 89, true, false}, {"2.30.7", 60, true, false},
	} {
		assert.Equal(t, c.want, rel(t, c.r).LL128DefaultEnabled(c.nvl, c.sm), "%+v", c)
	}
}

// Tree runs 640 threads whatever the size from 2.22; before, what the
// size-based halving leaves.
func TestTreeThreadsByRelease(t *testing.T) {
	c := Config{NRanks: 2, SM: 90, IntraNVLink: true, RingChannels: 1, TreeChannels: 1, RingBwIntra: 20, TreeBwIntra: 20,
		Algos: []Algo{Tree}, Protocols: []Proto{LL}}
	c.Release = rel(t, "2.21.5")
	ch := tune(t, c).Choose(1024) // 1 KiB < 2 ch × 512 × 8: one channel, then 512 → 128 threads
	assert.Equal(t, 128, ch.Threads)
	c.Release = rel(t, "2.22.3")
	assert.Equal(t, 640, tune(t, c).Choose(1024).Threads)
}

// MAXCHANNELS is 32 up to 2.24: rings of at most 16 channels, 32 at run
// time; 64 and 32 from 2.25.
func TestMaxChannelsByRelease(t *testing.T) {
	old, now := rel(t, "2.24.3"), rel(t, "2.25.1")
	assert.Equal(t, 16, old.SearchRing(18*26.562, 90, true).Channels)
	assert.Greater(t, now.SearchRing(18*26.562, 90, true).Channels, 16)
	c := Config{NRanks: 8, SM: 90, IntraNVLink: true, RingChannels: 16, TreeChannels: 16, RingBwIntra: 20, TreeBwIntra: 20}
	c.Release = old
	assert.Equal(t, 32, tune(t, c).Channels())
	c.Release, c.RingChannels, c.TreeChannels = now, 32, 32
	assert.Equal(t, 64, tune(t, c).Channels())
}

// The search's speed arrays by release: sm90 finds 50 GB/s a channel from
// 2.19 (40 before), sm100 searches sm90's array before 2.25 and its own
// (with 45 from 2.29) after.
func TestSpeedArraysByRelease(t *testing.T) {
	total := func(r string, path float64, sm int) float64 {
		g := rel(t, r).SearchRing(path, sm, true)
		return float64(g.Channels) * g.BwIntra
	}
	assert.InDelta(t, 48, total("2.18.3", 50, 90), 1e-9, "2.18: 2 × 24")
	assert.InDelta(t, 50, total("2.19.4", 50, 90), 1e-9, "2.19: 1 × 50, duplicated")
	assert.InDelta(t, 60, total("2.24.3", 70, 100), 1e-9, "sm90's array: 1 × 60")
	assert.InDelta(t, 70, total("2.25.1", 70, 100), 1e-9, "sm100's: 1 × 70")
	assert.InDelta(t, 40, total("2.28.9", 45, 100), 1e-9)
	assert.InDelta(t, 45, total("2.29.7", 45, 100), 1e-9)
}

// The machine-side rules of a release: NVLink per link, the default P2P
// level, the CPUs' socket figures, Simple's unroll, Tree/Simple's halving.
func TestPlatformRulesByRelease(t *testing.T) {
	assert.Equal(t, 20.0, rel(t, "2.19.4").NVLinkBw(90))
	assert.Equal(t, 20.6, rel(t, "2.20.5").NVLinkBw(90))
	assert.Equal(t, 20.6, rel(t, "2.24.3").NVLinkBw(100))
	assert.Equal(t, 40.0, rel(t, "2.25.1").NVLinkBw(100))
	assert.Equal(t, 40.1, rel(t, "2.27.7").NVLinkBw(100))
	assert.Equal(t, 12.0, rel(t, "2.30.7").NVLinkBw(86))

	assert.Equal(t, "sys", rel(t, "2.22.3").DefaultP2PLevel(CPUAMD, 8))
	assert.Equal(t, "pxb", rel(t, "2.23.4").DefaultP2PLevel(CPUAMD, 8))
	assert.Equal(t, "sys", rel(t, "2.23.4").DefaultP2PLevel(CPUAMD, 2))
	assert.Equal(t, "pxb", rel(t, "2.18.3").DefaultP2PLevel(CPUIntel, 2))

	assert.Equal(t, 5000.0, rel(t, "2.18.3").AMDSocketBw())
	assert.Equal(t, 16.0, rel(t, "2.19.4").AMDSocketBw())
	assert.Equal(t, 10.0, rel(t, "2.25.1").IntelSocketBw(true))
	assert.Equal(t, 22.0, rel(t, "2.26.2").IntelSocketBw(true))
	assert.Equal(t, 10.0, rel(t, "2.30.7").IntelSocketBw(false))

	for _, c := range []struct {
		r        string
		sm, want int
	}{{"2.25.1", 120, 8}, {"2.26.2", 120, 6}, {"2.26.2", 121, 8}, {"2.27.7", 121, 6}, {"2.30.7", 90, 8}, {"2.30.7", 75, 4}} {
		assert.Equal(t, c.want, rel(t, c.r).SimpleUnroll(c.sm), "%+v", c)
	}
	assert.True(t, rel(t, "2.19.4").TreeSimpleHalves())
	assert.False(t, rel(t, "2.20.5").TreeSimpleHalves())
}

// The package's release-free functions are Version's.
func TestDefaultReleaseIsVersion(t *testing.T) {
	assert.Equal(t, Version, defaultRelease.String())
	assert.Equal(t, Blackwell, CompCapOf(120))
	assert.Equal(t, defaultRelease.SearchRing(48, 120, false), SearchRing(48, 120, false))
	m0, m1 := tune(t, pcie8()), tune(t, func() Config { c := pcie8(); c.Release = defaultRelease; return c }())
	assert.Equal(t, m0.Choose(43008), m1.Choose(43008))
}

// ParseRelease takes any string without panicking; what it accepts is a
// release the model knows, and its String reads back as itself.
func FuzzParseRelease(f *testing.F) {
	for _, s := range []string{"2.21.5", "2.21", "v2.28.9-1", "22907", "2.17", "3.0", "", "2..", "v", "2.30.-1", "29999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRelease(s)
		if err != nil {
			assert.Equal(t, Release{}, r)
			return
		}
		assert.True(t, r.valid(), "%q → %+v", s, r)
		assert.GreaterOrEqual(t, r.Minor, OldestMinor)
		assert.LessOrEqual(t, r.Minor, NewestMinor)
		back, err := ParseRelease(r.String())
		require.NoError(t, err, "%q → %q", s, r.String())
		assert.Equal(t, r, back)
	})
}
