package validate

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

const perBlockFile = "../testdata/h200x1-arsim/perblock.jsonl"

func readPerBlock(t *testing.T) []trace.Record {
	t.Helper()
	recs, bad, err := trace.ReadJSONLFile(perBlockFile, trace.ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, bad)
	return recs
}

// The per-block measurements of one H200, held out by dimension: a few
// records fit the per-block parameters (Fits), every other record is
// predicted without refitting. The aims are a median of 8 % and a p95 of
// 20 % on the predicted side; the p95 misses it (docs/PER_BLOCK.md says
// where), and this bounds the misses as they are.
func TestPerBlockHeldOutByDimension(t *testing.T) {
	v, err := Run(readPerBlock(t), Options{File: perBlockFile})
	require.NoError(t, err)
	h := v.HeldOut
	require.NotNil(t, h)
	var b strings.Builder
	fmt.Fprintf(&b, "fitted side %d records: median %.1f%%, p95 %.1f%%; predicted side %d: median %.1f%%, p95 %.1f%%\n",
		h.Fitted.Count, h.Fitted.MedianAbsPct, h.Fitted.P95AbsPct, h.Predicted.Count, h.Predicted.MedianAbsPct, h.Predicted.P95AbsPct)
	for _, d := range h.Dims {
		fmt.Fprintf(&b, "  %-44s %4d: median %5.1f%%, p95 %5.1f%%\n", d.Dimension, d.Count, d.MedianAbsPct, d.P95AbsPct)
	}
	t.Log(b.String())
	require.Greater(t, h.Predicted.Count, 500)
	assert.LessOrEqual(t, h.Fitted.MedianAbsPct, 3.0, "the fitted side reproduces its own records")
	assert.LessOrEqual(t, h.Predicted.MedianAbsPct, 8.0, "predicted side, median |error|")
	assert.LessOrEqual(t, h.Predicted.P95AbsPct, 28.0, "predicted side, p95 |error|")
}

// Every fitted parameter equals what its fitted side gives, recomputed
// here from exactly the records Fits selects, and cites that capture: no
// value can drift to a predicted side or be typed in by hand.
func TestFitsComeFromTheirFittedSide(t *testing.T) {
	p, err := topology.Lookup("h200x1")
	require.NoError(t, err)
	ps := p.DefaultParams()
	// RefitPerBlock holds the rules; run on the capture the table came
	// from, it must give the table back.
	recs := readPerBlock(t)
	out, err := RefitPerBlock(recs, recs, p, p.DefaultParams(), perBlockFile)
	require.NoError(t, err)
	require.Len(t, out, 22)
	for _, r := range out {
		t.Logf("%s: fitted side %.4f", r.Name, r.New)
		assert.False(t, r.Clamped || r.Kept, r.Name)
		assert.InEpsilon(t, r.New, ps.Get(r.Name), 0.01, "%s: its fitted side gives %.4g, the preset has %.4g", r.Name, r.New, ps.Get(r.Name))
		if strings.HasPrefix(r.Name, "gpu.launch_graph") {
			continue // measured elsewhere; the rule carries them by a ratio, 1 here
		}
		par, _ := ps.Lookup(r.Name)
		assert.Contains(t, par.Source, "testdata/h200x1-arsim/perblock.jsonl", r.Name)
	}
	// The LL128 loop, from the second run's records (perblock_2.jsonl),
	// relative to that run's own local round trip.
	value := func(r trace.Record) float64 { v, _, _ := r.Primary(); return v }
	recs2, bad, err := trace.ReadJSONLFile("../testdata/h200x1-arsim/perblock_2.jsonl", trace.ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, bad)
	var fit2 []trace.Record
	chase2 := 0.0
	for _, r := range recs2 {
		if r.Kind == trace.KindPointerChase && r.Target == "local" {
			chase2 = r.NsPerStep
		}
		if f, _ := fitOf("h200x1-arsim/perblock_2.jsonl", r); f != nil && f.Params[0] == "gpu.ll128_iter_overhead" {
			fit2 = append(fit2, r)
		}
	}
	require.Len(t, fit2, 3)
	require.NotZero(t, chase2)
	a, b := lineFit(fit2, func(r trace.Record) (float64, float64) { return float64((r.Threads + 31) / 32), value(r) })
	// What the reduction adds: the same loop with and without it, 640
	// threads.
	var copy640, reduce640 float64
	for _, r := range recs2 {
		if f, _ := fitOf("h200x1-arsim/perblock_2.jsonl", r); f != nil && f.Params[0] == "gpu.ll128_reduce_extra" {
			if r.LLOp == "recv_send" {
				copy640 = value(r)
			} else {
				reduce640 = value(r)
			}
		}
	}
	require.Positive(t, copy640)
	require.Positive(t, reduce640)
	for name, w := range map[string]float64{"gpu.ll128_iter_overhead": a - chase2, "gpu.ll128_iter_per_warp": b, "gpu.ll128_reduce_extra": reduce640 - copy640} {
		assert.InEpsilon(t, w, ps.Get(name), 0.01, "%s: its fitted side gives %.4g, the preset has %.4g", name, w, ps.Get(name))
		par, _ := ps.Lookup(name)
		assert.Contains(t, par.Source, "testdata/h200x1-arsim/perblock_2.jsonl", name)
	}
}

