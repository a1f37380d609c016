package algos

import (
	"errors"
	"fmt"
	"slices"
	"sort"
)

// Check executes s symbolically, several times back to back with the same
// buffers (as consecutive allreduces would run), and returns the first
// violation found:
//
//   - an op whose dependencies or ranges are malformed;
//   - a wait no op of the same allreduce can satisfy, or a cycle of waits
//     (deadlock);
//   - a flag whose larger value may be set before a smaller one some wait
//     is for (the wait would end early);
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
		if touching := c.touching(); touching > maxCheckTouching {
			return fmt.Errorf("algos: check %s: %w: %d ops that touch memory over %d back-to-back allreduces, more than %d; check a smaller message size",
				s.Algo, ErrTooLarge, touching, iters, maxCheckTouching)
		}
		if err := c.order(); err != nil {
			return err
		}
		if err := c.flagsInOrder(c.waited); err != nil {
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
	// flags numbers the flags signals and waits name; stride[f] is the
	// largest value flag f is set to, flagOf[r][i] op i of rank r's flag
	// (signals and waits).
	flags   map[Flag]int32
	stride  []int64
	flagOf  [][]int32
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
	sh := &shape{flags: map[Flag]int32{}, flagOf: make([][]int32, len(s.Programs)), rotate: 1, watched: map[Buf][]seg{}}
	watch := map[Buf][]seg{} // by rotating buffer (Rotate and Shift kept)
	for r, prog := range s.Programs {
		sh.flagOf[r] = make([]int32, len(prog))
		for i := range prog {
			if err := sh.inspectOp(s, r, i, watch); err != nil {
				return nil, err
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

// fusedDeps checks a fused write (Op.Fused), which the run starts with
// its first dependency and ends on its own: it is a Write with a producer
// besides that first op, and an op that waits for it names its producers
// too (the checker orders it after them; the run does only if it waits
// for them).
func fusedDeps(prog []Op, op *Op, where opWhere) error {
	if op.Fused && (op.Kind != Write || len(op.After) < 2) {
		return fmt.Errorf("%s: a fused write is a Write that names the op that starts its loop and at least one producer; this is a %s with %d deps", where, op.Kind, len(op.After))
	}
	for _, d := range op.After {
		w := &prog[d]
		if !w.Fused {
			continue
		}
		for _, p := range w.After[1:] {
			if !slices.Contains(op.After, p) {
				return fmt.Errorf("%s: waits for fused write %d (%s) but not for its producer %d, which may end after it", where, d, w.Label, p)
			}
		}
	}
	return nil
}

// inspectOp checks op i of rank r (its dependencies, rotation, ranges,
// flag values) and records its flag's stride, its buffers' rotation and,
// for a data-carried wait, the range it polls (in watch, by rotating
// buffer).
func (sh *shape) inspectOp(s *Schedule, r, i int, watch map[Buf][]seg) error {
	op := &s.Programs[r][i]
	where := opWhere{s.Algo, r, i, op.Kind}
	for _, d := range op.After {
		if d < 0 || d >= i {
			return fmt.Errorf("%s: depends on op %d, which is not an earlier op of the rank", where, d)
		}
	}
	if err := fusedDeps(s.Programs[r], op, where); err != nil {
		return err
	}
	for _, x := range []Range{op.Src, op.Dst} {
		if x.Buf.Rotate < 0 || x.Buf.Rotate > 16 {
			return fmt.Errorf("%s: buffer %s rotates %d copies; want 0–16", where, x.Buf, x.Buf.Rotate)
		}
		sh.rotate = max(sh.rotate, x.Buf.Rotate)
	}
	switch op.Kind {
	case Read, Write, Copy, Reduce:
		return inspectTransfer(where, r, op)
	case Signal:
		if op.Value <= 0 {
			return fmt.Errorf("%s: flag %s value must be > 0, got %d", where, op.Flag, op.Value)
		}
		f := sh.flag(r, i, op.Flag)
		sh.stride[f] = max(sh.stride[f], op.Value)
	case Wait:
		if op.Value <= 0 {
			return fmt.Errorf("%s: waits for %s ≥ %d; flag values start at 1", where, op.Flag, op.Value)
		}
		sh.flag(r, i, op.Flag)
		if op.Src.Len < 0 || op.Src.Off < 0 {
			return fmt.Errorf("%s: polls a malformed range %s", where, op.Src)
		}
		if op.Src.Len > 0 {
			if op.Src.IsSentinel() {
				return fmt.Errorf("%s: polls the sentinel source %s", where, op.Src)
			}
			sh.carried = true
			b := op.Src.Buf
			watch[b] = append(watch[b], seg{off: op.Src.Off, end: op.Src.Off + op.Src.Len})
		}
	}
	return nil
}

// flag numbers op i of rank r's flag f (a number already given, or the
// next) and returns the number.
func (sh *shape) flag(r, i int, f Flag) int32 {
	id, ok := sh.flags[f]
	if !ok {
		id = int32(len(sh.stride))
		sh.flags[f] = id
		sh.stride = append(sh.stride, 0)
	}
	sh.flagOf[r][i] = id
	return id
}

// inspectTransfer checks a Read, Write, Copy or Reduce of rank r: equal,
// well-formed ranges; its local end on the rank's own GPU; a clear only
// as a plain store from the rank's own sentinel source, which nothing
// writes.
func inspectTransfer(where opWhere, r int, op *Op) error {
	if op.Src.Len != op.Dst.Len || op.Src.Len < 0 || op.Src.Off < 0 || op.Dst.Off < 0 {
		return fmt.Errorf("%s: ranges %s and %s are malformed", where, op.Src, op.Dst)
	}
	own := func(x Range) bool { return !x.Buf.At.Host && x.Buf.At.Rank == r }
	if (op.Kind == Read && !own(op.Dst)) || (op.Kind == Write && !own(op.Src)) || (op.Kind == Reduce && !(own(op.Src) && own(op.Dst))) {
		return fmt.Errorf("%s: %s ← %s: a %s must keep its local end on the rank's own GPU", where, op.Dst, op.Src, op.Kind)
	}
	if op.Src.IsSentinel() && (!own(op.Src) || op.Accumulate || op.Kind == Reduce) {
		return fmt.Errorf("%s: a clear stores the sentinel from the rank's own registers (a plain Read or Write from Sentinel(rank, n)); %s ← %s is not one", where, op.Dst, op.Src)
	}
	if op.Dst.IsSentinel() {
		return fmt.Errorf("%s: %s: the sentinel source %q cannot be written", where, op.Dst, SentinelName)
	}
	return nil
}

// opWhere names an op in the checker's errors, formatted only when one
// is made.
type opWhere struct {
	algo string
	r, i int
	kind OpKind
}

func (w opWhere) String() string {
	return fmt.Sprintf("algos: check %s: rank %d op %d %s", w.algo, w.r, w.i, w.kind)
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
