package ncclmodel

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The h200x2 traces (testdata/h200x2/system/) are NCCL 2.28.9 on
// 2 × H200 (sm90) joined by NVSwitch (18 NVLinks × 20.6 = 370.8 GB/s) and
// PCIe Gen5 (48 GB/s) to an Intel CPU (familyid 6, modelid 207). The logs
// carry GRAPH and INIT lines but no TUNING table, so the graph inputs and
// the channel/threshold numbers are pinned from the log, and the tuning
// table is derived from tuning.cc's formulas.

// h200NVL is nccl_default_rank0.log:
//
//	Pattern 4, crossNic 0, nChannels 12, bw 30.000000/30.000000, type NVL/PIX, sameChannels 1
//	Pattern 1, crossNic 0, nChannels 12, bw 60.000000/60.000000, type NVL/PIX, sameChannels 0
func h200NVL() Config {
	return Config{
		NRanks: 2, SM: 90, IntraNVLink: true,
		RingChannels: 12, RingBwIntra: 30,
		TreeChannels: 12, TreeBwIntra: 60, TreePattern: BalancedTree,
		LL128Enabled: LL128DefaultEnabled(true, 90),
	}
}

// h200SHM is nccl_shm_default_rank0.log (NCCL_P2P_DISABLE=1):
//
//	Pattern 4, crossNic 0, nChannels 2, bw 20.000000/20.000000, type PHB/PIX, sameChannels 1
//	Pattern 1, crossNic 0, nChannels 2, bw 40.000000/40.000000, type PHB/PIX, sameChannels 0
func h200SHM() Config {
	return Config{
		NRanks: 2, SM: 90, IntraNVLink: false, // PHB → PCI row
		RingChannels: 2, RingBwIntra: 20,
		TreeChannels: 2, TreeBwIntra: 40,
		LL128Enabled: LL128DefaultEnabled(false, 90),
	}
}

func TestH200x2LogChannelsAndThresholds(t *testing.T) {
	m := tune(t, h200NVL())
	// "24 coll channels, 24 collnet channels, ..." and "Channel 00/24":
	// 12 graph channels doubled by connect.cc.
	assert.Equal(t, 24, m.Channels())
	// "threadThresholds 8/8/64 | 16/8/64 | 512 | 512": Ring LL is 8 × nRanks.
	var b bytes.Buffer
	require.NoError(t, m.Format(&b))
	assert.Contains(t, b.String(), "threadThresholds 8/8/64 | 16/8/64 | 512 | 512\n")
	assert.Contains(t, b.String(), "24 coll channels\n")

	s := tune(t, h200SHM())
	// "4 coll channels, 4 collnet channels, ...": 2 graph channels doubled.
	assert.Equal(t, 4, s.Channels())
	b.Reset()
	require.NoError(t, s.Format(&b))
	assert.Contains(t, b.String(), "threadThresholds 8/8/64 | 16/8/64 | 512 | 512\n")
}

func TestH200x2LogTuningTable(t *testing.T) {
	// [DERIVED] from the log's graphs with tuning.cc (no TUNING table was
	// logged): NVLINK row, nsteps 2, Hopper-N1 caps.
	m := tune(t, h200NVL())
	// Ring Simple: 8.4 + 2×3.4 = 15.2 µs; 12×30 = 360 × 2/2 = 360 GB/s.
	assert.InDelta(t, 15.2, m.Latency(Ring, Simple), 1e-9)
	assert.InDelta(t, 360.0, m.Bandwidth(Ring, Simple), 1e-9)
	// Ring LL: 6.6 + 2×0.6 = 7.8 µs; min(llMaxBw 141, 180) = 141.
	assert.InDelta(t, 7.8, m.Latency(Ring, LL), 1e-9)
	assert.InDelta(t, 141.0, m.Bandwidth(Ring, LL), 1e-9)
	// Ring LL128 (on: NVL, sm90): 14 + 2×1.9 = 17.8; min(331.2, 12×36.7).
	assert.InDelta(t, 17.8, m.Latency(Ring, LL128), 1e-9)
	assert.InDelta(t, 331.2, m.Bandwidth(Ring, LL128), 1e-9)
	// Tree: 12×60 = 720 → min(662.4, 12×38.7 = 464.4) = 464.4.
	// Simple 8.4 + 2×4.0 = 16.4 µs, 232.2 GB/s; LL 8.0 µs, 464.4/3.8/2;
	// LL128 14 + 2×1.25 = 16.5 µs, min(464.4×7/9, 440.4)/2.
	assert.InDelta(t, 16.4, m.Latency(Tree, Simple), 1e-9)
	assert.InDelta(t, 232.2, m.Bandwidth(Tree, Simple), 1e-9)
	assert.InDelta(t, 8.0, m.Latency(Tree, LL), 1e-9)
	assert.InDelta(t, 464.4/3.8/2, m.Bandwidth(Tree, LL), 1e-9)
	assert.InDelta(t, 16.5, m.Latency(Tree, LL128), 1e-9)
	assert.InDelta(t, 464.4*7/9/2, m.Bandwidth(Tree, LL128), 1e-9)

	s := tune(t, h200SHM())
	// PHB typeIntra → PCI row and no LL128: Ring Simple 8.4 + 2×5.7 = 19.8
	// µs at 2×20 = 40 GB/s; Tree Simple 8.4 + 2×4.0 = 16.4 µs at
	// min(80×0.92, 2×38.7)/2 = 36.8 GB/s.
	assert.InDelta(t, 19.8, s.Latency(Ring, Simple), 1e-9)
	assert.InDelta(t, 40.0, s.Bandwidth(Ring, Simple), 1e-9)
	assert.InDelta(t, 36.8, s.Bandwidth(Tree, Simple), 1e-9)
	assert.Zero(t, s.Bandwidth(Ring, LL128))
	assert.Zero(t, s.Bandwidth(Tree, LL128))
}

