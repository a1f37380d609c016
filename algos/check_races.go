package algos

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/arsim/arsim/hw"
)

// The checker's proofs over its graph: how many allreduces apart every op
// is ordered (distance, which bounds the calls to run for rotating buffers
// and data-carried waits), and that no two unordered ops touch the same
// bytes with one of them writing (races).

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
				ok = covers(c.anc(v))
			}
		}
		if ok {
			return d
		}
	}
	return 0
}

// access is one node's read (mode 0), write (1) or accumulation (2) of
// bytes [off, end) of a buffer copy.
type access struct {
	node     int32
	buf      int32 // the buffer copy's number (accessList.bufs)
	off, end int64
	mode     uint8 // 0 read, 1 write, 2 accumulate
}

// races finds two unordered accesses to overlapping bytes, one not a read.
// The accesses are sorted by buffer (in bufLess order, through their
// index among the distinct buffers) and offset, stably (sortAccesses).
func (c *checker) races() error {
	acc, bufs := c.accesses()
	// The buffers are numbered in order of first access; rank them in
	// bufLess order.
	order := make([]int32, len(bufs))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(x, y int32) int {
		a, b := bufs[x], bufs[y]
		if bufLess(a, b) {
			return -1
		}
		if bufLess(b, a) {
			return 1
		}
		return 0
	})
	rank := make([]int32, len(bufs))
	for r, id := range order {
		rank[id] = int32(r)
	}
	br := make([]int32, len(acc)) // each access's buffer's rank
	for i := range acc {
		br[i] = rank[acc[i].buf]
	}
	keys := sortAccesses(acc, br, len(bufs))
	for x, i := range keys {
		for y := x + 1; y < len(keys) && br[keys[y]] == br[i] && acc[keys[y]].off < acc[i].end; y++ {
			a, b := &acc[i], &acc[keys[y]]
			if a.node == b.node || (a.mode == 0 && b.mode == 0) || (a.mode == 2 && b.mode == 2) {
				continue
			}
			if c.before(int(a.node), int(b.node)) || c.before(int(b.node), int(a.node)) {
				continue
			}
			lo, hi := max(a.off, b.off), min(a.end, b.end)
			return fmt.Errorf("algos: check %s: race on %s bytes [%d, %d): %s and %s are not ordered by program order or any flag", c.s.Algo, bufs[a.buf], lo, hi, c.name(int(a.node)), c.name(int(b.node)))
		}
	}
	return nil
}

// sortAccesses returns the accesses' indices ordered by their buffer's
// rank (br, below nbufs), then offset, then index: grouped by buffer
// (counting), then each group by one integer key of offset and place in
// the group when offsets fit in 40 bits, by comparison otherwise.
func sortAccesses(acc []access, br []int32, nbufs int) []int32 {
	start := make([]int, nbufs+1)
	for _, b := range br {
		start[b+1]++
	}
	for b := 0; b < nbufs; b++ {
		start[b+1] += start[b]
	}
	out := make([]int32, len(acc))
	next := slices.Clone(start[:nbufs])
	for i, b := range br {
		out[next[b]] = int32(i)
		next[b]++
	}
	var keys []uint64
	var sorted []int32
	for b := 0; b < nbufs; b++ {
		group := out[start[b]:start[b+1]]
		fits := len(group) < 1<<24
		for _, i := range group {
			fits = fits && acc[i].off < 1<<40
		}
		if !fits {
			slices.SortStableFunc(group, func(x, y int32) int { return cmp.Compare(acc[x].off, acc[y].off) })
			continue
		}
		keys = keys[:0]
		for k, i := range group {
			keys = append(keys, uint64(acc[i].off)<<24|uint64(k))
		}
		slices.Sort(keys)
		sorted = sorted[:0]
		for _, key := range keys {
			sorted = append(sorted, group[key&(1<<24-1)])
		}
		copy(group, sorted)
	}
	return out
}