// hostmem.slot_service, then hostmem.sector_collision, each recomputed
// from its fitted side: least squares through 0 of each barrier's time
// beyond the model's with the parameter at 0, over how many times the
// model charges it (its prediction's growth per nanosecond of the
// parameter: the W − 1 slots; the other sectors that collide with the
// polled one, hostmem.collision_mask): the ranks' sectors 4 KiB apart, one
// group (barrier_spacing.jsonl); then 128 B apart (barrier_lines.jsonl).
// gpu.host_store_service and gpu.host_poll_load, which the barriers also
// pay, come from captures of their own (below).
func TestBarrierSlotParametersFromTheirFittedSides(t *testing.T) {
	p, err := topology.Lookup("h200x1")
	require.NoError(t, err)
	for _, c := range []struct {
		name, file string
		n          int
	}{
		{"hostmem.slot_service", "barrier_spacing.jsonl", 6},    // W = 2, 4, 8, one group, run twice
		{"hostmem.sector_collision", "barrier_pairs.jsonl", 78}, // two ranks, both lines within a kibibyte, two passes
	} {
		path := "../testdata/h200x1-arsim/" + c.file
		recs, bad, err := trace.ReadJSONLFile(path, trace.ReadOptions{})
		require.NoError(t, err)
		require.Empty(t, bad)
		at := func(v float64) *Validation {
			ps := p.DefaultParams()
			require.NoError(t, ps.Set(c.name, v, "the fit"))
			out, err := Run(recs, Options{File: path, Params: map[string]*topology.Params{"h200x1": ps}})
			require.NoError(t, err)
			return out
		}
		v0, v1 := at(0), at(1000)
		var xy, xx float64
		n := 0
		for i, r := range v0.Records {
			if !slices.Contains(strings.Split(r.FittedFor, ", "), c.name) {
				continue
			}
			x := (v1.Records[i].Predicted - r.Predicted) / 1000 // times the model charges the parameter
			xy, xx = xy+x*(r.Measured-r.Predicted), xx+x*x
			n++
		}
		require.Equal(t, c.n, n, c.name)
		t.Logf("%s: %d records, %.2f ns", c.name, n, xy/xx)
		assert.InDelta(t, p.DefaultParams().Get(c.name), xy/xx, 0.05, "%s: its fitted side gives %.2f ns", c.name, xy/xx)
		par, _ := p.DefaultParams().Lookup(c.name)
		assert.Contains(t, par.Source, "testdata/h200x1-arsim/"+c.file)
	}
}

