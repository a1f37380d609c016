package hw

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/topology"
)

// The per-block measurements of one H200 (testdata/h200x1-arsim) held out
// by dimension: a few records fit the per-block parameters, every other
// record is predicted without refitting, and the report gives the error on
// each side, by family and by the dimension a parameter is carried along
// (blocks, threads, memory kind, spacing, unroll).

const perBlockFile = "../testdata/h200x1-arsim/perblock.jsonl"

type pbRecord struct {
	Kind       string  `json:"kind"`
	Target     string  `json:"target"`
	Request    string  `json:"request"`
	Spacing    int     `json:"spacing_bytes"`
	Mode       string  `json:"mode"`
	Pairs      int     `json:"pairs"`
	Loop       string  `json:"loop"`
	LLOp       string  `json:"ll_op"`
	Recv       string  `json:"recv"`
	Dst        string  `json:"dst"`
	Src        string  `json:"src"`
	Unroll     int     `json:"unroll"`
	Sources    int     `json:"sources"`
	Bound      string  `json:"loop_bound"`
	World      int     `json:"world"`
	Slice      int64   `json:"slice_bytes"`
	Fence      string  `json:"fence"`
	Stores     int     `json:"stores_per_thread"`
	Blocks     int     `json:"blocks"`
	Threads    int     `json:"threads"`
	Iters      int     `json:"iters"`
	NsPerOp    float64 `json:"ns_per_op"`
	OneWayNs   float64 `json:"one_way_ns"`
	NsPerIter  float64 `json:"ns_per_iter"`
	NsPerStep  float64 `json:"ns_per_step"`
	Variant    string  `json:"variant"`
	Op         string  `json:"op"`
	NsKernel   float64 `json:"ns_per_iter_kernel"`
	Line       int     `json:"-"`
	measured   float64
	fittedFor  string // the parameter this record was fitted for, "" on the predicted side
	dimensions []string
}

func readPerBlock(t *testing.T) []pbRecord {
	t.Helper()
	f, err := os.Open(perBlockFile)
	require.NoError(t, err)
	defer f.Close()
	var out []pbRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		var r pbRecord
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r), "line %d", n)
		r.Line = n
		r.measured = max(r.NsPerOp, r.OneWayNs, r.NsPerIter)
		out = append(out, r)
	}
	require.NoError(t, sc.Err())
	return out
}

// h200x1 is the machine of testdata/h200x1-arsim: the H200 of the h200x2
// preset with the values this machine instance measured of itself in the
// same run (its micro2 and pointer_chase records).
func h200x1(t *testing.T) *topology.Topology {
	t.Helper()
	p, err := topology.Lookup("h200x2")
	require.NoError(t, err)
	ps := p.DefaultParams()
	for name, v := range map[string]float64{
		"gpu.mem_latency":           143.9, // pointer_chase local
		"pcie.gpu_port_latency":     184.3, // pointer_chase host 1118.5 ns (h200x2: 1085.9 ns at 168 ns)
		"gpu.fence_sys_local":       515.8, // micro2 fence store+fence_sys local
		"gpu.fence_pcie_round_trip": 0,     // micro2 fence to host 615.9 ns: no round trip
	} {
		require.NoError(t, ps.Set(name, v, "our capture: testdata/h200x1-arsim/perblock.jsonl, this machine instance"))
	}
	top, err := p.BuildWith(ps)
	require.NoError(t, err)
	return top
}

