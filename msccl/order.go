package msccl

import (
	"container/heap"
	"fmt"
	"strings"
)

// node is one step of one thread block in one pass (loop) over the chunks.
type node struct{ loop, tb, step int }

// nodeHeap is a min-heap of nodes by pass, thread block, then step.
type nodeHeap []node

func (h nodeHeap) Len() int { return len(h) }
func (h nodeHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.loop != b.loop {
		return a.loop < b.loop
	}
	if a.tb != b.tb {
		return a.tb < b.tb
	}
	return a.step < b.step
}
func (h nodeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *nodeHeap) Push(x any)   { *h = append(*h, x.(node)) }
func (h *nodeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// preds returns the steps x of GPU g waits for: the one before it in its
// thread block (the last of the previous pass for a first step), and the
// step of another thread block named by its depid and deps.
func preds(g *GPU, x node) []node {
	var out []node
	switch {
	case x.step > 0:
		out = append(out, node{x.loop, x.tb, x.step - 1})
	case x.loop > 0:
		out = append(out, node{x.loop - 1, x.tb, len(g.TBs[x.tb].Steps) - 1})
	}
	if st := g.TBs[x.tb].Steps[x.step]; st.DepID >= 0 && st.DepID != x.tb {
		out = append(out, node{x.loop, st.DepID, st.Deps})
	}
	return out
}

// order returns the steps of all loops passes of GPU g in an order that
// respects each thread block's sequence and the dependencies between
// blocks: Kahn's algorithm, the smallest ready step (nodeHeap) first. It
// refuses blocks that wait for each other in a cycle, naming up to four
// of the steps that never become ready.
func (a *Algo) order(g *GPU, loops int) ([]node, error) {
	indeg := map[node]int{}
	succ := map[node][]node{}
	total := 0
	ready := &nodeHeap{}
	for l := 0; l < loops; l++ {
		for ti, tb := range g.TBs {
			for si := range tb.Steps {
				x := node{l, ti, si}
				total++
				ps := preds(g, x)
				indeg[x] = len(ps)
				for _, p := range ps {
					succ[p] = append(succ[p], x)
				}
				if len(ps) == 0 {
					heap.Push(ready, x)
				}
			}
		}
	}
	out := make([]node, 0, total)
	for ready.Len() > 0 {
		x := heap.Pop(ready).(node)
		out = append(out, x)
		for _, y := range succ[x] {
			if indeg[y]--; indeg[y] == 0 {
				heap.Push(ready, y)
			}
		}
	}
	if len(out) < total {
		var stuck []string
		for ti, tb := range g.TBs {
			for si, st := range tb.Steps {
				if indeg[node{0, ti, si}] > 0 && len(stuck) < 4 {
					stuck = append(stuck, fmt.Sprintf("thread block %d step %d (line %d)", ti, si, st.Line))
				}
			}
		}
		return nil, fmt.Errorf("msccl: %s: the thread blocks of GPU %d wait for each other in a cycle (deadlock): %s", a.File, g.ID, strings.Join(stuck, ", "))
	}
	return out, nil
}
