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
