package algos

import (
	"fmt"
	"math/bits"
	"sort"
	"strings"

	"github.com/arsim/arsim/hw"
)

// Check executes s symbolically, twice back to back with the same buffers
// (as two consecutive allreduces would run), and returns the first
// violation found:
//
//   - an op whose dependencies or ranges are malformed;
//   - a wait no op of the same allreduce can satisfy, or a cycle of waits
//     (deadlock);
//   - two ops touching overlapping bytes of one buffer, one of them writing,
//     that nothing orders (program order, a flag, or the end of a rank's
//     previous kernel) — including the user overwriting a rank's input for
//     the next allreduce while a peer may still read it;
//   - a read of bytes nothing has written, a reduction that counts an input
//     twice or mixes two allreduces' data;
//   - a rank whose output does not hold every rank's input for every element.
//
// Errors name the rank, the op (index and label) and the byte range.
func Check(s *Schedule) error {
	c, err := newChecker(s)
	if err != nil {
		return err
	}
	if err := c.order(); err != nil {
		return err
	}
	if err := c.races(); err != nil {
		return err
	}
	return c.execute()
}

const iters = 2

// node is one op of one iteration, or a pseudo-op: the user writing a
// rank's input before an allreduce, or reading its output after.
type node struct {
	iter, rank, idx int // idx −1: input written; −2: output read
	op              *Op
	preds           []int
}

type checker struct {
	s      *Schedule
	nodes  []node
	id     map[[3]int]int
	topo   []int
	anc    [][]uint64 // ancestors bitset per node
	stride map[Flag]int64
}

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

