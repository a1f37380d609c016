package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/trace"
	"github.com/arsim/arsim/validate"
)

const topoM = "../../testdata/topologies/pcie8_2socket_topo_m.txt"

// A `nvidia-smi topo -m` file is a machine for every command; what it
// assumed is printed once, on stderr, never in the output.
func TestTopologyFileIsAMachineEverywhere(t *testing.T) {
	out, errOut, err := runCLI(t, "sweep", "--topology", topoM, "--algos", "nccl,two_stage", "--sizes", "42KiB")
	require.NoError(t, err)
	assert.Contains(t, out, "42 KiB")
	preset, _, err := runCLI(t, "sweep", "--topology", "rtxpro6000x8-2numa", "--algos", "nccl,two_stage", "--sizes", "42KiB")
	require.NoError(t, err)
	row := func(out string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "42 KiB") {
				return l
			}
		}
		return ""
	}
	require.NotEmpty(t, row(out), out)
	assert.Equal(t, row(preset), row(out), "the imported matrix times nccl and two_stage as the preset it describes does")
	assert.Equal(t, 1, strings.Count(errOut, "assumed (the file does not say)"), errOut)
	assert.Contains(t, errOut, "the file names no GPU")
	assert.NotContains(t, out, "assumed")

	out, _, err = runCLI(t, "verify", "--topology", topoM, "--algos", "two_stage,one_stage")
	require.NoError(t, err)
	assert.Contains(t, out, "Verify pass on pcie8_2socket_topo_m")

	for _, args := range [][]string{
		{"explain", "two_stage", "--topology", topoM, "--ranks", "8"},
		{"check", "--topology", topoM, "--algos", "two_stage", "--ranks", "8", "--max-bytes", "4KiB"},
		{"timeline", "--topology", topoM, "--algo", "two_stage", "--out", filepath.Join(t.TempDir(), "t.json")},
		{"design", "--topology", topoM, "--budget", "3"},
	} {
		_, _, err := runCLI(t, args...)
		require.NoError(t, err, "%v", args)
	}
}

// --gpu sets a GPU class from the table; --params goes over it.
func TestGPUClassAndParamsOnTopOf(t *testing.T) {
	dir := t.TempDir()
	pf := filepath.Join(dir, "my.params")
	require.NoError(t, os.WriteFile(pf, []byte("gpu.mem_bandwidth = 1000  # mine\n"), 0o644))
	out, _, err := runCLI(t, "topology", "import", topoM, "--gpu", "RTX 4090", "--params", pf)
	require.NoError(t, err)
	assert.Contains(t, out, "GPU class RTX 4090 (given")
	assert.Regexp(t, `gpu\.sms\s+128 `, out)
	assert.Regexp(t, `gpu\.mem_bandwidth\s+1000 `, out, "--params is applied, last")
	assert.Contains(t, out, "Gen4 x16")

	_, _, err = runCLI(t, "sweep", "--gpu", "Voodoo", "--sizes", "1KiB", "--algos", "ring")
	require.Error(t, err)
	assert.Equal(t, 2, exitCode(err))
	assert.Contains(t, err.Error(), "RTX PRO 6000")

	out, _, err = runCLI(t, "topology", "gpus")
	require.NoError(t, err)
	for _, g := range []string{"H200", "H100", "A100", "A800", "RTX PRO 6000", "RTX 5090", "RTX 4090", "L40S", "V100"} {
		assert.Contains(t, out, g)
	}
}

