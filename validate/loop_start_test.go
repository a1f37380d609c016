package validate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// gpu.loop_start and gpu.loop_start_per_warp from their fitted side: with
// both at 0, each fitted copy's iterations × (measured − simulated) ns per
// iteration is what its first iteration waits beyond the model's; the
// least-squares line of those over the block's warps gives the two.
func TestLoopStartFromItsFittedSide(t *testing.T) {
	p, err := topology.Lookup("h200x1")
	require.NoError(t, err)
	ps := p.DefaultParams()
	for _, name := range []string{"gpu.loop_start", "gpu.loop_start_per_warp"} {
		require.NoError(t, ps.Set(name, 0, "zero for the fit"))
	}
	var warps, extra []float64
	for _, file := range []string{"store_width.jsonl", "store_depth.jsonl"} {
		path := "../testdata/h200x1-arsim/" + file
		recs, bad, err := trace.ReadJSONLFile(path, trace.ReadOptions{})
		require.NoError(t, err)
		require.Empty(t, bad)
		v, err := Run(recs, Options{File: path, Params: map[string]*topology.Params{"h200x1": ps}})
		require.NoError(t, err)
		byLine := recordsByLine(recs)
		for _, c := range v.Records {
			if c.FittedFor != "gpu.loop_start, gpu.loop_start_per_warp" {
				continue
			}
			r := byLine[c.Line]
			t.Logf("%s line %d: %d threads, %d iterations: measured %.1f, simulated %.1f ns", file, c.Line, r.Threads, r.Iters, c.Measured, c.Predicted)
			warps = append(warps, float64(r.Threads/32))
			extra = append(extra, float64(r.Iters)*(c.Measured-c.Predicted))
		}
	}
	require.Len(t, warps, 4)
	a, b := line(warps, extra)
	t.Logf("loop start %.2f ns + %.3f ns per warp", a, b)
	assert.InDelta(t, a, ps0(t, "gpu.loop_start"), 0.05)
	assert.InDelta(t, b, ps0(t, "gpu.loop_start_per_warp"), 0.005)
}

// line fits y = a + b·x by least squares.
func line(xs, ys []float64) (a, b float64) {
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

// ps0 is a parameter of the h200x1 preset as it ships.
func ps0(t *testing.T, name string) float64 {
	t.Helper()
	p, err := topology.Lookup("h200x1")
	require.NoError(t, err)
	return p.DefaultParams().Get(name)
}