// fittedSide marks the records each per-block parameter was fitted on.
func fittedSide(r *pbRecord) {
	switch {
	case r.Kind == "poll" && r.Target == "host" && r.Spacing == 0 && r.Blocks >= 8 && strings.HasPrefix(r.Request, "load"):
		r.fittedFor = "hostmem.poll_service"
	case r.Kind == "poll" && r.Target == "host" && r.Spacing == 0 && r.Blocks >= 8 && strings.HasPrefix(r.Request, "atomic"):
		r.fittedFor = "hostmem.atomic_service"
	case r.Kind == "loop" && r.Loop == "ll" && r.LLOp == "recv_reduce_send" && r.Recv == "local" && r.Dst == "local" && r.Blocks == 1:
		r.fittedFor = "gpu.ll_iter_overhead, gpu.ll_iter_per_warp"
	case r.Kind == "loop" && r.Loop == "copy" && r.Unroll == 1 && r.Sources == 1 && r.Src == "local" && r.Dst == "local" && r.Blocks == 1 && r.Threads == 128:
		r.fittedFor = "gpu.copy_iter_overhead"
	case r.Kind == "loop" && r.Loop == "copy" && r.Unroll == 8 && r.Sources == 1 && r.Src == "local" && r.Dst == "local" && r.Blocks == 1 && r.Threads == 512 && r.Iters == 32:
		r.fittedFor = "gpu.sm_load_bandwidth"
	case r.Kind == "loop" && r.Loop == "simple_step" && r.Dst == "local" && r.Slice == 0 && r.Fence == "none" && r.Threads == 512:
		r.fittedFor = "nccl.simple_step_overhead"
	}
}

func dims(r pbRecord) []string {
	var d []string
	switch r.Kind {
	case "poll":
		d = append(d, "poll "+map[bool]string{true: "atomics", false: "loads"}[strings.HasPrefix(r.Request, "atomic")]+" "+r.Target)
		if r.Spacing > 0 && r.Spacing < 128 {
			d = append(d, "spacing: packed words")
		}
	case "block_pingpong":
		d = append(d, "pingpong "+r.Mode+" "+r.Target)
	case "loop":
		fam := "loop " + r.Loop
		if r.Loop == "ll" {
			fam += " recv " + r.Recv
		}
		if r.Loop == "copy" {
			fam += " " + r.Src + "→" + r.Dst
		}
		d = append(d, fam)
		if r.Loop == "ll" || r.Loop == "copy" {
			if r.Blocks > 1 {
				d = append(d, "blocks: 2–132")
			} else if r.Threads != 128 && r.Threads != 512 || r.Loop == "ll" {
				d = append(d, "blocks: 1")
			}
		}
	}
	if r.Kind != "loop" {
		if r.Blocks > 1 || r.Pairs > 1 {
			d = append(d, "blocks: 2–132")
		} else {
			d = append(d, "blocks: 1")
		}
	}
	return d
}

type errStats struct {
	n        int
	med, p95 float64
}

