package validate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// gpu.sm_load_bandwidth and gpu.sm_local_store_bandwidth from their fitted
// side (nccl_copy.jsonl): a block that loads S bytes and stores 1 for
// each payload byte spends S/load + 1/store on it, so the copy (S = 1)
// and the two-source reduction (S = 2) of 64 KiB an iteration give both.
func TestSMIssueFromItsFittedSide(t *testing.T) {
	const file = "testdata/h200x1-arsim/nccl_copy.jsonl"
	recs, bad, err := trace.ReadJSONLFile("../"+file, trace.ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, bad)
	ns := map[int]float64{}
	for _, r := range recs {
		if f, _ := fitOf(file, r); f != nil && f.Params[0] == "gpu.sm_load_bandwidth" {
			_, dup := ns[r.Sources]
			require.False(t, dup, "line %d", r.Line)
			ns[r.Sources] = r.NsPerIter
		}
	}
	require.Len(t, ns, 2)
	const payload = 512 * 16 * 8 // bytes an iteration
	perLoad := (ns[2] - ns[1]) / payload
	perStore := ns[1]/payload - perLoad
	p, err := topology.Lookup("h200x1")
	require.NoError(t, err)
	ps := p.DefaultParams()
	t.Logf("load %.2f GB/s, store %.3f GB/s", 1/perLoad, 1/perStore)
	assert.InEpsilon(t, 1/perLoad, ps.Get("gpu.sm_load_bandwidth"), 1e-3)
	assert.InEpsilon(t, 1/perStore, ps.Get("gpu.sm_local_store_bandwidth"), 1e-3)
	for _, name := range []string{"gpu.sm_load_bandwidth", "gpu.sm_local_store_bandwidth"} {
		par, ok := ps.Lookup(name)
		require.True(t, ok, name)
		assert.Contains(t, par.Source, "nccl_copy.jsonl", name)
	}
}

// gpu.store_issue from its fitted side: one thread's burst of 16 stores to
// local memory (perblock.jsonl micro2, fence variant 16x16B).
func TestStoreIssueFromItsFittedSide(t *testing.T) {
	const file = "testdata/h200x1-arsim/perblock.jsonl"
	recs, _, err := trace.ReadJSONLFile("../"+file, trace.ReadOptions{SkipBad: true})
	require.NoError(t, err)
	var got []float64
	for _, r := range recs {
		if f, _ := fitOf(file, r); f != nil && f.Params[0] == "gpu.store_issue" {
			got = append(got, r.NsPerIter/16)
		}
	}
	require.Len(t, got, 1)
	p, err := topology.Lookup("h200x1")
	require.NoError(t, err)
	ps := p.DefaultParams()
	assert.InEpsilon(t, got[0], ps.Get("gpu.store_issue"), 1e-3)
	par, _ := ps.Lookup("gpu.store_issue")
	assert.Contains(t, par.Source, "perblock.jsonl")
}
