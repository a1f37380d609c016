package hw

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
)

// Three writes of one loop group, started together: without InOrder they
// share the loop and land together; in order, each runs alone at the
// loop's full rate and the next starts when it has sent its last byte, so
// the first lands a third of the way in and the last when the shared ones
// did (the same loop time in all).
func TestInOrderGroupRunsItsTransfersOneAtATime(t *testing.T) {
	run := func(inOrder bool) ([]sim.Time, *Machine) {
		top, err := topology.Load("h200x2")
		require.NoError(t, err)
		m, err := New(top)
		require.NoError(t, err)
		k := Kernel{Blocks: 1, Threads: 256, Loop: LoopLL, LoopAt: GPUMem(0), Wire: 2, LoopGroup: "conn", InOrder: inOrder}
		landed := make([]sim.Time, 3)
		for i := range landed {
			require.NoError(t, m.Write(0, GPUMem(1), 1<<20, k, "step", func() { landed[i] = m.Eng.Now() }))
		}
		require.NoError(t, m.Eng.Run())
		return landed, m
	}
	shared, _ := run(false)
	ordered, m := run(true)
	assert.Equal(t, shared[0], shared[1])
	assert.Equal(t, shared[0], shared[2])
	assert.Less(t, ordered[0], ordered[1])
	assert.Less(t, ordered[1], ordered[2])
	// The loop's time is the same; only its order differs.
	assert.InDelta(t, float64(shared[2]), float64(ordered[2]), float64(10*sim.Nanosecond))
	assert.InDelta(t, float64(ordered[2]-ordered[1]), float64(ordered[1]-ordered[0]), float64(sim.Nanosecond))
	assert.True(t, m.InOrderIdle(), "the group's queue is empty at the end")
}

// A transfer that comes to an idle in-order group starts as any would.
func TestInOrderGroupIdleStartsAtOnce(t *testing.T) {
	top, err := topology.Load("h200x2")
	require.NoError(t, err)
	times := map[bool]sim.Time{}
	for _, inOrder := range []bool{false, true} {
		m, err := New(top)
		require.NoError(t, err)
		k := Kernel{Blocks: 1, Threads: 256, Loop: LoopLL, LoopAt: GPUMem(0), Wire: 2, LoopGroup: "conn", InOrder: inOrder}
		m.Eng.After(5*sim.Microsecond, func() {
			require.NoError(t, m.Write(0, GPUMem(1), 4096, k, "late", func() { times[inOrder] = m.Eng.Now() }))
		})
		require.NoError(t, m.Eng.Run())
		assert.True(t, m.InOrderIdle())
	}
	assert.Equal(t, times[false], times[true])
}

// An unrolled copy loop reading host memory keeps Unroll loads per thread
// in flight (NCCL's reduceCopy), so its loop, not a streaming copy's
// 1.86 loads, bounds it: 8 MiB take their bytes at LoopRate.
func TestSimpleLoopReadKeepsItsUnrollInFlight(t *testing.T) {
	top, err := topology.Load("h200x2")
	require.NoError(t, err)
	m, err := New(top)
	require.NoError(t, err)
	k := Kernel{Blocks: 1, Threads: 256, Loop: LoopSimple, LoopAt: HostMem(0), Unroll: 8, Sources: 1}
	rate, err := m.LoopRate(0, k)
	require.NoError(t, err)
	var end sim.Time
	const bytes = 8 << 20
	require.NoError(t, m.Read(0, HostMem(0), bytes, k, "recv", func() { end = m.Eng.Now() }))
	require.NoError(t, m.Eng.Run())
	want := float64(bytes) / float64(rate)
	assert.InEpsilon(t, want, sim.Duration(end).Seconds(), 0.02, "rate %v", rate)
}
