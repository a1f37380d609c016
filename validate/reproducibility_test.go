package validate

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/trace"
)

// The measurement floor of eager NCCL calls. Two captures of the same
// eager bf16 allreduce configurations on the same machine type and
// software (testdata/h200x2, the shared set; testdata/h200x2-arsim, the
// project's own capture) disagree with each other far more than the
// validation target allows: the per-call time of an eager call is the
// host's issue cost, which changes from process to process and
// communicator to communicator (22–55 µs for identical device work). No
// machine model can predict those records to within 25 % at the 95th
// percentile; validate reports them apart as host-paced. This test pins the
// figures the README and the closing notes quote, and fails if a future
// capture turns out reproducible.
func TestEagerNCCLCapturesDisagree(t *testing.T) {
	type key struct {
		algo, proto string
		transport   trace.Transport
		bytes       int64
	}
	load := func(path string) map[key]float64 {
		recs, _, err := trace.ReadJSONLFile(path, trace.ReadOptions{})
		require.NoError(t, err)
		out := map[key]float64{}
		for _, r := range recs {
			if r.Kind == trace.KindAllreduce && r.Impl == "nccl" && r.Launch == "eager" && r.Dtype == "bf16" && r.MaxChannels == 0 {
				out[key{r.Algo, r.Proto, r.Transport, r.Bytes}] = r.Us
			}
		}
		return out
	}
	shared := load(sharedTrace)
	own := load("../testdata/h200x2-arsim/measurements.jsonl")
	var dev []float64
	for k, a := range shared {
		if b, ok := own[k]; ok {
			dev = append(dev, math.Abs(b/a-1)*100)
		}
	}
	require.GreaterOrEqual(t, len(dev), 50, "matched eager NCCL records")
	med, p95 := median(dev), nearestRank(dev, 95)
	over := 0
	for _, d := range dev {
		if d > 25 {
			over++
		}
	}
	t.Logf("%d eager NCCL configurations in both captures: |difference| median %.1f%%, p95 %.1f%%, %d over 25%%", len(dev), med, p95, over)
	assert.Greater(t, p95, 25.0, fmt.Sprintf("captures agree to p95 %.1f%%: eager records are reproducible now", p95))
}

// Runs of the per-block suite repeat on their instance and differ across
// H200 instances in a few mechanisms only (testdata/h200x1-arsim/README.md
// quotes these figures): perblock_3b repeats perblock_3 on the same
// instance a minute later; perblock, perblock_2 and perblock_3 are three
// instances. Records are matched by their whole configuration.
func TestPerBlockRunsRepeat(t *testing.T) {
	dir := "../testdata/h200x1-arsim/"
	files := map[string]map[string]float64{}
	for _, f := range []string{"perblock", "perblock_2", "perblock_3", "perblock_3b", "perblock_4"} {
		files[f] = perBlockByConfig(t, dir+f+".jsonl")
	}
	diff := func(a, b string) []float64 {
		var d []float64
		for k, x := range files[a] {
			if y, ok := files[b][k]; ok && x > 0 {
				d = append(d, math.Abs(y/x-1)*100)
			}
		}
		return d
	}
	for _, p := range [][2]string{{"perblock_3", "perblock_3b"}, {"perblock", "perblock_3"}, {"perblock_2", "perblock_3"}, {"perblock", "perblock_2"}, {"perblock_3", "perblock_4"}} {
		d := diff(p[0], p[1])
		require.NotEmpty(t, d, "%v", p)
		t.Logf("%s against %s: %d records, |difference| median %.1f%%, p95 %.1f%%", p[1], p[0], len(d), median(d), nearestRank(d, 95))
	}
	same := diff("perblock_3", "perblock_3b")
	assert.Less(t, median(same), 1.0, "a run repeats on its instance (median)")
	assert.Less(t, nearestRank(same, 95), 10.0, "a run repeats on its instance (p95)")

	// Local polls: a relaxed load saves 27 ns a poll against a volatile
	// one on every instance, at every block count and spacing (23.9–28.0).
	for name, recs := range files {
		pairs := 0
		for k, vol := range recs {
			if !strings.Contains(k, "request=load_volatile") || !strings.Contains(k, "target=local") {
				continue
			}
			rel, ok := recs[strings.Replace(k, "load_volatile", "load_relaxed", 1)]
			require.True(t, ok, "%s: %s has no relaxed twin", name, k)
			assert.InDelta(t, 27.0, vol-rel, 3.5, "%s %s", name, k)
			pairs++
		}
		assert.Equal(t, 32, pairs, "%s: local volatile and relaxed polls", name)
	}
	// Local atomics: one instance of the three is far slower.
	atomics := func(a, b string) float64 {
		var d []float64
		for k, x := range files[a] {
			if y, ok := files[b][k]; ok && strings.Contains(k, "request=atomic_") && strings.Contains(k, "target=local") {
				d = append(d, (y/x-1)*100)
			}
		}
		return median(d)
	}
	assert.InDelta(t, 0, atomics("perblock", "perblock_3"), 5.0, "local atomics, two instances that agree")
	assert.Greater(t, atomics("perblock", "perblock_2"), 30.0, "local atomics, the instance that does not")
}

// perBlockByConfig reads a per-block capture as its primary value by
// configuration (trace.Record.Configuration).
func perBlockByConfig(t *testing.T, path string) map[string]float64 {
	t.Helper()
	recs, bad, err := trace.ReadJSONLFile(path, trace.ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, bad)
	out := map[string]float64{}
	for _, r := range recs {
		v, _, err := r.Primary()
		require.NoError(t, err)
		if c := r.Configuration(); out[c] == 0 {
			out[c] = v
		}
	}
	return out
}