// accesses lists every node's accesses to memory, in node order: the
// user's input writes and output reads, each transfer's source (unless
// the sentinel) and destination in its allreduce's buffer copies, and the
// bytes each data-carried wait polls; and the buffer copies they touch,
// numbered in order of first access. A buffer that does not rotate is
// the same copy in every allreduce: its number is looked up once per op.
//
// It also sets c.bufs (the numbered copies) and, per node, c.srcOf and
// c.dstOf: the number of the copy it reads (its source, a poll's bytes,
// an output read) and writes (its destination, an input write), −1 none.
func (c *checker) accesses() ([]access, []Buf) {
	acc := make([]access, 0, 2*c.perUni*c.iters)
	c.srcOf, c.dstOf = make([]int32, len(c.nodes)), make([]int32, len(c.nodes))
	for n := range c.srcOf {
		c.srcOf[n], c.dstOf[n] = -1, -1
	}
	ids := map[Buf]int32{}
	var bufs []Buf
	number := func(b Buf) int32 {
		id, ok := ids[b]
		if !ok {
			id = int32(len(bufs))
			ids[b] = id
			bufs = append(bufs, b)
		}
		return id
	}
	// known[r][2i+k]: the number of op i's source (k 0) or destination
	// (1) when it does not rotate, −1 until looked up; known[r][2m],
	// known[r][2m+1] (m ops): the rank's input and output.
	known := make([][]int32, len(c.s.Programs))
	for r, prog := range c.s.Programs {
		known[r] = make([]int32, 2*len(prog)+2)
		for i := range known[r] {
			known[r][i] = -1
		}
	}
	buf := func(nd *node, k int, x Buf) int32 {
		if x.Rotate > 1 {
			return number(x.Copy(nd.iter))
		}
		at := &known[nd.rank][k]
		if *at < 0 {
			*at = number(x.Copy(nd.iter))
		}
		return *at
	}
	s := c.s
	for n := range c.nodes {
		nd := &c.nodes[n]
		m := len(s.Programs[nd.rank])
		switch {
		case nd.idx == -1:
			c.dstOf[n] = buf(nd, 2*m, Buf{At: hw.GPUMem(nd.rank), Name: s.Input})
			acc = append(acc, access{int32(n), c.dstOf[n], 0, s.Bytes, 1})
		case nd.idx == -2:
			c.srcOf[n] = buf(nd, 2*m+1, Buf{At: hw.GPUMem(nd.rank), Name: s.Output})
			acc = append(acc, access{int32(n), c.srcOf[n], 0, s.Bytes, 0})
		default:
			op := nd.op
			switch op.Kind {
			case Read, Write, Copy, Reduce:
				if op.Src.Len == 0 {
					continue
				}
				if !op.Src.IsSentinel() { // a constant: nothing writes it
					c.srcOf[n] = buf(nd, 2*nd.idx, op.Src.Buf)
					acc = append(acc, access{int32(n), c.srcOf[n], op.Src.Off, op.Src.Off + op.Src.Len, 0})
				}
				mode := uint8(1)
				if op.Accumulate || op.Kind == Reduce {
					mode = 2
				}
				c.dstOf[n] = buf(nd, 2*nd.idx+1, op.Dst.Buf)
				acc = append(acc, access{int32(n), c.dstOf[n], op.Dst.Off, op.Dst.Off + op.Dst.Len, mode})
			case Wait:
				if op.Src.Len > 0 { // a data-carried wait polls (reads) its bytes
					c.srcOf[n] = buf(nd, 2*nd.idx, op.Src.Buf)
					acc = append(acc, access{int32(n), c.srcOf[n], op.Src.Off, op.Src.Off + op.Src.Len, 0})
				}
			}
		}
	}
	c.bufs = bufs
	return acc, bufs
}

// bufLess orders buffers: GPU memory before host memory, then by rank or
// socket, then by name.
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
