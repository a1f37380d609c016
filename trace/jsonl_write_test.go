package trace

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every committed capture reads, writes and reads back to the same
// records: the typed fields are the format's fields, spelled as on disk.
func TestWriteJSONLReadsBack(t *testing.T) {
	files, err := filepath.Glob("../testdata/*/*.jsonl")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		recs, bad, err := ReadJSONLFile(f, ReadOptions{SkipBad: true})
		require.NoError(t, err, f)
		var buf bytes.Buffer
		require.NoError(t, WriteJSONL(&buf, recs))
		back, badBack, err := ReadJSONL(&buf, "written", ReadOptions{})
		require.NoError(t, err, f)
		assert.Empty(t, badBack)
		require.Len(t, back, len(recs), f)
		for i := range recs {
			back[i].Line = recs[i].Line
			back[i].SMHalves = recs[i].SMHalves // the file beside the trace's, not the record's
			back[i].NCCLRelease = recs[i].NCCLRelease
			back[i].PCIeTags = recs[i].PCIeTags
			back[i].RunPhases = recs[i].RunPhases
			assert.Equal(t, recs[i], back[i], "%s line %d", f, recs[i].Line)
		}
		t.Logf("%s: %d records, %d bad lines", f, len(recs), len(bad))
	}
}

// The fields tools/capture writes beyond the table's core are typed, not
// left in Extra.
func TestReadJSONLTypedCaptureFields(t *testing.T) {
	in := `{"system": "s", "clock": "device_events", "kind": "memcpy", "dir": "bidir", "bytes": 4, "us": 6.5, "api": "cudaMemcpyAsync", "streams": 2, "transfers": 4}
{"system": "s", "clock": "device_events", "kind": "empty_kernel", "launch": "eager", "us": 4.1, "mode": "back_to_back", "prefill_us": 0}
{"system": "s", "clock": "device_events", "kind": "empty_kernel", "launch": "eager", "us": 4.1, "mode": "back_to_back", "prefill_us": 20000}
{"system": "s", "clock": "device_events", "kind": "flag_pingpong", "via": "peer", "one_way_us": 0.6, "round_trips": 2000}
{"system": "s", "clock": "device_events", "kind": "allreduce", "launch": "cudagraph", "world": 2, "dtype": "bf16", "bytes": 8, "impl": "nccl", "algo": "ring", "proto": "simple", "transport": "shm", "us": 9, "nccl_env": {"NCCL_NTHREADS": "128"}}
`
	recs, _, err := ReadJSONL(bytes.NewReader([]byte(in)), "x.jsonl", ReadOptions{})
	require.NoError(t, err)
	require.Len(t, recs, 5)
	for _, r := range recs {
		assert.Empty(t, r.Extra, "line %d", r.Line)
	}
	assert.Equal(t, "cudaMemcpyAsync", recs[0].API)
	assert.Equal(t, 2, recs[0].Streams)
	assert.Equal(t, 4, recs[0].Transfers)
	assert.Equal(t, "back_to_back", recs[1].Mode)
	assert.Zero(t, recs[1].PrefillUs)
	assert.Equal(t, 20000.0, recs[2].PrefillUs)
	assert.Equal(t, 2000, recs[3].RoundTrips)
	assert.Equal(t, LaunchCUDAGraph, recs[4].Launch)
	assert.Equal(t, ImplNCCL, recs[4].Impl)
	assert.Equal(t, TransportSHM, recs[4].Transport)
	assert.Equal(t, map[string]string{"NCCL_NTHREADS": "128"}, recs[4].NCCLEnv)
}

func TestParseTypedValues(t *testing.T) {
	l, err := ParseLaunch("eager")
	require.NoError(t, err)
	assert.Equal(t, LaunchEager, l)
	assert.Equal(t, "eager", l.String())
	_, err = ParseLaunch("graph")
	assert.EqualError(t, err, `trace: launch "graph" is not one of cudagraph, eager`)
	i, err := ParseImpl("torch_symm_mem")
	require.NoError(t, err)
	assert.Equal(t, ImplTorchSymmMem, i)
	_, err = ParseImpl("gloo")
	assert.ErrorContains(t, err, "arsim_flag_one_shot, arsim_flag_two_shot, host_staged_one_shot, nccl, torch_symm_mem")
	tr, err := ParseTransport("host_memory")
	require.NoError(t, err)
	assert.Equal(t, "host_memory", tr.String())
	_, err = ParseTransport("rdma")
	assert.ErrorContains(t, err, `transport "rdma"`)
}
