package trace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// the lines tools/capture's `capture.py all` prints around its phases
const runLog = `16:16:44 === phase system (elapsed 0s)
16:16:50 versions {  "python": "3.12.3" }
16:16:50 === phase system done in 6s
16:16:50 === phase perblock (elapsed 6s)
16:16:51 perblock sm clock start 1.9800 GHz
16:17:05 === phase perblock done in 15s
16:17:05 === phase micro2 (elapsed 21s)
16:17:11 === phase micro2 done in 6s
`

func TestReadRunPhases(t *testing.T) {
	got, err := ReadRunPhases(strings.NewReader(runLog), "run.log")
	require.NoError(t, err)
	assert.Equal(t, []string{"system", "perblock", "micro2"}, got)

	for in, want := range map[string][]string{
		"": nil,
		"13:01:25 perblock ll 0.4s, 103 records so far\n":      nil, // a part run alone: no phases
		"=== phase micro2 done in 6s\n":                        nil,
		"=== phase\n=== phase x\n":                             nil,
		"x === phase a (elapsed 1s)\n=== phase b (elapsed 2s)": {"a", "b"},
	} {
		got, err := ReadRunPhases(strings.NewReader(in), "run.log")
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	_, err = ReadRunPhases(strings.NewReader(strings.Repeat("x", maxRunLogBytes+2)), "run.log")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "run.log")
}

func TestPhasesAfter(t *testing.T) {
	for _, c := range []struct {
		phases []string
		want   bool
	}{
		{[]string{"system", "perblock", "micro2"}, true},
		{[]string{"system", "sm", "micro2"}, true},
		{[]string{"system", "micro2"}, false},
		{[]string{"system", "native-issue", "micro2"}, false},
		{[]string{"micro2", "perblock", "micro2"}, false}, // the first run of micro2 came before
		{[]string{"perblock"}, false},
		{nil, false},
	} {
		assert.Equal(t, c.want, PhasesAfter(c.phases, "micro2", "perblock", "sm"), c.phases)
	}
}

// A trace's records carry the phases of the run log beside it: its own
// system/run_<trace>.log, else the one system/*/run_<trace>.log; none
// where there are several.
func TestReadJSONLFileTakesTheRunLogBesideIt(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "cap.jsonl")
	require.NoError(t, os.WriteFile(tr, []byte(`{"system":"h100x1-vm","kind":"pointer_chase","clock":"sm_clock64","target":"host","ns_per_step":1000}`+"\n"), 0o644))
	read := func() []string {
		recs, _, err := ReadJSONLFile(tr, ReadOptions{})
		require.NoError(t, err)
		return recs[0].RunPhases
	}
	assert.Nil(t, read())

	sys := filepath.Join(dir, "system")
	for _, inst := range []string{"instance_1", "instance_2"} {
		require.NoError(t, os.MkdirAll(filepath.Join(sys, inst), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(sys, "instance_2", "run_cap.log"), []byte(runLog), 0o644))
	assert.Equal(t, []string{"system", "perblock", "micro2"}, read())
	require.NoError(t, os.WriteFile(filepath.Join(sys, "instance_1", "run_cap.log"), []byte("=== phase micro2 (elapsed 0s)\n"), 0o644))
	assert.Nil(t, read(), "two instances' logs: which one made the trace is not known")
	require.NoError(t, os.WriteFile(RunLogPath(tr), []byte("=== phase sm (elapsed 0s)\n"), 0o644))
	assert.Equal(t, filepath.Join(sys, "run_cap.log"), RunLogPath(tr))
	assert.Equal(t, []string{"sm"}, read(), "the trace's own log comes first")
}

func FuzzReadRunPhases(f *testing.F) {
	f.Add([]byte(runLog))
	f.Add([]byte("=== phase x (elapsed"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ReadRunPhases(strings.NewReader(string(data)), "fuzz")
		if err != nil {
			assert.Nil(t, got)
			return
		}
		for _, p := range got {
			require.NotEmpty(t, p)
			require.Contains(t, string(data), p)
			require.NotContains(t, p, " ")
		}
		require.LessOrEqual(t, len(got), strings.Count(string(data), phaseMark))
	})
}