func newChecker(s *Schedule) (*checker, error) {
	if s.Ranks > 64 {
		return nil, fmt.Errorf("algos: check %s: the checker handles at most 64 ranks, got %d", s.Algo, s.Ranks)
	}
	if len(s.Programs) != s.Ranks {
		return nil, fmt.Errorf("algos: check %s: %d programs for %d ranks", s.Algo, len(s.Programs), s.Ranks)
	}
	c := &checker{s: s, id: map[[3]int]int{}, stride: map[Flag]int64{}}
	// Structural checks and flag strides.
	for r, prog := range s.Programs {
		for i := range prog {
			op := &prog[i]
			where := fmt.Sprintf("algos: check %s: rank %d op %d %s", s.Algo, r, i, op.Kind)
			for _, d := range op.After {
				if d < 0 || d >= i {
					return nil, fmt.Errorf("%s: depends on op %d, which is not an earlier op of the rank", where, d)
				}
			}
			switch op.Kind {
			case Read, Write, Copy, Reduce:
				if op.Src.Len != op.Dst.Len || op.Src.Len < 0 || op.Src.Off < 0 || op.Dst.Off < 0 {
					return nil, fmt.Errorf("%s: ranges %s and %s are malformed", where, op.Src, op.Dst)
				}
				own := func(x Range) bool { return !x.Buf.At.Host && x.Buf.At.Rank == r }
				if (op.Kind == Read && !own(op.Dst)) || (op.Kind == Write && !own(op.Src)) || (op.Kind == Reduce && !(own(op.Src) && own(op.Dst))) {
					return nil, fmt.Errorf("%s: %s ← %s: a %s must keep its local end on the rank's own GPU", where, op.Dst, op.Src, op.Kind)
				}
			case Signal:
				if op.Value <= 0 {
					return nil, fmt.Errorf("%s: flag %s value must be > 0, got %d", where, op.Flag, op.Value)
				}
				c.stride[op.Flag] = max(c.stride[op.Flag], op.Value)
			case Wait:
				if op.Value <= 0 {
					return nil, fmt.Errorf("%s: waits for %s ≥ %d; flag values start at 1", where, op.Flag, op.Value)
				}
			}
		}
	}
	// Nodes: per iteration and rank, input write, ops, output read.
	for it := 0; it < iters; it++ {
		for r, prog := range s.Programs {
			c.add(node{iter: it, rank: r, idx: -1})
			for i := range prog {
				c.add(node{iter: it, rank: r, idx: i, op: &prog[i]})
			}
			c.add(node{iter: it, rank: r, idx: -2})
		}
	}
	// Edges.
	signals := map[[2]any][]int{} // (flag, absolute value) → nodes
	for n, nd := range c.nodes {
		if nd.op != nil && nd.op.Kind == Signal {
			v := nd.op.Value + int64(nd.iter)*c.stride[nd.op.Flag]
			signals[[2]any{nd.op.Flag, v}] = append(signals[[2]any{nd.op.Flag, v}], n)
		}
	}
	for n := range c.nodes {
		nd := &c.nodes[n]
		in := c.id[[3]int{nd.iter, nd.rank, -1}]
		switch {
		case nd.idx == -1:
			if nd.iter > 0 {
				// The next allreduce starts after the rank's previous one ends.
				nd.preds = append(nd.preds, c.id[[3]int{nd.iter - 1, nd.rank, -2}])
			}
		case nd.idx == -2:
			for i := range s.Programs[nd.rank] {
				nd.preds = append(nd.preds, c.id[[3]int{nd.iter, nd.rank, i}])
			}
			nd.preds = append(nd.preds, in)
		default:
			nd.preds = append(nd.preds, in)
			for _, d := range nd.op.After {
				nd.preds = append(nd.preds, c.id[[3]int{nd.iter, nd.rank, d}])
			}
			if nd.op.Kind == Wait {
				st := c.stride[nd.op.Flag]
				want := nd.op.Value + int64(nd.iter)*st
				if st == 0 || nd.op.Value > st {
					return nil, fmt.Errorf("algos: check %s: %s waits for %s ≥ %d, which no op of the same allreduce sets (deadlock)", s.Algo, c.name(n), nd.op.Flag, nd.op.Value)
				}
				// The earliest value that satisfies the wait within its
				// allreduce must be set by exactly one op.
				var best []int
				for v := want; v <= int64(nd.iter)*st+st; v++ {
					if ss := signals[[2]any{nd.op.Flag, v}]; len(ss) > 0 {
						best = ss
						break
					}
				}
				if len(best) == 0 {
					return nil, fmt.Errorf("algos: check %s: %s waits for %s ≥ %d, which no op of the same allreduce sets (deadlock)", s.Algo, c.name(n), nd.op.Flag, nd.op.Value)
				}
				if len(best) > 1 {
					return nil, fmt.Errorf("algos: check %s: %s: flag %s is set to the same value by %s and %s; waits on it are ambiguous", s.Algo, c.name(n), nd.op.Flag, c.name(best[0]), c.name(best[1]))
				}
				nd.preds = append(nd.preds, best[0])
			}
		}
	}
	return c, nil
}

func (c *checker) add(n node) {
	c.id[[3]int{n.iter, n.rank, n.idx}] = len(c.nodes)
	c.nodes = append(c.nodes, n)
}