func TestGraphForH200x2Logs(t *testing.T) {
	// nccl_default_rank0.log "Pattern 4, ..., nChannels 12, bw 30/30, type
	// NVL/PIX": NVSwitch path 370.8 GB/s; sm90 speeds start at 60 → 6
	// channels (360); 50, 40, 30 give no more; dup (60 ≥ 50) → 12 × 30.
	ch, bw := GraphFor(370.8, 90, true)
	assert.Equal(t, 12, ch)
	assert.InDelta(t, 30.0, bw, 1e-9)

	// nccl_shm_default_rank0.log "Pattern 4, ..., nChannels 2, bw 20/20,
	// type PHB/PIX": PCIe Gen5 48 GB/s through an Intel root complex is
	// charged INTEL_P2P_OVERHEAD (×6/5), so 40 GB/s effective; 1 × 40, then
	// dup (40 ≥ 25 and only 1 channel) → 2 × 20.
	g := SearchRing(48.0/1.2, 90, false)
	assert.Equal(t, Graph{Channels: 2, BwIntra: 20}, g)
}

func TestGraphForPCIeGen5Blackwell(t *testing.T) {
	// sm100 speeds ≤ 48: 45 → 1 ch (45), 40 → 40, 30 → 30, 24 → 2 ch (48,
	// better, and 48 ≥ 48 stops the search). 24 < 25: no dup.
	ch, bw := GraphFor(48, 120, false)
	assert.Equal(t, 2, ch)
	assert.InDelta(t, 24.0, bw, 1e-9)

	// Pre-Hopper array on PCIe Gen4 (24 GB/s): 20 → 1 ch; 18, 15, 12 → 2 ×
	// 12 = 24 (better, exact fit). 12 < 25: no dup.
	ch, bw = GraphFor(24, 80, false)
	assert.Equal(t, 2, ch)
	assert.InDelta(t, 12.0, bw, 1e-9)

	// Ampere NVLink (12 × 20 = 240 GB/s): 40 → 6 ch = 240 exact; dup (40 ≥
	// 25, and the "sm > 80, bw < 50, > 4 channels" exception needs sm > 80)
	// → 12 × 20.
	ch, bw = GraphFor(240, 80, true)
	assert.Equal(t, 12, ch)
	assert.InDelta(t, 20.0, bw, 1e-9)
}

func TestGraphForFallback(t *testing.T) {
	// search.cc: "Could not find a path for pattern %d, falling back to
	// simple order": bwIntra 0.1, typeIntra SYS, nChannels 1. Dual-socket
	// AMD with sm120: the ring crosses the 16 GB/s SYS link, below the
	// smallest sm100 speed (18).
	g := SearchRing(16, 120, false)
	assert.Equal(t, Graph{Channels: 1, BwIntra: 0.1, Fallback: true}, g)
	ch, bw := GraphFor(0, 90, true)
	assert.Equal(t, 1, ch)
	assert.InDelta(t, 0.1, bw, 1e-12)

	// The fallback graph runs at 2 runtime channels ("Channels 2 (minimum)").
	m := tune(t, Config{NRanks: 8, SM: 120, RingChannels: g.Channels, TreeChannels: g.Channels,
		RingBwIntra: g.BwIntra, TreeBwIntra: g.BwIntra})
	assert.Equal(t, 2, m.Channels())
}
