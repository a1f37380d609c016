package hw

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gpu.mem_loaded_latency is device memory's: an LL loop whose launch
// stays in the L2 takes what one block takes at any block count, and one
// past it (Kernel.FromDRAM) grows with the blocks' loads.
func TestLoadedLatencyOnlyPastTheL2(t *testing.T) {
	top, _ := h200x1(t)
	ll := func(blocks, iters int) float64 {
		v, err := PerBlockValue(top, PerBlock{Kind: "loop", Loop: "ll", LLOp: "recv_reduce_send", Recv: "local", Dst: "local", Blocks: blocks, Threads: 512, Iters: iters})
		require.NoError(t, err)
		return v
	}
	one := ll(1, 512) // 10 MB: inside the L2
	for _, b := range []int{8, 32, 132} {
		assert.InDelta(t, one, ll(b, 4), 1e-6, "%d blocks inside the L2", b)
	}
	past := []float64{ll(1, 8192), ll(8, 1024), ll(32, 128), ll(132, 64)} // 84–173 MB
	assert.Greater(t, past[0], one, "past the L2 the loads come from device memory")
	for i := 1; i < len(past); i++ {
		assert.Greater(t, past[i], past[i-1], "past the L2 the wait grows with the blocks' loads")
	}
}