// order sorts the nodes topologically (Kahn, smallest node first) and
// computes ancestor sets; a cycle is a deadlock.
func (c *checker) order() error {
	n := len(c.nodes)
	indeg := make([]int, n)
	succ := make([][]int, n)
	for v, nd := range c.nodes {
		for _, u := range nd.preds {
			succ[u] = append(succ[u], v)
			indeg[v]++
		}
	}
	ready := &intHeap{}
	for v := 0; v < n; v++ {
		if indeg[v] == 0 {
			ready.push(v)
		}
	}
	for ready.len() > 0 {
		u := ready.pop()
		c.topo = append(c.topo, u)
		for _, v := range succ[u] {
			if indeg[v]--; indeg[v] == 0 {
				ready.push(v)
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
		return fmt.Errorf("algos: check %s: deadlock: the waits form a cycle; blocked: %s", c.s.Algo, strings.Join(stuck, "; "))
	}
	words := (n + 63) / 64
	c.anc = make([][]uint64, n)
	for _, v := range c.topo {
		a := make([]uint64, words)
		for _, u := range c.nodes[v].preds {
			for w, x := range c.anc[u] {
				a[w] |= x
			}
			a[u/64] |= 1 << (u % 64)
		}
		c.anc[v] = a
	}
	return nil
}

func (c *checker) before(a, b int) bool { return c.anc[b][a/64]&(1<<(a%64)) != 0 }

type access struct {
	node     int
	buf      Buf
	off, end int64
	mode     uint8 // 0 read, 1 write, 2 accumulate
}

// races finds two unordered accesses to overlapping bytes, one not a read.
func (c *checker) races() error {
	var acc []access
	for n, nd := range c.nodes {
		s := c.s
		switch {
		case nd.idx == -1:
			acc = append(acc, access{n, Buf{At: hw.GPUMem(nd.rank), Name: s.Input}, 0, s.Bytes, 1})
		case nd.idx == -2:
			acc = append(acc, access{n, Buf{At: hw.GPUMem(nd.rank), Name: s.Output}, 0, s.Bytes, 0})
		default:
			op := nd.op
			switch op.Kind {
			case Read, Write, Copy, Reduce:
				if op.Src.Len == 0 {
					continue
				}
				acc = append(acc, access{n, op.Src.Buf, op.Src.Off, op.Src.Off + op.Src.Len, 0})
				m := uint8(1)
				if op.Accumulate || op.Kind == Reduce {
					m = 2
				}
				acc = append(acc, access{n, op.Dst.Buf, op.Dst.Off, op.Dst.Off + op.Dst.Len, m})
			}
		}
	}
	sort.SliceStable(acc, func(i, j int) bool {
		a, b := acc[i], acc[j]
		if a.buf != b.buf {
			return bufLess(a.buf, b.buf)
		}
		return a.off < b.off
	})
	for i := range acc {
		for j := i + 1; j < len(acc) && acc[j].buf == acc[i].buf && acc[j].off < acc[i].end; j++ {
			a, b := acc[i], acc[j]
			if a.node == b.node || (a.mode == 0 && b.mode == 0) || (a.mode == 2 && b.mode == 2) {
				continue
			}
			if c.before(a.node, b.node) || c.before(b.node, a.node) {
				continue
			}
			lo, hi := max(a.off, b.off), min(a.end, b.end)
			return fmt.Errorf("algos: check %s: race on %s bytes [%d, %d): %s and %s are not ordered by program order or any flag", c.s.Algo, a.buf, lo, hi, c.name(a.node), c.name(b.node))
		}
	}
	return nil
}

func bufLess(a, b Buf) bool {
	if a.At != b.At {
		if a.At.Host != b.At.Host {
			return !a.At.Host
		}
		if a.At.Rank != b.At.Rank {
			return a.At.Rank < b.At.Rank
		}
		return a.At.Socket < b.At.Socket
	}
	return a.Name < b.Name
}

// seg is a run of bytes holding the sum of the inputs in set, of allreduce gen.
type seg struct {
	off, end int64
	gen      int
	set      uint64
}

// execute runs the ops in topological order on symbolic contents.
func (c *checker) execute() error {
	s := c.s
	mem := map[Buf][]seg{}
	all := uint64(1)<<uint(s.Ranks) - 1
	if s.Ranks == 64 {
		all = ^uint64(0)
	}
	for _, n := range c.topo {
		nd := c.nodes[n]
		switch nd.idx {
		case -1:
			b := Buf{At: hw.GPUMem(nd.rank), Name: s.Input}
			mem[b] = put(mem[b], []seg{{0, s.Bytes, nd.iter, 1 << uint(nd.rank)}})
			continue
		case -2:
			b := Buf{At: hw.GPUMem(nd.rank), Name: s.Output}
			got, hole := get(mem[b], 0, s.Bytes)
			if hole >= 0 {
				return fmt.Errorf("algos: check %s: rank %d output bytes from %d were never written by allreduce %d", s.Algo, nd.rank, hole, nd.iter+1)
			}
			for _, g := range got {
				if g.gen != nd.iter || g.set != all {
					return fmt.Errorf("algos: check %s: after allreduce %d, rank %d output bytes [%d, %d) hold %s; want the sum of all %d ranks of allreduce %d", s.Algo, nd.iter+1, nd.rank, g.off, g.end, describe(g, s.Ranks), s.Ranks, nd.iter+1)
				}
			}
			continue
		}
		op := nd.op
		switch op.Kind {
		case Read, Write, Copy, Reduce:
			if op.Src.Len == 0 {
				continue
			}
			src, hole := get(mem[op.Src.Buf], op.Src.Off, op.Src.Len)
			if hole >= 0 {
				return fmt.Errorf("algos: check %s: %s reads %s bytes from %d before anything was written there", s.Algo, c.name(n), op.Src, hole)
			}
			shift := op.Dst.Off - op.Src.Off
			for i := range src {
				src[i].off += shift
				src[i].end += shift
			}
			if op.Accumulate || op.Kind == Reduce {
				dst, hole := get(mem[op.Dst.Buf], op.Dst.Off, op.Dst.Len)
				if hole >= 0 {
					return fmt.Errorf("algos: check %s: %s accumulates into %s bytes from %d, which hold nothing yet", s.Algo, c.name(n), op.Dst, hole)
				}
				sum, err := add(dst, src)
				if err != nil {
					return fmt.Errorf("algos: check %s: %s into %s: %v", s.Algo, c.name(n), op.Dst, err)
				}
				src = sum
			}
			mem[op.Dst.Buf] = put(mem[op.Dst.Buf], src)
		}
	}
	return nil
}

func describe(g seg, n int) string {
	var rs []string
	for r := 0; r < n; r++ {
		if g.set&(1<<uint(r)) != 0 {
			rs = append(rs, fmt.Sprint(r))
		}
	}
	return fmt.Sprintf("ranks {%s} of allreduce %d (%d of %d inputs)", strings.Join(rs, ","), g.gen+1, bits.OnesCount64(g.set), n)
}

// get returns the segments covering [off, off+n), clipped, or the first
// uncovered byte.
func get(segs []seg, off, n int64) ([]seg, int64) {
	end := off + n
	var out []seg
	at := off
	i := sort.Search(len(segs), func(i int) bool { return segs[i].end > off })
	for ; i < len(segs) && segs[i].off < end; i++ {
		g := segs[i]
		if g.off > at {
			return nil, at
		}
		g.off, g.end = max(g.off, off), min(g.end, end)
		out = append(out, g)
		at = g.end
	}
	if at < end {
		return nil, at
	}
	return out, -1
}

// put overwrites the range w covers with w (segments already placed at their offsets).
func put(segs []seg, w []seg) []seg {
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
	// Merge neighbours with equal contents.
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

// add sums two aligned segment lists covering the same range.
func add(a, b []seg) ([]seg, error) {
	var out []seg
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		lo := max(a[i].off, b[j].off)
		hi := min(a[i].end, b[j].end)
		x, y := a[i], b[j]
		if x.gen != y.gen {
			return nil, fmt.Errorf("bytes [%d, %d) add data of allreduce %d to data of allreduce %d", lo, hi, y.gen+1, x.gen+1)
		}
		if x.set&y.set != 0 {
			return nil, fmt.Errorf("bytes [%d, %d) count rank inputs twice (%s plus %s)", lo, hi, describe(x, 64), describe(y, 64))
		}
		out = append(out, seg{lo, hi, x.gen, x.set | y.set})
		if a[i].end == hi {
			i++
		}
		if b[j].end == hi {
			j++
		}
	}
	return out, nil
}

type intHeap []int

func (h *intHeap) len() int { return len(*h) }
func (h *intHeap) push(v int) {
	*h = append(*h, v)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if a[p] <= a[i] {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}
func (h *intHeap) pop() int {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	for i := 0; ; {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && a[r] < a[l] {
			m = r
		}
		if a[i] <= a[m] {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}
