package scenarios

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
)

var update = flag.Bool("update", false, "rewrite the golden sweep tables in testdata/")

// suiteSizes are 1 KiB … 256 MiB by powers of two.
func suiteSizes() []int64 {
	var s []int64
	for b := int64(1 << 10); b <= 256<<20; b *= 2 {
		s = append(s, b)
	}
	return s
}

// presetSweep is one preset's sweep of every algorithm, run once for the
// whole test binary by whichever test needs it first.
type presetSweep struct {
	once sync.Once
	rows []SweepRow
	err  error
}

var (
	sweepsMu sync.Mutex
	sweeps   = map[string]*presetSweep{}
)

func sweepOf(t *testing.T, preset string) []SweepRow {
	t.Helper()
	sweepsMu.Lock()
	ps, ok := sweeps[preset]
	if !ok {
		ps = &presetSweep{}
		sweeps[preset] = ps
	}
	sweepsMu.Unlock()
	ps.once.Do(func() {
		top, err := topology.Load(preset)
		if err != nil {
			ps.err = err
			return
		}
		ps.rows, ps.err = Sweep(context.Background(), SweepConfig{Top: top, Algos: algos.Names(), Sizes: suiteSizes()})
	})
	require.NoError(t, ps.err)
	return ps.rows
}

// goldenTable renders rows with fixed precision, sorted by algorithm then
// size, so a change in the physics shows up as a reviewable diff.
func goldenTable(rows []SweepRow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-16s %12s %14s %12s\n", "algo", "bytes", "us", "busbw_gbps")
	for _, r := range rows {
		if r.Err != nil {
			fmt.Fprintf(&b, "%-16s %12d %14s %12s  # %s\n", r.Algo, r.Bytes, "n/a", "n/a", firstLine(r.Err.Error()))
			continue
		}
		fmt.Fprintf(&b, "%-16s %12d %14.3f %12.3f\n", r.Algo, r.Bytes, r.Us, r.BusGBps)
	}
	return b.String()
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// goldenPath is the golden sweep of one algorithm on one preset: each
// algorithm owns its folder, so a new algorithm adds its files and changes
// no other.
func goldenPath(algo, preset string) string {
	return filepath.Join("testdata", "sweep", algo, preset+".golden")
}

// TestGoldenSweeps compares each algorithm's sweep on each preset with its
// golden table, one parallel subtest per pair (algorithm/preset), and shows
// a mismatch as a unified diff. Regenerate with
// `go test ./scenarios -run Golden -update` and review the diff.
func TestGoldenSweeps(t *testing.T) {
	for _, algo := range algos.Names() {
		t.Run(algo, func(t *testing.T) {
			t.Parallel()
			for _, preset := range sweepPresets(t) {
				t.Run(preset, func(t *testing.T) {
					t.Parallel()
					var mine []SweepRow
					for _, r := range sweepOf(t, preset) {
						if r.Algo == algo {
							mine = append(mine, r)
						}
					}
					checkGolden(t, goldenPath(algo, preset), goldenTable(mine))
				})
			}
		})
	}
}

// checkGolden compares got with the golden file at path (or rewrites it
// under -update) and reports a difference as a unified diff.
func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file: run go test ./scenarios -run Golden -update")
	if string(want) == got {
		return
	}
	diff, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(string(want)), B: difflib.SplitLines(got),
		FromFile: path, ToFile: "simulated", Context: 2,
	})
	require.NoError(t, err)
	t.Errorf("%s changed; if intended, rerun with -update and review the diff:\n%s", path, diff)
}

// sweepPresets are the presets the suite sweeps: those with at least two
// GPUs (a one-GPU preset models per-block measurements, not allreduces).
func sweepPresets(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, p := range topology.Presets() {
		top, err := topology.Load(p)
		require.NoError(t, err)
		if top.NumGPUs() >= 2 {
			out = append(out, p)
		}
	}
	return out
}

