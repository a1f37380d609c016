package algos

import (
	"fmt"
	"math/bits"
	"slices"
	"sort"
	"strings"
)

// The checker's symbolic execution: every buffer copy's bytes as runs of
// segments, each saying which ranks' inputs of which allreduce it sums
// (or that it holds the sentinel), updated op by op in topological order.

// seg is a run of bytes holding the sum of the inputs in set, of allreduce
// gen; gen sentinel marks bytes holding the sentinel.
type seg struct {
	off, end int64
	gen      int
	set      uint64
}

// sentinel is the gen of bytes that hold a protocol's "not written" value.
const sentinel = -1

// execute runs the ops in topological order on symbolic contents: each
// buffer copy's segments, by its number (c.bufs; races numbered them).
func (c *checker) execute() error {
	mem := make([][]seg, len(c.bufs))
	// watched[b]: the ranges data-carried waits poll in copy b.
	watched := make([][]seg, len(c.bufs))
	if len(c.sh.watched) > 0 {
		for b, x := range c.bufs {
			watched[b] = c.sh.watched[x]
			// Polled buffers hold the sentinel from their allocation on.
			for _, iv := range watched[b] {
				mem[b] = put(mem[b], []seg{{iv.off, iv.end, sentinel, 0}})
			}
		}
	}
	for _, n := range c.topo {
		nd := c.nodes[n]
		var err error
		switch {
		case nd.idx == -1:
			b := c.dstOf[n]
			mem[b] = put(mem[b], []seg{{0, c.s.Bytes, nd.iter, 1 << uint(nd.rank)}})
		case nd.idx == -2:
			err = c.output(mem, n)
		case nd.op.Kind == Wait && nd.op.Src.Len > 0:
			err = c.poll(mem, n)
		case nd.op.Kind == Read || nd.op.Kind == Write || nd.op.Kind == Copy || nd.op.Kind == Reduce:
			if nd.op.Src.Len > 0 {
				err = c.transfer(mem, watched, n)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// output checks what the user reads from a rank's output after an
// allreduce: every byte written, holding the sum of every rank's input of
// that allreduce.
func (c *checker) output(mem [][]seg, n int) error {
	s, nd := c.s, c.nodes[n]
	all := uint64(1)<<uint(s.Ranks) - 1
	if s.Ranks == 64 {
		all = ^uint64(0)
	}
	got, hole := get(mem[c.srcOf[n]], 0, s.Bytes)
	if hole >= 0 {
		return fmt.Errorf("algos: check %s: rank %d output bytes from %d were never written by allreduce %d", s.Algo, nd.rank, hole, nd.iter+1)
	}
	for _, g := range got {
		if g.gen != nd.iter || g.set != all {
			return fmt.Errorf("algos: check %s: after allreduce %d, rank %d output bytes [%d, %d) hold %s; want the sum of all %d ranks of allreduce %d", s.Algo, nd.iter+1, nd.rank, g.off, g.end, describe(g, s.Ranks), s.Ranks, nd.iter+1)
		}
	}
	return nil
}

// transfer runs a Read, Write, Copy or Reduce of n bytes > 0: what its
// source holds lands in its destination, or is added to what that holds;
// a store of data into polled bytes must find them re-armed.
func (c *checker) transfer(mem, watched [][]seg, n int) error {
	s, nd := c.s, c.nodes[n]
	op := nd.op
	dst := c.dstOf[n]
	src, err := c.source(mem, n)
	if err != nil {
		return err
	}
	shift := op.Dst.Off - op.Src.Off
	for i := range src {
		src[i].off += shift
		src[i].end += shift
	}
	if !op.Src.IsSentinel() {
		if err := c.landing(mem, watched[dst], n, dst, op.Dst); err != nil {
			return err
		}
	}
	if op.Accumulate || op.Kind == Reduce {
		dstR := Range{Buf: c.bufs[dst], Off: op.Dst.Off, Len: op.Dst.Len}
		held, hole := get(mem[dst], op.Dst.Off, op.Dst.Len)
		if hole >= 0 {
			return fmt.Errorf("algos: check %s: %s accumulates into %s bytes from %d, which hold nothing yet", s.Algo, c.name(n), dstR, hole)
		}
		sum, err := add(held, src)
		if err != nil {
			return fmt.Errorf("algos: check %s: %s into %s: %v", s.Algo, c.name(n), dstR, err)
		}
		src = sum
	}
	mem[dst] = put(mem[dst], src)
	return nil
}

// source returns what transfer n reads, at the source's offsets: the
// sentinel for a clear, else the contents of its source, which must all
// have been written and hold data, not the sentinel.
func (c *checker) source(mem [][]seg, n int) ([]seg, error) {
	s, nd := c.s, c.nodes[n]
	op := nd.op
	if op.Src.IsSentinel() {
		return []seg{{op.Src.Off, op.Src.Off + op.Src.Len, sentinel, 0}}, nil
	}
	srcBuf := c.bufs[c.srcOf[n]]
	src, hole := get(mem[c.srcOf[n]], op.Src.Off, op.Src.Len)
	if hole >= 0 {
		srcR := Range{Buf: srcBuf, Off: op.Src.Off, Len: op.Src.Len}
		return nil, fmt.Errorf("algos: check %s: %s reads %s bytes from %d before anything was written there", s.Algo, c.name(n), srcR, hole)
	}
	for _, g := range src {
		if g.gen == sentinel {
			return nil, fmt.Errorf("algos: check %s: %s reads %s bytes [%d, %d), which hold the sentinel: no data landed there since they were re-armed", s.Algo, c.name(n), srcBuf, g.off, g.end)
		}
	}
	return src, nil
}

// landing checks a store of data into dst (buffer copy b) against the
// polled ranges of b (watched): those bytes must hold the sentinel, or a
// poll could end on what they held before.
func (c *checker) landing(mem [][]seg, watched []seg, n int, b int32, dst Range) error {
	lo, hi := dst.Off, dst.Off+dst.Len
	for _, iv := range watched {
		a, z := max(lo, iv.off), min(hi, iv.end)
		if a >= z {
			continue
		}
		got, _ := get(mem[b], a, z-a)
		for _, g := range got {
			if g.gen != sentinel {
				return fmt.Errorf("algos: check %s: %s stores into %s bytes [%d, %d), which a data-carried wait polls, but they still hold %s, not the sentinel: nothing re-armed them since their last use, so the poll could end on stale data",
					c.s.Algo, c.name(n), c.bufs[b], g.off, g.end, describe(g, c.s.Ranks))
			}
		}
	}
	return nil
}

// poll checks a data-carried wait: when it ends, its bytes hold data of
// its own allreduce, no sentinel.
func (c *checker) poll(mem [][]seg, n int) error {
	nd := c.nodes[n]
	op := nd.op
	b := c.bufs[c.srcOf[n]]
	got, hole := get(mem[c.srcOf[n]], op.Src.Off, op.Src.Len)
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

// describe says what a segment holds, for errors.
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

// put overwrites the range w covers with w (segments already placed at
// their offsets), in place: the segments it overlaps are replaced by w
// and what is left of the first and last of them outside it; then
// neighbours with equal contents merge.
func put(segs []seg, w []seg) []seg {
	if len(w) == 0 {
		return segs
	}
	lo, hi := w[0].off, w[len(w)-1].end
	i := sort.Search(len(segs), func(i int) bool { return segs[i].end > lo })
	j := i
	for j < len(segs) && segs[j].off < hi {
		j++
	}
	head := i < len(segs) && segs[i].off < lo
	tail := j > i && segs[j-1].end > hi
	h, t := seg{}, seg{}
	if head {
		h = segs[i]
		h.end = lo
	}
	if tail {
		t = segs[j-1]
		t.off = hi
	}
	segs = slices.Replace(segs, i, j, w...)
	if head {
		segs = slices.Insert(segs, i, h)
		i++
	}
	if tail {
		segs = slices.Insert(segs, i+len(w), t)
	}
	// Merge neighbours with equal contents.
	merged := segs[:0]
	for _, g := range segs {
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
