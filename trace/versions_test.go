package trace

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseNCCLVersions(t *testing.T) {
	for in, want := range map[string]string{
		`{"torch": "2.11.0+cu130", "nccl": "2.28.9", "gpus": 2}`: "2.28.9",
		`{"nccl": "2.21"}`:                  "2.21",
		`{"torch": "2.11.0"}`:               "",
		"2.11.0+cu130 (2, 28, 9)\n":         "2.28.9",
		"torch 2.4 nccl ( 2 ,21, 5 )":       "2.21.5",
		"no versions here":                  "",
		`{"nccl": ""}`:                      "error",
		`{"nccl": 22809}`:                   "error",
		`{"nccl": "latest"}`:                "error",
		"2.11.0+cu130 (2, 28, 99999999999)": "error",
	} {
		got, err := ParseNCCLVersions([]byte(in), "versions")
		if want == "error" {
			assert.Error(t, err, in)
			continue
		}
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
}

// A trace takes its capture's NCCL release from system/versions.json, else
// system/versions.txt, beside it; a malformed one is an error naming it.
func TestNCCLReleaseBesideATrace(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "cap.jsonl")
	line := `{"system": "s", "clock": "device_events", "kind": "empty_kernel", "launch": "cudagraph", "us": 0.5}` + "\n"
	require.NoError(t, os.WriteFile(trace, []byte(line), 0o644))
	recs, _, err := ReadJSONLFile(trace, ReadOptions{})
	require.NoError(t, err)
	assert.Equal(t, "", recs[0].NCCLRelease, "no versions file")
	require.NoError(t, os.Mkdir(filepath.Join(dir, "system"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "system", "versions.txt"), []byte("2.11.0 (2, 26, 2)"), 0o644))
	recs, _, err = ReadJSONLFile(trace, ReadOptions{})
	require.NoError(t, err)
	assert.Equal(t, "2.26.2", recs[0].NCCLRelease)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "system", "versions.json"), []byte(`{"nccl": "2.28.9"}`), 0o644))
	recs, _, err = ReadJSONLFile(trace, ReadOptions{})
	require.NoError(t, err)
	assert.Equal(t, "2.28.9", recs[0].NCCLRelease, "versions.json first")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "system", "versions.json"), []byte(`{"nccl": 2}`), 0o644))
	_, _, err = ReadJSONLFile(trace, ReadOptions{})
	assert.ErrorContains(t, err, "versions.json")
}

func FuzzParseNCCLVersions(f *testing.F) {
	for _, s := range []string{`{"nccl": "2.28.9"}`, "2.11.0+cu130 (2, 28, 9)", `{"nccl": 3}`, "(", `{"nccl": "2.2.2.2"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := ParseNCCLVersions(data, "fuzz")
		if err == nil && v != "" {
			assert.Regexp(t, `^\d{1,3}\.\d{1,3}(\.\d{1,3})?$`, v)
		}
	})
}
