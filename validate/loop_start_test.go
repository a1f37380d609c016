package validate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// gpu.loop_start and gpu.loop_start_per_load from their fitted side
// (loop_start.jsonl): each one-load copy of n = 1, 2, 4 iterations waits
// n × (its ns per iteration − the same copy's at 64 iterations) beyond
// steady iterations; the least-squares line of that over warps × loads a
// thread issues (n, at most gpu.loop_start_loads) gives the two.
func TestLoopStartFromItsFittedSide(t *testing.T) {
	recs, bad, err := trace.ReadJSONLFile("../testdata/h200x1-arsim/loop_start.jsonl", trace.ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, bad)
	type copyKey struct {
		dst            string
		threads, iters int
	}
	ns := map[copyKey]float64{}
	for _, r := range recs {
		if f, _ := fitOf("testdata/h200x1-arsim/loop_start.jsonl", r); f != nil && f.Params[0] == "gpu.loop_start" {
			ns[copyKey{r.Dst, r.Threads, r.Iters}] = r.NsPerIter
		}
	}
	require.Len(t, ns, 32)
	p, err := topology.Lookup("h200x1")
	require.NoError(t, err)
	ps := p.DefaultParams()
	var xs, ys []float64
	for k, v := range ns {
		if k.iters == 64 {
			continue
		}
		steady, ok := ns[copyKey{k.dst, k.threads, 64}]
		require.True(t, ok, "%+v", k)
		xs = append(xs, float64(k.threads/32)*min(float64(k.iters), ps.Get("gpu.loop_start_loads")))
		ys = append(ys, float64(k.iters)*(v-steady))
	}
	require.Len(t, xs, 24)
	a, b := line(xs, ys)
	t.Logf("loop start %.2f ns + %.4f ns a warp and load", a, b)
	assert.InDelta(t, a, ps.Get("gpu.loop_start"), 0.05)
	assert.InDelta(t, b, ps.Get("gpu.loop_start_per_load"), 0.0005)
}

// gpu.load_wait_host from its fitted side: each of perblock.jsonl's four
// two-source copies from host memory that wait more than once an iteration
// (three times, by their SASS), simulated with the parameter at 0, leaves
// (measured − simulated) / (waits − 1) a further wait; the parameter is
// their mean.
func TestLoadWaitHostFromItsFittedSide(t *testing.T) {
	const file = "../testdata/h200x1-arsim/perblock.jsonl"
	recs, bad, err := trace.ReadJSONLFile(file, trace.ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, bad)
	p, err := topology.Lookup("h200x1")
	require.NoError(t, err)
	ps := p.DefaultParams()
	want := ps.Get("gpu.load_wait_host")
	require.NoError(t, ps.Set("gpu.load_wait_host", 0, "zero for the fit"))
	v, err := Run(recs, Options{File: file, Params: map[string]*topology.Params{"h200x1": ps}})
	require.NoError(t, err)
	byLine := recordsByLine(recs)
	var per []float64
	for _, r := range v.Records {
		if r.FittedFor != "gpu.load_wait_host" {
			continue
		}
		waits, err := loadWaits(byLine[r.Line])
		require.NoError(t, err)
		require.Greater(t, waits, 1, "line %d", r.Line)
		per = append(per, (r.Measured-r.Predicted)/float64(waits-1))
	}
	require.Len(t, per, 4)
	var sum float64
	for _, x := range per {
		sum += x
	}
	t.Logf("further waits over host memory: %.1f ns each (%v)", sum/4, per)
	assert.InDelta(t, want, sum/4, 0.1)
}

