package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// arsim design lists proved candidates as JSON, writes the winner as a
// spec, and the spec runs under spec:FILE in sweep, timeline and check.
func TestDesignEndToEnd(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "winner.json")
	out, errOut, err := runCLI(t, "design", "--topology", "rtxpro6000x8-switches", "--bytes", "42KiB", "--budget", "60", "--format", "json", "--out", spec)
	require.NoError(t, err)
	var doc struct {
		Topology   string `json:"topology"`
		Candidates []struct {
			Name    string         `json:"name"`
			Us      float64        `json:"us"`
			Checked bool           `json:"checked"`
			Params  map[string]any `json:"params"`
			Binds   string         `json:"binds"`
		} `json:"candidates"`
		Builtins []struct {
			Name string  `json:"name"`
			Us   float64 `json:"us"`
		} `json:"builtins"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Equal(t, "rtxpro6000x8-switches", doc.Topology)
	require.GreaterOrEqual(t, len(doc.Candidates), 20)
	for i, c := range doc.Candidates {
		assert.True(t, c.Checked, c.Name)
		assert.NotEmpty(t, c.Params["shape"], c.Name)
		assert.Contains(t, c.Binds, "flag round", c.Name)
		if i > 0 {
			assert.LessOrEqual(t, doc.Candidates[i-1].Us, c.Us)
		}
	}
	for _, b := range doc.Builtins {
		assert.LessOrEqual(t, doc.Candidates[0].Us, b.Us, b.Name)
	}
	assert.Contains(t, errOut, "candidates proved and timed")
	assert.Contains(t, errOut, "wrote "+spec)

	out, _, err = runCLI(t, "sweep", "--topology", "rtxpro6000x8-switches", "--algos", "spec:"+spec+",two_stage", "--sizes", "42KiB", "--format", "csv")
	require.NoError(t, err)
	assert.Contains(t, out, "spec:"+spec+",43008,")
	_, _, err = runCLI(t, "check", "--algos", "spec:"+spec, "--ranks", "8", "--max-bytes", "1MiB")
	require.NoError(t, err)
	out, _, err = runCLI(t, "timeline", "--topology", "rtxpro6000x8-switches", "--algo", "spec:"+spec, "--out", filepath.Join(dir, "t.json"))
	require.NoError(t, err)
	assert.Contains(t, out, "spec:"+spec)
}

func TestDesignTableAndBadInput(t *testing.T) {
	out, _, err := runCLI(t, "design", "--bytes", "14KiB", "--budget", "40", "--show", "5")
	require.NoError(t, err)
	assert.Contains(t, out, "Design search on rtxpro6000x8-2numa, 8 ranks, 14 KiB (14336 B)")
	assert.Contains(t, out, "what binds")
	assert.Contains(t, out, "Best built-in at its defaults: ")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"design", "--bytes", "12 parsecs"}, "accepted forms"},
		{[]string{"design", "--format", "xml"}, `--format "xml" is not one of table, json`},
		{[]string{"design", "--ranks", "9"}, "--ranks 9: want 2–8"},
		{[]string{"design", "--budget", "0"}, "--budget 0: want 1–100000"},
		{[]string{"design", "--topology", "nope"}, `unknown preset "nope"`},
		{[]string{"sweep", "--algos", "spec:no-such.json"}, "no-such.json"},
	} {
		_, _, err := runCLI(t, c.args...)
		require.Error(t, err, "%v", c.args)
		assert.Contains(t, err.Error(), c.want, "%v", c.args)
		assert.Equal(t, 2, exitCode(err), "%v", c.args)
	}
}
