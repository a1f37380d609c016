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

// A ping-pong's neighbours add loads only where they poll near the pair:
// pollers of its sector, or loads waiting at its line's other sectors;
// stores and other lines add none.
func TestNeighbourLoadsCountPollsNearThePair(t *testing.T) {
	for _, c := range []struct {
		op, place        string
		n                int
		pollers, waiting int
	}{
		{"poll", "same_sector", 6, 3, 0},
		{"pingpong", "same_sector", 2, 1, 0},
		{"poll", "same_half", 6, 0, 3},
		{"poll", "other_half", 2, 0, 1},
		{"poll", "other_line", 6, 0, 0},
		{"poll", "64k_on", 6, 0, 0},
		{"store", "same_sector", 6, 0, 0},
		{"", "", 0, 0, 0},
	} {
		p, w := neighbourLoads(PerBlock{Neighbours: c.n, NeighbourOp: c.op, NeighbourPlace: c.place})
		assert.Equal(t, [2]int{c.pollers, c.waiting}, [2]int{p, w}, "%s %s %d", c.op, c.place, c.n)
	}
}