// gpu.barrier_meet and gpu.barrier_meet_per_warp are the least-squares
// line over warps of 2-rank barriers in local memory (barrier_threads.jsonl,
// 32–1024 threads a block) less two local round trips of the same run.
func TestBarrierMeetFromItsCapture(t *testing.T) {
	recs, bad, err := trace.ReadJSONLFile("../testdata/h200x1-arsim/barrier_threads.jsonl", trace.ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, bad)
	var chase float64
	var xs, ys []float64
	for _, r := range recs {
		switch {
		case r.Kind == trace.KindPointerChase && r.Target == "local":
			chase = r.NsPerStep
		case r.Loop == "group_barrier" && r.Target == "local" && r.World == 2:
			xs = append(xs, float64((r.Threads+31)/32))
			ys = append(ys, r.NsPerIter)
		}
	}
	require.NotZero(t, chase)
	require.Len(t, xs, 6)
	var sx, sy, sxx, sxy float64
	for i := range xs {
		y := ys[i] - 2*chase
		sx, sy, sxx, sxy = sx+xs[i], sy+y, sxx+xs[i]*xs[i], sxy+xs[i]*y
	}
	n := float64(len(xs))
	slope := (n*sxy - sx*sy) / (n*sxx - sx*sx)
	p, err := topology.Lookup("h200x1")
	require.NoError(t, err)
	assert.InDelta(t, (sy-slope*sx)/n, p.DefaultParams().Get("gpu.barrier_meet"), 0.01)
	assert.InDelta(t, slope, p.DefaultParams().Get("gpu.barrier_meet_per_warp"), 0.001)
}

// gpu.spin_store_service is the least-squares slope over W − 2 of the
// local barriers of fence_beside.jsonl whose polls spin.
func TestSpinStoreServiceFromItsCapture(t *testing.T) {
	recs, bad, err := trace.ReadJSONLFile("../testdata/h200x1-arsim/fence_beside.jsonl", trace.ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, bad)
	var sx, sy, sxx, sxy, n float64
	for _, r := range recs {
		if r.Loop == "group_barrier" && r.Target == "local" && r.PollSleepNs == 0 {
			x := float64(r.World - 2)
			sx, sy, sxx, sxy, n = sx+x, sy+r.NsPerIter, sxx+x*x, sxy+x*r.NsPerIter, n+1
		}
	}
	require.Equal(t, 3.0, n)
	p, err := topology.Lookup("h200x1")
	require.NoError(t, err)
	assert.InDelta(t, (n*sxy-sx*sy)/(n*sxx-sx*sx), p.DefaultParams().Get("gpu.spin_store_service"), 0.01)
}

// capture.ll_runtime_op is the median, over pb_ll's receive and
// recv_reduce_send at 64–1024 threads with its lines in local memory, of
// its ns per iteration (the mean of its two runs) minus the same loop
// compiled for one operation (ll_code.jsonl).
func TestLLRuntimeOpFromItsCapture(t *testing.T) {
	recs, bad, err := trace.ReadJSONLFile("../testdata/h200x1-arsim/ll_code.jsonl", trace.ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, bad)
	type key struct {
		op      string
		threads int
	}
	runtime, fixed := map[key][]float64{}, map[key]float64{}
	for _, r := range recs {
		if r.Loop != "ll" || r.Recv != "local" {
			continue
		}
		k := key{r.LLOp, r.Threads}
		if r.Code == "fixed_op" {
			fixed[k] = r.NsPerIter
		} else {
			runtime[k] = append(runtime[k], r.NsPerIter)
		}
	}
	require.Len(t, fixed, 10)
	var diffs []float64
	for k, f := range fixed {
		require.Len(t, runtime[k], 2, "%v", k)
		diffs = append(diffs, (runtime[k][0]+runtime[k][1])/2-f)
	}
	p, err := topology.Lookup("h200x1")
	require.NoError(t, err)
	assert.InDelta(t, median(diffs), p.DefaultParams().Get("capture.ll_runtime_op"), 0.1)
}

