package validate

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// NCCL's fitted parameters, each recomputed from its fitted side, and the
// predicted side of the channel capture.

// nccl.call_extra.<algo>.<proto> is the median of measured − simulated
// over its fitted side with the parameter at 0.
func TestCallExtraFromItsFittedSide(t *testing.T) {
	p, err := topology.Lookup("h200x2")
	require.NoError(t, err)
	n := map[string]int{"ll": 12, "ll128": 12, "simple": 22}
	for _, f := range callExtraFits() {
		name := f.Params[0]
		ps := p.DefaultParams()
		want := ps.Get(name)
		require.NoError(t, ps.Set(name, 0, "zero for the fit"))
		var diffs []float64
		for _, file := range []string{"measurements.jsonl", "nccl_simple_threads.jsonl"} {
			v, err := Run(readOwn(t, file), Options{File: "../testdata/h200x2-arsim/" + file, Params: map[string]*topology.Params{"h200x2": ps}})
			require.NoError(t, err)
			for _, r := range v.Records {
				if r.FittedFor == name {
					diffs = append(diffs, r.Measured-r.Predicted)
				}
			}
		}
		t.Logf("%s: %d records, median of measured − simulated %.3f µs", name, len(diffs), median(diffs))
		require.Len(t, diffs, n[name[strings.LastIndex(name, ".")+1:]], name)
		assert.InDelta(t, want, median(diffs), 0.01, "%s: its fitted side gives %.3f µs", name, median(diffs))
	}
}

// nccl.ll128_iter_extra and nccl.ll_iter_extra are the values that make
// the median error of their fitted sides (ring/LL128 over NVLink; LL's ring
// and tree over NVLink and SHM; one channel, 8 and 32 MiB) 0: recomputed
// here by bisection, to
// within 0.5 ns. Fitted instead at NCCL's default channels (bf16 in
// graphs, 8–256 MiB) ll128_iter_extra would be 773 ns: the extra is not
// one per-iteration constant at every channel count, and
// docs/VALIDATION.md reports how the one-channel value predicts the rest.
func TestNCCLIterExtrasFromTheirFittedSides(t *testing.T) {
	p, err := topology.Lookup("h200x2")
	require.NoError(t, err)
	recs := readOwn(t, "nccl_channels.jsonl")
	for name, records := range map[string]int{"nccl.ll128_iter_extra": 2, "nccl.ll_iter_extra": 8} {
		want := p.DefaultParams().Get(name)
		medianErr := func(v float64) float64 {
			ps := p.DefaultParams()
			require.NoError(t, ps.Set(name, v, "bisection"))
			res, err := Run(recs, Options{File: "../testdata/h200x2-arsim/nccl_channels.jsonl", Params: map[string]*topology.Params{"h200x2": ps}})
			require.NoError(t, err)
			var errs []float64
			for _, r := range res.Records {
				if r.FittedFor == name {
					errs = append(errs, r.ErrorPct)
				}
			}
			require.Len(t, errs, records, name)
			return median(errs)
		}
		lo, hi := 0.0, 2000.0
		require.Negative(t, medianErr(lo), name)
		require.Positive(t, medianErr(hi), name)
		for hi-lo > 0.5 {
			if mid := (lo + hi) / 2; medianErr(mid) < 0 {
				lo = mid
			} else {
				hi = mid
			}
		}
		assert.InDelta(t, (lo+hi)/2, want, 1.0, "%s: its fitted side gives %.1f ns", name, (lo+hi)/2)
	}
}

// nccl.kernel_fixed is NCCL's self send/receive of 8 B per call in a CUDA
// graph minus the empty kernel node of the same run.
func TestNCCLKernelFixedFromItsCapture(t *testing.T) {
	recs, bad, err := trace.ReadJSONLFile("../testdata/h200x1-arsim/nccl_self.jsonl", trace.ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, bad)
	var self, empty float64
	for _, r := range recs {
		if r.Launch != trace.LaunchCUDAGraph {
			continue
		}
		switch {
		case r.NCCLOp == "self_sendrecv" && r.Bytes == 8:
			self = r.Us
		case r.NCCLOp == "empty_kernel":
			empty = r.Us
		}
	}
	require.Positive(t, self)
	require.Positive(t, empty)
	p, err := topology.Lookup("h200x1")
	require.NoError(t, err)
	assert.InDelta(t, self-empty, p.DefaultParams().Get("nccl.kernel_fixed"), 0.001)
}

// nccl.graph_mixing_extra is NCCL's one-rank send/receive at 8 B in CUDA
// graphs of 20 with NCCL's default less the same with
// NCCL_GRAPH_MIXING_SUPPORT=0 (nccl_graph_size.jsonl); its graphs of 61,
// 122 and 244 are predicted within 4 % with it.
func TestGraphMixingExtraFromItsCapture(t *testing.T) {
	const file = "../testdata/h200x1-arsim/nccl_graph_size.jsonl"
	recs, bad, err := trace.ReadJSONLFile(file, trace.ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, bad)
	on, off := map[int]float64{}, map[int]float64{}
	for _, r := range recs {
		if r.NCCLOp != "self_sendrecv" || r.Bytes != 8 {
			continue
		}
		if r.NCCLEnv["NCCL_GRAPH_MIXING_SUPPORT"] == "0" {
			off[r.OpsPerGraph] = r.Us
		} else {
			on[r.OpsPerGraph] = r.Us
		}
	}
	require.Len(t, on, 4)
	require.Len(t, off, 4)
	p, err := topology.Lookup("h200x1")
	require.NoError(t, err)
	assert.InDelta(t, on[20]-off[20], p.DefaultParams().Get("nccl.graph_mixing_extra"), 0.001)

	v, err := Run(recs, Options{File: file})
	require.NoError(t, err)
	byLine := recordsByLine(recs)
	n := 0
	for _, c := range v.Records {
		r := byLine[c.Line]
		if r.NCCLOp == "self_sendrecv" && r.NCCLEnv["NCCL_GRAPH_MIXING_SUPPORT"] == "0" && r.OpsPerGraph != 20 {
			n++
			assert.Empty(t, c.FittedFor, "line %d", c.Line)
			assert.Less(t, math.Abs(c.ErrorPct), 4.0, "line %d: graph of %d", c.Line, r.OpsPerGraph)
		}
	}
	assert.Equal(t, 3, n)
}

