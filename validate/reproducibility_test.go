package validate

import (
	"fmt"
	"math"
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
