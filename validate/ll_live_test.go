package validate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/trace"
)

// testdata/h200x1-arsim/ll_live.jsonl: LL receive loops whose lines another
// block writes at the same time (as NCCL's LL runs between two GPUs) cost
// what loops over lines written earlier cost, 1–7 % more (no gain from
// fresh lines, no loss from polling just behind the stores); a producer
// that pauses sets the pace instead, and validate does not simulate those
// (their time is the producer's). The other receivers are simulated as the
// LL loop fitted on the capture's other kernel (pb_ll), which this kernel
// beats by 25–46 % (docs/VALIDATION.md).
func TestLLReceiveBehindALiveProducer(t *testing.T) {
	const file = "../testdata/h200x1-arsim/ll_live.jsonl"
	recs, bad, err := trace.ReadJSONLFile(file, trace.ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, bad)
	type key struct {
		recv    string
		threads int
	}
	by := map[string]map[key]float64{}
	for _, r := range recs {
		if r.Producer == "" {
			continue
		}
		if by[r.Producer] == nil {
			by[r.Producer] = map[key]float64{}
		}
		by[r.Producer][key{r.Recv, r.Threads}] = r.NsPerIter
	}
	require.Len(t, by, 4)
	for k, before := range by["before"] {
		live, stale, paced := by["live"][k], by["stale"][k], by["paced"][k]
		require.Positive(t, live, "%v", k)
		assert.InEpsilon(t, before, stale, 0.05, "%v: lines written just before or long before", k)
		assert.GreaterOrEqual(t, live, 0.99*before, "%v: fresh lines are no faster", k)
		assert.Less(t, live, 1.08*before, "%v: a receiver right behind live stores", k)
		assert.Greater(t, paced, 1.1*live, "%v: a paced producer sets the pace", k)
	}
	v, err := Run(recs, Options{File: file})
	require.NoError(t, err)
	simulated := 0
	for _, c := range v.Records {
		if r := recs[c.Line-1]; r.Producer != "" {
			require.Equal(t, c.Line, r.Line)
			assert.NotEqual(t, "paced", r.Producer)
			simulated++
		}
	}
	assert.Equal(t, 36, simulated, "stale, before and live receivers are simulated")
	assert.NotEmpty(t, v.Skipped, "the paced ones are not")
}
