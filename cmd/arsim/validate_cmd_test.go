package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const validateShared = "../../testdata/h200x2/measurements.jsonl"

func runValidateCLI(args ...string) (string, string, error) {
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), err
}

func TestValidateTable(t *testing.T) {
	out, _, err := runValidateCLI("validate", "--traces", validateShared)
	require.NoError(t, err)
	for _, want := range []string{"line", "measured", "simulated", "nccl_model error", "Groups, worst median |error| first",
		"allreduce nccl/ring ll p2p cudagraph", "pointer_chase peer", "Summary", "records simulated  419", "records skipped    4",
		"median |error|", "p95 |error|", "nccl_model (NCCL's own estimate)", "Skipped (4)", "lines 400–403 (4): local HBM streaming is not modelled"} {
		assert.Contains(t, out, want)
	}
	// Groups come before the summary, the summary before the skipped list.
	assert.Less(t, strings.Index(out, "Groups,"), strings.Index(out, "Summary"))
	assert.Less(t, strings.Index(out, "Summary"), strings.Index(out, "Skipped (4)"))
}

func TestValidateJSON(t *testing.T) {
	out, _, err := runValidateCLI("validate", "--traces", validateShared, "--format", "json")
	require.NoError(t, err)
	var doc struct {
		Records []map[string]any `json:"records"`
		Skipped []map[string]any `json:"skipped"`
		Summary map[string]any   `json:"summary"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Len(t, doc.Records, 419)
	assert.Len(t, doc.Skipped, 4)
	assert.EqualValues(t, 419, doc.Summary["count"])
	assert.EqualValues(t, 4, doc.Summary["skipped"])
	assert.Contains(t, doc.Summary, "median_abs_error_pct")
	assert.Contains(t, doc.Summary, "p95_abs_error_pct")
	for _, r := range doc.Records {
		for _, k := range []string{"line", "kind", "system", "measured", "predicted", "error_pct"} {
			require.Contains(t, r, k)
		}
		m, p := r["measured"].(float64), r["predicted"].(float64)
		assert.InDelta(t, (p-m)/m*100, r["error_pct"].(float64), 1e-9)
	}
	for _, s := range doc.Skipped {
		assert.Contains(t, s, "line")
		assert.NotEmpty(t, s["reason"])
	}
}

func TestValidateBadFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	good := `{"system": "h200x2-vm", "kind": "empty_kernel", "clock": "device_events", "us": 8.0}`
	require.NoError(t, os.WriteFile(bad, []byte(good+"\n"+`{"system": "h200x2-vm", "kind": "empty_kernel", "clock": "device_events", "us": "slow"}`+"\n"), 0o644))
	_, _, err := runValidateCLI("validate", "--traces", bad)
	require.Error(t, err)
	assert.Equal(t, 2, exitCode(err))
	assert.Contains(t, err.Error(), "line 2")
	assert.Contains(t, err.Error(), `field "us"`)

	out, _, err := runValidateCLI("validate", "--traces", bad, "--skip-bad")
	require.NoError(t, err)
	assert.Contains(t, out, "records simulated  1")
	assert.Contains(t, out, "Bad lines skipped (1)")
	assert.Contains(t, out, `line 2 (1): field "us"`)

	out, _, err = runValidateCLI("validate", "--traces", bad, "--skip-bad", "--format", "json")
	require.NoError(t, err)
	var doc struct {
		BadLines []map[string]any `json:"bad_lines"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.Len(t, doc.BadLines, 1)
	assert.EqualValues(t, 2, doc.BadLines[0]["line"])

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"validate"}, "no trace: give --traces FILE"},
		{[]string{"validate", "--traces", filepath.Join(dir, "missing.jsonl")}, "missing.jsonl"},
		{[]string{"validate", "--traces", bad, "--format", "xml"}, `--format "xml"`},
		{[]string{"validate", "--traces", validateShared, "--plot", "x.gif"}, `file type ".gif"`},
		{[]string{"calibrate", "--traces", validateShared, "--params-out", filepath.Join(dir, "p")}, "--fit is required"},
		{[]string{"calibrate", "--traces", validateShared, "--fit", "pcie.*"}, "--params-out FILE is required"},
		{[]string{"calibrate", "--traces", validateShared, "--fit", "nosuch.*", "--params-out", filepath.Join(dir, "p")}, `pattern "nosuch.*" matches no parameter (parameters: pcie.tlp_overhead`},
	} {
		_, _, err := runValidateCLI(c.args...)
		require.Error(t, err, "%v", c.args)
		assert.Contains(t, err.Error(), c.want, "%v", c.args)
		assert.Equal(t, 2, exitCode(err), "%v", c.args)
	}
}

func TestValidatePlot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.svg")
	_, errOut, err := runValidateCLI("validate", "--traces", validateShared, "--plot", path)
	require.NoError(t, err)
	assert.Contains(t, errOut, "wrote "+path)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(b), "<svg")
}

