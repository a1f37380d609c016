package hw

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Words spacing bytes apart from a sector's start: the busiest sector holds
// ⌈32/spacing⌉ of them (24 B apart, the words at 0 and 24 share one).
func TestSharersCountTheBusiestUnit(t *testing.T) {
	for _, c := range []struct{ n, spacing, want int }{
		{8, 0, 8}, {8, 4, 8}, {16, 4, 8}, {8, 8, 4}, {8, 12, 3}, {2, 12, 2}, {8, 16, 2}, {8, 24, 2}, {8, 32, 1}, {8, 4096, 1},
	} {
		assert.Equal(t, c.want, sharers(c.n, c.spacing, 32), "%d blocks %d B apart", c.n, c.spacing)
	}
}

// Loads waiting at a line's other sectors: k−1 per other contended sector
// of the first 128-byte line; none for words a sector or more apart, for
// one shared word, or for atomics (queued per line already).
func TestLineWaiting(t *testing.T) {
	for _, c := range []struct {
		n, spacing int
		atomic     bool
		want       int
	}{
		{8, 4, false, 0}, {16, 4, false, 7}, {32, 4, false, 21}, {132, 4, false, 21},
		{8, 8, false, 3}, {16, 8, false, 9}, {6, 12, false, 2}, {12, 12, false, 6},
		{8, 32, false, 0}, {8, 0, false, 0}, {32, 4, true, 0},
	} {
		assert.Equal(t, c.want, lineWaiting(c.n, c.spacing, c.atomic), "%d blocks %d B apart atomic=%v", c.n, c.spacing, c.atomic)
	}
}
