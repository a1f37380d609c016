package algos

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/hw"
)

func runUs(t testing.TB, algo string, r Request, iters int) float64 {
	s := plan(t, algo, r)
	m, err := hw.New(r.Top)
	require.NoError(t, err)
	res, err := Run(m, s, RunOptions{Iterations: iters, Launch: r.Launch})
	require.NoError(t, err)
	return res.MeanUs()
}

func TestOneStageRuns(t *testing.T) {
	us := runUs(t, "one_stage", req(t, "rtxpro6000x8-2numa", 8, 43008, nil), 3)
	t.Logf("one_stage 8×RTX PRO 6000 2-NUMA, 43008 B: %.2f µs", us)
	assert.Greater(t, us, 5.0)
	assert.Less(t, us, 60.0)
}

func TestRunReportsDeadlock(t *testing.T) {
	r := req(t, "rtxpro6000x8-2numa", 2, 4096, nil)
	s := plan(t, "one_stage", r)
	s.Programs[1] = append(s.Programs[1], Op{Kind: Wait, Flag: Flag{At: hw.GPUMem(1), Name: "ghost"}, Value: 1, Label: "ghost wait"})
	m, err := hw.New(r.Top)
	require.NoError(t, err)
	_, err = Run(m, s, RunOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "deadlock")
	assert.Contains(t, err.Error(), "rank 1 op")
	assert.Contains(t, err.Error(), "gpu1:ghost ≥ 1 (holds 0)")
}

// PyTorch's one-shot (one_stage with end_release): its acquire-release end
// barrier waits for the output stores, a system-scope fence to the rank's
// own memory that vLLM's relaxed end barrier does not pay. The schedule
// stays correct.
func TestOneStageEndRelease(t *testing.T) {
	opts := map[string]string{"barrier": "atomic"}
	plain := req(t, "h200x2", 2, 1024, opts)
	rel := req(t, "h200x2", 2, 1024, map[string]string{"barrier": "atomic", "end_release": "true"})
	require.NoError(t, Check(plan(t, "one_stage", rel)))
	fences := 0
	for _, op := range plan(t, "one_stage", rel).Programs[0] {
		if op.Kind == Fence {
			fences++
			assert.Equal(t, hw.GPUMem(0), op.Dst.Buf.At)
		}
	}
	assert.Equal(t, 1, fences)
	d := runUs(t, "one_stage", rel, 3) - runUs(t, "one_stage", plain, 3)
	// The fence follows the output stores, which have landed by then: it
	// adds gpu.fence_sys_local (measured from the stores' issue) less the
	// local store's landing (gpu.mem_latency).
	want := (rel.Top.Params.Get("gpu.fence_sys_local") - rel.Top.Params.Get("gpu.mem_latency")) / 1000
	assert.InDelta(t, want, d, 0.05, "one fence on the critical path")
}

// A pull kernel's load_waits (the round trips its compiled loop waits an
// iteration, `arsim sass`) slows its pulls where their round trips set the
// pace: on eight RTX PRO 6000s at 14 KiB each wait more takes longer, and
// 1 is the default (every load in flight); at 1 MiB, where the links set
// it, 36 blocks' loads cover a second wait. Counts the loop cannot have
// are refused, naming the option.
func TestPullLoadWaitsOption(t *testing.T) {
	at := func(algo string, bytes int64, opts map[string]string) float64 {
		return runUs(t, algo, req(t, "rtxpro6000x8-2numa", 8, bytes, opts), 3)
	}
	for _, algo := range []string{"one_stage", "two_stage", "host_one_shot"} {
		base := at(algo, 14336, nil)
		w := []float64{at(algo, 14336, map[string]string{"load_waits": "1"}), at(algo, 14336, map[string]string{"load_waits": "2"}),
			at(algo, 14336, map[string]string{"load_waits": "4"}), at(algo, 14336, map[string]string{"load_waits": "8"})}
		t.Logf("%s 14 KiB: %.2f µs; load_waits 1, 2, 4, 8: %.2f", algo, base, w)
		assert.Equal(t, base, w[0], "%s: load_waits=1 is the default", algo)
		assert.GreaterOrEqual(t, w[1], w[0], algo)
		assert.Greater(t, w[2], w[1], algo)
		assert.Greater(t, w[3], w[2]+4, "%s: four more waits an iteration cost more than 4 µs", algo)
		big := at(algo, 1<<20, map[string]string{"blocks": "36"})
		assert.InEpsilon(t, big, at(algo, 1<<20, map[string]string{"blocks": "36", "load_waits": "2"}), 1e-4, "%s: the links set the pace at 1 MiB (within 0.01 %%: the blocks' queue for host memory follows their round trip)", algo)
	}
	_, err := Plan("one_stage", req(t, "rtxpro6000x8-2numa", 4, 43008, map[string]string{"load_waits": "6"}))
	assert.ErrorContains(t, err, "load_waits=6: the pull loads one pack from each of the 4 ranks' buffers an iteration, so it waits at most 4 times")
	_, err = Plan("one_stage", req(t, "rtxpro6000x8-2numa", 8, 43008, map[string]string{"load_waits": "9"}))
	assert.ErrorContains(t, err, "load_waits=9: 9 is above the limit 8 (one wait per rank's buffer at most: rtxpro6000x8-2numa has 8 GPUs)")
	_, err = Plan("two_stage", req(t, "rtxpro6000x8-2numa", 8, 43008, map[string]string{"load_waits": "2", "rank_loop": "runtime"}))
	assert.ErrorContains(t, err, "with rank_loop=runtime each load is waited in turn")
	_, err = Plan("one_stage", req(t, "rtxpro6000x8-2numa", 8, 43008, map[string]string{"load_waits": "0"}))
	assert.ErrorContains(t, err, "load_waits=0: 0 is below the minimum 1")
	// Pulls over fewer buffers than ranks wait at most once per buffer.
	_, err = Plan("hierarchical", req(t, "rtxpro6000x8-2numa", 8, 43008, map[string]string{"load_waits": "3"}))
	assert.ErrorContains(t, err, "load_waits=3: the islands' exchange loads one pack from each of 2 buffers an iteration, so it waits at most 2 times")
	_, err = Plan("halving_doubling", req(t, "rtxpro6000x8-2numa", 8, 43008, map[string]string{"load_waits": "3"}))
	assert.ErrorContains(t, err, "load_waits=3: each exchange loads one pack from each of 2 buffers an iteration")
}
