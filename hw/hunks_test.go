package hw

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/sim"
)

// NCCL's reduceCopy (common_kernel.h, reduceCopyPacks) hands whole hunks
// of Unroll × 32 packs to the warps in turn, then the packs left over in
// hunks of 32, from warp 0 or, renumbered, from the warp that took fewest
// whole hunks. The busiest warp's passes, worked by hand from the code.
func TestHunkRoundsFollowReduceCopy(t *testing.T) {
	for _, c := range []struct {
		bytes       int64
		warps, u    int
		rotate      bool
		whole, tail int64
	}{
		{4096, 4, 8, false, 1, 0},   // one hunk
		{7168, 4, 8, false, 1, 2},   // a hunk and six 512-B hunks over four warps: warp 0 takes 0 and 4
		{7168, 4, 8, true, 1, 1},    // renumbered: warp 0 is fourth, the second pass falls on warps 1 and 2
		{5120, 4, 8, false, 1, 1},   // two left-over hunks: warp 0 takes one after its whole hunk
		{5120, 4, 8, true, 1, 0},    // renumbered: warps 1 and 2 take them while warp 0 copies its hunk
		{2048, 2, 8, false, 0, 2},   // no whole hunk: four 512-B hunks over two warps
		{18432, 4, 8, true, 1, 1},   // four whole hunks, four left over: every warp a pass of each
		{131072, 15, 6, true, 3, 1}, // sm120's Unroll 6: 42 hunks over 15 warps, the fourth left-over one on warp 0
		{131072, 16, 8, true, 2, 0}, // 32 hunks over 16 warps
	} {
		whole, tail := hunkRounds(c.bytes, c.warps, c.u, c.rotate)
		assert.Equal(t, c.whole, whole, "%+v: whole-hunk passes", c)
		assert.Equal(t, c.tail, tail, "%+v: left-over passes", c)
	}
}

// A copy waits its busiest warp's passes beyond the whole-hunk passes its
// bytes fill spread evenly: none for whole hunks every warp shares alike
// or for left-over packs idle warps take; a whole pass less the fraction
// the rate gives where one warp takes a whole hunk more; an iteration of
// one load a thread where left-over packs fall on a warp that took a
// whole hunk; and only such iterations without a whole hunk.
func TestHunkTailCountsTheBusiestWarpsPasses(t *testing.T) {
	_, m := h200x1(t)
	k := Kernel{Blocks: 1, Threads: 128, Loop: LoopSimple, LoopAt: GPUMem(0), Unroll: 8, Sources: 1, SrcInL2: true, Hunks: true}
	pass := func(k Kernel, u int) sim.Duration { // one iteration of u loads a thread
		k.Unroll = u
		it, err := m.copyIterTimeFor(0, k, 0)
		require.NoError(t, err)
		return it
	}
	iter1 := pass(k, 1)
	tail := func(k Kernel, bytes sim.Bytes) (sim.Duration, bool) {
		d, _, none, err := m.hunkTail(0, k, bytes)
		require.NoError(t, err)
		return d, none
	}
	d, none := tail(k, 8192)
	assert.Zero(t, d, "two whole hunks on four warps")
	assert.False(t, none)
	d, _ = tail(k, 7168)
	assert.Equal(t, 2*iter1, d, "warp 0: its hunk, then left-over hunks 0 and 4")
	rot := k
	rot.HunkRotate = true
	d, _ = tail(rot, 5120)
	assert.Zero(t, d, "renumbered, the idle warps take both left-over hunks")
	d, _ = tail(rot, 18432)
	assert.InDelta(t, float64(iter1-pass(k, 8)/8), float64(d), 1, "a whole and a left-over pass where the bytes fill 1.125 passes (ps)")
	d, _ = tail(k, 20480)
	assert.InDelta(t, float64(pass(k, 8))*3/4, float64(d), 1, "five whole hunks on four warps: warp 0's second pass, of which the rate gives a quarter (ps)")
	d, none = tail(k, 2048)
	assert.Zero(t, d, "four 512-B hunks on four warps: one pass")
	assert.True(t, none)
	few := k
	few.Threads = 64
	d, none = tail(few, 3072)
	assert.Equal(t, 2*pass(few, 1), d, "six 512-B hunks on two warps: three passes, the first the copy's first iteration")
	assert.True(t, none)
	sync := rot
	sync.Threads, sync.SyncWarps = 160, 1
	d, _ = tail(sync, 7168)
	assert.Equal(t, pass(sync, 1), d, "NCCL's 160 threads: four warps copy, the fifth syncs")
	plain := k
	plain.Hunks = false
	d, _ = tail(plain, 7168)
	assert.Zero(t, d, "a plain loop is not in hunks")
	// The first iteration of a copy with no whole hunk is one of one load
	// a thread: three passes in all at 64 threads over 3 KiB.
	first, err := m.firstIteration(0, few, 3072)
	require.NoError(t, err)
	rate, err := m.LoopRate(0, few)
	require.NoError(t, err)
	stream, err := sim.FromSeconds(3072 / float64(rate))
	require.NoError(t, err)
	assert.Equal(t, max(0, pass(few, 1)-stream)+2*pass(few, 1), first)
}
