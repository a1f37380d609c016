package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func runCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), err
}

func TestDefaultRunIsTheVerifyPass(t *testing.T) {
	out, _, err := runCLI(t)
	require.NoError(t, err)
	assert.Contains(t, out, "Verify pass on rtxpro6000x8-2numa: 3 tokens → 122 allreduces of 43008 B")
	assert.Contains(t, out, "← winner")
	assert.Contains(t, out, "Why ")
	assert.Contains(t, out, "Published figures for this machine")
	assert.Contains(t, out, "cannot all hold in one model")
	assert.Contains(t, out, "The pass fits the slow regime")
}

// With the slow regime on, the verify pass agrees and plain decoding does
// not: the note says so the other way round.
func TestSlowRegimeNoteTurnsAround(t *testing.T) {
	params := filepath.Join(t.TempDir(), "slow.params")
	require.NoError(t, os.WriteFile(params, []byte("platform.iommu_host_latency = 3000\n"), 0o644))
	out, _, err := runCLI(t, "verify", "--params", params)
	require.NoError(t, err)
	assert.Contains(t, out, "cannot all hold in one model")
	assert.Contains(t, out, "Plain decoding fits the fast regime")
	assert.NotContains(t, out, "The pass fits the slow regime")
}

func TestBadInputExitsTwoAndSaysWhat(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"verify", "--topology", "nope"}, `unknown preset "nope" (valid: a800x8-2islands`},
		{[]string{"verify", "--algos", "ring,bogus"}, `unknown algorithm "bogus" (valid: `},
		{[]string{"verify", "--launch", "lazy"}, `--launch "lazy" is not one of graph, eager`},
		{[]string{"sweep", "--sizes", "12 parsecs"}, "accepted forms: 43008, 42KiB, 1MiB"},
		{[]string{"sweep", "--sizes", "1MiB..1KiB"}, "runs backwards"},
		{[]string{"sweep", "--plot", "/nonexistent-dir/x.svg"}, "cannot write /nonexistent-dir/x.svg"},
		{[]string{"sweep", "--plot", "x.gif"}, `file type ".gif" is not one of .svg, .png`},
		{[]string{"timeline", "--algo", "ring"}, "--algo and --out are required"},
		{[]string{"topology", "import", "testdata/nope.xml"}, "nope.xml"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"explain"}, "explain: name an algorithm"},
		{[]string{"verify", "--bogus-flag"}, "flag provided but not defined"},
		{[]string{"sweep", "--algos", "ring,tree,ring"}, `names ring twice`},
		{[]string{"verify", "--algos", ",,"}, `names no algorithm`},
		{[]string{"sweep", "--parallel", "-3"}, "--parallel -3: want how many to simulate at once"},
		{[]string{"design", "--parallel", "-1"}, "--parallel -1: want"},
		{[]string{"validate", "--parallel", "-1", "--traces", "x"}, "--parallel -1: want"},
		{[]string{"calibrate", "--parallel", "-1"}, "--parallel -1: want"},
	}
	for _, c := range cases {
		_, _, err := runCLI(t, c.args...)
		require.Error(t, err, "%v", c.args)
		assert.Contains(t, err.Error(), c.want, "%v", c.args)
		assert.Equal(t, 2, exitCode(err), "%v", c.args)
	}
}

func TestHelpExitsZero(t *testing.T) {
	for _, cmd := range []string{"verify", "sweep", "timeline", "explain", "check", "algos", "topology"} {
		_, errOut, err := runCLI(t, cmd, "--help")
		assert.Equal(t, 0, exitCode(err), cmd)
		assert.Contains(t, errOut, "Usage: arsim "+cmd, cmd)
		assert.Contains(t, errOut, "Examples:", cmd)
	}
}

