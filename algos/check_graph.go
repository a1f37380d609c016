package algos

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"
)

// The checker's graph: every op of every allreduce it runs, with the
// user's input writes and output reads, as nodes; program order, flags and
// the end of a rank's previous allreduce as edges; a topological order and
// each node's ancestors among the nodes that touch memory.

// node is one op of one iteration, or a pseudo-op: the user writing a
// rank's input before an allreduce, or reading its output after.
type node struct {
	iter, rank, idx int // idx −1: input written; −2: output read
	op              *Op
	preds           []int
}

// checker is Check's graph of one number (iters) of back-to-back
// allreduces of s: its nodes, their topological order and ancestor sets.
type checker struct {
	s     *Schedule
	sh    *shape
	iters int
	nodes []node
	// base[r] is rank r's input-write node in allreduce 0; per the nodes
	// of one allreduce (id).
	base  []int
	per   int
	sinks [][]int // per rank, the ops no later op of the rank waits for
	topo  []int
	// uni[v] is node v's index among the nodes that touch memory (ops
	// that read or write bytes, data-carried waits, the user's input
	// writes and output reads), −1 for the others (launches, flags,
	// fences); anc(v) holds such a node's ancestors among those, words
	// 64-bit words of ancSets each. Only they take part in races and in
	// the distance between calls, so the bitsets span them alone, and a
	// node that touches no memory drops its set once its successors have
	// read it.
	uni     []int32
	perUni  int // memory-touching nodes per allreduce
	words   int
	ancSets []uint64
	// bufs are the buffer copies the nodes touch, numbered in order of
	// first access; srcOf[v] and dstOf[v] are the copies node v reads and
	// writes (−1 none). races sets them (accesses), execute uses them.
	bufs         []Buf
	srcOf, dstOf []int32
	// waited holds the signals some wait is linked to (setter).
	waited []bool
}

// anc returns the ancestor set of node v, which touches memory.
func (c *checker) anc(v int) []uint64 {
	i := int(c.uni[v])
	return c.ancSets[i*c.words : (i+1)*c.words : (i+1)*c.words]
}

// name says which node n is in an error: rank, op, label and allreduce.
func (c *checker) name(n int) string {
	nd := c.nodes[n]
	switch nd.idx {
	case -1:
		return fmt.Sprintf("rank %d (user writing its input before allreduce %d)", nd.rank, nd.iter+1)
	case -2:
		return fmt.Sprintf("rank %d (user reading its output after allreduce %d)", nd.rank, nd.iter+1)
	}
	lbl := ""
	if nd.op.Label != "" {
		lbl = " [" + nd.op.Label + "]"
	}
	return fmt.Sprintf("rank %d op %d %s%s (allreduce %d)", nd.rank, nd.idx, nd.op.Kind, lbl, nd.iter+1)
}

