package hw

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
)

// An LL loop over host lines a device wrote just before (Kernel.Fresh)
// waits hostmem.fresh_line_saving less per iteration; over local lines,
// and for LL128, Fresh changes nothing; on a host without the saving
// (the AMD base, 0) neither does it.
func TestFreshHostLinesShortenTheLLIteration(t *testing.T) {
	iter := func(preset string, k Kernel) sim.Duration {
		top, err := topology.Load(preset)
		require.NoError(t, err)
		m, err := New(top)
		require.NoError(t, err)
		rate, err := m.LoopRate(0, k)
		require.NoError(t, err)
		perIter := float64(k.Threads) * 8 // LL: 8 data bytes per thread per iteration
		if k.Loop == LoopLL128 {
			perIter = float64(k.Threads) * ll128DataPerThread
		}
		return sim.Duration(perIter / float64(rate) * float64(sim.Second))
	}
	ll := Kernel{Blocks: 1, Threads: 512, Wire: 2, Loop: LoopLL, LoopAt: HostMem(0)}
	fresh := ll
	fresh.Fresh = true
	saving := iter("h200x2", ll) - iter("h200x2", fresh)
	assert.InDelta(t, float64(206*sim.Nanosecond), float64(saving), float64(sim.Nanosecond))

	local, localFresh := ll, fresh
	local.LoopAt, localFresh.LoopAt = GPUMem(0), GPUMem(0)
	assert.Equal(t, iter("h200x2", local), iter("h200x2", localFresh))

	// LL128 over host lines: the same saving on the chain of its
	// iteration (where the lines are is the memory's, not the protocol's).
	ll128 := Kernel{Blocks: 1, Threads: 640, Wire: 128.0 / 120, Loop: LoopLL128, LoopAt: HostMem(0), Reload: true}
	ll128Fresh := ll128
	ll128Fresh.Fresh = true
	assert.InDelta(t, float64(206*sim.Nanosecond), float64(iter("h200x2", ll128)-iter("h200x2", ll128Fresh)), float64(sim.Nanosecond))

	assert.Equal(t, iter("rtxpro6000x8-2numa", ll), iter("rtxpro6000x8-2numa", fresh))
}