// pcie.sm_host_bandwidth is the one-GPU record of SM loads and stores of
// host memory at once (its fitted side); NCCL over SHM on two H200s is its
// predicted side.
func TestSMHostBandwidthFromItsFittedSide(t *testing.T) {
	recs, bad, err := trace.ReadJSONLFile("../testdata/h200x1-arsim/host_link.jsonl", trace.ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, bad)
	var side []trace.Record
	for _, r := range recs {
		if f, _ := fitOf("h200x1-arsim/host_link.jsonl", r); f != nil && f.Params[0] == "pcie.sm_host_bandwidth" {
			side = append(side, r)
		}
	}
	require.Len(t, side, 1)
	for _, name := range []string{"h200x1", "h200x2"} {
		p, err := topology.Lookup(name)
		require.NoError(t, err)
		ps := p.DefaultParams()
		assert.InEpsilon(t, side[0].GbpsTotal, ps.Get("pcie.sm_host_bandwidth"), 0.002, name)
		par, _ := ps.Lookup("pcie.sm_host_bandwidth")
		assert.Contains(t, par.Source, "testdata/h200x1-arsim/host_link.jsonl")
	}
}

// hostmem.fresh_line_saving is what the LL receive saves per iteration over
// host lines written just before against lines pushed out of the caches:
// the median over thread counts of the difference, on ll_live_2.jsonl's
// fitted side (producers before and evicted).
func TestFreshLineSavingFromItsFittedSide(t *testing.T) {
	const file = "h200x1-arsim/ll_live_2.jsonl"
	recs, bad, err := trace.ReadJSONLFile("../testdata/"+file, trace.ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, bad)
	before, evicted := map[int]float64{}, map[int]float64{}
	for _, r := range recs {
		f, _ := fitOf(file, r)
		if f == nil || f.Params[0] != "hostmem.fresh_line_saving" {
			continue
		}
		v, _, _ := r.Primary()
		switch r.Producer {
		case "before":
			before[r.Threads] = v
		case "evicted":
			evicted[r.Threads] = v
		}
	}
	require.Len(t, before, 6)
	var diffs []float64
	for th, b := range before {
		e, ok := evicted[th]
		require.True(t, ok, "threads %d", th)
		diffs = append(diffs, e-b)
	}
	want := median(diffs)
	for _, name := range []string{"h200x1", "h200x2"} {
		p, err := topology.Lookup(name)
		require.NoError(t, err)
		ps := p.DefaultParams()
		assert.InDelta(t, want, ps.Get("hostmem.fresh_line_saving"), 0.5, name)
		par, _ := ps.Lookup("hostmem.fresh_line_saving")
		assert.Contains(t, par.Source, "testdata/h200x1-arsim/ll_live_2.jsonl")
	}
}

// nccl.ll_step_overhead and nccl.ll128_step_overhead are what NCCL's
// per-step bookkeeping costs an LL loop of 512 threads and an LL128 loop
// of 640 per step: (ns per iteration with it − without) × iterations per
// step, on their captures' fitted sides.
func TestStepOverheadsFromTheirFittedSides(t *testing.T) {
	for _, c := range []struct{ file, param string }{
		{"h200x1-arsim/ll_steps.jsonl", "nccl.ll_step_overhead"},
		{"h200x1-arsim/ll128_steps.jsonl", "nccl.ll128_step_overhead"},
	} {
		recs, bad, err := trace.ReadJSONLFile("../testdata/"+c.file, trace.ReadOptions{})
		require.NoError(t, err)
		require.Empty(t, bad)
		var with, without float64
		per := 0
		for _, r := range recs {
			f, _ := fitOf(c.file, r)
			if f == nil || f.Params[0] != c.param {
				continue
			}
			v, _, _ := r.Primary()
			if r.ItersPerStep > 0 {
				with, per = v, r.ItersPerStep
			} else {
				without = v
			}
		}
		require.Positive(t, per, c.param)
		require.Positive(t, without, c.param)
		want := (with - without) * float64(per)
		for _, name := range []string{"h200x1", "h200x2", "rtxpro6000x8-2numa"} {
			p, err := topology.Lookup(name)
			require.NoError(t, err)
			ps := p.DefaultParams()
			assert.InDelta(t, want, ps.Get(c.param), 0.5, "%s %s", c.param, name)
			par, _ := ps.Lookup(c.param)
			assert.Contains(t, par.Source, "testdata/"+c.file)
		}
	}
}

