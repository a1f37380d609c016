package scenarios

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// The shared capture testdata/h200x2 is the held-out test of #5: no
// parameter may be derived from it. Every value measured on the H200
// machine comes from the project's own captures (testdata/h200x2-arsim).
var sharedSetRef = regexp.MustCompile(`h200x2(?:$|[^-])`)

func TestNoParameterDerivedFromTheSharedValidationSet(t *testing.T) {
	for _, name := range topology.Presets() {
		pr, err := topology.Lookup(name)
		require.NoError(t, err)
		for _, p := range pr.DefaultParams().All() {
			assert.Falsef(t, sharedSetRef.MatchString(p.Source),
				"%s: %s cites the shared validation set (source %q); derive it from testdata/h200x2-arsim", name, p.Name, p.Source)
		}
	}
}

func readOwn(t *testing.T, files ...string) []trace.Record {
	t.Helper()
	var all []trace.Record
	for _, f := range files {
		recs, bad, err := trace.ReadJSONLFile("../testdata/h200x2-arsim/"+f, trace.ReadOptions{})
		require.NoError(t, err, f)
		require.Empty(t, bad, f)
		all = append(all, recs...)
	}
	return all
}

// The host-issue parameters of the h200x2 preset are the medians this test
// recomputes from the committed captures, rounded to three significant
// digits; the test fails when a value and its capture drift apart.
func TestH200HostCostsComeFromOwnCaptures(t *testing.T) {
	pr, err := topology.Lookup("h200x2")
	require.NoError(t, err)
	ps := pr.DefaultParams()
	host := readOwn(t, "host_costs.jsonl", "host_costs_copies.jsonl")
	main := readOwn(t, "measurements.jsonl")

	sel := func(keep func(r trace.Record) bool) []float64 {
		var v []float64
		for _, r := range host {
			if keep(r) {
				v = append(v, r.Us)
			}
		}
		return v
	}
	copyRec := func(dir string) func(r trace.Record) bool {
		return func(r trace.Record) bool {
			return r.Kind == trace.KindMemcpy && r.Dir == dir && extraString(r, "api") == "torch.copy_"
		}
	}
	small := func(dir string) []float64 {
		return sel(func(r trace.Record) bool { return copyRec(dir)(r) && r.Bytes <= 65536 })
	}
	eagerAR := func(impl, algo string) func(r trace.Record) bool {
		return func(r trace.Record) bool {
			return r.Kind == trace.KindAllreduce && r.Launch == "eager" && r.Impl == impl && r.Algo == algo && r.Bytes <= 4096
		}
	}

	// PyTorch's peer copy minus cudaMemcpyAsync of the same size (the
	// median over process launches at each size), below and from the step.
	p2p := map[int64][]float64{}
	for _, r := range host {
		if copyRec("p2p")(r) {
			p2p[r.Bytes] = append(p2p[r.Bytes], r.Us)
		}
	}
	raw := map[int64]float64{}
	for _, r := range main {
		if r.Kind == trace.KindMemcpy && r.Dir == "p2p" && extraString(r, "api") == "cudaMemcpyAsync" && extraInt(r, "streams", 1) == 1 {
			raw[r.Bytes] = r.Us
		}
	}
	large := ps.Get("torch.p2p_copy_large")
	var below, above []float64
	for b, v := range p2p {
		c, ok := raw[b]
		require.Truef(t, ok, "no cudaMemcpyAsync p2p record of %d B", b)
		if float64(b) < large {
			below = append(below, median(v)-c)
		} else {
			above = append(above, median(v)-c)
		}
	}

	want := []struct {
		param string
		n     int // records (or, for the differences, sizes) behind the value
		min   int // and at least how many there must be
		value float64
	}{
		{"torch.copy_issue_h2d", len(small("h2d")), 100, median(small("h2d"))},
		{"torch.copy_issue_d2h", len(small("d2h")), 100, median(small("d2h"))},
		{"torch.copy_issue_p2p", len(small("p2p")), 100, median(small("p2p"))},
		{"torch.p2p_copy_overhead", len(below), 8, median(below)},
		{"torch.p2p_copy_overhead_large", len(above), 8, median(above)},
		{"torch.nccl_eager_issue", len(sel(eagerAR("nccl", "auto"))), 40, median(sel(eagerAR("nccl", "auto")))},
		{"torch.symm_mem_one_shot_eager_issue", len(sel(eagerAR("torch_symm_mem", "one_shot"))), 40, median(sel(eagerAR("torch_symm_mem", "one_shot")))},
		{"torch.symm_mem_two_shot_eager_issue", len(sel(eagerAR("torch_symm_mem", "two_shot"))), 40, median(sel(eagerAR("torch_symm_mem", "two_shot")))},
	}
	for _, w := range want {
		got := ps.Get(w.param)
		assert.InDeltaf(t, round3(w.value), got, 1e-9, "%s: preset %g, captures give %g", w.param, got, w.value)
		assert.GreaterOrEqualf(t, w.n, w.min, "%s from too few records", w.param)
	}
}

// round3 rounds to three significant digits.
func round3(v float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 3, 64), 64)
	return r
}
