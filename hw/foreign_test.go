package hw

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// packedSecs lays out groups barriers of world ranks as the layout packed
// does: every rank's sector 32 B after the previous one's.
func packedSecs(world, groups int) []flagSector {
	var secs []flagSector
	for g := range groups {
		for r := range world {
			secs = append(secs, flagSector{at: (g*world + r) * 32, group: g, stores: world - 1})
		}
	}
	return secs
}

// The other barriers of a layout charge their foreign stores and their
// crowded lines together, under the larger of the two caps: six ranks in
// four groups of the layout packed have both terms (each near its own
// cap), two ranks in sixteen groups only crowded lines, eight ranks in
// four groups only foreign stores.
func TestOtherBarriersShareOneCap(t *testing.T) {
	_, m := h200x1(t)
	capAll := max(m.Phys.HostForeignCollisionCap, m.Phys.HostCrowdedLineCap)
	for _, c := range []struct {
		world, groups         int
		foreign, crowded, sum bool
	}{
		{6, 4, true, true, false},
		{2, 16, false, true, true},
		{8, 4, true, false, true},
	} {
		secs := packedSecs(c.world, c.groups)
		f, cr := m.foreignCollision(m.foreignStores(secs)), m.crowdedLines(secs)
		assert.Equal(t, c.foreign, f > 0, "W%d × %d: foreign stores", c.world, c.groups)
		assert.Equal(t, c.crowded, cr > 0, "W%d × %d: crowded lines", c.world, c.groups)
		got := m.otherBarriers(secs)
		if c.sum {
			assert.Equal(t, f+cr, got, "W%d × %d: one term, as before", c.world, c.groups)
			continue
		}
		assert.Greater(t, f+cr, capAll, "W%d × %d: the two terms together pass the cap", c.world, c.groups)
		assert.Equal(t, capAll, got, "W%d × %d", c.world, c.groups)
	}
}