// TestValidateTopologyOverride: a capture of a machine no preset declares is
// skipped with the reason, and --topology simulates it on the named preset
// (validate and calibrate); an unknown name is an input error.
func TestValidateTopologyOverride(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "mybox.jsonl")
	var lines []string
	for _, us := range []string{"40.0", "44.0", "38.0"} {
		lines = append(lines, `{"system": "my-box", "kind": "allreduce", "clock": "device_events", "launch": "eager", "world": 2, "dtype": "bf16", "bytes": 64, "impl": "nccl", "algo": "auto", "proto": "auto", "transport": "p2p", "us": `+us+`, "us_min": 30, "us_max": 50}`)
	}
	require.NoError(t, os.WriteFile(f, []byte(strings.Join(lines, "\n")+"\n"), 0o644))

	out, _, err := runValidateCLI("validate", "--traces", f)
	require.Error(t, err, "nothing simulated is no result")
	assert.Equal(t, 1, exitCode(err))
	assert.Contains(t, err.Error(), "nothing was simulated: all 3 records were skipped")
	assert.Contains(t, out, "records simulated  0")
	assert.Contains(t, out, "– (no record simulated)")
	assert.Contains(t, out, `no preset models system "my-box"`)

	out, _, err = runValidateCLI("validate", "--traces", f, "--topology", "h200x2", "--format", "json")
	require.NoError(t, err)
	var doc struct {
		Records []map[string]any `json:"records"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.Len(t, doc.Records, 3)
	for _, r := range doc.Records {
		assert.Equal(t, "my-box", r["system"])
		assert.InDelta(t, 41.3, r["predicted"].(float64), 1e-9) // torch.nccl_eager_issue: host-paced
	}

	pout := filepath.Join(dir, "fitted.params")
	out, _, err = runValidateCLI("calibrate", "--traces", f, "--topology", "h200x2", "--fit", "torch.nccl_eager_issue", "--params-out", pout, "--holdout-every", "2")
	require.NoError(t, err)
	assert.Contains(t, out, "torch.nccl_eager_issue")
	written, err := os.ReadFile(pout)
	require.NoError(t, err)
	assert.Contains(t, string(written), "torch.nccl_eager_issue")

	_, _, err = runValidateCLI("validate", "--traces", f, "--topology", "nope")
	require.Error(t, err)
	assert.Equal(t, 2, exitCode(err))
	assert.Contains(t, err.Error(), `unknown preset "nope"`)
}

// A capture with a halves file beside it says that its storing SMs are
// placed by its own chip's halves.
func TestValidateSaysWhoseHalves(t *testing.T) {
	f := "../../testdata/h200x1-arsim/read_groups.jsonl"
	_, errOut, err := runValidateCLI("validate", "--traces", f, "--format", "json")
	require.NoError(t, err)
	assert.Contains(t, errOut, "SMs (stores, flags) placed in the halves of the capture's own chip")
	assert.Contains(t, errOut, filepath.Join("system", "read_groups.halves.json"))
	_, errOut, err = runValidateCLI("validate", "--traces", "../../testdata/h200x1-arsim/read_pairs.jsonl", "--format", "json")
	require.NoError(t, err)
	assert.NotContains(t, errOut, "halves of the capture's own chip")
	assert.NotContains(t, errOut, "map of halves", "no flag records that name their SMs")
	// flag records naming their SMs, no halves file: validate says whose halves it used
	_, errOut, err = runValidateCLI("validate", "--traces", "../../testdata/h100x1-arsim/flag_sms.jsonl", "--format", "json")
	require.NoError(t, err)
	assert.Contains(t, errOut, "flags' SMs placed in the H200's map of halves, for want of")
	_, errOut, err = runValidateCLI("validate", "--traces", "../../testdata/h100x1-arsim/perblock_10.jsonl", "--format", "json")
	require.NoError(t, err)
	assert.Contains(t, errOut, "placed in the halves of the capture's own chip")
	assert.NotContains(t, errOut, "map of halves")
}

// An nccl-tests file that names its NCCL library is compared against the
// release arsim's nccl follows, and says so; one that does not, says
// nothing.
func TestValidateSaysWhichNCCL(t *testing.T) {
	args := []string{"validate", "--traces", "../../testdata/nccltests/rtx5090x8_2socket_p2p_sys.txt",
		"--topology", "../../testdata/topologies/pcie8_2socket_topo_m.txt", "--opts", "NCCL_P2P_LEVEL=SYS", "--format", "json"}
	out, errOut, err := runValidateCLI(args...)
	require.NoError(t, err)
	assert.Contains(t, errOut, "rtx5090x8_2socket_p2p_sys.txt ran NCCL 2.29.7 (its nccl-tests header); simulated with NCCL 2.29's rules (nccl_version from its nccl-tests header)")
	var v struct {
		Records []json.RawMessage `json:"records"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	require.NotEmpty(t, v.Records)

	// --opts names another release: it applies, and says so
	args[6] = "NCCL_P2P_LEVEL=SYS,nccl_version=2.21.5"
	_, errOut, err = runValidateCLI(args...)
	require.NoError(t, err)
	assert.Contains(t, errOut, "ran NCCL 2.29.7 (its nccl-tests header); simulated with NCCL 2.21's rules (nccl_version from --opts)")
	args[6] = "NCCL_P2P_LEVEL=SYS,nccl_version=2.17"
	_, _, err = runValidateCLI(args...)
	assert.ErrorContains(t, err, "knows releases 2.18 to 2.30")

	_, errOut, err = runValidateCLI("validate", "--traces", "../../testdata/nccltests/rtx4090x4_p2p.txt",
		"--topology", "../../testdata/topologies/pcie4_1socket_topo_m.txt", "--opts", "NCCL_P2P_LEVEL=SYS", "--format", "json")
	require.NoError(t, err)
	assert.NotContains(t, errOut, "ran NCCL")
	assert.NotContains(t, errOut, "rules")
}
