package trace

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each format is told apart by its content, whatever the file is called.
func TestDetectFormat(t *testing.T) {
	for file, want := range map[string]Format{
		"testdata/nccltests/all_reduce_perf_8gpu.txt":      FormatNCCLTests,
		"testdata/nccltests/all_reduce_perf.truncated.txt": FormatNCCLTests,
		"testdata/nccltests/all_gather_perf_g2.txt":        FormatNCCLTests,
		"testdata/kineto/rank0_allreduce.json":             FormatKineto,
		"../testdata/h200x2/measurements.jsonl":            FormatJSONL,
	} {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		assert.Equal(t, want, DetectFormat(data), file)
	}
	assert.Equal(t, FormatKineto, DetectFormat([]byte(`[{"ph":"X"}]`)))
	assert.Equal(t, FormatJSONL, DetectFormat([]byte(`{"kind":"allreduce","traceEvents":1}`+"\n")))
	assert.Equal(t, FormatUnknown, DetectFormat([]byte("hello\n")))
	assert.Equal(t, "nccl-tests output", FormatNCCLTests.String())
}

// The "graph:" header says whether the operations ran in CUDA graphs.
func TestNCCLTestsGraphHeader(t *testing.T) {
	run, _, err := ReadNCCLTestsFile("testdata/nccltests/all_reduce_perf.truncated.txt", ReadOptions{SkipBad: true})
	require.NoError(t, err)
	assert.Equal(t, 1, run.Graph)
	run, _, err = ReadNCCLTestsFile("testdata/nccltests/all_reduce_perf_8gpu.txt", ReadOptions{})
	require.NoError(t, err)
	assert.Equal(t, 0, run.Graph)
}

// FuzzDetectFormat: detection never panics and agrees with itself.
func FuzzDetectFormat(f *testing.F) {
	for _, s := range []string{"# nThread 1 nGpus 2", "{\"traceEvents\":[]}", "{\"kind\":\"x\"}\n", "[", "#  size count type"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if DetectFormat(data) != DetectFormat(append([]byte(nil), data...)) {
			t.Fatal("not deterministic")
		}
	})
}
