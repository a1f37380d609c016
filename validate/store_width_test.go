package validate

import (
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

const storeWidthFile = "../testdata/h200x1-arsim/store_width.jsonl"

func storeWidthRecords(t *testing.T) []trace.Record {
	t.Helper()
	recs, bad, err := trace.ReadJSONLFile(storeWidthFile, trace.ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, bad)
	return recs
}

// gpu.copy_dram_extra from store_width.jsonl: one block of 128 threads
// copying to host memory, 64 iterations, its source fresh every launch
// minus the same with its source in the L2.
func TestCopyDRAMExtraFromItsCapture(t *testing.T) {
	byRes := map[string]float64{}
	for _, r := range storeWidthRecords(t) {
		if r.Loop == "copy" && r.Blocks == 1 && r.Threads == 128 && r.Iters == 64 {
			byRes[r.SrcResidency] = r.NsPerIter
		}
	}
	require.Len(t, byRes, 2)
	p, err := topology.Lookup("h200x1")
	require.NoError(t, err)
	assert.InDelta(t, p.DefaultParams().Get("gpu.copy_dram_extra"), byRes["fresh"]-byRes["l2"], 0.05)
}

// pull_iters (written down before the run): a launch of n iterations of
// the pull loop takes n iterations, not a round trip more. At one block
// the model (reads take whole iterations, hw.windowCap) is within 12 % of
// every launch of 1–64 iterations (median 3.2 %); the engine's former
// rule, which charged the first window's round trip on top, would be at
// least 5 % over at every count and 40 % or more at one iteration.
func TestPullsTakeWholeIterations(t *testing.T) {
	recs := storeWidthRecords(t)
	v, err := Run(recs, Options{File: storeWidthFile})
	require.NoError(t, err)
	byLine := map[int]trace.Record{}
	for _, r := range recs {
		byLine[r.Line] = r
	}
	p, err := topology.Lookup("h200x1")
	require.NoError(t, err)
	top, err := p.Build()
	require.NoError(t, err)
	m, err := hw.New(top)
	require.NoError(t, err)
	rtt, err := m.RoundTrip(0, hw.HostMem(0))
	require.NoError(t, err)
	rttNs := rtt.Seconds() * 1e9
	var abs, oldAbs []float64
	for _, c := range v.Records {
		r := byLine[c.Line]
		if r.Loop != "pull" || r.Blocks != 1 {
			continue
		}
		abs = append(abs, math.Abs(c.ErrorPct))
		assert.LessOrEqual(t, math.Abs(c.ErrorPct), 12.0, "line %d: %d iterations, %d threads, %s", c.Line, r.Iters, r.Threads, r.LoopBound)
		old := (c.Predicted + rttNs/float64(r.Iters)) / c.Measured
		oldAbs = append(oldAbs, math.Abs(old-1)*100)
		if r.Iters == 1 {
			assert.Greater(t, old, 1.4, "line %d: the former rule at one iteration", c.Line)
		}
	}
	require.Len(t, abs, 28)
	slices.Sort(abs)
	slices.Sort(oldAbs)
	t.Logf("one block: median |error| %.1f %% (the former rule %.1f %%)", abs[len(abs)/2], oldAbs[len(oldAbs)/2])
	assert.LessOrEqual(t, abs[len(abs)/2], 4.0)
	assert.Greater(t, oldAbs[len(oldAbs)/2], 2*abs[len(abs)/2])
}

// store_width (written down before the run): the GPU's queue of small
// stores to host memory fills where n neighbours × e entries a store × s
// ns an entry reach a neighbour's own ns per store, with s = 1.223 ns
// (gpu.host_store_service) for 4- and 32-byte stores and a 128-byte line
// at the link's 52.7 GB/s (2.43 ns) for 128 and 512 bytes (e = 4). Below
// that the pair's round trip stays within 10 % of its value beside the
// fewest neighbours; at 1.2 times that rate or more it is at least 1.5
// times it. (How long the full queue then makes a flag wait, written down
// as 2,739 line entries, failed: 1.3–2.2 µs behind line stores, not 6.65;
// it is not modelled.)
func TestStoreQueueFillsWhereStoresOutpaceIt(t *testing.T) {
	type key struct{ bytes int }
	base := map[key]float64{}
	var recs []trace.Record
	for _, r := range storeWidthRecords(t) {
		if r.Kind != trace.KindBlockPingpong || r.NeighbourStoreBytes == 0 {
			continue
		}
		recs = append(recs, r)
		k := key{r.NeighbourStoreBytes}
		if b, ok := base[k]; !ok || r.Neighbours < int(b) {
			base[k] = float64(r.Neighbours)
		}
	}
	require.Len(t, recs, 29)
	first := map[key]float64{}
	for _, r := range recs {
		if float64(r.Neighbours) == base[key{r.NeighbourStoreBytes}] {
			first[key{r.NeighbourStoreBytes}] = r.OneWayNs
		}
	}
	unfilled := map[key]float64{} // the neighbours' ns per store below the fill
	for _, r := range recs {
		k := key{r.NeighbourStoreBytes}
		if f, ok := unfilled[k]; !ok || r.NeighbourNsPerStore < f {
			unfilled[k] = r.NeighbourNsPerStore
		}
	}
	filled := 0
	for _, r := range recs {
		k := key{r.NeighbourStoreBytes}
		e, s := 1.0, 1.223
		if r.NeighbourStoreBytes >= 128 {
			e, s = float64(r.NeighbourStoreBytes)/128, 128/52.7
		}
		load := float64(r.Neighbours) * e * s / unfilled[k]
		ratio := r.OneWayNs / first[k]
		switch {
		case load < 1:
			assert.Less(t, ratio, 1.1, "%d B × %d neighbours: below the fill (load %.2f)", r.NeighbourStoreBytes, r.Neighbours, load)
		case load >= 1.2:
			filled++
			assert.Greater(t, ratio, 1.5, "%d B × %d neighbours: the queue is full (load %.2f)", r.NeighbourStoreBytes, r.Neighbours, load)
		}
	}
	assert.Equal(t, 6, filled, "records the rule says are full")
}