func stats(v []float64) errStats {
	if len(v) == 0 {
		return errStats{}
	}
	s := slices.Clone(v)
	for i := range s {
		s[i] = math.Abs(s[i])
	}
	sort.Float64s(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return errStats{len(s), med, s[int(math.Ceil(0.95*float64(len(s))))-1]}
}

// perBlockErrors simulates every modelled per-block record and returns the
// signed errors (%) by side and by dimension.
func perBlockErrors(t *testing.T) (fitted, predicted []float64, byDim map[string][]float64, skipped int) {
	t.Helper()
	top := h200x1(t)
	byDim = map[string][]float64{}
	for _, r := range readPerBlock(t) {
		if r.Kind != "poll" && r.Kind != "block_pingpong" && r.Kind != "loop" {
			continue
		}
		if r.Loop == "ll128" {
			skipped++ // its thread layout is not NCCL's (testdata README); no twin
			continue
		}
		fittedSide(&r)
		sim, err := PerBlockValue(top, PerBlock{Kind: r.Kind, Target: r.Target, Request: r.Request, Spacing: r.Spacing,
			Mode: r.Mode, Pairs: r.Pairs, Loop: r.Loop, LLOp: r.LLOp, Recv: r.Recv, Dst: r.Dst, Src: r.Src,
			Unroll: r.Unroll, Sources: r.Sources, Bound: r.Bound, World: r.World, Slice: r.Slice, Fence: r.Fence,
			Stores: r.Stores, Blocks: r.Blocks, Threads: r.Threads, Iters: r.Iters})
		if errors.Is(err, ErrNotModelled) {
			skipped++
			continue
		}
		require.NoError(t, err, "line %d", r.Line)
		e := (sim/r.measured - 1) * 100
		if r.fittedFor != "" {
			fitted = append(fitted, e)
			continue
		}
		predicted = append(predicted, e)
		for _, d := range dims(r) {
			byDim[d] = append(byDim[d], e)
		}
	}
	return fitted, predicted, byDim, skipped
}

func TestPerBlockHeldOutByDimension(t *testing.T) {
	fitted, predicted, byDim, skipped := perBlockErrors(t)
	f, p := stats(fitted), stats(predicted)
	var b strings.Builder
	fmt.Fprintf(&b, "per-block records of %s (%d without a twin):\n", perBlockFile, skipped)
	fmt.Fprintf(&b, "  fitted side:    %3d records, median |error| %5.1f%%, p95 %5.1f%%\n", f.n, f.med, f.p95)
	fmt.Fprintf(&b, "  predicted side: %3d records, median |error| %5.1f%%, p95 %5.1f%%\n", p.n, p.med, p.p95)
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range byDim {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range keys {
		s := stats(byDim[k])
		fmt.Fprintf(&b, "    %-36s %3d records, median %5.1f%%, p95 %5.1f%%\n", k, s.n, s.med, s.p95)
	}
	t.Log(b.String())
	require.Greater(t, p.n, 300, "predicted records")
	assert.LessOrEqual(t, f.med, 8.0, "the fitted side reproduces its own records")
	assert.LessOrEqual(t, p.med, 8.0, "predicted side, median |error|")
	// The target is 20 %; ping-pong through packed host-memory words, pull loops
	// whose run-time loop the compiler unrolled and copies at 66–132 blocks miss
	// it (docs/PER_BLOCK.md). This bounds the misses as they are.
	assert.LessOrEqual(t, p.p95, 45.0, "predicted side, p95 |error|")
}

func TestPerBlockDump(t *testing.T) {
	if os.Getenv("PB_DUMP") == "" {
		t.Skip()
	}
	top := h200x1(t)
	for _, r := range readPerBlock(t) {
		if r.Kind != "poll" && r.Kind != "block_pingpong" && r.Kind != "loop" || r.Loop == "ll128" {
			continue
		}
		if !strings.Contains(r.Kind+r.Loop, os.Getenv("PB_DUMP")) {
			continue
		}
		sim, err := PerBlockValue(top, PerBlock{Kind: r.Kind, Target: r.Target, Request: r.Request, Spacing: r.Spacing,
			Mode: r.Mode, Pairs: r.Pairs, Loop: r.Loop, LLOp: r.LLOp, Recv: r.Recv, Dst: r.Dst, Src: r.Src,
			Unroll: r.Unroll, Sources: r.Sources, Bound: r.Bound, World: r.World, Slice: r.Slice, Fence: r.Fence,
			Stores: r.Stores, Blocks: r.Blocks, Threads: r.Threads, Iters: r.Iters})
		if err != nil {
			continue
		}
		fmt.Printf("%-5s %-4s %-16s %-6s %-5s %-5s U%d S%d %-8s w%d sl%-6d %-7s %3dx%-4d pairs%-2d sp%-4d meas %8.1f sim %8.1f %+6.1f%%\n",
			r.Kind[:4], r.Loop, r.LLOp+r.Request+r.Mode, r.Recv+r.Src, r.Dst, r.Target, r.Unroll, r.Sources, r.Bound, r.World, r.Slice, r.Fence, r.Blocks, r.Threads, r.Pairs, r.Spacing, r.measured, sim, (sim/r.measured-1)*100)
	}
}

// Every per-block parameter equals what its fitted side of the one-GPU
// capture gives, recomputed here from the records (so no value can drift
// to a predicted side or be typed in by hand).
func TestPerBlockParametersComeFromTheirFittedSide(t *testing.T) {
	recs := readPerBlock(t)
	ps := h200x1(t).Params
	var chaseLocal, chaseHost, readOnlyHost, fenceLocal, fenceHost float64
	for _, r := range recs {
		switch {
		case r.Kind == "pointer_chase" && r.Target == "local":
			chaseLocal = r.NsPerStep
		case r.Kind == "pointer_chase" && r.Target == "host":
			chaseHost = r.NsPerStep
		case r.Kind == "sm_access" && r.Op == "read_only_loop" && r.Target == "host" && r.Blocks == 1 && r.Threads == 32:
			readOnlyHost = r.NsKernel
		case r.Kind == "fence" && r.Variant == "store+fence_sys" && r.Threads == 1 && r.Target == "local":
			fenceLocal = r.NsPerIter
		case r.Kind == "fence" && r.Variant == "store+fence_sys" && r.Threads == 1 && r.Target == "host":
			fenceHost = r.NsPerIter
		}
	}
	require.NotZero(t, chaseLocal*chaseHost*readOnlyHost*fenceLocal*fenceHost)
	throughOrigin := func(sel func(pbRecord) bool) float64 {
		var xy, xx float64
		for _, r := range recs {
			if sel(r) {
				xy += float64(r.Blocks) * r.measured
				xx += float64(r.Blocks * r.Blocks)
			}
		}
		return xy / xx
	}
	line := func(sel func(pbRecord) (x, y float64, ok bool)) (a, b float64) {
		var xs, ys []float64
		for _, r := range recs {
			if x, y, ok := sel(r); ok {
				xs, ys = append(xs, x), append(ys, y)
			}
		}
		var mx, my float64
		for i := range xs {
			mx, my = mx+xs[i], my+ys[i]
		}
		mx, my = mx/float64(len(xs)), my/float64(len(xs))
		var sxy, sxx float64
		for i := range xs {
			sxy += (xs[i] - mx) * (ys[i] - my)
			sxx += (xs[i] - mx) * (xs[i] - mx)
		}
		b = sxy / sxx
		return my - b*mx, b
	}
	fitted := func(param string) func(pbRecord) bool {
		return func(r pbRecord) bool { fittedSide(&r); return strings.Contains(r.fittedFor, param) }
	}
	llA, llB := line(func(r pbRecord) (float64, float64, bool) {
		fittedSide(&r)
		return float64((r.Threads + 31) / 32), r.measured, strings.Contains(r.fittedFor, "gpu.ll_iter")
	})
	vecA, vecB := line(func(r pbRecord) (float64, float64, bool) {
		ok := r.Kind == "loop" && r.Loop == "copy" && r.Sources == 1 && r.Src == "local" && r.Dst == "local" &&
			r.Blocks == 1 && r.Unroll > 1 && !(r.Unroll == 8 && r.Threads == 512)
		return float64(r.Threads / 32), (r.measured - 396.7529) / float64(r.Unroll-1), ok
	})
	one := func(param string) float64 {
		for _, r := range recs {
			if fitted(param)(r) {
				return r.measured
			}
		}
		t.Fatalf("no fitted record for %s", param)
		return 0
	}
	var pollLocal float64
	for _, r := range recs {
		if r.Kind == "poll" && r.Target == "local" && r.Request == "load_volatile" && r.Spacing == 0 && r.Blocks == 1 {
			pollLocal = r.measured
		}
	}
	for name, want := range map[string]float64{
		"hostmem.poll_service":       throughOrigin(fitted("hostmem.poll_service")),
		"hostmem.atomic_service":     throughOrigin(fitted("hostmem.atomic_service")),
		"gpu.ll_iter_overhead":       llA - chaseLocal,
		"gpu.ll_iter_per_warp":       llB,
		"gpu.copy_iter_overhead":     one("gpu.copy_iter_overhead") - chaseLocal,
		"gpu.sm_load_bandwidth":      512 * 16 * 8 / one("gpu.sm_load_bandwidth"),
		"nccl.simple_step_overhead":  one("nccl.simple_step_overhead"),
		"gpu.vector_issue":           vecA,
		"gpu.vector_issue_per_warp":  vecB,
		"gpu.vector_load_extra_pcie": readOnlyHost - chaseHost,
		"gpu.fence_posted_extra":     fenceHost - fenceLocal,
		"gpu.poll_loop_overhead":     pollLocal - chaseLocal,
	} {
		got := ps.Get(name)
		assert.InEpsilon(t, want, got, 0.01, "%s: the capture gives %.4g, the preset has %.4g", name, want, got)
		p, _ := ps.Lookup(name)
		assert.Contains(t, p.Source, "testdata/h200x1-arsim/perblock.jsonl", name)
	}
}
