package minheap_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/internal/minheap"
)

// event is ordered by (time, seq): a total order, as a simulator needs.
type event struct{ time, seq int }

func (a event) Less(b event) bool {
	if a.time != b.time {
		return a.time < b.time
	}
	return a.seq < b.seq
}

func Example() {
	var h minheap.Heap[event]
	for i, t := range []int{30, 10, 20, 10} {
		h.Push(event{time: t, seq: i})
	}
	for h.Len() > 0 {
		fmt.Print(h.Pop(), " ")
	}
	fmt.Println()
	// Output: {10 1} {10 3} {20 2} {30 0}
}

// Pops come out sorted, whatever the order of pushes and however pushes
// and pops interleave; checked against slices.SortFunc on seeded inputs.
func TestPopsInOrder(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		var h minheap.Heap[event]
		var pushed, popped []event
		for i := range 300 {
			if h.Len() > 0 && rng.IntN(3) == 0 {
				popped = append(popped, h.Pop())
				continue
			}
			e := event{time: rng.IntN(50), seq: i}
			pushed = append(pushed, e)
			h.Push(e)
		}
		for h.Len() > 0 {
			popped = append(popped, h.Pop())
		}
		require.Len(t, popped, len(pushed), "seed %d", seed)
		// Each pop is the least of what was in the heap: replay it.
		var in []event
		j := 0
		rng = rand.New(rand.NewPCG(seed, 7))
		for i := range 300 {
			if len(in) > 0 && rng.IntN(3) == 0 {
				least := slices.MinFunc(in, func(a, b event) int { return cmpEvent(a, b) })
				require.Equal(t, least, popped[j], "seed %d pop %d", seed, j)
				in = slices.DeleteFunc(in, func(e event) bool { return e == least })
				j++
				continue
			}
			in = append(in, event{time: rng.IntN(50), seq: i})
		}
		slices.SortFunc(in, cmpEvent)
		require.Equal(t, in, popped[j:], "seed %d: the rest", seed)
	}
}

func cmpEvent(a, b event) int {
	switch {
	case a.Less(b):
		return -1
	case b.Less(a):
		return 1
	}
	return 0
}

func TestResetKeepsNothing(t *testing.T) {
	var h minheap.Heap[event]
	h.Push(event{1, 1})
	h.Reset()
	require.Equal(t, 0, h.Len())
	require.Panics(t, func() { h.Pop() })
}