// NCCL's spellings give exactly what the short forms give.
func TestNCCLSpellingsInOpts(t *testing.T) {
	a, _, err := runCLI(t, "verify", "--algos", "nccl", "--opts", "NCCL_P2P_LEVEL=SYS,NCCL_PROTO=LL")
	require.NoError(t, err)
	b, _, err := runCLI(t, "verify", "--algos", "nccl", "--opts", "p2p_level=sys,proto=ll")
	require.NoError(t, err)
	assert.Equal(t, b, a)
	c, _, err := runCLI(t, "verify", "--algos", "nccl")
	require.NoError(t, err)
	assert.NotEqual(t, c, a, "the spelling is not ignored")

	d, _, err := runCLI(t, "sweep", "--algos", "nccl", "--sizes", "4KiB", "--opts", "NCCL_PROTO=LL,Simple,NCCL_ALGO=^tree")
	require.NoError(t, err)
	e, _, err := runCLI(t, "sweep", "--algos", "nccl", "--sizes", "4KiB", "--opts", "proto=ll+simple,algo=ring")
	require.NoError(t, err)
	assert.Equal(t, e, d)

	_, _, err = runCLI(t, "sweep", "--opts", "NCCL_P2P_LEVEL=NODE")
	require.Error(t, err)
	assert.Equal(t, 2, exitCode(err))
	assert.Contains(t, err.Error(), "NCCL has no NODE level")
}

// Every row of a published all_reduce_perf table is simulated, both
// placements, the GPU taken from the rank lines.
func TestValidateReadsNCCLTestsOutput(t *testing.T) {
	out, errOut, err := runCLI(t, "validate", "--traces", "../../testdata/nccltests/rtx4090x4_p2p.txt",
		"--topology", "../../testdata/topologies/pcie4_1socket_topo_m.txt", "--opts", "NCCL_P2P_LEVEL=SYS")
	require.NoError(t, err)
	assert.Contains(t, out, "records simulated  42")
	assert.Contains(t, out, "records skipped    0")
	assert.Contains(t, out, "all_reduce_perf eager out-of-place")
	assert.Contains(t, out, "all_reduce_perf eager in-place")
	assert.Contains(t, errOut, "GPU class RTX 4090 (from the rank lines (NVIDIA GeForce RTX 4090)")

	_, _, err = runCLI(t, "validate", "--traces", "../../testdata/nccltests/rtx4090x4_p2p.txt")
	require.Error(t, err)
	assert.Equal(t, 2, exitCode(err))
	assert.Contains(t, err.Error(), "names no machine: give --topology")

	_, _, err = runCLI(t, "validate", "--traces", "../../testdata/nccltests/rtx4090x4_p2p.txt", "--topology", "h200x2", "--gpu", "H200")
	require.Error(t, err)
	assert.Equal(t, 2, exitCode(err))
	assert.Contains(t, err.Error(), "ran on 4 GPUs; h200x2 has 2")

	junk := filepath.Join(t.TempDir(), "junk.txt")
	require.NoError(t, os.WriteFile(junk, []byte("# a comment\nhello\n"), 0o644))
	_, _, err = runCLI(t, "validate", "--traces", junk, "--skip-bad")
	require.Error(t, err, "a file of no known format is an error, even with --skip-bad")
	assert.Equal(t, 2, exitCode(err))
	assert.Contains(t, err.Error(), "no line is a record")

	_, _, err = runCLI(t, "validate", "--traces", "../../trace/testdata/nccltests/all_gather_perf_g2.txt", "--topology", "h200x2")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "all_gather_perf output: arsim simulates allreduce only")
}