// newChecker unrolls s over iters back-to-back allreduces into the
// checker's graph. It refuses a wait that no op of its allreduce can
// satisfy, or that two ops satisfy alike.
func newChecker(s *Schedule, sh *shape, iters int) (*checker, error) {
	c := &checker{s: s, sh: sh, iters: iters}
	// Nodes: per iteration and rank, input write, ops, output read; the
	// input write of rank r in allreduce it is node base[r] + it·per.
	c.base = make([]int, len(s.Programs))
	for r, prog := range s.Programs {
		c.base[r] = c.per
		c.per += len(prog) + 2
	}
	// sinks[r]: the ops of rank r no later op of the rank lists in After.
	c.sinks = make([][]int, len(s.Programs))
	for r, prog := range s.Programs {
		later := make([]bool, len(prog))
		for i := range prog {
			for _, d := range prog[i].After {
				later[d] = true
			}
		}
		for i, l := range later {
			if !l {
				c.sinks[r] = append(c.sinks[r], i)
			}
		}
	}
	c.nodes = make([]node, 0, iters*c.per)
	for it := 0; it < iters; it++ {
		for r, prog := range s.Programs {
			c.add(node{iter: it, rank: r, idx: -1})
			for i := range prog {
				c.add(node{iter: it, rank: r, idx: i, op: &prog[i]})
			}
			c.add(node{iter: it, rank: r, idx: -2})
		}
	}
	c.reservePreds()
	signals := c.signals()
	c.waited = make([]bool, len(c.nodes))
	for n := range c.nodes {
		if err := c.link(n, signals); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *checker) add(n node) {
	c.nodes = append(c.nodes, n)
}

// reservePreds gives every node's predecessor list its room in one
// array, as link will fill it: the previous output read of an input
// write, the ops of an output read and its input write, an op's input
// write, its After ops and, on a wait, its setter.
func (c *checker) reservePreds() {
	room := func(nd *node) int {
		switch nd.idx {
		case -1:
			return 1
		case -2:
			return len(c.sinks[nd.rank]) + 1
		}
		return len(nd.op.After) + 2
	}
	total := 0
	for i := range c.nodes {
		total += room(&c.nodes[i])
	}
	pool := make([]int, total)
	for i := range c.nodes {
		k := room(&c.nodes[i])
		c.nodes[i].preds, pool = pool[:0:k], pool[k:]
	}
}

// id returns the node of rank r's op idx in allreduce it (idx −1: the
// input write, −2: the output read).
func (c *checker) id(it, r, idx int) int {
	start := it*c.per + c.base[r]
	if idx == -2 {
		return start + len(c.s.Programs[r]) + 1
	}
	return start + 1 + idx
}

// flagValue is a flag (by its number, shape.flags) and a value of it
// counted from the first allreduce: a signal of allreduce k sets its
// value plus k times the flag's stride.
type flagValue struct {
	f int32
	v int64
}

// setters are the signal nodes that set one flag value: the first two
// (in node order) and how many.
type setters struct {
	first, second, n int
}

// signals returns the signal nodes by the flag value they set.
func (c *checker) signals() map[flagValue]setters {
	count := 0
	for _, prog := range c.s.Programs {
		for i := range prog {
			if prog[i].Kind == Signal {
				count++
			}
		}
	}
	signals := make(map[flagValue]setters, count*c.iters)
	for n, nd := range c.nodes {
		if nd.op != nil && nd.op.Kind == Signal {
			f := c.sh.flagOf[nd.rank][nd.idx]
			k := flagValue{f, nd.op.Value + int64(nd.iter)*c.sh.stride[f]}
			ss := signals[k]
			switch ss.n {
			case 0:
				ss.first = n
			case 1:
				ss.second = n
			}
			ss.n++
			signals[k] = ss
		}
	}
	return signals
}

// link sets node n's predecessors: the user's input write after the
// rank's previous output read; every op after the input write, its After
// ops and, for a wait, the signal it waits for; the output read after
// every op of the rank: after those no later op of the rank waits for
// (c.sinks), which every other op precedes.
func (c *checker) link(n int, signals map[flagValue]setters) error {
	nd := &c.nodes[n]
	in := c.id(nd.iter, nd.rank, -1)
	switch {
	case nd.idx == -1:
		if nd.iter > 0 {
			// The next allreduce starts after the rank's previous one ends.
			nd.preds = append(nd.preds, c.id(nd.iter-1, nd.rank, -2))
		}
	case nd.idx == -2:
		for _, i := range c.sinks[nd.rank] {
			nd.preds = append(nd.preds, c.id(nd.iter, nd.rank, i))
		}
		nd.preds = append(nd.preds, in)
	default:
		nd.preds = append(nd.preds, in)
		for _, d := range nd.op.After {
			nd.preds = append(nd.preds, c.id(nd.iter, nd.rank, d))
		}
		if nd.op.Kind == Wait {
			setter, err := c.setter(n, signals)
			if err != nil {
				return err
			}
			nd.preds = append(nd.preds, setter)
			c.waited[setter] = true
		}
	}
	return nil
}

// setter returns the signal that ends wait n: the one op that sets the
// earliest value satisfying the wait within its allreduce (for a
// data-carried wait, an inline signal).
func (c *checker) setter(n int, signals map[flagValue]setters) (int, error) {
	s, nd := c.s, c.nodes[n]
	f := c.sh.flagOf[nd.rank][nd.idx]
	st := c.sh.stride[f]
	want := nd.op.Value + int64(nd.iter)*st
	if st == 0 || nd.op.Value > st {
		return 0, fmt.Errorf("algos: check %s: %s waits for %s ≥ %d, which no op of the same allreduce sets (deadlock)", s.Algo, c.name(n), nd.op.Flag, nd.op.Value)
	}
	var best setters
	for v := want; v <= int64(nd.iter)*st+st; v++ {
		if ss := signals[flagValue{f, v}]; ss.n > 0 {
			best = ss
			break
		}
	}
	if best.n == 0 {
		return 0, fmt.Errorf("algos: check %s: %s waits for %s ≥ %d, which no op of the same allreduce sets (deadlock)", s.Algo, c.name(n), nd.op.Flag, nd.op.Value)
	}
	if best.n > 1 {
		return 0, fmt.Errorf("algos: check %s: %s: flag %s is set to the same value by %s and %s; waits on it are ambiguous", s.Algo, c.name(n), nd.op.Flag, c.name(best.first), c.name(best.second))
	}
	if nd.op.Src.Len > 0 && !c.nodes[best.first].op.Inline {
		return 0, fmt.Errorf("algos: check %s: %s polls %s, a data-carried wait, but %s marks the landing with a separate flag write: the mark of data-carried completion is an inline signal right after the write of the data",
			s.Algo, c.name(n), nd.op.Src, c.name(best.first))
	}
	return best.first, nil
}

// readySet holds node indices and gives back the least first: a bit per
// node, a summary bit per word of them that is not zero, and the lowest
// summary word that may have a bit set.
type readySet struct {
	bits, sum []uint64
	lo, n     int
}

func newReadySet(nodes int) *readySet {
	w := (nodes + 63) / 64
	return &readySet{bits: make([]uint64, w), sum: make([]uint64, (w+63)/64)}
}

func (q *readySet) push(v int) {
	w := v / 64
	q.bits[w] |= 1 << (v % 64)
	q.sum[w/64] |= 1 << (w % 64)
	q.lo = min(q.lo, w/64)
	q.n++
}

// pop removes and returns the least index; the set must not be empty.
func (q *readySet) pop() int {
	for q.sum[q.lo] == 0 {
		q.lo++
	}
	w := q.lo*64 + bits.TrailingZeros64(q.sum[q.lo])
	x := q.bits[w]
	b := bits.TrailingZeros64(x)
	x &^= 1 << b
	q.bits[w] = x
	if x == 0 {
		q.sum[q.lo] &^= 1 << (w % 64)
	}
	q.n--
	return w*64 + b
}

// order sorts the nodes topologically (Kahn, smallest node first) and
// computes ancestor sets; a cycle is a deadlock.
func (c *checker) order() error {
	outdeg, err := c.topoSort()
	if err != nil {
		return err
	}
	c.ancestors(outdeg)
	return nil
}

// topoSort sets c.topo, the nodes in topological order (Kahn, smallest node
// first), and returns how many successors each node has; a cycle is a
// deadlock, reported with up to six of the blocked waits.
func (c *checker) topoSort() ([]int32, error) {
	n := len(c.nodes)
	indeg := make([]int32, n)
	// Successors: node u's are succ[start[u]:start[u+1]].
	start := make([]int32, n+1)
	for v := range c.nodes {
		for _, u := range c.nodes[v].preds {
			start[u+1]++
		}
		indeg[v] = int32(len(c.nodes[v].preds))
	}
	outdeg := make([]int32, n)
	for u := 0; u < n; u++ {
		outdeg[u] = start[u+1]
		start[u+1] += start[u]
	}
	succ := make([]int32, start[n])
	next := slices.Clone(start[:n])
	for v := range c.nodes {
		for _, u := range c.nodes[v].preds {
			succ[next[u]] = int32(v)
			next[u]++
		}
	}
	ready := newReadySet(n)
	for v := 0; v < n; v++ {
		if indeg[v] == 0 {
			ready.push(v)
		}
	}
	c.topo = make([]int, 0, n)
	for ready.n > 0 {
		u := ready.pop()
		c.topo = append(c.topo, u)
		for _, v := range succ[start[u]:start[u+1]] {
			if indeg[v]--; indeg[v] == 0 {
				ready.push(int(v))
			}
		}
	}
	if len(c.topo) < n {
		var stuck []string
		for v := 0; v < n && len(stuck) < 6; v++ {
			if indeg[v] > 0 && c.nodes[v].op != nil && c.nodes[v].op.Kind == Wait {
				stuck = append(stuck, c.name(v)+" on "+c.nodes[v].op.Flag.String())
			}
		}
		return nil, fmt.Errorf("algos: check %s: deadlock: the waits form a cycle; blocked: %s", c.s.Algo, strings.Join(stuck, "; "))
	}
	return outdeg, nil
}

// ancestors numbers the memory-touching nodes (c.uni, c.perUni) and
// computes, in topological order, each node's ancestors among them
// (c.anc), recycling the sets of nodes that touch no memory once their
// successors (refs counts them, and is used up) have read them. The sets
// of memory-touching nodes, which races and distance read, share one
// array.
//
// A node's set is the union of its predecessors' sets and the
// memory-touching predecessors themselves. The predecessors are taken
// last first (an op's input write, which every other predecessor of the
// op follows, comes first): a memory-touching predecessor already in the
// set adds nothing, its own ancestors being there too.
func (c *checker) ancestors(refs []int32) {
	n := len(c.nodes)
	c.uni = make([]int32, n)
	count := 0
	for v, nd := range c.nodes {
		c.uni[v] = -1
		if touches(nd) {
			c.uni[v] = int32(count)
			count++
		}
	}
	c.perUni = count / c.iters
	words := (count + 63) / 64
	c.words = words
	c.ancSets = make([]uint64, count*words)
	// The sets of nodes that touch no memory: other[slot[v]] is node v's
	// while a successor has yet to read it; free lists the slots to reuse.
	slot := make([]int32, n)
	var other [][]uint64
	var free []int32
	var fresh []uint64 // sets not yet used, carved 64 at a time
	for _, v := range c.topo {
		var a []uint64
		switch {
		case c.uni[v] >= 0:
			a = c.anc(v)
		case len(free) > 0:
			slot[v], free = free[len(free)-1], free[:len(free)-1]
			a = other[slot[v]]
		default:
			if len(fresh) < words {
				fresh = make([]uint64, 64*words)
			}
			a, fresh = fresh[:words:words], fresh[words:]
			slot[v] = int32(len(other))
			other = append(other, a)
		}
		first := true
		preds := c.nodes[v].preds
		for k := len(preds) - 1; k >= 0; k-- {
			u := preds[k]
			i := c.uni[u]
			if i < 0 || first || a[i/64]&(1<<(i%64)) == 0 {
				var b []uint64
				if i >= 0 {
					b = c.ancSets[int(i)*words : int(i+1)*words]
				} else {
					b = other[slot[u]]
				}
				if first {
					copy(a, b)
					first = false
				} else {
					orInto(a, b)
				}
			}
			if i >= 0 {
				a[i/64] |= 1 << (i % 64)
			} else if refs[u]--; refs[u] == 0 {
				free = append(free, slot[u])
			}
		}
		if first {
			clear(a) // no predecessors (a recycled set holds old bits)
		}
		if refs[v] == 0 && c.uni[v] < 0 {
			free = append(free, slot[v])
		}
	}
}

// orInto sets in a every bit set in b (of a's length).
func orInto(a, b []uint64) {
	b = b[:len(a)]
	for w := range a {
		a[w] |= b[w]
	}
}

// touches reports whether a node reads or writes bytes.
func touches(nd node) bool {
	if nd.op == nil {
		return true // the user's input write or output read
	}
	switch nd.op.Kind {
	case Read, Write, Copy, Reduce:
		return true
	case Wait:
		return nd.op.Src.Len > 0
	}
	return false
}

// touching counts the nodes that touch memory.
func (c *checker) touching() int {
	n := 0
	for _, nd := range c.nodes {
		if touches(nd) {
			n++
		}
	}
	return n
}

// before reports whether a is an ancestor of b; both touch memory.
func (c *checker) before(a, b int) bool {
	i := c.uni[a]
	return c.anc(b)[i/64]&(1<<(i%64)) != 0
}
