package hw

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/arsim/arsim/sim"
)

// TestRuntimePullChainIsNvccsUnroll pins the chain of the pull loop whose
// bound is known at run time to what its SASS does: groups of four loads
// in flight, then the remainder one load at a time.
func TestRuntimePullChainIsNvccsUnroll(t *testing.T) {
	gpu, v := 600*sim.Nanosecond, 1100*sim.Nanosecond
	for _, c := range []struct {
		world int
		want  sim.Duration
	}{
		{2, gpu + v},   // remainder only: the local load, then the host one
		{3, gpu + 2*v}, // remainder only
		{4, v},         // one unrolled group
		{6, 3 * v},     // a group, then two host loads in turn
		{8, 2 * v},     // two groups
	} {
		assert.Equal(t, c.want, runtimePullChain(c.world, gpu, v), "world %d", c.world)
	}
}