// sweep --format nccl-tests prints what nccl-tests prints: the trace
// reader takes it back, and validate on the same machine finds it exact
// (every row of a 2-GPU all_reduce_perf table on h200x2).
func TestSweepNCCLTestsRoundTrip(t *testing.T) {
	out, _, err := runCLI(t, "sweep", "--topology", "h200x2", "--algos", "nccl", "--sizes", "1KiB..1MiB", "--dtype", "float", "--format", "nccl-tests")
	require.NoError(t, err)
	run, bad, err := trace.ReadNCCLTests(strings.NewReader(out), "sweep", trace.ReadOptions{})
	require.NoError(t, err)
	assert.Empty(t, bad)
	require.Len(t, run.Rows, 11)
	assert.Equal(t, "float", run.Rows[0].Type)
	assert.Equal(t, int64(256), run.Rows[0].Count)
	assert.Equal(t, 1, run.Graph)
	assert.Len(t, run.Ranks, 2)

	f := filepath.Join(t.TempDir(), "all_reduce_perf.txt")
	require.NoError(t, os.WriteFile(f, []byte(out), 0o644))
	out, _, err = runCLI(t, "validate", "--traces", f, "--topology", "h200x2", "--format", "json")
	require.NoError(t, err)
	var doc struct {
		Records []struct {
			ErrorPct float64 `json:"error_pct"`
		} `json:"records"`
		Skipped []any `json:"skipped"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Len(t, doc.Records, 22)
	assert.Empty(t, doc.Skipped)
	for _, r := range doc.Records {
		assert.InDelta(t, 0, r.ErrorPct, 0.5)
	}
}

// A schedule the checker refuses is not timed: sweep, verify and timeline
// fail naming the check, unless --no-check.
func TestCheckerBeforeTiming(t *testing.T) {
	bad := "file:testdata/race_allreduce_2.xml"
	for _, args := range [][]string{
		{"sweep", "--topology", "h200x2", "--algos", bad + ",ring", "--sizes", "4KiB"},
		{"timeline", "--topology", "h200x2", "--algo", bad, "--bytes", "4KiB", "--out", filepath.Join(t.TempDir(), "t.json")},
		{"verify", "--topology", "h200x2", "--algos", bad},
	} {
		_, _, err := runCLI(t, args...)
		require.Error(t, err, "%v", args)
		assert.Contains(t, err.Error(), "the checker refuses the schedule", "%v", args)
		assert.Contains(t, err.Error(), "want the sum of all 2 ranks", "%v", args)
		assert.Equal(t, 1, exitCode(err))
	}
	out, errOut, err := runCLI(t, "sweep", "--topology", "h200x2", "--algos", bad+",ring", "--sizes", "4KiB", "--no-check")
	require.NoError(t, err)
	assert.Contains(t, out, "4 KiB")
	assert.Contains(t, errOut, "without being proved")
}

// The default output prints each note once and keeps NCCL's internals
// behind -v; no file name a user lacks.
func TestVerifyNotesOnceAndCitations(t *testing.T) {
	out, _, err := runCLI(t, "verify", "--algos", "nccl,custom_ar,two_stage")
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(out, "NCCL: ring/simple over shm"), out)
	assert.NotContains(t, out, "ring search on bottleneck")
	assert.Contains(t, out, "-v prints")
	assert.Contains(t, out, "a user's deployment report (Kimi-K2.5 with EAGLE-3")
	for _, no := range []string{"seed", ".csv", "shared/", "facts"} {
		assert.NotContains(t, out, no)
	}
	v, _, err := runCLI(t, "verify", "--algos", "nccl,custom_ar,two_stage", "-v")
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(v, "ring search on bottleneck"), v)

	e, _, err := runCLI(t, "verify", "--algos", "two_stage,nccl", "--launch", "eager", "--layer-kernels", "10")
	require.NoError(t, err)
	assert.Contains(t, e, "Eager: the host launches every kernel")
	assert.Contains(t, e, "10 of the model's per layer")
}

func TestVersionAndHelpCommand(t *testing.T) {
	out, _, err := runCLI(t, "--version")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(out, "arsim "), out)
	out, _, err = runCLI(t, "help", "sweep")
	require.NoError(t, err)
	assert.Contains(t, out, "--format")
	assert.Contains(t, out, "Examples:")
	_, _, err = runCLI(t, "help", "nope")
	require.Error(t, err)
	assert.Equal(t, 2, exitCode(err))
}

// Timeline pictures and traces: flow arrows in the trace, the picture's
// ranks as asked.
func TestTimelinePictureAndFlows(t *testing.T) {
	dir := t.TempDir()
	js, png := filepath.Join(dir, "t.json"), filepath.Join(dir, "t.png")
	_, _, err := runCLI(t, "timeline", "--algo", "two_stage", "--bytes", "42KiB", "--out", js, "--picture", png, "--ranks-shown", "0,4-5")
	require.NoError(t, err)
	st, err := os.Stat(png)
	require.NoError(t, err)
	assert.Positive(t, st.Size())
	data, err := os.ReadFile(js)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"ph":"s"`)
	assert.Contains(t, string(data), `"ph":"f"`)
	_, _, err = runCLI(t, "timeline", "--algo", "two_stage", "--out", js, "--ranks-shown", "9")
	require.Error(t, err)
	assert.Equal(t, 2, exitCode(err))
}

