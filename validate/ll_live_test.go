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

// testdata/h200x1-arsim/ll_live_2.jsonl adds receivers whose lines were
// written just before and then pushed out of the caches by 128 MiB of
// other writes (producer "evicted"): the same loop is 15–22 % slower over
// host lines (the host's last-level cache against its DRAM) and about
// twice as slow over local ones (the GPU's L2 against HBM). The LL
// parameters are fitted on lines behind a 96 MiB fill, the evicted case.
func TestLLReceiveDependsOnWhereItsLinesAre(t *testing.T) {
	recs, bad, err := trace.ReadJSONLFile("../testdata/h200x1-arsim/ll_live_2.jsonl", trace.ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, bad)
	type key struct {
		recv     string
		threads  int
		producer string
	}
	ns := map[key]float64{}
	for _, r := range recs {
		if r.Producer != "" {
			ns[key{r.Recv, r.Threads, r.Producer}] = r.NsPerIter
		}
	}
	for _, th := range []int{64, 192, 320, 512, 640, 1024} {
		hb, he := ns[key{"host", th, "before"}], ns[key{"host", th, "evicted"}]
		lb, le := ns[key{"local", th, "before"}], ns[key{"local", th, "evicted"}]
		require.Positive(t, hb*he*lb*le, "threads %d", th)
		assert.Greater(t, he, 1.12*hb, "host, %d threads: evicted lines come from DRAM", th)
		assert.Less(t, he, 1.30*hb, "host, %d threads", th)
		assert.Greater(t, le, 1.6*lb, "local, %d threads: evicted lines come from HBM", th)
	}
}
