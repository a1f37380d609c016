package algos

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHierarchicalChecks(t *testing.T) {
	// On the 2-socket box 5 ranks are islands of 4 and 1: refused, naming
	// the sizes; 2, 3, 4 ranks are one island, 8 are two of four.
	checkSweep(t, "hierarchical", "rtxpro6000x8-2numa", sweepSizes, func(n int) bool { return n != 5 })
	// Switch islands (PIX) on the switch presets.
	checkSweep(t, "hierarchical", "rtxpro6000x8-switches", []int64{14, 43008}, func(n int) bool { return n != 5 })
	checkSweep(t, "hierarchical", "a800x8-2islands", []int64{14, 43008}, func(n int) bool { return n != 5 })
}

func TestHierarchicalIslands(t *testing.T) {
	// No PCIe switches: islands are sockets.
	s := plan(t, "hierarchical", req(t, "rtxpro6000x8-2numa", 8, 43008, nil))
	assert.Contains(t, s.Notes[0], "2 socket islands of 4: [[0 1 2 3] [4 5 6 7]]")
	// Switches: islands are the GPUs behind one switch (PIX paths).
	s = plan(t, "hierarchical", req(t, "a800x8-2islands", 8, 43008, nil))
	assert.Contains(t, s.Notes[0], "2 PCIe switch islands of 4: [[0 1 2 3] [4 5 6 7]]")
	// Unequal islands are refused with their sizes.
	_, err := Plan("hierarchical", req(t, "rtxpro6000x8-2numa", 6, 43008, nil))
	assert.ErrorContains(t, err, "6 ranks on rtxpro6000x8-2numa form socket islands of unequal sizes 4, 2")
}

// Only the exchange crosses islands, one share of S/g per counterpart:
// each rank moves S/4 across the sockets on 2 × 4 GPUs, where two_stage
// pulls S/8 from each of 4 remote peers in both stages (S in all).
func TestHierarchicalCrossIslandBytes(t *testing.T) {
	const S = 1 << 20
	r := req(t, "rtxpro6000x8-2numa", 8, S, nil)
	cross := func(s *Schedule) []int64 {
		out := make([]int64, s.Ranks)
		for rank, prog := range s.Programs {
			for _, op := range prog {
				if op.Kind == Read && !op.Src.Buf.At.Host && r.Top.GPU(op.Src.Buf.At.Rank).Socket != r.Top.GPU(rank).Socket {
					out[rank] += op.Src.Len
				}
			}
		}
		return out
	}
	for rank, b := range cross(plan(t, "hierarchical", r)) {
		assert.Equal(t, int64(S/4), b, "hierarchical rank %d", rank)
	}
	for rank, b := range cross(plan(t, "two_stage", r)) {
		assert.Equal(t, int64(S), b, "two_stage rank %d", rank)
	}
}

// Planted bug: member 0 of island 0 pulls its counterpart's island
// partial without the rs barrier: it may read tmp before it is summed.
func TestCheckerCatchesHierarchicalMissingRSBarrier(t *testing.T) {
	s := plan(t, "hierarchical", req(t, "rtxpro6000x8-2numa", 8, 4096, nil))
	neuterOps(s, 0, func(o Op) bool { return o.Label == "rs barrier" && o.Kind == Wait })
	err := Check(s)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "race on gpu4:tmp bytes [0, 1024)")
	assert.Contains(t, err.Error(), "[exchange pull rank 4]")
}
