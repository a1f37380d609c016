package algos

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/topology"
)

func TestTwoShotPushChecks(t *testing.T) {
	checkSweep(t, "two_shot_push", "rtxpro6000x8-2numa", sweepSizes, all)
	checkSweep(t, "two_shot_push", "h200x2", []int64{14, 43008, 1 << 20}, func(n int) bool { return n <= 2 })
}

// In place: every rank's result is its input buffer, and each rank writes
// its reduced shard into every peer's buffer.
func TestTwoShotPushIsInPlace(t *testing.T) {
	s := plan(t, "two_shot_push", req(t, "rtxpro6000x8-2numa", 4, 43008, map[string]string{"barrier": "atomic"}))
	assert.Equal(t, s.Input, s.Output)
	for r, prog := range s.Programs {
		pushes := 0
		for _, op := range prog {
			if op.Kind == Write {
				assert.NotEqual(t, r, op.Dst.Buf.At.Rank, "rank %d pushes to itself: %v", r, op)
				assert.Equal(t, s.Input, op.Dst.Buf.Name)
				pushes++
			}
		}
		assert.Equal(t, 3, pushes, "rank %d", r)
	}
}

// Planted bug: without the end barrier the next call's pushes can land in
// a shard a slower peer is still reading.
func TestTwoShotPushNeedsEndBarrier(t *testing.T) {
	s := plan(t, "two_shot_push", req(t, "rtxpro6000x8-2numa", 4, 43008, nil))
	for r := range s.Programs {
		neuterOps(s, r, func(op Op) bool { return op.Label == "end barrier" })
	}
	assert.Error(t, Check(s))
}

// PyTorch's two-shot and vLLM's 2-stage both meet twice (start and end
// barrier against start and mid barrier); the two-shot's second phase
// pushes its shard with posted stores where the 2-stage pulls the peers'
// shards, a round trip: at a small size on NVLink the two-shot is faster.
func TestTwoShotPushBeatsTwoStageWhenSmall(t *testing.T) {
	top, err := topology.Load("h200x2")
	require.NoError(t, err)
	us := func(algo string) float64 {
		// PyTorch's launch for 4 KiB over 2 ranks: 1 block of 128 threads.
		s := plan(t, algo, req(t, "h200x2", 2, 4096, map[string]string{"barrier": "atomic", "blocks": "1", "threads": "128"}))
		m, err := hw.New(top)
		require.NoError(t, err)
		res, err := Run(m, s, RunOptions{Iterations: 5, Launch: hw.Graph})
		require.NoError(t, err)
		return res.SteadyUs()
	}
	push, stage := us("two_shot_push"), us("two_stage")
	assert.Less(t, push, stage-0.3, "two_shot_push %.2f µs, two_stage %.2f µs", push, stage)
	t.Logf("two_shot_push %.2f µs, two_stage %.2f µs", push, stage)
}