// The published nccl-tests tables by size range: the aim is every
// range within 25 %. This pins the ranges that meet it now, so that none
// falls back, and logs the rest (docs/VALIDATION.md says why they miss).
// It logs each table's NCCL lines too (fixed cost and cost per MiB where
// the model's NCCL makes one choice) and pins the one that agrees on
// both: the 8 × RTX 5090 table's Simple on two channels, 32 KiB–128 MiB.
func TestPublishedTablesBySize(t *testing.T) {
	// within: the ranges whose every record is within 25 % now, by table
	within := map[string][]string{
		"8 × RTX 5090, P2P at SYS": {"≤ 2 KiB", "> 2 KiB, ≤ 1 MiB", "> 1 MiB, ≤ 16 MiB", "> 16 MiB"},
		"4 × RTX 5090, SHM":        {"≤ 2 KiB", "> 2 KiB, ≤ 1 MiB", "> 1 MiB, ≤ 16 MiB", "> 16 MiB"},
		"4 × RTX 4090, P2P at SYS": {"≤ 2 KiB", "> 1 MiB, ≤ 16 MiB", "> 16 MiB"},
		"6 × RTX 4090, P2P at SYS": {"> 16 MiB"},
		"8 × RTX PRO 6000, two AMD Turin sockets, with and without NCCL_GRAPH_FILE": {},
		"8 × RTX PRO 6000 behind two switches on two root complexes, ring":          {"> 2 KiB, ≤ 1 MiB", "> 1 MiB, ≤ 16 MiB", "> 16 MiB"},
		"8 × RTX PRO 6000 behind two switches on one root complex, ring":            {"> 2 KiB, ≤ 1 MiB", "> 1 MiB, ≤ 16 MiB", "> 16 MiB"},
	}
	require.Len(t, within, len(publishedTables))
	deviceRanges, deviceWithin := 0, 0
	for _, tb := range publishedTables {
		require.Contains(t, within, tb.name)
		topo := tb.topo
		if filepath.Ext(topo) != "" {
			topo = "../../" + topo
		}
		args := []string{"validate", "--format", "json", "--traces", "../../" + tb.traces[0], "--topology", topo}
		if tb.opts != "" {
			args = append(args, "--opts", tb.opts)
		}
		if tb.params != "" {
			args = append(args, "--params", "../../"+tb.params)
		}
		out, _, err := runCLI(t, args...)
		require.NoError(t, err, tb.name)
		var v struct {
			BySize []validate.SizeSummary `json:"by_size"`
			Lines  []validate.LineFit     `json:"lines"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &v), tb.name)
		pinned := 0
		for _, l := range v.Lines {
			t.Logf("%s, %s, %s, %d sizes from %d B: measured %.1f µs + %.1f µs/MiB, simulated %.1f + %.1f", tb.name, l.Group, l.Choice, l.Sizes, l.MinBytes,
				l.MeasuredFixedUs, l.MeasuredPerMiBUs, l.SimulatedFixedUs, l.SimulatedPerMiBUs)
			if tb.name == "8 × RTX 5090, P2P at SYS" && l.Choice == "ring/simple, 2 channels" {
				pinned++
				assert.InEpsilon(t, l.MeasuredFixedUs, l.SimulatedFixedUs, 0.10, "%s, %s: fixed cost", tb.name, l.Group)
				assert.InEpsilon(t, l.MeasuredPerMiBUs, l.SimulatedPerMiBUs, 0.05, "%s, %s: cost per MiB", tb.name, l.Group)
			}
		}
		if tb.name == "8 × RTX 5090, P2P at SYS" {
			assert.Equal(t, 2, pinned, "the table's out-of-place and in-place Simple lines")
		}
		require.NotEmpty(t, v.BySize, tb.name)
		for _, g := range v.BySize {
			worst := max(math.Abs(g.MinErrorPct), math.Abs(g.MaxErrorPct))
			t.Logf("%s, %s: %d records (%d host-paced), median %+.1f %%, from %+.1f to %+.1f %%", tb.name, g.Range, g.Count, g.HostPaced, g.MedianErrorPct, g.MinErrorPct, g.MaxErrorPct)
			if slices.Contains(within[tb.name], g.Range) {
				assert.LessOrEqual(t, worst, 25.0, "%s, %s", tb.name, g.Range)
			}
			if g.HostPaced == g.Count {
				continue
			}
			// the device-paced records alone, the criterion
			deviceRanges++
			dev := max(math.Abs(g.DeviceMinErrorPct), math.Abs(g.DeviceMaxErrorPct))
			t.Logf("%s, %s: %d device-paced, from %+.1f to %+.1f %%", tb.name, g.Range, g.Count-g.HostPaced, g.DeviceMinErrorPct, g.DeviceMaxErrorPct)
			if dev <= 25 {
				deviceWithin++
			}
		}
	}
	// Judged on device-paced records alone (the host-paced ones are the
	// host's issue cost at its core clock): 18 ranges have some, 16 within
	// 25 % (the 4 × RTX 4090 table's 4 KiB–1 MiB misses, and the 8 × RTX
	// PRO 6000 graph-file page's, −27…−13 %: its Simple rows lie on 46.6 µs
	// + 39.2 µs/MiB, the 8 × RTX 5090 table's, on the same CPUs, on 36.5 +
	// 38.3, and the model, 35.1 + 38.4, sits at the latter).
	assert.Equal(t, 18, deviceRanges)
	assert.GreaterOrEqual(t, deviceWithin, 16)
}

// The 4 × RTX 5090 table's host is a Genoa by its name, not a part the
// source names: its parameter file takes the family's lowest maximum
// boost (3.7 GHz). At the family's highest (4.4 GHz, EPYC 9174F) the rows
// up to 2 KiB must stay within 25 % too, or the reading rests on the pick.
func TestGenoaHostAnyPart(t *testing.T) {
	p := filepath.Join(t.TempDir(), "genoa_top.params")
	require.NoError(t, os.WriteFile(p, []byte("host.core_clock = 4.4\n"), 0o644))
	for _, params := range []string{"../../testdata/nccltests/rtx5090x4_genoa_host.params", p} {
		out, _, err := runCLI(t, "validate", "--format", "json", "--traces", "../../testdata/nccltests/rtx5090x4_shm.txt", "--topology", "rtxpro6000x4-1numa", "--params", params)
		require.NoError(t, err)
		var v struct {
			BySize []validate.SizeSummary `json:"by_size"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &v))
		require.NotEmpty(t, v.BySize)
		g := v.BySize[0]
		require.Equal(t, "≤ 2 KiB", g.Range)
		t.Logf("%s: ≤ 2 KiB %d records (%d host-paced), from %+.1f to %+.1f %%", filepath.Base(params), g.Count, g.HostPaced, g.MinErrorPct, g.MaxErrorPct)
		assert.LessOrEqual(t, max(math.Abs(g.MinErrorPct), math.Abs(g.MaxErrorPct)), 25.0, params)
	}
}
