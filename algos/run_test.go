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
