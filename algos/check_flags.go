package algos

import (
	"fmt"
	"slices"
)

// Waits end when a flag holds their value or more, so a wait is released
// by the first signal of any value at least its own. The checker links a
// wait to the signal of the least such value (setter); that is sound only
// if no signal of a larger value can come first. flagsInOrder checks it:
// from the least value some wait is linked to, each value's signal must
// precede the next larger value's (a chain of happens-before, so every
// larger value comes after every waited one). A counter whose steps are
// signalled out of order (a later step's flag raised before an earlier
// step's) would let a wait for the earlier step end before its data
// landed. Every allreduce's graph being the first's shifted by the flags'
// strides, the pairs of the first allreduce and the one into the second
// are checked.
func (c *checker) flagsInOrder(waited []bool) error {
	type setterOf struct {
		v    int64
		node int
	}
	byFlag := make([][]setterOf, len(c.sh.stride))
	for n, nd := range c.nodes {
		if nd.iter > 1 {
			break // nodes come in allreduce order; only the first two's pairs are checked
		}
		if nd.op != nil && nd.op.Kind == Signal {
			f := c.sh.flagOf[nd.rank][nd.idx]
			byFlag[f] = append(byFlag[f], setterOf{nd.op.Value + int64(nd.iter)*c.sh.stride[f], n})
		}
	}
	pos := make([]int32, len(c.nodes))
	for i, v := range c.topo {
		pos[v] = int32(i)
	}
	var stack []int
	seen := make([]uint32, len(c.nodes))
	stamp := uint32(0)
	// before reports whether node a precedes node b: a search back from b
	// through the nodes placed after a in the topological order.
	before := func(a, b int) bool {
		stamp++
		stack = append(stack[:0], b)
		seen[b] = stamp
		for len(stack) > 0 {
			v := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, u := range c.nodes[v].preds {
				if u == a {
					return true
				}
				if seen[u] != stamp && pos[u] > pos[a] {
					seen[u] = stamp
					stack = append(stack, u)
				}
			}
		}
		return false
	}
	for f, ss := range byFlag {
		slices.SortFunc(ss, func(a, b setterOf) int {
			if a.v != b.v {
				if a.v < b.v {
					return -1
				}
				return 1
			}
			return a.node - b.node
		})
		first := -1
		for i, s := range ss {
			if waited[s.node] {
				first = i
				break
			}
		}
		if first < 0 {
			continue
		}
		for i := first; i+1 < len(ss); i++ {
			a, b := ss[i], ss[i+1]
			if a.v > c.sh.stride[f] {
				// Every allreduce's graph is the first's, shifted: the
				// pairs of the first and the one into the second are
				// all there are.
				break
			}
			na, nb := c.nodes[a.node], c.nodes[b.node]
			if a.v == b.v || (na.rank == nb.rank && nb.iter > na.iter) {
				continue // a rank's next allreduce starts after every op of its last
			}
			if pos[a.node] < pos[b.node] && before(a.node, b.node) {
				continue
			}
			nd := c.nodes[a.node]
			return fmt.Errorf("algos: check %s: flag %s: %s sets %d, which nothing orders after %s setting %d: a wait for ≥ %d may end on the larger value before the smaller is set (signal a counter's values in order)",
				c.s.Algo, nd.op.Flag, c.name(b.node), b.v, c.name(a.node), a.v, a.v)
		}
	}
	return nil
}
