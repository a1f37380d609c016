package algos

import (
	"container/heap"
	"errors"
	"fmt"
	"math/bits"
	"sort"
	"strings"

	"github.com/arsim/arsim/hw"
)

// Check executes s symbolically, several times back to back with the same
// buffers (as consecutive allreduces would run), and returns the first
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
//   - for data-carried completion (a Wait with Src): a store into polled
//     bytes that still hold older data instead of the sentinel (nothing
//     re-armed them, so the poll could end on stale data), a poll that
//     ends while the bytes hold no data of its allreduce, a read of bytes
//     that hold the sentinel;
//   - a rank whose output does not hold every rank's input for every element.
//
// Errors name the rank, the op (index and label) and the byte range.
//
// How many allreduces. A schedule without rotating buffers (Buf.Rotate)
// or data-carried waits runs twice. Otherwise the checker runs enough
// calls to cover every case of an unbounded run, by this argument: edges
// only go forward (a flag of allreduce k is set in allreduce k; the user
// writes input k+1 after reading output k), so the graph of calls
// [i, j] is the same for every i ≥ 0 up to the rotation of buffer copies,
// which repeats every R calls (R the largest Rotate). Let D be the
// smallest distance such that every op of call 0 is ordered before every
// op of call D; the checker finds it in the calls it ran, and then it
// holds between calls i and i+D for all i. Two ops D or more calls apart
// are ordered, so a race lies within D−1 calls, at one of R buffer
// phases: calls 0 … R+D−2 cover every case. What a store or poll finds in
// a buffer is the last ordered write before it, made within the last
// D+R−1 calls (older writes to that copy precede one of those), so calls
// 0 … D+2R−2 cover every phase in steady state as well as the start,
// where the polled buffers hold the sentinel (set once at allocation).
// The checker runs D+2R−1 calls (2R+1 first, more if D > 2) and fails if
// no such D exists within the calls it can afford: then nothing bounds
// how far a rank may run ahead of another.
func Check(s *Schedule) error {
	sh, err := inspect(s)
	if err != nil {
		return err
	}
	iters := 2
	if sh.periodic() {
		iters = 2*sh.rotate + 1
	}
	for {
		c, err := newChecker(s, sh, iters)
		if err != nil {
			return err
		}
		touching := 0
		for _, nd := range c.nodes {
			if touches(nd) {
				touching++
			}
		}
		if touching > maxCheckTouching {
			return fmt.Errorf("algos: check %s: %w: %d ops that touch memory over %d back-to-back allreduces, more than %d; check a smaller message size",
				s.Algo, ErrTooLarge, touching, iters, maxCheckTouching)
		}
		if err := c.order(); err != nil {
			return err
		}
		if sh.periodic() {
			d := c.distance()
			need := d + 2*sh.rotate - 1
			if d == 0 || need > iters {
				if iters >= maxCheckIters {
					return fmt.Errorf("algos: check %s: allreduce 1 is not ordered before all of allreduce %d: nothing bounds how far one rank runs ahead of another, so reuse of buffers with %d rotating copies or data-carried completion cannot be proved safe for every number of back-to-back calls",
						s.Algo, iters, sh.rotate)
				}
				iters = min(maxCheckIters, max(need, iters+sh.rotate))
				continue
			}
		}
		if err := c.races(); err != nil {
			return err
		}
		return c.execute()
	}
}

// maxCheckIters bounds the back-to-back allreduces the checker runs for a
// schedule with rotating buffers or data-carried waits.
const maxCheckIters = 24

// maxCheckTouching bounds the memory-touching ops (over all the calls run)
// the checker takes on: its ancestor sets grow with their square (32768
// of them take 128 MiB).
const maxCheckTouching = 32768

// ErrTooLarge is returned (wrapped) by Check for a schedule too large to
// check; callers that sweep sizes may stop there.
var ErrTooLarge = errors.New("too large to check")