// gpu.dram_src_extra is what an LL loop of 512 threads waits more per
// iteration when its reduction's user buffer streams from HBM instead of
// sitting in the L2 (src_residency.jsonl's fitted side).
func TestDRAMSrcExtraFromItsFittedSide(t *testing.T) {
	const file = "h200x1-arsim/src_residency.jsonl"
	recs, bad, err := trace.ReadJSONLFile("../testdata/"+file, trace.ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, bad)
	var l2, dram float64
	for _, r := range recs {
		f, _ := fitOf(file, r)
		if f == nil || f.Params[0] != "gpu.dram_src_extra" {
			continue
		}
		v, _, _ := r.Primary()
		if r.Src == "local_streamed" {
			dram = v
		} else {
			l2 = v
		}
	}
	require.Positive(t, l2)
	require.Positive(t, dram)
	for _, name := range []string{"h200x1", "h200x2"} {
		p, err := topology.Lookup(name)
		require.NoError(t, err)
		ps := p.DefaultParams()
		assert.InDelta(t, dram-l2, ps.Get("gpu.dram_src_extra"), 0.5, name)
		par, _ := ps.Lookup("gpu.dram_src_extra")
		assert.Contains(t, par.Source, "testdata/h200x1-arsim/src_residency.jsonl")
	}
}

// testdata/h200x1-arsim/perblock_4.jsonl: the whole suite on a fourth
// instance, plus configurations nobody ran before (the heldout part: host
// words 12 and 24 B apart, 6–96 blocks, LL and LL128 at 384–768 threads,
// copies at 24–96 blocks). Nothing is fitted on it; this bounds the misses
// as they are (docs/VALIDATION.md).
func TestPerBlockFourthInstance(t *testing.T) {
	v, _ := runFile(t, "../testdata/h200x1-arsim/perblock_4.jsonl")
	require.NotNil(t, v.HeldOut)
	assert.Zero(t, v.HeldOut.Fitted.Count, "nothing is fitted on a repeat")
	p := v.HeldOut.Predicted
	t.Logf("predicted side %d: median %.1f%%, p95 %.1f%%", p.Count, p.MedianAbsPct, p.P95AbsPct)
	require.Greater(t, p.Count, 900)
	assert.LessOrEqual(t, p.MedianAbsPct, 8.0)
	assert.LessOrEqual(t, p.P95AbsPct, 30.0)
}

// runFile validates one JSON Lines capture, every line well formed, and
// returns the validation and the records.
func runFile(t *testing.T, file string) (*Validation, []trace.Record) {
	t.Helper()
	recs, bad, err := trace.ReadJSONLFile(file, trace.ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, bad)
	v, err := Run(recs, Options{File: file})
	require.NoError(t, err)
	return v, recs
}

// The held-out report's memory-kind row: a record that times anything in
// pinned host memory (a flag, a poll, a line, a copy's end, the stores
// beside it) against one that keeps to GPU memory.
func TestMemoryKindDimension(t *testing.T) {
	for _, c := range []struct {
		r    trace.Record
		want string
	}{
		{trace.Record{Kind: trace.KindLoop, Loop: "group_barrier", Target: "host"}, "memory: pinned host memory"},
		{trace.Record{Kind: trace.KindLoop, Loop: "copy", Src: "local", Dst: "host"}, "memory: pinned host memory"},
		{trace.Record{Kind: trace.KindLoop, Loop: "pull", Src: "local+host"}, "memory: pinned host memory"},
		{trace.Record{Kind: trace.KindLoop, Loop: "host_shot"}, "memory: pinned host memory"},
		{trace.Record{Kind: trace.KindPointerChase, Target: "local", WriteBlocks: 8}, "memory: pinned host memory"},
		{trace.Record{Kind: trace.KindLoop, Loop: "ll", Recv: "local", Dst: "local"}, "memory: GPU memory only"},
		{trace.Record{Kind: trace.KindPoll, Target: "local", Request: "atomic_add"}, "memory: GPU memory only"},
		{trace.Record{Kind: trace.KindPointerChase, Target: "local", WriteBlocks: 8, WriteTarget: "local"}, "memory: GPU memory only"},
	} {
		assert.Contains(t, dimensionsOf(c.r), c.want, "%+v", c.r)
	}
}