// TestComparisonTables prints, per preset, the winner at each size and the
// crossovers — the tables a person reads with `go test ./scenarios -v`.
func TestComparisonTables(t *testing.T) {
	for _, preset := range sweepPresets(t) {
		rows := sweepOf(t, preset)
		win := Winners(rows)
		var b strings.Builder
		fmt.Fprintf(&b, "\n%s — fastest algorithm per size\n", preset)
		prev := ""
		for _, s := range suiteSizes() {
			w, ok := win[s]
			if !ok {
				continue
			}
			change := ""
			if prev != "" && w.Algo != prev {
				change = "   ← crossover"
			}
			prev = w.Algo
			fmt.Fprintf(&b, "  %10v  %-16s %10.2f µs  %6.1f GB/s busbw%s\n", sim.Bytes(s), w.Algo, w.Us, w.BusGBps, change)
		}
		t.Log(b.String())
		require.NotEmpty(t, win, "%s: no algorithm ran at any size", preset)
	}
}

func usAt(t *testing.T, preset, algo string, bytes int64, opts map[string]string) float64 {
	t.Helper()
	top, err := topology.Load(preset)
	require.NoError(t, err)
	us, err := Point(top, top.NumGPUs(), algo, bytes, algos.BF16, hw.Graph, opts, 3)
	require.NoError(t, err, "%s on %s at %d B", algo, preset, bytes)
	return us
}

// The crossover between one-stage and two-stage lies between 16 KiB and
// 1 MiB on the headline machine: one-stage pulls (n−1)·S per GPU with one
// round of barriers, two-stage pulls 2(n−1)/n·S with one more barrier, so
// two-stage must win once (n−1)·S − 2(n−1)/n·S bytes at PCIe rates outweigh
// one barrier (~2–3 µs across sockets): 5.25·S / ~50 GB/s ≈ 2.5 µs gives
// S ≈ 24 KB; one-stage must still win at the smallest sizes, where the
// extra barrier dominates.
func TestOneStageTwoStageCrossover(t *testing.T) {
	rows := sweepOf(t, "rtxpro6000x8-2numa")
	x := Crossover(rows, "one_stage", "two_stage")
	require.NotZero(t, x, "two_stage never beats one_stage")
	assert.Greater(t, x, int64(16<<10))
	assert.LessOrEqual(t, x, int64(1<<20))
	t.Logf("two_stage overtakes one_stage at %v", sim.Bytes(x))
}

// Adding PCIe switches shortens one-stage at small sizes among the GPUs of
// one socket: their traffic stays inside the switch (flags land in ~0.4 µs
// instead of ~0.8 µs one way through the root complex) and the barriers are
// most of a small allreduce.
//
// Across two sockets the model says the opposite, and the test pins it:
// the slowest peer of an 8-GPU one-stage is across the socket link, and
// with switches that path gains two switch hops (~1.25 µs against ~1.0 µs
// one way) while four GPUs share one x16 uplink for their cross-socket
// pulls. A published measurement to confirm or refute this is missing.
func TestSwitchesShortenOneStage(t *testing.T) {
	rp, err := topology.Load("rtxpro6000x8-2numa")
	require.NoError(t, err)
	sw, err := topology.Load("rtxpro6000x8-switches")
	require.NoError(t, err)
	for _, b := range []int64{1 << 10, 4 << 10, 16 << 10} {
		a, err := Point(rp, 4, "one_stage", b, algos.BF16, hw.Graph, nil, 3)
		require.NoError(t, err)
		c, err := Point(sw, 4, "one_stage", b, algos.BF16, hw.Graph, nil, 3)
		require.NoError(t, err)
		assert.Less(t, c, a, "4 GPUs of one socket, %d B: switches %.2f µs, root ports %.2f µs", b, c, a)
	}
	a, err := Point(rp, 8, "one_stage", 1<<10, algos.BF16, hw.Graph, nil, 3)
	require.NoError(t, err)
	c, err := Point(sw, 8, "one_stage", 1<<10, algos.BF16, hw.Graph, nil, 3)
	require.NoError(t, err)
	assert.Greater(t, c, a, "8 GPUs over two sockets: the cross-socket path is longer behind switches")
	t.Logf("one_stage 1 KiB on 8 GPUs: root ports %.2f µs, switches %.2f µs", a, c)
}

