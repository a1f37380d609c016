package hw

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// One set of sector offsets costs the same whatever the layout's name:
// rank_offsets counts the median rank's line-mates (hostmem.line_contention)
// and colliding lines as packed does for the same offsets.
func TestRankOffsetsCostWhatPackedCosts(t *testing.T) {
	top, _ := h200x1(t)
	for _, w := range []int{2, 4, 6, 8} {
		offs := make([]string, w)
		for r := range offs {
			offs[r] = strconv.Itoa(32 * r)
		}
		packed, err := PerBlockValue(top, PerBlock{Kind: "loop", Loop: "group_barrier", Target: "host", Layout: "packed", World: w, Groups: 1, Blocks: w, Threads: 32})
		require.NoError(t, err)
		tab, err := PerBlockValue(top, PerBlock{Kind: "loop", Loop: "group_barrier", Target: "host", Layout: "rank_offsets", RankOffsets: strings.Join(offs, ","), World: w, Groups: 1, Blocks: w, Threads: 32})
		require.NoError(t, err)
		assert.InDelta(t, packed, tab, 1e-6, "W = %d", w)
	}
}

// A flag handed between SMs in different halves of the chip waits the far
// half's trip (gpu.atomic_slow_page_extra) once a ping-pong's one way and
// once a barrier, half of it where half the record's blocks cross; within
// a half, or through host memory, nothing more.
func TestCrossHalfHandoff(t *testing.T) {
	top, _ := h200x1(t)
	extra := top.Params.Get("gpu.atomic_slow_page_extra")
	require.Positive(t, extra)
	for _, base := range []PerBlock{
		{Kind: "block_pingpong", Target: "local", Mode: "volatile", Spacing: 128, Pairs: 1, Blocks: 2, Threads: 32},
		{Kind: "block_pingpong", Target: "local", Mode: "release_acquire", Spacing: 4, Pairs: 1, Blocks: 2, Threads: 32},
		{Kind: "loop", Loop: "group_barrier", Target: "local", Layout: "packed", World: 4, Groups: 1, Blocks: 4, Threads: 32},
	} {
		value := func(cross float64, target string) float64 {
			rec := base
			rec.CrossHalf, rec.Target = cross, target
			v, err := PerBlockValue(top, rec)
			require.NoError(t, err)
			return v
		}
		name := base.Kind + " " + base.Loop + " " + base.Mode
		assert.InDelta(t, value(0, "local")+extra, value(1, "local"), 1e-6, name)
		assert.InDelta(t, value(0, "local")+extra/2, value(0.5, "local"), 1e-3, name+": half the blocks cross")
		assert.Equal(t, value(0, "host"), value(1, "host"), name)
	}
}