// shape is what Check learns about a schedule before it unrolls it.
type shape struct {
	stride  map[Flag]int64
	rotate  int  // the largest Buf.Rotate, at least 1
	carried bool // some wait is data-carried
	// watched holds, per buffer copy, the byte ranges some data-carried
	// wait polls, sorted and merged.
	watched map[Buf][]seg
}

// periodic reports whether the schedule needs the unbounded-run argument.
func (sh *shape) periodic() bool { return sh.rotate > 1 || sh.carried }

// inspect checks the ops' structure and gathers flag strides, rotation and
// polled ranges.
func inspect(s *Schedule) (*shape, error) {
	if s.Ranks > MaxCheckRanks {
		return nil, fmt.Errorf("algos: check %s: the checker handles at most %d ranks, got %d", s.Algo, MaxCheckRanks, s.Ranks)
	}
	if len(s.Programs) != s.Ranks {
		return nil, fmt.Errorf("algos: check %s: %d programs for %d ranks", s.Algo, len(s.Programs), s.Ranks)
	}
	sh := &shape{stride: map[Flag]int64{}, rotate: 1, watched: map[Buf][]seg{}}
	watch := map[Buf][]seg{} // by rotating buffer (Rotate and Shift kept)
	for r, prog := range s.Programs {
		for i := range prog {
			op := &prog[i]
			where := fmt.Sprintf("algos: check %s: rank %d op %d %s", s.Algo, r, i, op.Kind)
			for _, d := range op.After {
				if d < 0 || d >= i {
					return nil, fmt.Errorf("%s: depends on op %d, which is not an earlier op of the rank", where, d)
				}
			}
			for _, x := range []Range{op.Src, op.Dst} {
				if x.Buf.Rotate < 0 || x.Buf.Rotate > 16 {
					return nil, fmt.Errorf("%s: buffer %s rotates %d copies; want 0–16", where, x.Buf, x.Buf.Rotate)
				}
				sh.rotate = max(sh.rotate, x.Buf.Rotate)
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
				if op.Src.IsSentinel() && (!own(op.Src) || op.Accumulate || op.Kind == Reduce) {
					return nil, fmt.Errorf("%s: a clear stores the sentinel from the rank's own registers (a plain Read or Write from Sentinel(rank, n)); %s ← %s is not one", where, op.Dst, op.Src)
				}
				if op.Dst.IsSentinel() {
					return nil, fmt.Errorf("%s: %s: the sentinel source %q cannot be written", where, op.Dst, SentinelName)
				}
			case Signal:
				if op.Value <= 0 {
					return nil, fmt.Errorf("%s: flag %s value must be > 0, got %d", where, op.Flag, op.Value)
				}
				sh.stride[op.Flag] = max(sh.stride[op.Flag], op.Value)
			case Wait:
				if op.Value <= 0 {
					return nil, fmt.Errorf("%s: waits for %s ≥ %d; flag values start at 1", where, op.Flag, op.Value)
				}
				if op.Src.Len < 0 || op.Src.Off < 0 {
					return nil, fmt.Errorf("%s: polls a malformed range %s", where, op.Src)
				}
				if op.Src.Len > 0 {
					if op.Src.IsSentinel() {
						return nil, fmt.Errorf("%s: polls the sentinel source %s", where, op.Src)
					}
					sh.carried = true
					b := op.Src.Buf
					watch[b] = append(watch[b], seg{off: op.Src.Off, end: op.Src.Off + op.Src.Len})
				}
			}
		}
	}
	// Every copy of a polled buffer is polled over the same ranges.
	for b, ivs := range watch {
		n := max(1, b.Rotate)
		for c := 0; c < n; c++ {
			x := b.Copy(c - b.Shift)
			sh.watched[x] = append(sh.watched[x], ivs...)
		}
	}
	for b, ivs := range sh.watched {
		sh.watched[b] = mergeIntervals(ivs)
	}
	return sh, nil
}

