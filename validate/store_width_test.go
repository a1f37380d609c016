package validate

import (
	"fmt"
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

// recordsByLine maps each record to its line.
func recordsByLine(recs []trace.Record) map[int]trace.Record {
	m := make(map[int]trace.Record, len(recs))
	for _, r := range recs {
		m[r.Line] = r
	}
	return m
}

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
	v, recs := runFile(t, storeWidthFile)
	byLine := recordsByLine(recs)
	rttNs := h200x1HostRTT(t)
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

// store_width and store_depth (each written down before its run, on two
// instances): the GPU's queue of stores to host memory fills where n
// neighbours × s ns a store reach a neighbour's own ns per store t, s the
// longer of gpu.host_store_service (1.223 ns) and the store's TLPs on the
// link (a TLP per 128 B, each its bytes and 24 B of header and framing at
// 62.6 GB/s: 1.41 ns for 64 B, 2.43 for 128 B, 9.71 for 512 B). Below the
// fill the pair's round trip stays within 10 % of its value beside the
// fewest neighbours; at 1.2 times that rate or more it is at least 1.3
// times it (1.39–14 times; store_depth's 64-B stores at 80 neighbours are
// the 1.39, between 19.4 µs at 72 and 16.9 at 96). How long the full queue
// then makes a flag wait failed both readings written down (a constant
// length of line entries; bytes or PCIe credits): 1.3–2.2 µs behind line
// stores on one instance, 2.3–3.1 µs at the fill and 15–27 µs past it on
// the other. It is not modelled.
func TestStoreQueueFillsWhereStoresOutpaceIt(t *testing.T) {
	for file, want := range map[string]int{storeWidthFile: 6, "../testdata/h200x1-arsim/store_depth.jsonl": 13} {
		recs, bad, err := trace.ReadJSONLFile(file, trace.ReadOptions{})
		require.NoError(t, err)
		require.Empty(t, bad)
		byWidth := map[int][]trace.Record{}
		for _, r := range recs {
			if r.Kind == trace.KindBlockPingpong && r.NeighbourStoreBytes > 0 {
				byWidth[r.NeighbourStoreBytes] = append(byWidth[r.NeighbourStoreBytes], r)
			}
		}
		filled := 0
		for b, rs := range byWidth {
			slices.SortFunc(rs, func(x, y trace.Record) int { return x.Neighbours - y.Neighbours })
			tlps := float64((b + 127) / 128)
			s := max(1.223, tlps*(float64(min(b, 128))+24)/62.6)
			unfilled := rs[0].NeighbourNsPerStore
			for _, r := range rs {
				unfilled = min(unfilled, r.NeighbourNsPerStore)
			}
			for _, r := range rs {
				load := float64(r.Neighbours) * s / unfilled
				ratio := r.OneWayNs / rs[0].OneWayNs
				switch {
				case load < 1:
					assert.Less(t, ratio, 1.1, "%s: %d B × %d neighbours: below the fill (load %.2f)", file, b, r.Neighbours, load)
				case load >= 1.2:
					filled++
					assert.Greater(t, ratio, 1.3, "%s: %d B × %d neighbours: the queue is full (load %.2f)", file, b, r.Neighbours, load)
				}
			}
		}
		assert.Equal(t, want, filled, "%s: records the rule says are full", file)
	}
}

// barrier_modes (the expectation written down before the run held): the
// flag kernels' per-block barrier costs a system fence for each
// __threadfence_system and one for a st.release.sys flag store, the
// acquire polls nothing the model counts (hw.barrierFences): every local
// barrier within 10 % and every host barrier of one group within 8 %.
// Host barriers of 4 and 16 groups were 18–37 % fast until each fence
// waited for the other groups' polls of host memory
// (hw.FenceBesidePolls, fitted on fence_polls.jsonl alone): at two ranks
// they are now within 8 % too.
//
// barrier_modes_w (2, 4 and 8 ranks, another instance, written down
// before its run): locally within 15 % at every W; in host memory the
// fenced modes beyond two ranks were −18…−44 % with a fence that waited
// for nothing but itself, and are within 20 % with it waiting for the
// other groups' polls and its own ranks' but the last
// (hw.barrierFencePollers, the alternative fence_groups.jsonl favoured).
func TestBarrierModesCostFences(t *testing.T) {
	testBarrierModes(t, "../testdata/h200x1-arsim/barrier_modes.jsonl", 10, 48)
	testBarrierModes(t, "../testdata/h200x1-arsim/barrier_modes_w.jsonl", 15, 48)
}

// eachBarrier runs file through validate and calls fn with each group
// barrier record and its comparison; it returns how many there were.
func eachBarrier(t *testing.T, file string, fn func(c Compared, r trace.Record)) int {
	v, recs := runFile(t, file)
	byLine := recordsByLine(recs)
	n := 0
	for _, c := range v.Records {
		if r := byLine[c.Line]; r.Loop == "group_barrier" {
			n++
			fn(c, r)
		}
	}
	return n
}

func testBarrierModes(t *testing.T, file string, local float64, want int) {
	n := eachBarrier(t, file, func(c Compared, r trace.Record) {
		switch {
		case r.Target == "local":
			assert.LessOrEqual(t, math.Abs(c.ErrorPct), local, "%s line %d: %s local, %d groups", file, c.Line, r.Mode, r.Groups)
		case r.World == 2:
			assert.LessOrEqual(t, math.Abs(c.ErrorPct), 8.0, "%s line %d: %s host, %d groups", file, c.Line, r.Mode, r.Groups)
		case r.Mode != "volatile":
			assert.LessOrEqual(t, math.Abs(c.ErrorPct), 20.0, "%s line %d: %s host, W %d, %d groups", file, c.Line, r.Mode, r.World, r.Groups)
		}
	})
	assert.Equal(t, want, n, file)
}

// fence_polls (the alternative written down before the run held): a
// system fence waits for other blocks' loads of host memory still on
// their way, whether it follows a store to host or to local memory: beside
// 1–128 blocks polling host memory it takes 1.06–1.49 µs where alone it
// takes 0.52, beside blocks polling local memory no more. The records
// beside host pollers are the fitted side of gpu.fence_poll_wait_growth:
// the test recomputes it from them (least squares through 0 over log2 of
// the pollers of the wait in host round trips less one half,
// hw.FenceBesidePolls) and holds the measurement.
func TestFenceWaitsForOtherBlocksHostLoads(t *testing.T) {
	recs, bad, err := trace.ReadJSONLFile("../testdata/h200x1-arsim/fence_polls.jsonl", trace.ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, bad)
	alone := map[string]float64{}
	for _, r := range recs {
		if r.Loop == "fence" && r.Neighbours == 0 {
			alone[r.Dst] = r.NsPerIter
		}
	}
	require.Len(t, alone, 2)
	n := 0
	for _, r := range recs {
		if r.Loop != "fence" || r.Neighbours == 0 {
			continue
		}
		n++
		extra := r.NsPerIter - alone[r.Dst]
		if r.NeighbourPlace == "host" {
			assert.Greater(t, extra, 500.0, "beside %d host pollers, after a %s store", r.Neighbours, r.Dst)
		} else {
			assert.Less(t, math.Abs(extra), 20.0, "beside %d local pollers, after a %s store", r.Neighbours, r.Dst)
		}
	}
	assert.Equal(t, 20, n)

	rtt := h200x1HostRTT(t)
	var xy, xx float64
	for _, r := range recs {
		if r.Loop == "fence" && r.NeighbourOp == "poll" && r.NeighbourPlace == "host" {
			x := math.Log2(float64(r.Neighbours))
			xy += x * ((r.NsPerIter-alone[r.Dst])/rtt - 0.5)
			xx += x * x
		}
	}
	p, err := topology.Lookup("h200x1")
	require.NoError(t, err)
	assert.InDelta(t, xy/xx, p.DefaultParams().Get("gpu.fence_poll_wait_growth"), 5e-5)
}

// h200x1HostRTT is the host round trip of the h200x1 preset's GPU, ns.
func h200x1HostRTT(t *testing.T) float64 {
	t.Helper()
	p, err := topology.Lookup("h200x1")
	require.NoError(t, err)
	top, err := p.Build()
	require.NoError(t, err)
	m, err := hw.New(top)
	require.NoError(t, err)
	rtt, err := m.RoundTrip(0, hw.HostMem(0))
	require.NoError(t, err)
	return rtt.Seconds() * 1e9
}

// The release/acquire ping-pongs of 2–66 pairs with their flags a line
// apart in host memory (perblock*.jsonl, four instances) were 11–25 %
// fast with a fence that waited for nothing but itself; with each fence
// waiting for the other pairs' polls (hw.FenceBesidePolls, fitted on
// fence_polls.jsonl alone) they are predicted, from 4 pairs within 16 %
// (12 % with hostmem.sector_collision at 350 ns, fitted on barrier_lines;
// on barrier_pairs it is 463: these instances' pairs a line apart pay
// 0.33–0.45 µs for the collision).
func TestReleasePingPongsWaitForOtherPairsPolls(t *testing.T) {
	n := 0
	for _, f := range []string{"perblock.jsonl", "perblock_3.jsonl", "perblock_3b.jsonl", "perblock_4.jsonl"} {
		v, recs := runFile(t, "../testdata/h200x1-arsim/"+f)
		byLine := recordsByLine(recs)
		for _, c := range v.Records {
			r := byLine[c.Line]
			if r.Kind != trace.KindBlockPingpong || r.Mode != "release_acquire" || r.Target != "host" || r.SpacingBytes != 128 || r.Pairs < 4 {
				continue
			}
			n++
			assert.Empty(t, c.FittedFor, "%s line %d", f, c.Line)
			assert.LessOrEqual(t, math.Abs(c.ErrorPct), 16.0, "%s line %d: %d pairs", f, c.Line, r.Pairs)
		}
	}
	assert.Equal(t, 20, n)
}

// fence_groups (written down before the run: the fence-beside-polls rule
// and an alternative in which the barrier's own ranks count too, all but
// the last): two ranks at 2–64 groups in host memory, where both agree,
// within −12…+5 % (expected ±10 %); at one group of 3 and 6 ranks the
// alternative (−22.3…+4 %) beat the rule as first written (−23…−37 %) and is
// now the model's; 3 and 6 ranks at several groups −4…−21 %; in local
// memory, where the rule adds nothing, within −15.2…+5 % (expected ±15 %).
func TestFenceGroupsPredicted(t *testing.T) {
	n := eachBarrier(t, "../testdata/h200x1-arsim/fence_groups.jsonl", func(c Compared, r trace.Record) {
		assert.Empty(t, c.FittedFor, "line %d", c.Line)
		bound := 16.0
		switch {
		case r.Target == "host" && r.Mode != "volatile" && r.World == 2:
			bound = 12.0
		case r.Target == "host" && r.Mode != "volatile":
			bound = 23.0
		}
		assert.LessOrEqual(t, math.Abs(c.ErrorPct), bound, "line %d: %s %s, W %d, %d groups", c.Line, r.Target, r.Mode, r.World, r.Groups)
	})
	assert.Equal(t, 80, n)
}

// fence_pollers (written down before the run): a ping-pong pair's release
// store waits for the polls of host memory of the blocks beside it
// (hw.FenceBesidePolls, fitted on fence_polls.jsonl alone). The
// alternative, that they cost its fence nothing, failed: release less
// volatile grows from 0.58 µs alone to 1.44 µs beside 64 pollers. The
// release pair is predicted within 13 % up to 64 neighbours (from 8 within
// 3.1 %); beside 128 the fence waits twice the rule's and the pair is
// −23 %, which this holds too.
func TestFencePollersPredicted(t *testing.T) {
	v, recs := runFile(t, "../testdata/h200x1-arsim/fence_pollers.jsonl")
	byLine := recordsByLine(recs)
	oneWay := map[string]map[int]float64{}
	n := 0
	for _, c := range v.Records {
		r := byLine[c.Line]
		if r.Kind != trace.KindBlockPingpong {
			continue
		}
		n++
		if oneWay[r.Mode] == nil {
			oneWay[r.Mode] = map[int]float64{}
		}
		oneWay[r.Mode][r.Neighbours] = r.OneWayNs
		if r.Mode != "release_acquire" {
			continue
		}
		if r.Neighbours == 128 {
			assert.Less(t, c.ErrorPct, -15.0, "beside 128 pollers")
		} else {
			assert.LessOrEqual(t, math.Abs(c.ErrorPct), 13.0, "beside %d pollers", r.Neighbours)
		}
	}
	require.Equal(t, 18, n)
	diff := func(nb int) float64 { return oneWay["release_acquire"][nb] - oneWay["volatile"][nb] }
	assert.Greater(t, diff(64)-diff(0), 700.0, "the fence waits for the neighbours' polls")
}

// fence_kinds (written down before the run; my expectation failed): a
// fence.acq_rel.sys waits for other blocks' polls of host memory as a
// fence.sc.sys does, within −0.02…+0.12 µs at 1–128 pollers, so the model
// charges both alike (hw.FenceBesidePolls); from 16 pollers on the waits
// lie within 0.06 µs of the rule's.
func TestFenceKindsWaitAlike(t *testing.T) {
	recs, bad, err := trace.ReadJSONLFile("../testdata/h200x1-arsim/fence_kinds.jsonl", trace.ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, bad)
	ns := map[string]float64{}
	key := func(r trace.Record) string { return fmt.Sprintf("%s %s %d", r.Fence, r.Dst, r.Neighbours) }
	for _, r := range recs {
		if r.Loop == "fence" {
			ns[key(r)] = r.NsPerIter
		}
	}
	require.Len(t, ns, 36)
	rtt := h200x1HostRTT(t)
	p, err := topology.Lookup("h200x1")
	require.NoError(t, err)
	growth := p.DefaultParams().Get("gpu.fence_poll_wait_growth")
	for _, dst := range []string{"host", "local"} {
		for _, nb := range []int{1, 2, 4, 8, 16, 32, 64, 128} {
			wait := func(fence string) float64 {
				return ns[fmt.Sprintf("%s %s %d", fence, dst, nb)] - ns[fmt.Sprintf("%s %s 0", fence, dst)]
			}
			assert.InDelta(t, wait("sc"), wait("acq_rel"), 120, "%s, %d pollers", dst, nb)
			if nb >= 16 {
				rule := rtt * (0.5 + growth*math.Log2(float64(nb)))
				assert.InDelta(t, rule, wait("sc"), 60, "%s, %d pollers", dst, nb)
				assert.InDelta(t, rule, wait("acq_rel"), 60, "%s, %d pollers", dst, nb)
			}
		}
	}
}

// barrier_chunks (two readings written down before the run, neither held):
// vLLM-layout barriers whose chunks of four groups lie 1 KiB apart take
// less than one chunk alone, while vLLM's adjacent chunks take
// 34–44 % longer; which nearer distances are slow changes with the group
// count. The model counts nothing beyond a line, so it gives every chunk
// distance the same value; this holds the measurement.
func TestBarrierChunksNearnessCosts(t *testing.T) {
	recs, bad, err := trace.ReadJSONLFile("../testdata/h200x1-arsim/barrier_chunks.jsonl", trace.ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, bad)
	ns := map[string]float64{}
	for _, r := range recs {
		if r.Loop == "group_barrier" {
			ns[fmt.Sprintf("%s %d %d", r.Layout, r.World, r.Groups)] = r.NsPerIter
		}
	}
	require.Len(t, ns, 22)
	for _, w := range []int{4, 8} {
		one := ns[fmt.Sprintf("vllm %d 4", w)]
		for _, g := range []int{8, 16} {
			assert.Greater(t, ns[fmt.Sprintf("vllm %d %d", w, g)], 1.3*one, "W %d, %d groups: adjacent chunks", w, g)
			assert.Less(t, ns[fmt.Sprintf("vllm_chunk1k %d %d", w, g)], 1.0*one, "W %d, %d groups: chunks 1 KiB apart", w, g)
		}
	}
}

// fence_threads (written down before the run: per polling block, the model
// then, against per load in flight; per load held): beside 1–32 blocks of
// 1–512 polling threads each, a fence's wait grows with the threads, and up
// to 1,024 loads in flight it lies within −0.15…0.00 µs of
// hw.FenceBesidePolls counting each polling thread; at 4,096 loads and more
// the loads queue for the host link and the fence waits 2.2–13.2 µs, which
// the model does not have.
func TestFenceThreadsWaitPerLoad(t *testing.T) {
	recs, bad, err := trace.ReadJSONLFile("../testdata/h200x1-arsim/fence_threads.jsonl", trace.ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, bad)
	wait := map[[2]int]float64{}
	alone := 0.0
	for _, r := range recs {
		if r.Loop != "fence" {
			continue
		}
		if r.Neighbours == 0 {
			alone = r.NsPerIter
			continue
		}
		wait[[2]int{r.Neighbours, r.NeighbourThreads}] = r.NsPerIter
	}
	require.Len(t, wait, 12)
	require.Positive(t, alone)
	rtt := h200x1HostRTT(t)
	p, err := topology.Lookup("h200x1")
	require.NoError(t, err)
	growth := p.DefaultParams().Get("gpu.fence_poll_wait_growth")
	for k, ns := range wait {
		loads := k[0] * k[1]
		w := ns - alone
		if loads <= 1024 {
			rule := rtt * (0.5 + growth*math.Log2(float64(loads)))
			assert.InDelta(t, rule-75, w, 80, "%d blocks × %d threads", k[0], k[1])
		} else {
			assert.Greater(t, w, 2000.0, "%d blocks × %d threads: the loads queue", k[0], k[1])
		}
	}
	for _, b := range []int{1, 8, 32} {
		assert.Greater(t, wait[[2]int{b, 32}], wait[[2]int{b, 1}]+150, "%d blocks: more threads, longer", b)
	}
}