// gpu.vector_issue_l2 and gpu.load_wait_l2 from their fitted side:
// load_waits_lb.jsonl's copies from the L2 that keep their registers. The
// two are what minimises the squared error of the model's own values over
// those records (a further load and a further wait add to the loop's
// chain, which the SM's issue bounds from below: not a linear fit), found
// here by coordinate descent from 0.
func TestL2WaitsFromTheirFittedSide(t *testing.T) {
	const file = "../testdata/h200x1-arsim/load_waits_lb.jsonl"
	all, bad, err := trace.ReadJSONLFile(file, trace.ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, bad)
	var recs []trace.Record
	for _, r := range all {
		if r.Kind == trace.KindLoop && l2WaitSide(r) {
			recs = append(recs, r)
		}
	}
	require.Len(t, recs, 10, "the ten builds that keep their registers")
	p, err := topology.Lookup("h200x1")
	require.NoError(t, err)
	ps := p.DefaultParams()
	names := [2]string{"gpu.vector_issue_l2", "gpu.load_wait_l2"}
	want := [2]float64{ps.Get(names[0]), ps.Get(names[1])}
	sim := func(x [2]float64) []float64 {
		for i, n := range names {
			require.NoError(t, ps.Set(n, x[i], "fit"))
		}
		v, err := Run(recs, Options{File: file, Params: map[string]*topology.Params{"h200x1": ps}})
		require.NoError(t, err)
		require.Len(t, v.Records, len(recs))
		out := make([]float64, len(recs))
		for i, r := range v.Records {
			require.Equal(t, "gpu.vector_issue_l2, gpu.load_wait_l2", r.FittedFor)
			out[i] = r.Predicted
		}
		return out
	}
	sse := func(x [2]float64) float64 {
		var s float64
		for i, p := range sim(x) {
			s += (p - recs[i].NsPerIter) * (p - recs[i].NsPerIter)
		}
		return s
	}
	// Gauss-Newton with the model's own slopes (each parameter moved by
	// 1 ns): where the chain sets a record, its value is linear in both.
	// It starts from gpu.vector_issue (over fresh data) and 100 ns a wait:
	// at 0 the SM's issue sets every record, and no slope shows.
	x := [2]float64{ps.Get("gpu.vector_issue"), 100}
	for range 20 {
		p := sim(x)
		var j [2][]float64
		for k := range x {
			y := x
			y[k]++
			q := sim(y)
			j[k] = make([]float64, len(p))
			for i := range p {
				j[k][i] = q[i] - p[i]
			}
		}
		var a, b, c, ra, rb float64
		for i := range p {
			r := recs[i].NsPerIter - p[i]
			a, b, c, ra, rb = a+j[0][i]*j[0][i], b+j[0][i]*j[1][i], c+j[1][i]*j[1][i], ra+j[0][i]*r, rb+j[1][i]*r
		}
		det := a*c - b*b
		require.Positive(t, det)
		x = [2]float64{max(0, x[0]+(c*ra-b*rb)/det), max(0, x[1]+(a*rb-b*ra)/det)}
	}
	t.Logf("from the L2: %.2f ns a further load, %.2f ns a further wait (squared error %.0f; at the preset %.0f)", x[0], x[1], sse(x), sse(want))
	assert.InDelta(t, want[0], x[0], 0.02)
	assert.InDelta(t, want[1], x[1], 0.1)
}

// gpu.spill_reload_wait from its fitted side: the value at which the
// model's iteration of the spilling copy (pb_copy_8_2, plain sources, one
// block of 128 threads, GPU memory to GPU memory) equals the measured one.
func TestSpillReloadWaitFromItsFittedSide(t *testing.T) {
	const file = "../testdata/h200x1-arsim/perblock.jsonl"
	side := fittedOn(t, "perblock.jsonl", "gpu.spill_reload_wait")
	require.Len(t, side, 1)
	p, err := topology.Lookup("h200x1")
	require.NoError(t, err)
	errAt := func(x float64) float64 {
		ps := p.DefaultParams()
		require.NoError(t, ps.Set("gpu.spill_reload_wait", x, "bisection"))
		v, err := Run(side, Options{File: file, Params: map[string]*topology.Params{"h200x1": ps}})
		require.NoError(t, err)
		require.Len(t, v.Records, 1)
		return v.Records[0].Predicted - v.Records[0].Measured
	}
	lo, hi := 0.0, 2000.0
	require.Negative(t, errAt(lo))
	require.Positive(t, errAt(hi))
	for hi-lo > 0.001 {
		if mid := (lo + hi) / 2; errAt(mid) < 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	t.Logf("a spilling copy's reload wait: %.2f ns", lo)
	assert.InDelta(t, lo, p.DefaultParams().Get("gpu.spill_reload_wait"), 0.01)
}