// One-stage time grows with (n−1)·S per rank at large sizes: every rank
// pulls all peers' buffers through its one PCIe link, so 8 ranks take
// about 7/3 of 4 ranks' time on the same kind of link.
func TestOneStageScalesWithPeers(t *testing.T) {
	top, err := topology.Load("rtxpro6000x8-2numa")
	require.NoError(t, err)
	t4, err := Point(top, 4, "one_stage", 16<<20, algos.BF16, hw.Graph, nil, 1)
	require.NoError(t, err)
	t8, err := Point(top, 8, "one_stage", 16<<20, algos.BF16, hw.Graph, nil, 1)
	require.NoError(t, err)
	assert.InDelta(t, 7.0/3, t8/t4, 0.35, "t8/t4 = %.2f", t8/t4)
}

// The verify pass's per-allreduce time equals the allreduce's own time
// plus nothing else: layer compute happens between allreduces, not inside.
func TestVerifyPassAccounting(t *testing.T) {
	top, err := topology.Load("rtxpro6000x8-2numa")
	require.NoError(t, err)
	res, err := Verify(VerifyConfig{Top: top, Tokens: 3}, []string{"one_stage"})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	us := usAt(t, "rtxpro6000x8-2numa", "one_stage", 43008, nil)
	assert.InDelta(t, us, res[0].UsPerAllreduce, us*0.05)
	want := (float64(DefaultCompute(3))/float64(sim.Microsecond) + 122*res[0].UsPerAllreduce) / 1000
	assert.InDelta(t, want, res[0].PassMs, want*0.01)
	assert.Greater(t, res[0].PlainTokS, 0.0)
	_, err = Verify(VerifyConfig{Top: top, Tokens: 3, Accept: 5}, []string{"one_stage"})
	assert.ErrorContains(t, err, "acceptance length 5.00 must lie between 1 and the tokens per pass (3)")
}

// A sweep is identical whether its points run one at a time or in parallel.
func TestSweepParallelEqualsSerial(t *testing.T) {
	top, err := topology.Load("rtxpro6000x8-switches")
	require.NoError(t, err)
	cfg := SweepConfig{Top: top, Algos: algos.Names(), Sizes: []int64{1024, 43008, 1 << 20}}
	cfg.Parallel = 1
	serial, err := Sweep(context.Background(), cfg)
	require.NoError(t, err)
	cfg.Parallel = 8
	par, err := Sweep(context.Background(), cfg)
	require.NoError(t, err)
	assert.Equal(t, goldenTable(serial), goldenTable(par))
}

// The verify pass gives the same results whether its algorithms run one at
// a time or in parallel.
func TestVerifyParallelEqualsSerial(t *testing.T) {
	top, err := topology.Load("rtxpro6000x8-2numa")
	require.NoError(t, err)
	names := []string{"two_stage", "one_stage", "tree", "two_shot_push", "nccl"}
	prev := runtime.GOMAXPROCS(1)
	serial, err := Verify(VerifyConfig{Top: top, Tokens: 3}, names)
	runtime.GOMAXPROCS(4)
	require.NoError(t, err)
	par, err := Verify(VerifyConfig{Top: top, Tokens: 3}, names)
	runtime.GOMAXPROCS(prev)
	require.NoError(t, err)
	assert.Equal(t, serial, par)
}