// gpu.launch_graph_settled is the median graph gap of graph_gap_state's
// processes at their last measurement; the records of other captures that
// say they were measured at the end of a phase that replayed graphs are
// predicted with it, within 5 %, where the fresh process's gap is 22–29 %
// short.
func TestSettledGraphGapFromItsCapture(t *testing.T) {
	const file = "../testdata/h200x1-arsim/graph_gap_state.jsonl"
	recs, bad, err := trace.ReadJSONLFile(file, trace.ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, bad)
	var last []float64
	for _, r := range recs {
		if r.State == "three long kernels run" {
			last = append(last, r.Us)
		}
	}
	require.Len(t, last, 15)
	p, err := topology.Lookup("h200x1")
	require.NoError(t, err)
	settled := p.DefaultParams().Get("gpu.launch_graph_settled")
	assert.InDelta(t, median(last), settled, 1e-4)

	n := 0
	for _, f := range []string{"../testdata/h200x1-arsim/flag_mid.jsonl", "../testdata/h200x2-arsim/measurements_2.jsonl", "../testdata/h200x2-arsim/sequences_len.jsonl"} {
		recs, _, err := trace.ReadJSONLFile(f, trace.ReadOptions{SkipBad: true})
		require.NoError(t, err)
		var gaps []trace.Record
		for _, r := range recs {
			if settledGraphGap(r) {
				gaps = append(gaps, r)
			}
		}
		require.NotEmpty(t, gaps, f)
		v, err := Run(gaps, Options{File: f})
		require.NoError(t, err)
		require.Len(t, v.Records, len(gaps), f)
		for _, c := range v.Records {
			n++
			assert.Empty(t, c.FittedFor, "%s line %d", f, c.Line)
			if strings.Contains(f, "h200x1") { // the two-H200 files no fit cites: every record a prediction
				assert.Contains(t, c.Dimensions, "graph gap in a settled process", "%s line %d", f, c.Line)
			}
			assert.Less(t, math.Abs(c.ErrorPct), 5.0, "%s line %d: %g µs measured", f, c.Line, c.Measured)
			fresh := (p.DefaultParams().Get("gpu.launch_graph") - c.Measured) / c.Measured * 100
			assert.Less(t, fresh, -20.0, "%s line %d: the fresh gap would have been as good", f, c.Line)
		}
	}
	assert.GreaterOrEqual(t, n, 10)
}

// The NCCL channel capture of two H200s (1, 2, 4, 8 channels and the
// default, ring and tree × LL, LL128, Simple, over NVLink and SHM) fits one
// parameter on two records (nccl.ll128_iter_extra: ring/LL128 over NVLink,
// one channel, 8 and 32 MiB) and one on eight (nccl.ll_iter_extra: LL's
// ring and tree over NVLink and SHM, the same); every other record is
// predicted. Its tree rows are where NCCL's
// thread groups moving a connection's steps one at a time (hw's in-order
// loop groups) matter: with all of a connection's steps in flight sharing
// the loop and landing together, tree/LL over SHM ran 35–66 % slow and
// over NVLink 34–36 % fast from 512 KiB. This bounds the predicted side
// as it is (the aims are 8 % and 20 %; docs/VALIDATION.md says where the
// rest misses).
func TestNCCLChannelsPredicted(t *testing.T) {
	v, recs := runFile(t, "../testdata/h200x2-arsim/nccl_channels.jsonl")
	h := v.HeldOut
	require.NotNil(t, h)
	assert.Equal(t, 10, h.Fitted.Count, "ten records of the channel capture are fitted")
	for _, r := range v.Records {
		if r.FittedFor != "" {
			assert.Contains(t, []string{"nccl.ll128_iter_extra", "nccl.ll_iter_extra"}, r.FittedFor, "line %d", r.Line)
		}
	}
	require.Greater(t, h.Predicted.Count, 400)
	t.Logf("predicted side %d: median %.1f%%, p95 %.1f%%", h.Predicted.Count, h.Predicted.MedianAbsPct, h.Predicted.P95AbsPct)
	assert.LessOrEqual(t, h.Predicted.MedianAbsPct, 8.0)
	assert.LessOrEqual(t, h.Predicted.P95AbsPct, 17.0)
	byLine := map[int]trace.Record{}
	for _, r := range recs {
		byLine[r.Line] = r
	}
	tree := map[string][]float64{}
	for _, c := range v.Records {
		if r := byLine[c.Line]; r.Algo == "tree" && r.Bytes >= 512<<10 {
			k := r.Proto + " " + string(r.Transport)
			tree[k] = append(tree[k], c.ErrorPct)
		}
	}
	require.Len(t, tree, 6)
	for k, errs := range tree {
		abs := make([]float64, len(errs))
		for i, e := range errs {
			abs[i] = math.Abs(e)
		}
		slices.Sort(abs)
		med := abs[len(abs)/2]
		t.Logf("tree %s from 512 KiB: %d records, median |error| %.1f%%, worst %.1f%%", k, len(abs), med, abs[len(abs)-1])
		assert.LessOrEqual(t, med, 20.0, "tree %s from 512 KiB", k)
	}
}
