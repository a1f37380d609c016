package algos

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

// sortAccesses orders accesses as a stable sort by buffer and offset
// does, with offsets that fit its integer keys and with offsets that do
// not.
func TestSortAccessesIsStableByBufferAndOffset(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, big := range []bool{false, true} {
		acc := make([]access, 500)
		br := make([]int32, len(acc))
		for i := range acc {
			acc[i].off = int64(rng.IntN(20)) * 64
			if big && i%7 == 0 {
				acc[i].off += 1 << 41
			}
			br[i] = int32(rng.IntN(5))
		}
		want := make([]int32, len(acc))
		for i := range want {
			want[i] = int32(i)
		}
		slices.SortStableFunc(want, func(x, y int32) int {
			if br[x] != br[y] {
				return cmp.Compare(br[x], br[y])
			}
			return cmp.Compare(acc[x].off, acc[y].off)
		})
		assert.Equal(t, want, sortAccesses(acc, br, 5), "offsets beyond 2^40: %v", big)
	}
}

// readySet gives back the least index it holds, pushes and pops
// interleaved, as a heap would.
func TestReadySetPopsTheLeast(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 10000
	q := newReadySet(n)
	held := map[int]bool{}
	for step := 0; step < 50000; step++ {
		if v := rng.IntN(n); rng.IntN(3) > 0 && !held[v] {
			q.push(v)
			held[v] = true
			continue
		}
		if len(held) == 0 {
			continue
		}
		least := n
		for v := range held {
			least = min(least, v)
		}
		assert.Equal(t, least, q.pop())
		delete(held, least)
	}
	assert.Equal(t, len(held), q.n)
}

// putByCopy is put as it was written first: a new list of what lies
// before w, w, and what lies after, merged.
func putByCopy(segs []seg, w []seg) []seg {
	if len(w) == 0 {
		return segs
	}
	lo, hi := w[0].off, w[len(w)-1].end
	var out []seg
	for _, g := range segs {
		if g.end <= lo {
			out = append(out, g)
		} else if g.off < lo {
			h := g
			h.end = lo
			out = append(out, h)
		}
	}
	out = append(out, w...)
	for _, g := range segs {
		if g.off >= hi {
			out = append(out, g)
		} else if g.end > hi {
			h := g
			h.off = hi
			out = append(out, h)
		}
	}
	merged := out[:0]
	for _, g := range out {
		if k := len(merged); k > 0 && merged[k-1].end == g.off && merged[k-1].gen == g.gen && merged[k-1].set == g.set {
			merged[k-1].end = g.end
			continue
		}
		merged = append(merged, g)
	}
	return merged
}

// put in place leaves what a new list would hold, over many random
// writes into one buffer.
func TestPutInPlaceIsPutByCopy(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var a, b []seg
	for step := 0; step < 5000; step++ {
		off := int64(rng.IntN(60))
		var w []seg
		for k := rng.IntN(3) + 1; k > 0; k-- {
			end := off + int64(rng.IntN(8)+1)
			w = append(w, seg{off, end, rng.IntN(2), uint64(rng.IntN(2))})
			off = end
		}
		a = put(a, slices.Clone(w))
		b = putByCopy(b, slices.Clone(w))
		if !assert.Equal(t, b, a, "step %d", step) {
			return
		}
	}
}
