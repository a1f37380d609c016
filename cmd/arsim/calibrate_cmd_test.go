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

// --sizes keeps the allreduces of a size range: on the 4 × RTX 4090
// table's Simple rows (512 KiB–8 MiB) the per-call constant comes out
// about 40 µs, where the whole table's median, held by its large rows,
// leaves it at 0 (docs/VALIDATION.md); a range that keeps nothing and one
// that runs backwards are refused.
func TestCalibrateSizes(t *testing.T) {
	dir := t.TempDir()
	table := "../../testdata/nccltests/rtx4090x4_p2p.txt"
	base := []string{"calibrate", "--traces", table, "--topology", "../../testdata/topologies/pcie4_1socket_topo_m.txt",
		"--opts", "NCCL_P2P_LEVEL=SYS", "--fit", "nccl.call_extra.ring.simple", "--params-out", filepath.Join(dir, "p.params")}
	out, errOut, err := runCLI(t, append(base, "--sizes", "512KiB..8MiB")...)
	require.NoError(t, err)
	assert.Contains(t, errOut, "--sizes 512KiB..8MiB keeps 10 of the 42 records")
	assert.Regexp(t, `nccl.call_extra.ring.simple\s+µs\s+0\s+(3[5-9]|4[0-5])\.\d+\s+from 0\s+7\s+fitted`, out)
	assert.Contains(t, out, "held out  3 ")

	out, _, err = runCLI(t, base...)
	require.NoError(t, err)
	assert.Regexp(t, `nccl.call_extra.ring.simple\s+µs\s+0\s+0\s+\+0.00%\s+\d+\s+unchanged`, out)

	_, _, err = runCLI(t, append(base, "--sizes", "3MiB")...)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "keeps none of the 42 records")
	assert.Equal(t, 2, exitCode(err))
	_, _, err = runCLI(t, append(base, "--sizes", "8MiB..1MiB")...)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "runs backwards")
}

// A trace whose records name a graph file beside them (NCCL_GRAPH_FILE,
// relative to the trace's folder) calibrates as it validates: every
// record simulated, from any working directory.
func TestCalibrateReadsGraphFilesBesideTheTrace(t *testing.T) {
	out, _, err := runCLI(t, "calibrate", "--traces", pageTurin, "--topology", "rtxpro6000x8-2numa",
		"--fit", "nccl.call_extra.ring.ll,nccl.call_extra.ring.simple", "--holdout-every", "4",
		"--params-out", filepath.Join(t.TempDir(), "p.params"))
	require.NoError(t, err)
	assert.NotContains(t, out, "cannot be simulated")
	assert.Regexp(t, `nccl.call_extra.ring.ll\s+µs\s+0\s+\d+\.\d+\s+from 0\s+3\s+fitted`, out)
	assert.Contains(t, out, "fit       6 ")
	assert.Contains(t, out, "held out  2 ")
}

// --per-block recomputes a GPU's own per-block costs from its capture of
// the perblock part, writes them and validate loads them back; the
// host's stay the machine's.
func TestCalibratePerBlockCLI(t *testing.T) {
	dir := t.TempDir()
	outFile := filepath.Join(dir, "h100.params")
	capture := "../../testdata/h100x1-arsim/perblock_3.jsonl"
	out, _, err := runValidateCLI("calibrate", "--per-block", "--traces", capture, "--params-out", outFile)
	require.NoError(t, err)
	for _, want := range []string{"Per-block costs of h100x1 recomputed from " + capture, "gpu.fence_sys_local", "hostmem.line_contention", "the host's: kept", "wrote " + outFile} {
		assert.Contains(t, out, want)
	}
	b, err := os.ReadFile(outFile)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(b), "# preset: h100x1\n"), string(b))
	assert.Contains(t, string(b), "gpu.fence_sys_local = 689.09")
	assert.NotContains(t, string(b), "hostmem.")
	assert.NotContains(t, string(b), "pcie.")

	out, _, err = runValidateCLI("validate", "--traces", "../../testdata/h100x1-arsim/fence_queue.jsonl", "--params", outFile)
	require.NoError(t, err)
	assert.Contains(t, out, "records simulated")

	for _, bad := range [][]string{
		{"--per-block", "--traces", "../../testdata/h100x1-arsim/fence_queue.jsonl", "--params-out", outFile},
		{"--per-block", "--fit", "gpu.*", "--traces", capture, "--params-out", outFile},
		{"--per-block", "--traces", capture},
		{"--per-block", "--traces", capture, "--traces", "../../testdata/h200x1-arsim/perblock_3.jsonl", "--params-out", outFile},
	} {
		_, _, err := runValidateCLI(append([]string{"calibrate"}, bad...)...)
		assert.Error(t, err, "%v", bad)
	}

	// Several captures of one machine: the median of each.
	out, _, err = runValidateCLI("calibrate", "--per-block", "--traces", capture, "--traces", "../../testdata/h100x1-arsim/perblock_4.jsonl",
		"--traces", "../../testdata/h100x1-arsim/perblock_b.jsonl", "--params-out", outFile)
	require.NoError(t, err)
	assert.Contains(t, out, "recomputed from 3 captures, the median of each")
	b, err = os.ReadFile(outFile)
	require.NoError(t, err)
	assert.Contains(t, string(b), "gpu.fence_sys_local = 689.09", "the median of 689.1, 688.1 and 729.2")
}
