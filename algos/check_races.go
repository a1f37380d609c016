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
				ok = covers(c.anc[v])
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
	node     int
	buf      Buf
	off, end int64
	mode     uint8 // 0 read, 1 write, 2 accumulate
}

// races finds two unordered accesses to overlapping bytes, one not a read.
// The accesses are sorted by buffer (in bufLess order, through their
// index among the distinct buffers) and offset, stably.
func (c *checker) races() error {
	acc := c.accesses()
	// Number the distinct buffers in order of first access, then rank
	// them in bufLess order.
	first := map[Buf]int32{}
	var bufs []Buf
	seen := make([]int32, len(acc))
	for i, a := range acc {
		id, ok := first[a.buf]
		if !ok {
			id = int32(len(bufs))
			first[a.buf] = id
			bufs = append(bufs, a.buf)
		}
		seen[i] = id
	}
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
	keys := make([]accessKey, len(acc))
	for i, a := range acc {
		keys[i] = accessKey{buf: rank[seen[i]], off: a.off, i: int32(i)}
	}
	// By buffer and offset, accesses at one offset in list order (the
	// order a stable sort keeps).
	slices.SortFunc(keys, func(a, b accessKey) int {
		if a.buf != b.buf {
			return cmp.Compare(a.buf, b.buf)
		}
		if a.off != b.off {
			return cmp.Compare(a.off, b.off)
		}
		return cmp.Compare(a.i, b.i)
	})
	for x := range keys {
		i := keys[x].i
		for y := x + 1; y < len(keys) && keys[y].buf == keys[x].buf && keys[y].off < acc[i].end; y++ {
			a, b := acc[i], acc[keys[y].i]
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

// accessKey is an access's sort key: its buffer's place in bufLess order,
// its offset, and its index in the list.
type accessKey struct {
	buf int32
	off int64
	i   int32
}

// accesses lists every node's accesses to memory, in node order: the
// user's input writes and output reads, each transfer's source (unless
// the sentinel) and destination in its allreduce's buffer copies, and the
// bytes each data-carried wait polls.
func (c *checker) accesses() []access {
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
	return acc
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