// mergeIntervals sorts [off, end) intervals and merges overlapping ones.
func mergeIntervals(ivs []seg) []seg {
	sort.Slice(ivs, func(i, j int) bool { return ivs[i].off < ivs[j].off })
	var out []seg
	for _, v := range ivs {
		if k := len(out); k > 0 && v.off <= out[k-1].end {
			out[k-1].end = max(out[k-1].end, v.end)
			continue
		}
		out = append(out, seg{off: v.off, end: v.end})
	}
	return out
}

// node is one op of one iteration, or a pseudo-op: the user writing a
// rank's input before an allreduce, or reading its output after.
type node struct {
	iter, rank, idx int // idx −1: input written; −2: output read
	op              *Op
	preds           []int
}

type checker struct {
	s     *Schedule
	sh    *shape
	iters int
	nodes []node
	id    map[[3]int]int
	topo  []int
	// uni[v] is node v's index among the nodes that touch memory (ops
	// that read or write bytes, data-carried waits, the user's input
	// writes and output reads), −1 for the others (launches, flags,
	// fences); anc[v] holds v's ancestors among those. Only they take part
	// in races and in the distance between calls, so the bitsets span
	// them alone, and a node that touches no memory drops its set once
	// its successors have read it.
	uni    []int
	perUni int // memory-touching nodes per allreduce
	anc    [][]uint64
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

func newChecker(s *Schedule, sh *shape, iters int) (*checker, error) {
	c := &checker{s: s, sh: sh, iters: iters, id: map[[3]int]int{}}
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
	type flagValue struct {
		f Flag
		v int64
	}
	signals := map[flagValue][]int{} // (flag, absolute value) → nodes
	for n, nd := range c.nodes {
		if nd.op != nil && nd.op.Kind == Signal {
			k := flagValue{nd.op.Flag, nd.op.Value + int64(nd.iter)*sh.stride[nd.op.Flag]}
			signals[k] = append(signals[k], n)
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
				st := sh.stride[nd.op.Flag]
				want := nd.op.Value + int64(nd.iter)*st
				if st == 0 || nd.op.Value > st {
					return nil, fmt.Errorf("algos: check %s: %s waits for %s ≥ %d, which no op of the same allreduce sets (deadlock)", s.Algo, c.name(n), nd.op.Flag, nd.op.Value)
				}
				// The earliest value that satisfies the wait within its
				// allreduce must be set by exactly one op.
				var best []int
				for v := want; v <= int64(nd.iter)*st+st; v++ {
					if ss := signals[flagValue{nd.op.Flag, v}]; len(ss) > 0 {
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
				if nd.op.Src.Len > 0 && !c.nodes[best[0]].op.Inline {
					return nil, fmt.Errorf("algos: check %s: %s polls %s, a data-carried wait, but %s marks the landing with a separate flag write: the mark of data-carried completion is an inline signal right after the write of the data",
						s.Algo, c.name(n), nd.op.Src, c.name(best[0]))
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

// minHeap is a min-heap of node indices (container/heap).
type minHeap []int

func (h minHeap) Len() int           { return len(h) }
func (h minHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h minHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *minHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *minHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
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
	ready := &minHeap{}
	for v := 0; v < n; v++ {
		if indeg[v] == 0 {
			heap.Push(ready, v)
		}
	}
	for ready.Len() > 0 {
		u := heap.Pop(ready).(int)
		c.topo = append(c.topo, u)
		for _, v := range succ[u] {
			if indeg[v]--; indeg[v] == 0 {
				heap.Push(ready, v)
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
	c.uni = make([]int, n)
	count := 0
	for v, nd := range c.nodes {
		c.uni[v] = -1
		if touches(nd) {
			c.uni[v] = count
			count++
		}
	}
	c.perUni = count / c.iters
	words := (count + 63) / 64
	refs := make([]int, n)
	for v := range succ {
		refs[v] = len(succ[v])
	}
	var free [][]uint64
	c.anc = make([][]uint64, n)
	for _, v := range c.topo {
		var a []uint64
		if k := len(free); k > 0 {
			a, free = free[k-1], free[:k-1]
			clear(a)
		} else {
			a = make([]uint64, words)
		}
		for _, u := range c.nodes[v].preds {
			for w, x := range c.anc[u] {
				a[w] |= x
			}
			if i := c.uni[u]; i >= 0 {
				a[i/64] |= 1 << (i % 64)
			}
			if refs[u]--; refs[u] == 0 && c.uni[u] < 0 {
				free = append(free, c.anc[u])
				c.anc[u] = nil
			}
		}
		c.anc[v] = a
		if len(succ[v]) == 0 && c.uni[v] < 0 {
			free = append(free, a)
			c.anc[v] = nil
		}
	}
	return nil
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

// before reports whether a is an ancestor of b; both touch memory.
func (c *checker) before(a, b int) bool {
	i := c.uni[a]
	return c.anc[b][i/64]&(1<<(i%64)) != 0
}

// distance returns the smallest d ≥ 1 such that every memory-touching node
// of allreduce 0 is an ancestor of every such node of allreduce d, or 0 if
// no d < iters is. newChecker adds nodes in allreduce order, so allreduce
// k's memory-touching nodes hold indices [k·perUni, (k+1)·perUni).
func (c *checker) distance() int {
	per := c.perUni
	full, rest := per/64, per%64
	covers := func(a []uint64) bool {
		for w := 0; w < full; w++ {
			if a[w] != ^uint64(0) {
				return false
			}
		}
		m := uint64(1)<<uint(rest) - 1
		return rest == 0 || a[full]&m == m
	}
	nodes := len(c.nodes) / c.iters
	for d := 1; d < c.iters; d++ {
		ok := true
		for v := d * nodes; v < (d+1)*nodes && ok; v++ {
			if c.uni[v] >= 0 {
				ok = covers(c.anc[v])
			}
		}
		if ok {
			return d
		}
	}
	return 0
}

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
				if !op.Src.IsSentinel() { // a constant: nothing writes it
					acc = append(acc, access{n, op.Src.Buf.Copy(nd.iter), op.Src.Off, op.Src.Off + op.Src.Len, 0})
				}
				m := uint8(1)
				if op.Accumulate || op.Kind == Reduce {
					m = 2
				}
				acc = append(acc, access{n, op.Dst.Buf.Copy(nd.iter), op.Dst.Off, op.Dst.Off + op.Dst.Len, m})
			case Wait:
				if op.Src.Len > 0 { // a data-carried wait polls (reads) its bytes
					acc = append(acc, access{n, op.Src.Buf.Copy(nd.iter), op.Src.Off, op.Src.Off + op.Src.Len, 0})
				}
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

// seg is a run of bytes holding the sum of the inputs in set, of allreduce
// gen; gen sentinel marks bytes holding the sentinel.
type seg struct {
	off, end int64
	gen      int
	set      uint64
}

// sentinel is the gen of bytes that hold a protocol's "not written" value.
const sentinel = -1

// execute runs the ops in topological order on symbolic contents.
func (c *checker) execute() error {
	s := c.s
	mem := map[Buf][]seg{}
	// Polled buffers hold the sentinel from their allocation on.
	for b, ivs := range c.sh.watched {
		for _, iv := range ivs {
			mem[b] = put(mem[b], []seg{{iv.off, iv.end, sentinel, 0}})
		}
	}
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
		case Wait:
			if op.Src.Len > 0 {
				if err := c.poll(mem, n); err != nil {
					return err
				}
			}
		case Read, Write, Copy, Reduce:
			if op.Src.Len == 0 {
				continue
			}
			srcBuf, dstBuf := op.Src.Buf.Copy(nd.iter), op.Dst.Buf.Copy(nd.iter)
			srcR, dstR := Range{Buf: srcBuf, Off: op.Src.Off, Len: op.Src.Len}, Range{Buf: dstBuf, Off: op.Dst.Off, Len: op.Dst.Len}
			var src []seg
			if op.Src.IsSentinel() {
				src = []seg{{op.Src.Off, op.Src.Off + op.Src.Len, sentinel, 0}}
			} else {
				var hole int64
				src, hole = get(mem[srcBuf], op.Src.Off, op.Src.Len)
				if hole >= 0 {
					return fmt.Errorf("algos: check %s: %s reads %s bytes from %d before anything was written there", s.Algo, c.name(n), srcR, hole)
				}
				for _, g := range src {
					if g.gen == sentinel {
						return fmt.Errorf("algos: check %s: %s reads %s bytes [%d, %d), which hold the sentinel: no data landed there since they were re-armed", s.Algo, c.name(n), srcBuf, g.off, g.end)
					}
				}
			}
			shift := op.Dst.Off - op.Src.Off
			for i := range src {
				src[i].off += shift
				src[i].end += shift
			}
			if !op.Src.IsSentinel() {
				if err := c.landing(mem, n, dstBuf, op.Dst); err != nil {
					return err
				}
			}
			if op.Accumulate || op.Kind == Reduce {
				dst, hole := get(mem[dstBuf], op.Dst.Off, op.Dst.Len)
				if hole >= 0 {
					return fmt.Errorf("algos: check %s: %s accumulates into %s bytes from %d, which hold nothing yet", s.Algo, c.name(n), dstR, hole)
				}
				sum, err := add(dst, src)
				if err != nil {
					return fmt.Errorf("algos: check %s: %s into %s: %v", s.Algo, c.name(n), dstR, err)
				}
				src = sum
			}
			mem[dstBuf] = put(mem[dstBuf], src)
		}
	}
	return nil
}

// landing checks a store of data into dst (buffer copy b) against the
// polled ranges of b: those bytes must hold the sentinel, or a poll could
// end on what they held before.
func (c *checker) landing(mem map[Buf][]seg, n int, b Buf, dst Range) error {
	lo, hi := dst.Off, dst.Off+dst.Len
	for _, iv := range c.sh.watched[b] {
		a, z := max(lo, iv.off), min(hi, iv.end)
		if a >= z {
			continue
		}
		got, _ := get(mem[b], a, z-a)
		for _, g := range got {
			if g.gen != sentinel {
				return fmt.Errorf("algos: check %s: %s stores into %s bytes [%d, %d), which a data-carried wait polls, but they still hold %s, not the sentinel: nothing re-armed them since their last use, so the poll could end on stale data",
					c.s.Algo, c.name(n), b, g.off, g.end, describe(g, c.s.Ranks))
			}
		}
	}
	return nil
}

// poll checks a data-carried wait: when it ends, its bytes hold data of
// its own allreduce, no sentinel.
func (c *checker) poll(mem map[Buf][]seg, n int) error {
	nd := c.nodes[n]
	op := nd.op
	b := op.Src.Buf.Copy(nd.iter)
	got, hole := get(mem[b], op.Src.Off, op.Src.Len)
	if hole >= 0 {
		return fmt.Errorf("algos: check %s: %s polls %s bytes from %d, which nothing ever writes", c.s.Algo, c.name(n), b, hole)
	}
	for _, g := range got {
		switch {
		case g.gen == sentinel:
			return fmt.Errorf("algos: check %s: %s polls %s bytes [%d, %d), which still hold the sentinel when the flag it trusts lands: nothing of allreduce %d stores there before that mark, so the poll never ends (deadlock)",
				c.s.Algo, c.name(n), b, g.off, g.end, nd.iter+1)
		case g.gen != nd.iter:
			return fmt.Errorf("algos: check %s: %s polls %s bytes [%d, %d), which hold %s: the poll ends on data of another allreduce",
				c.s.Algo, c.name(n), b, g.off, g.end, describe(g, c.s.Ranks))
		}
	}
	return nil
}

func describe(g seg, n int) string {
	if g.gen == sentinel {
		return "the sentinel (no data)"
	}
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
		if x.gen == sentinel || y.gen == sentinel {
			return nil, fmt.Errorf("bytes [%d, %d) add the sentinel: no data landed there", lo, hi)
		}
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