// A chip held out (HeldOutChips): no fit reads its captures, and the whole
// per-block suite run on it lies on the predicted side along "chip", the
// same record on an H200 capture on a fitted side. The H100 figures bound
// the misses as they are (testdata/h100x1-arsim/README.md says where).
func TestHeldOutChipIsPredicted(t *testing.T) {
	for sys := range HeldOutChips {
		_, ok := topology.ForSystem(sys)
		assert.True(t, ok, "%s: no preset models it", sys)
	}
	for _, f := range Fits {
		for _, file := range append(slices.Clone(f.Files), f.AlsoPredicts...) {
			assert.False(t, strings.HasPrefix(file, "h100x1-arsim/"), "%v reads %s", f.Params, file)
		}
	}
	fitted := 0
	for _, r := range readPerBlock(t) {
		f, _ := fitOf("h200x1-arsim/perblock.jsonl", r)
		if f == nil {
			continue
		}
		fitted++
		r.System = "h100x1-vm" // the same record on the H100
		f, covered := fitOf("h100x1-arsim/perblock.jsonl", r)
		assert.Nil(t, f, "%+v", r)
		assert.True(t, covered, "%+v", r)
		assert.Contains(t, dimensionsOf(r), "chip: H100 SXM, every parameter an H200's")
	}
	require.Positive(t, fitted, "the H200 suite has fitted sides")

	v, _ := runFile(t, "../testdata/h100x1-arsim/perblock.jsonl")
	h := v.HeldOut
	require.NotNil(t, h)
	t.Logf("H100 per-block suite: predicted %d records, median %.1f%%, p95 %.1f%%, %d beyond 20%%",
		h.Predicted.Count, h.Predicted.MedianAbsPct, h.Predicted.P95AbsPct, h.PredictedBeyond)
	assert.Zero(t, h.Fitted.Count, "nothing is fitted on the H100")
	require.Greater(t, h.Predicted.Count, 900)
	assert.LessOrEqual(t, h.Predicted.MedianAbsPct, 8.0, "predicted side, median |error|")
	assert.LessOrEqual(t, h.Predicted.P95AbsPct, 35.0, "predicted side, p95 |error|")
}

// A pattern among a fit's AlsoPredicts places the records the fit covers
// in every file it matches, without citing those files: a graph gap in a
// one-H200 file no fit names is gpu.launch_graph_settled's prediction,
// and the file's other records stay predictions of a file nobody cited.
func TestAlsoPredictsPatternCitesNothing(t *testing.T) {
	const file = "../testdata/h200x1-arsim/no_fit_names_this.jsonl"
	assert.False(t, cited(file, nil), "a pattern cites no file")
	gap := trace.Record{System: "h200x1-vm", Kind: trace.KindEmptyKernel, Launch: trace.LaunchCUDAGraph, Mode: "graph_replay"}
	f, covered := fitOf(file, gap)
	assert.Nil(t, f)
	assert.True(t, covered, "a graph gap of a one-H200 file is on the predicted side")
	assert.Contains(t, dimensionsOf(gap), "graph gap in a process before its step")
	gap.State = "three long kernels run"
	assert.Contains(t, dimensionsOf(gap), "graph gap in a settled process")
	_, covered = fitOf("../testdata/h200x2-arsim/no_fit_names_this.jsonl", gap)
	assert.False(t, covered, "the pattern is the one-H200 captures'")
	assert.True(t, matchesCapture(file, "h200x1-arsim/*"))
	assert.False(t, matchesCapture(file, "h200x1-arsim/no_fit_names_this.jsonl"), "a name is no pattern")
}
