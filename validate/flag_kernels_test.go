package validate

import (
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// The project's flag kernels through host memory on two H200s
// (arsim_flag_one_shot and arsim_flag_two_shot in
// testdata/h200x2-arsim/measurements.jsonl: never fitted), modelled with
// vLLM's layout, the own slot counted, the two-shot's mid barrier two
// fences (a __threadfence_system and its release store,
// barrier_modes.jsonl): one-shot median |error| 10.9 %, p95 23.9 % by
// nearest rank; two-shot 8.4 %, 21.1 %. Before the own slot: 10.5 %,
// 28.5 % and 11.9 %, 31.3 % (interpolated); with the own slot but before
// reads took whole iterations (hw.windowCap: a pull no longer pays a round
// trip beyond its iterations) 7.6 % and 8.4 %; with that and the mid
// barrier's one fence, 9.8 % and 10.8 % (median −8.4 % and −7.8 %; the
// second fence brings the two-shot to −3.8 %). The pull reading the staged
// lines sooner (hostmem.fresh_line_saving, measured on one H200's
// emulation of the one-shot, host_shot.jsonl) takes them to 10.9 % and
// 8.4 % (median −10.9 % and −6.5 %): the model was already fast there.
// The other blocks' copies of a flag on lines that collide with a block's
// own (hw's blockForeignCollision, fitted on one H200's barriers,
// barrier_groups_apart.jsonl and barrier_chunks_2.jsonl) take them to
// 7.8 %, p95 19.1 % (one-shot; its block sweep at 36–72 blocks from
// −28…−40 % to −13…+5 %) and 7.1 %, 26.4 % (two-shot: its small sizes
// from −38…−6 % to −14…+13 %, its 0.5–2 MiB at 16–36 blocks from
// +8…+21 % to +17…+32 %). This holds them there.
func TestFlagKernelsThroughHostMemory(t *testing.T) {
	recs, v := twoH200Captures(t)
	byLine := recordsByLine(recs)
	for impl, bound := range map[trace.Impl][2]float64{trace.ImplFlagOneShot: {8, 20}, trace.ImplFlagTwoShot: {7.5, 27}} {
		var abs []float64
		for _, c := range v.Records {
			if r := byLine[c.Line]; r.Impl == impl && r.Transport == trace.TransportHostMemory {
				abs = append(abs, math.Abs(c.ErrorPct))
			}
		}
		require.Len(t, abs, 55, "%s", impl)
		slices.Sort(abs)
		med, p95 := abs[len(abs)/2], abs[int(math.Ceil(0.95*float64(len(abs))))-1]
		t.Logf("%s: median %.1f %%, p95 (nearest rank) %.1f %%", impl, med, p95)
		assert.LessOrEqual(t, med, bound[0], "%s median", impl)
		assert.LessOrEqual(t, p95, bound[1], "%s p95", impl)
	}
}

// The flag kernels on two H200s are gpu.kernel_prologue's predicted side
// but for its one record, held out by route and block count. Over NVLink
// the one-shot holds at every block count. The two-shot's mid barrier
// fences while the kernel's other blocks pull from the peer: each of its two
// fences waits for their loads still in flight (hw.Machine.FenceBesidePolls
// with the peer's round trip, the form and growth host memory's, nothing
// fitted on these records, the form chosen after seeing the two-shot's
// miss grow with its blocks; counted per load in flight as one H200's
// fences beside pulls of host memory are, fence_pulls.jsonl): median
// |error| 10.1, 14.6, 22.3 % at 1, 2–8, 9–132 blocks without it, 10.1,
// 7.6, 12.3 % counting the other blocks, 10.1, 5.2, 7.0 % counting their
// loads. What is left is about 0.7 µs at every block count (on one GPU the
// mid barrier's fences cost 1.42–1.73 µs where the model's two take about
// 1.0–1.2, flag_one_gpu_2.jsonl). This bounds the rows as they are, so
// that a change that worsens them fails.
func TestFlagKernelsHeldOutByBlocks(t *testing.T) {
	_, v := twoH200Captures(t)
	fitted := 0
	for _, c := range v.Records {
		if c.FittedFor == "gpu.kernel_prologue" {
			fitted++
		}
	}
	assert.Equal(t, 1, fitted, "gpu.kernel_prologue's fitted side is one record")
	rows := map[string]DimensionRow{}
	for _, d := range v.HeldOut.Dims {
		rows[d.Dimension] = d
	}
	median := func(dim string) float64 {
		d, ok := rows[dim]
		require.True(t, ok, "no held-out row %q", dim)
		return d.MedianAbsPct
	}
	for _, blocks := range []string{"1 block", "2–8 blocks", "9–132 blocks"} {
		assert.Less(t, median("arsim_flag_one_shot NVLink, "+blocks), 8.0, "one-shot over NVLink, %s", blocks)
	}
	one, few, many := median("arsim_flag_two_shot NVLink, 1 block"), median("arsim_flag_two_shot NVLink, 2–8 blocks"), median("arsim_flag_two_shot NVLink, 9–132 blocks")
	t.Logf("two-shot over NVLink, median |error|: %.1f %% at 1 block, %.1f %% at 2–8, %.1f %% at 9–132", one, few, many)
	assert.LessOrEqual(t, one, 11.0, "two-shot over NVLink, 1 block")
	assert.LessOrEqual(t, few, 6.5, "two-shot over NVLink, 2–8 blocks")
	assert.LessOrEqual(t, many, 8.5, "two-shot over NVLink, 9–132 blocks")
}

// The flag two-shot's mid barrier as the capture builds it: fence_release
// (a __threadfence_system and a release store) is two fences; release
// (vLLM's release store alone) and fence_volatile (a fence, then volatile
// flags) are one; on two H200s at one block the two differ by one fence
// after its stores' landing.
func TestFlagTwoShotMidBarrierModes(t *testing.T) {
	rec := func(mid string) trace.Record {
		return trace.Record{System: "h200x2-vm", Kind: trace.KindAllreduce, Clock: trace.ClockDeviceEvents, Impl: trace.ImplFlagTwoShot,
			Algo: "two_shot", Transport: trace.TransportP2P, Launch: trace.LaunchCUDAGraph, Dtype: "bf16", World: 2,
			Bytes: 14336, Blocks: 1, Threads: 512, Us: 8, MidBarrier: mid}
	}
	us := map[string]float64{}
	for _, mid := range []string{"", "fence_release", "release", "fence_volatile"} {
		v, err := Run([]trace.Record{rec(mid)}, Options{})
		require.NoError(t, err, mid)
		require.Len(t, v.Records, 1, mid)
		us[mid] = v.Records[0].Predicted
	}
	assert.Equal(t, us[""], us["fence_release"], "a record without the field ran fence_release")
	assert.Equal(t, us["release"], us["fence_volatile"], "both are one fence")
	top, err := topology.Load("h200x2")
	require.NoError(t, err)
	m, err := hw.New(top)
	require.NoError(t, err)
	fence, err := m.FenceAfterLanding(0, hw.GPUMem(0))
	require.NoError(t, err)
	assert.InDelta(t, fence.Micros(), us["fence_release"]-us["release"], 1e-6, "the second fence")
}

// twoH200Captures reads the project's captures on two H200s
// (testdata/h200x2-arsim/measurements.jsonl) and validates them.
func twoH200Captures(t *testing.T) ([]trace.Record, *Validation) {
	t.Helper()
	const file = "../testdata/h200x2-arsim/measurements.jsonl"
	recs, _, err := trace.ReadJSONLFile(file, trace.ReadOptions{SkipBad: true})
	require.NoError(t, err)
	v, err := Run(recs, Options{File: file})
	require.NoError(t, err)
	return recs, v
}