func TestVerifyJSONShape(t *testing.T) {
	out, _, err := runCLI(t, "verify", "--algos", "one_stage,nccl", "--format", "json")
	require.NoError(t, err)
	var doc struct {
		Topology          string `json:"topology"`
		Tokens            int    `json:"tokens"`
		BytesPerAllreduce int64  `json:"bytes_per_allreduce"`
		Results           []struct {
			Algo           string   `json:"algo"`
			UsPerAllreduce *float64 `json:"us_per_allreduce"`
			PassMs         *float64 `json:"pass_ms"`
			TokensPerS     *float64 `json:"tokens_per_s"`
		} `json:"results"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Equal(t, "rtxpro6000x8-2numa", doc.Topology)
	assert.EqualValues(t, 43008, doc.BytesPerAllreduce)
	require.Len(t, doc.Results, 2)
	for _, r := range doc.Results {
		require.NotNil(t, r.UsPerAllreduce, r.Algo)
		assert.Greater(t, *r.UsPerAllreduce, 0.0)
		assert.Greater(t, *r.PassMs, 0.0)
		assert.Greater(t, *r.TokensPerS, 0.0)
	}
}

func TestSweepFormats(t *testing.T) {
	out, _, err := runCLI(t, "sweep", "--algos", "one_stage,two_stage", "--sizes", "1KiB,42KiB", "--format", "json")
	require.NoError(t, err)
	var doc struct {
		Topology string `json:"topology"`
		Rows     []struct {
			Algo  string  `json:"algo"`
			Bytes int64   `json:"bytes"`
			Us    float64 `json:"us"`
			BusBW float64 `json:"busbw_gbps"`
		} `json:"rows"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.Len(t, doc.Rows, 4)
	assert.EqualValues(t, 43008, doc.Rows[1].Bytes)
	csv, _, err := runCLI(t, "sweep", "--algos", "one_stage", "--sizes", "1KiB..4KiB", "--format", "csv")
	require.NoError(t, err)
	assert.Equal(t, 4, strings.Count(csv, "\n"), "header + 3 sizes")
	dir := t.TempDir()
	_, _, err = runCLI(t, "sweep", "--algos", "one_stage,two_stage", "--sizes", "1KiB..1MiB", "--plot", filepath.Join(dir, "s.svg"))
	require.NoError(t, err)
	svg, err := os.ReadFile(filepath.Join(dir, "s.svg"))
	require.NoError(t, err)
	assert.Contains(t, string(svg), "<svg")
}

// The Perfetto file loads: valid JSON with traceEvents, and no two slices
// on one track overlap.
func TestTimelineIsValidPerfetto(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.json")
	_, _, err := runCLI(t, "timeline", "--algo", "nccl", "--bytes", "43008", "--iters", "2", "--out", path)
	require.NoError(t, err)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc struct {
		TraceEvents []struct {
			Name string   `json:"name"`
			Ph   string   `json:"ph"`
			Ts   float64  `json:"ts"`
			Dur  *float64 `json:"dur"`
			Pid  int      `json:"pid"`
			Tid  int      `json:"tid"`
		} `json:"traceEvents"`
	}
	require.NoError(t, json.Unmarshal(data, &doc))
	type track struct{ pid, tid int }
	spans := map[track][][2]float64{}
	links, ranks := 0, 0
	for _, e := range doc.TraceEvents {
		if e.Ph != "X" {
			continue
		}
		require.NotNil(t, e.Dur)
		spans[track{e.Pid, e.Tid}] = append(spans[track{e.Pid, e.Tid}], [2]float64{e.Ts, e.Ts + *e.Dur})
		if strings.Contains(e.Name, "GB/s") {
			links++
		} else {
			ranks++
		}
	}
	assert.Greater(t, links, 0, "link busy intervals")
	assert.Greater(t, ranks, 0, "rank operations")
	for k, s := range spans {
		sort.Slice(s, func(i, j int) bool { return s[i][0] < s[j][0] })
		for i := 1; i < len(s); i++ {
			assert.LessOrEqual(t, s[i-1][1], s[i][0]+1e-9, "overlap on track %v", k)
		}
	}
}

func TestExplainAndTopology(t *testing.T) {
	out, _, err := runCLI(t, "explain", "one_stage", "--ranks", "4")
	require.NoError(t, err)
	assert.Contains(t, out, "Who moves data to whom")
	assert.Contains(t, out, "Checker: every rank ends with the sum")
	assert.NotContains(t, out, "What that time rests on, parameter by parameter")
	out, _, err = runCLI(t, "topology", "show", "rtxpro6000x8-2numa")
	require.NoError(t, err)
	assert.Contains(t, out, "SYS")
	assert.Contains(t, out, "pcie.tlp_overhead")
	assert.Contains(t, out, "Devices passed through, one way: cpu0, cpu1 10.07 ns; hb0 … hb7 (8) 130.8 ns each way across its PCIe side\n")
	out, _, err = runCLI(t, "topology", "import", "../../testdata/h200x2/system/nccl_topo.xml")
	require.NoError(t, err)
	assert.Contains(t, out, "NV18")
	assert.Contains(t, out, "Assumed (the file does not say)")
	out, _, err = runCLI(t, "check", "--algos", "one_stage,ring", "--ranks", "2,3", "--max-bytes", "64KiB")
	require.NoError(t, err)
	assert.Contains(t, out, "schedules proved correct")
}

// explain --sensitivity traces the time back to the machine's parameters,
// the one it rests on most first, with its value and source, and marks a
// parameter that makes the algorithm plan another schedule; on an
// imported machine too.
func TestExplainSensitivity(t *testing.T) {
	out, _, err := runCLI(t, "explain", "pcie_ipc_one_shot", "--ranks", "8", "--bytes", "42KiB", "--sensitivity")
	require.NoError(t, err)
	assert.Contains(t, out, "\nIts time: 9.97 µs per allreduce in steady state")
	assert.Regexp(t, `\n  elasticity  parameter +value  unit   plan   source\n +-0\.[0-9]{3}  smp\.bandwidth +95  GB/s   same   estimate: 4 concurrent cross-socket flows`, out)
	assert.Regexp(t, `\n  [0-9]+ other parameters move it by less than 0\.01 % per 1 %;\n  [0-9]+ not moved`, out)
	assert.Contains(t, out, "Whole sources: arsim topology show rtxpro6000x8-2numa")
	assert.NotContains(t, out, "plan other")
	// 256 tokens: the Lamport one-shot launches a block per SM, so the SM
	// count makes it plan another launch
	out, _, err = runCLI(t, "explain", "lamport_one_shot", "--ranks", "8", "--bytes", "3670016", "--sensitivity")
	require.NoError(t, err)
	assert.Regexp(t, `other parameters move it by less than 0\.01 % per 1 % \(plan other: gpu\.sms\);`, out)
	out, _, err = runCLI(t, "explain", "two_stage", "--topology", "../../testdata/topologies/pcie8_2socket_topo_m.txt", "--gpu", "RTX 5090", "--ranks", "8", "--bytes", "42KiB", "--sensitivity")
	require.NoError(t, err)
	assert.Contains(t, out, "What that time rests on, parameter by parameter")
}

// verify --firmness says which single parameter moves would make another
// algorithm the fastest; in JSON too; one token count only.
func TestVerifyFirmness(t *testing.T) {
	out, _, err := runCLI(t, "verify", "--tokens", "1", "--algos", "pcie_ipc_one_shot,pcie_ipc_islands,ring", "--firmness")
	require.NoError(t, err)
	assert.Contains(t, out, "\nHow firm the fastest is at 14336 B: each parameter moved alone (×0.8, ×1.25, ×0.5, ×2, within its range;")
	assert.Contains(t, out, "the 2 algorithms within 2× of the fastest timed as single allreduces, three back to back (pcie_ipc_islands first):")
	assert.Regexp(t, `\n    ×1\.25 +smp\.bandwidth +95 → 118\.75 GB/s: pcie_ipc_one_shot, [0-9.]+ % faster;  estimate: 4 concurrent`, out)
	js, _, err := runCLI(t, "verify", "--tokens", "1", "--algos", "pcie_ipc_one_shot,pcie_ipc_islands", "--firmness", "--format", "json")
	require.NoError(t, err)
	var doc struct {
		Firmness struct {
			Winner string `json:"winner"`
			Moves  []struct {
				Param, Winner string
				Factor        float64
			} `json:"moves"`
		} `json:"firmness"`
	}
	require.NoError(t, json.Unmarshal([]byte(js), &doc))
	assert.Equal(t, "pcie_ipc_islands", doc.Firmness.Winner)
	require.NotEmpty(t, doc.Firmness.Moves)
	assert.Equal(t, "smp.bandwidth", doc.Firmness.Moves[0].Param)
	_, _, err = runCLI(t, "verify", "--tokens", "1,3", "--firmness")
	assert.ErrorContains(t, err, "--firmness takes one --tokens value")
}

// sweep --firmness gives a line a size; table only, a few sizes.
func TestSweepFirmness(t *testing.T) {
	out, _, err := runCLI(t, "sweep", "--algos", "pcie_ipc_one_shot,pcie_ipc_islands", "--sizes", "14KiB,42KiB", "--firmness")
	require.NoError(t, err)
	assert.Contains(t, out, "\nHow firm the fastest is at each size: each parameter moved alone (×0.8, ×1.25, ×0.5, ×2, within its range;")
	assert.Regexp(t, `\n +14 KiB  pcie_ipc_islands; ×1\.25 smp\.bandwidth \(118\.75 GB/s\) → pcie_ipc_one_shot; .*; [0-9]+ of [0-9]+ parameters hold\n`, out)
	assert.Regexp(t, `\n +42 KiB  pcie_ipc_islands under every move of the [0-9]+ parameters moved\n`, out)
	for _, args := range [][]string{{"--format", "csv"}, {"--sizes", "1KiB..1MiB"}} {
		_, _, err := runCLI(t, append([]string{"sweep", "--algos", "ring", "--firmness"}, args...)...)
		assert.ErrorContains(t, err, "--firmness prints with --format table at 8 sizes at most")
	}
}

func TestVerifyTokensWhatIf(t *testing.T) {
	out, _, err := runCLI(t, "verify", "--tokens", "1,4", "--algos", "one_stage,two_stage")
	require.NoError(t, err)
	assert.Contains(t, out, "1 tok (14 KiB)")
	assert.Contains(t, out, "4 tok (56 KiB)")
	assert.Contains(t, out, "pass ms (winner)")
	_, _, err = runCLI(t, "verify", "--tokens", "0")
	assert.Equal(t, 2, exitCode(err))
}

func TestTimelinePicture(t *testing.T) {
	dir := t.TempDir()
	_, _, err := runCLI(t, "timeline", "--algo", "two_stage", "--ranks", "4", "--out", filepath.Join(dir, "t.json"), "--picture", filepath.Join(dir, "t.svg"))
	require.NoError(t, err)
	svg, err := os.ReadFile(filepath.Join(dir, "t.svg"))
	require.NoError(t, err)
	assert.Contains(t, string(svg), "rank 0 / ops")
}

// sweep -v says what each algorithm planned at each size: NCCL's protocol
// switch from LL to Simple with P2P at SYS, a custom kernel's launch
// configuration, sizes with the same plan together. With a machine-readable
// format the notes go to stderr and stdout stays parseable.
func TestSweepVerbosePrintsEachPlansNotes(t *testing.T) {
	out, _, err := runCLI(t, "sweep", "--algos", "nccl,two_stage", "--opts", "NCCL_P2P_LEVEL=SYS", "--sizes", "8,1KiB,4KiB", "-v", "--no-check")
	require.NoError(t, err)
	assert.Contains(t, out, "  nccl at 8 B:\n    NCCL: ring/ll over p2p")
	assert.Contains(t, out, "  nccl at 4 KiB:\n    NCCL: ring/simple over p2p")
	assert.Contains(t, out, "  two_stage at 8 B:\n    1 blocks × 512 threads per GPU")
	assert.NotContains(t, out, "two_stage at 8 B–", "two_stage's notes name each part's bytes, so no two sizes share them")

	csvOut, errOut, err := runCLI(t, "sweep", "--algos", "ring", "--sizes", "1KiB,2KiB", "--format", "csv", "-v", "--no-check")
	require.NoError(t, err)
	assert.NotContains(t, csvOut, "ring at")
	assert.Contains(t, errOut, "  ring at 1 KiB–2 KiB:\n    ring: ring over 2 of 2 channels, proto simple", "the same plan at both sizes")
}
