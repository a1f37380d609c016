package hw

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A schedule's flag layout in the barrier records' names.
func TestFlagLayout(t *testing.T) {
	assert.Equal(t, "line_per_slot", FlagLayout(false, 128, 0))
	assert.Equal(t, "vllm", FlagLayout(true, 4096, 32))
	assert.Equal(t, "packed_128", FlagLayout(true, 0, 0))
	assert.Equal(t, "packed_128", FlagLayout(true, 128, 0))
	assert.Equal(t, "packed", FlagLayout(true, 32, 0))
	assert.Equal(t, "packed_4k", FlagLayout(true, 4096, 0))
	assert.Empty(t, FlagLayout(true, 96, 0))
	assert.Empty(t, FlagLayout(true, 128, 64))
	for _, l := range []string{"line_per_slot", "vllm", "packed", "packed_1k"} {
		assert.True(t, IsFlagLayout(l), l)
	}
	assert.False(t, IsFlagLayout("rank_stride"))
	assert.False(t, IsFlagLayout("vllm_chunk256"))
}
