package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCalibrateCLI fits copy-engine setup times on the shared capture's
// memcpy records, writes the file and loads it back with validate --params.
func TestCalibrateCLI(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile(validateShared)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(src), "\n")
	memcpy := filepath.Join(dir, "memcpy.jsonl")
	require.NoError(t, os.WriteFile(memcpy, []byte(strings.Join(lines[:81], "")), 0o644))
	outFile := filepath.Join(dir, "fitted.params")
	out, _, err := runValidateCLI("calibrate", "--traces", memcpy, "--fit", "ce.setup,ce.p2p_setup,smp.latency", "--params-out", outFile)
	require.NoError(t, err)
	for _, want := range []string{"Calibration of preset h200x2", "ce.setup", "smp.latency", "no effect", "fitted", "held out", "wrote " + outFile} {
		assert.Contains(t, out, want)
	}
	b, err := os.ReadFile(outFile)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(b), "# preset: h200x2\n"), string(b))
	assert.Contains(t, string(b), "ce.setup = ")
	assert.NotContains(t, string(b), "smp.latency = ")
	assert.Contains(t, string(b), "fitted by arsim calibrate on 54 records of "+memcpy)

	out, _, err = runValidateCLI("validate", "--traces", validateShared, "--params", outFile)
	require.NoError(t, err)
	assert.Contains(t, out, "records simulated  419")
}