// At 43 KB on the headline machine, one-stage beats NCCL as it configures
// itself there (no P2P across host bridges, so ring/Simple through host
// memory) by a wide margin. From first principles: NCCL-over-SHM chains
// 2(n−1) = 14 steps, each at least a host-memory poll round trip plus a
// host read round trip (≥ 2 × 1.1 µs), plus its base latency (8.4 µs):
// ≥ 39 µs; one-stage is two barriers (≤ ~3 µs each across sockets) and
// 7 × 43 KB over one Gen5 x16 link (~6 µs): ≤ ~13 µs. So ≥ 3×. The
// published gap is larger (225 µs against ~12 µs); the simulated NCCL is
// faster than measured, and verify prints that disagreement.
func TestOneStageBeatsNCCLOverSHM(t *testing.T) {
	one := usAt(t, "rtxpro6000x8-2numa", "one_stage", 43008, nil)
	nccl := usAt(t, "rtxpro6000x8-2numa", "nccl", 43008, nil)
	assert.GreaterOrEqual(t, nccl/one, 3.0, "nccl %.1f µs, one_stage %.1f µs", nccl, one)
	t.Logf("43 KB: nccl (shm) %.1f µs, one_stage %.1f µs: %.1f×", nccl, one, nccl/one)
}

// At 64 MiB a ring beats one-stage: the ring moves 2(n−1)/n·S per GPU in
// each direction, one-stage pulls (n−1)·S into every GPU, 4× more on 8
// GPUs, and at this size bandwidth is everything.
func TestRingBeatsOneStageAtLargeSizes(t *testing.T) {
	ring := usAt(t, "rtxpro6000x8-2numa", "ring", 64<<20, nil)
	one := usAt(t, "rtxpro6000x8-2numa", "one_stage", 64<<20, nil)
	assert.Less(t, ring, one/2, "ring %.0f µs, one_stage %.0f µs", ring, one)
}

// NCCL allowed P2P (NCCL_P2P_LEVEL=SYS) with LL is far faster than NCCL
// over SHM at verify-pass sizes: each of its 14 steps is one posted write
// with an inline flag, no host-memory round trips. Published: 20–25 µs.
func TestNCCLP2PLevelSysLL(t *testing.T) {
	shm := usAt(t, "rtxpro6000x8-2numa", "nccl", 43008, nil)
	ll := usAt(t, "rtxpro6000x8-2numa", "nccl", 43008, map[string]string{"p2p_level": "sys", "proto": "ll"})
	assert.Less(t, ll, shm/1.5)
	assert.InDelta(t, 25, ll, 12.5, "published 20–25 µs for tuned NCCL at 16–64 KB")
	t.Logf("43 KB: nccl p2p_level=sys proto=ll %.1f µs (published 20–25), default shm %.1f µs (published 200–250)", ll, shm)
}

// Every folder of golden sweeps belongs to a registered algorithm, so that
// a renamed or removed algorithm leaves no stale tables behind.
func TestGoldenSweepsHaveAnAlgorithm(t *testing.T) {
	dirs, err := os.ReadDir(filepath.Join("testdata", "sweep"))
	require.NoError(t, err)
	for _, d := range dirs {
		_, err := algos.Lookup(d.Name())
		assert.NoError(t, err, "testdata/sweep/%s has no algorithm", d.Name())
	}
}

// A verify pass in a CUDA graph is one graph of its allreduces: NCCL's
// graph_calls is set to them unless the options set it; an eager pass and
// the options a user set are left as they are.
func TestVerifyGraphCalls(t *testing.T) {
	assert.Equal(t, map[string]string{"graph_calls": "122"}, WithGraphCalls(nil, hw.Graph))
	assert.Equal(t, map[string]string{"proto": "ll", "graph_calls": "122"}, WithGraphCalls(map[string]string{"proto": "ll"}, hw.Graph))
	assert.Equal(t, map[string]string{"graph_calls": "40"}, WithGraphCalls(map[string]string{"graph_calls": "40"}, hw.Graph))
	assert.Nil(t, WithGraphCalls(nil, hw.Eager))
	assert.Empty(t, UserOpts(WithGraphCalls(nil, hw.Graph)))
	assert.Equal(t, map[string]string{"graph_calls": "40"}, UserOpts(map[string]string{"graph_calls": "40"}))
}
