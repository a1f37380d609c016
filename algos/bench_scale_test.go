package algos_test

import (
	"flag"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
)

// scaleChunks is how many chunks the peer (ASTRA-sim's analytical backend)
// cuts the allreduce into; each runs its own ring.
const scaleChunks = 4

// ringStream generates the benchmark's ring allreduce, the way ASTRA-sim's
// analytical backend runs it: the data is cut into scaleChunks chunks and
// each chunk is an independent ring allreduce of n parts over the ring
// r → r+1, 2(n−1) steps of one part each (reduce-scatter, then
// all-gather), the chunks' rings running concurrently on the same links.
// A step is three ops on the sender: wait for the previous step's part to
// have arrived (flag, from step 1), write the part to the next rank, and
// raise the next rank's flag inline (the flag travels with the data).
// There are no FIFO credits (unbounded receive buffers) and no reduction
// compute, as in the analytical peer.
//
// The ops are generated on demand (algos.Stream), step-major: step s of
// chunks 0…3, then step s+1, so that a window of a few steps holds every
// op a rank has in flight. At 1024 ranks the schedule has 25 million ops,
// which stored would take gigabytes.
//
// algos' own ring (channels=1, proto=simple) is not used because its
// slicing does not give 4 chunks: 1 MiB is one slice per step at every
// size, 1 GiB 2–8 slices per step depending on the rank count, and each
// slice costs about seven ops (credits, heads, local copies).
type ringStream struct {
	n          int
	bytes      int64
	window     int
	kern       hw.Kernel
	names      [scaleChunks]string
	off, ln    [scaleChunks][]int64 // each chunk's parts: offset in the buffer, length
	flags      []algos.StreamFlag   // chunk c's flag on GPU r is flags[c*n+r]; "ready" on GPU r is flags[4n+r]
	opsPerRank int
	// checked adds what makes the schedule a correct allreduce in
	// algos.Check's eyes: a start barrier (each rank tells the previous
	// one that its buffer is ready for this allreduce, and waits for the
	// next rank's word before writing to it) and, at the end, a wait per
	// chunk for the last part to arrive. The benchmark runs without them,
	// as the peer does (its time, the last delivery, is the same but for
	// the barrier and one poll).
	checked bool
	pre     int // ops before step 0: 2 when checked
	core    int // ops of the steps
}

const ringElem = 2

func newRingStream(n int, bytes int64, checked bool) *ringStream {
	st := &ringStream{n: n, bytes: bytes, window: 32, kern: hw.Kernel{Blocks: 1, Threads: 512}, checked: checked}
	cOff, cLen := algos.Split(bytes, ringElem, scaleChunks)
	for c := 0; c < scaleChunks; c++ {
		st.names[c] = "chunk" + strconv.Itoa(c)
		pOff, pLen := algos.Split(cLen[c], ringElem, n)
		st.off[c], st.ln[c] = make([]int64, n), pLen
		for x := range pOff {
			st.off[c][x] = cOff[c] + pOff[x]
		}
	}
	for c := 0; c < scaleChunks; c++ {
		for r := 0; r < n; r++ {
			st.flags = append(st.flags, algos.StreamFlag{Flag: algos.Flag{At: hw.GPUMem(r), Name: st.names[c]}, Stride: int64(2 * (n - 1))})
		}
	}
	if checked {
		st.pre = 2
		for r := 0; r < n; r++ {
			st.flags = append(st.flags, algos.StreamFlag{Flag: algos.Flag{At: hw.GPUMem(r), Name: "ready"}, Stride: 1})
		}
	}
	if n > 1 {
		// Step 0 is a write and a signal per chunk, every later step a
		// wait, a write and a signal.
		st.core = scaleChunks * (2 + 3*(2*(n-1)-1))
		st.opsPerRank = st.pre + st.core
		if checked {
			st.opsPerRank += scaleChunks
		}
	}
	return st
}

func (st *ringStream) Header() algos.Schedule {
	return algos.Schedule{Algo: "ring4", Ranks: st.n, Bytes: st.bytes, Elem: ringElem, Input: "buf", Output: "buf"}
}

func (st *ringStream) Len(int) int               { return st.opsPerRank }
func (st *ringStream) Window() int               { return st.window }
func (st *ringStream) Flags() []algos.StreamFlag { return st.flags }

// index returns the index of op k (0 wait, 1 write, 2 signal; step 0 has
// no wait) of chunk c at step s, counted from the first op of step 0.
func ringIndex(s, c, k int) int {
	if s == 0 {
		return 2*c + k - 1
	}
	return 2*scaleChunks + (s-1)*3*scaleChunks + 3*c + k
}

// Tables: buffer r is "buf" on GPU r; one kernel; no labels.
func (st *ringStream) Tables() algos.StreamTables {
	t := algos.StreamTables{Kernels: []hw.Kernel{st.kern}}
	for r := 0; r < st.n; r++ {
		t.Bufs = append(t.Bufs, algos.Buf{At: hw.GPUMem(r), Name: "buf"})
	}
	return t
}

func (st *ringStream) CompactOp(r, i int, op *algos.StreamOp) {
	n := st.n
	to := r + 1
	if to == n {
		to = 0
	}
	if i < st.pre {
		if i == 0 {
			op.Kind, op.Value, op.Inline = algos.Signal, 1, true
			op.Flag = int32(4*n + (r+n-1)%n)
			return
		}
		op.Kind, op.Value = algos.Wait, 1
		op.Flag = int32(4*n + r)
		return
	}
	i -= st.pre
	if i >= st.core {
		c := i - st.core
		op.Kind, op.Value = algos.Wait, int64(2*(n-1))
		op.After = append(op.After, st.pre+ringIndex(2*n-3, c, 2))
		op.Flag = int32(c*n + r)
		return
	}
	var s, c, k int
	if i < 2*scaleChunks {
		s, c, k = 0, i/2, i%2+1
	} else {
		// Unsigned: division by a constant is then a multiplication.
		j := uint(i - 2*scaleChunks)
		s, c, k = 1+int(j/(3*scaleChunks)), int(j%(3*scaleChunks)/3), int(j%3)
	}
	switch k {
	case 0:
		op.Kind, op.Value = algos.Wait, int64(s)
		op.After = append(op.After, st.pre+ringIndex(s-1, c, 1))
		op.Flag = int32(c*n + r)
	case 1:
		x := r - s
		for x < 0 {
			x += n
		}
		off := st.off[c][x]
		op.Kind = algos.Write
		op.Src, op.Dst = int32(r), int32(to)
		op.SrcOff, op.DstOff, op.Len = off, off, st.ln[c][x]
		op.Accumulate = s < n-1 // reduce-scatter
		if s > 0 {
			op.After = append(op.After, st.pre+i-1)
		} else if st.checked {
			op.After = append(op.After, 1)
		}
	default:
		op.Kind, op.Value, op.Inline = algos.Signal, int64(s+1), true
		op.After = append(op.After, st.pre+i-1)
		if s > 0 {
			// The chunk's counter counts steps in order: after the
			// step before's signal (it is, in time: that signal ends
			// the write this step's wait follows).
			op.After = append(op.After, st.pre+ringIndex(s-1, c, 2))
		}
		op.Flag = int32(c*n + to)
	}
}

// Repeats: from step 2 on, each step is the one before with every
// chunk's counter one higher (step 1's waits follow step 0's two-op
// steps), in two stretches, the reduce-scatter's steps (their writes
// accumulate) and the all-gather's.
func (st *ringStream) Repeats() []algos.Repeat {
	n := st.n
	if n < 4 {
		return nil
	}
	for c := range scaleChunks {
		for _, l := range st.ln[c] {
			if l != st.ln[c][0] {
				return nil // parts of different lengths: steps differ
			}
		}
	}
	step := make([]int64, scaleChunks*n)
	for i := range step {
		step[i] = 1
	}
	at := func(s int) int { return st.pre + ringIndex(s, 0, 0) }
	return []algos.Repeat{
		{From: at(2), To: at(n - 1), Ops: 3 * scaleChunks, Step: step},
		{From: at(n - 1), To: st.pre + st.core, Ops: 3 * scaleChunks, Step: step},
	}
}

// Op is CompactOp in full.
func (st *ringStream) Op(r, i int, op *algos.Op) int {
	var c algos.StreamOp
	c.After = op.After
	st.CompactOp(r, i, &c)
	op.Kind, op.Accumulate, op.Inline, op.Value, op.After = c.Kind, c.Accumulate, c.Inline, c.Value, c.After
	op.Kernel = st.kern
	switch c.Kind {
	case algos.Write:
		op.Src = algos.On(int(c.Src), "buf", c.SrcOff, c.Len)
		op.Dst = algos.On(int(c.Dst), "buf", c.DstOff, c.Len)
		return -1
	}
	return int(c.Flag)
}

// BenchmarkRingAllreduce simulates one ring allreduce of 4 chunks on a
// ring of n GPUs (topology.Ring: NVLink bonds between neighbours), the
// peer's configuration. Each iteration builds a fresh machine and runs the
// streamed schedule on it, so the schedule's generation is timed with the
// run. algos.Check is not run (it is O(ops²)); TestRingStreamChecks checks
// small rings.
//
// The stream says where its steps repeat (Repeats), so the run skips the
// steady state of each of its two stretches exactly (periodic_step.go);
// events are counted as if they ran, and skipped-ops/op reports the ops
// of each rank advanced over. BenchmarkRingAllreduceEveryEvent runs every
// event.
//
// Besides time, allocations and events it reports peak-heap-MiB: the
// largest heap (bytes of live and not yet collected objects,
// runtime/metrics /memory/classes/heap/objects:bytes) sampled every
// millisecond while the benchmark ran, machine and schedule included.
//
// ranks=4096 (1 MiB only: 268 million events; about a second a run,
// minutes every event) is there for the scale target.
func BenchmarkRingAllreduce(b *testing.B) { benchRing(b, algos.RunOptions{EventLimit: 1 << 40}) }

// BenchmarkRingAllreduceEveryEvent is BenchmarkRingAllreduce with every
// event run (RunOptions.EveryEvent): the steady state's steps are not
// skipped, the engine's own speed.
func BenchmarkRingAllreduceEveryEvent(b *testing.B) {
	benchRing(b, algos.RunOptions{EventLimit: 1 << 40, EveryEvent: true})
}

func benchRing(b *testing.B, opt algos.RunOptions) {
	for _, n := range []int{8, 64, 256, 512, 1024, 4096} {
		top, err := topology.Ring(n)
		if err != nil {
			b.Fatal(err)
		}
		for _, size := range []sim.Bytes{sim.MiB, sim.GiB} {
			if n == 4096 && size != sim.MiB {
				continue
			}
			b.Run(fmt.Sprintf("ranks=%d/size=%s", n, sizeName(size)), func(b *testing.B) {
				b.ReportAllocs()
				peak := sampleHeap()
				var events uint64
				skipped := 0
				for b.Loop() {
					m, err := hw.New(top)
					if err != nil {
						b.Fatal(err)
					}
					res, err := algos.RunStream(m, newRingStream(n, int64(size), false), opt)
					if err != nil {
						b.Fatal(err)
					}
					events += res.Events
					skipped += res.SkippedOps
				}
				b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
				b.ReportMetric(float64(events)/float64(b.N), "events/op")
				b.ReportMetric(float64(skipped)/float64(b.N), "skipped-ops/op")
				b.ReportMetric(float64(peak())/(1<<20), "peak-heap-MiB")
			})
		}
	}
}

var (
	ringOnce  = flag.Int("ring.once", 0, "TestRingOnce: run one ring allreduce of this many ranks (1 MiB, 4 chunks)")
	ringEvery = flag.Bool("ring.every", false, "TestRingOnce: run every event (no steady-state skipping)")
)

// TestRingOnce runs the benchmark's ring allreduce once, at the size given
// by -ring.once, and logs its events and time: a run without the
// benchmark's machinery, for profilers, instruction counts and timing a
// whole process. Skipped without the flag.
func TestRingOnce(t *testing.T) {
	if *ringOnce == 0 {
		t.Skip("pass -ring.once N to run a ring of N ranks")
	}
	start := time.Now()
	top, err := topology.Ring(*ringOnce)
	require.NoError(t, err)
	m, err := hw.New(top)
	require.NoError(t, err)
	res, err := algos.RunStream(m, newRingStream(*ringOnce, int64(sim.MiB), false), algos.RunOptions{EventLimit: 1 << 40, EveryEvent: *ringEvery})
	require.NoError(t, err)
	d := time.Since(start)
	t.Logf("%d ranks: %d events in %v (%.1f M events/s), simulated %v, %d ops of each rank skipped", *ringOnce, res.Events, d, float64(res.Events)/d.Seconds()/1e6, res.Time, res.SkippedOps)
}

// sampleHeap starts sampling the heap's size every millisecond; the
// function it returns stops sampling and returns the largest size seen.
func sampleHeap() func() uint64 {
	runtime.GC()
	stop, out := make(chan struct{}), make(chan uint64)
	go func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var peak uint64
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-stop:
				out <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 {
		close(stop)
		return <-out
	}
}

func sizeName(b sim.Bytes) string {
	if b%sim.GiB == 0 {
		return strconv.FormatInt(int64(b/sim.GiB), 10) + "GiB"
	}
	return strconv.FormatInt(int64(b/sim.MiB), 10) + "MiB"
}

// The benchmark's schedule is a correct allreduce (the checker's verdict on
// the stored ops), on small rings.
func TestRingStreamChecks(t *testing.T) {
	for _, n := range []int{2, 3, 4, 6} {
		st := newRingStream(n, 1<<20+2*int64(n), true)
		s, err := algos.Materialize(st)
		require.NoError(t, err)
		require.Equal(t, st.Len(0), len(s.Programs[0]))
		require.NoError(t, algos.Check(s), "ranks %d", n)
	}
}

// Streamed and stored, the benchmark's schedule gives bit-identical
// results: time, per-allreduce ends, event counts and every op's span, for
// single and back-to-back allreduces.
func TestRingStreamMatchesStored(t *testing.T) {
	for _, n := range []int{2, 3, 6, 16, 32} {
		top, err := topology.Ring(n)
		require.NoError(t, err)
		for _, bytes := range []int64{1 << 20, 3<<20 + 2*1234, 1 << 30} {
			for _, opt := range []algos.RunOptions{
				{},
				{Iterations: 3, Spans: true},
				{Iterations: 2, Gap: 5 * sim.Microsecond, Launch: hw.Eager},
			} {
				name := fmt.Sprintf("ranks %d, %d B, %d allreduces", n, bytes, opt.Iterations)
				st := newRingStream(n, bytes, opt.Iterations == 3)
				s, err := algos.Materialize(st)
				require.NoError(t, err)
				m, err := hw.New(top)
				require.NoError(t, err)
				want, err := algos.Run(m, s, opt)
				require.NoError(t, err, name)
				m, err = hw.New(top)
				require.NoError(t, err)
				got, err := algos.RunStream(m, st, opt)
				require.NoError(t, err, name)
				got.SkippedOps = 0 // the stored schedule does not say that it repeats
				require.Equal(t, want, got, name)
				require.Positive(t, got.Time, name)
			}
		}
	}
}

// A window too small to hold what a rank has in flight stops the run with
// an error naming the op, instead of timing it late.
func TestRingStreamWindowTooSmall(t *testing.T) {
	top, err := topology.Ring(8)
	require.NoError(t, err)
	st := newRingStream(8, 1<<20, false)
	st.window = 6
	m, err := hw.New(top)
	require.NoError(t, err)
	_, err = algos.RunStream(m, st, algos.RunOptions{})
	require.Error(t, err)
	require.Contains(t, err.Error(), "outside the window of 6 ops")
	require.Contains(t, err.Error(), "rank 0 op")
}

// Inside one allreduce, the ring's steady state is skipped exactly: the
// results (time, ends, event counts, every op's span) are bit for bit
// those of running every event, on rings whose stretches are long enough
// to skip and with parts of different lengths, which do not repeat.
func TestRingStreamStepSkipIsExact(t *testing.T) {
	for _, n := range []int{4, 5, 33, 64, 97} {
		top, err := topology.Ring(n)
		require.NoError(t, err)
		for _, bytes := range []int64{1 << 20, 3<<20 + 2*1234, 1 << 30} {
			for _, opt := range []algos.RunOptions{{}, {Spans: true}, {Launch: hw.Eager}} {
				for _, checked := range []bool{false, true} {
					name := fmt.Sprintf("ranks %d, %d B, spans %v, %v, checked %v", n, bytes, opt.Spans, opt.Launch, checked)
					st := newRingStream(n, bytes, checked)
					require.NoError(t, algos.CheckRepeats(st), name)
					m, err := hw.New(top)
					require.NoError(t, err)
					full := opt
					full.EveryEvent = true
					want, err := algos.RunStream(m, st, full)
					require.NoError(t, err, name)
					m, err = hw.New(top)
					require.NoError(t, err)
					got, err := algos.RunStream(m, st, opt)
					require.NoError(t, err, name)
					if n >= 64 && st.Repeats() != nil {
						require.Positive(t, got.SkippedOps, name)
					}
					got.SkippedOps = 0
					require.Equal(t, want, got, name)
				}
			}
		}
	}
}

// CheckRepeats finds a stream whose ops do not repeat as it says.
func TestCheckRepeatsFindsAFalseClaim(t *testing.T) {
	st := &lyingRing{newRingStream(16, 1<<20, false)}
	require.NoError(t, algos.CheckRepeats(st.ringStream))
	err := algos.CheckRepeats(st)
	require.Error(t, err)
	require.Contains(t, err.Error(), "is not op")
	require.Contains(t, err.Error(), "one period on")
}

// lyingRing claims that the reduce-scatter's steps and the all-gather's
// are alike (their writes differ: the first accumulate).
type lyingRing struct{ *ringStream }

func (l *lyingRing) Repeats() []algos.Repeat {
	r := l.ringStream.Repeats()
	return []algos.Repeat{{From: r[0].From, To: r[1].To, Ops: r[0].Ops, Step: r[0].Step}}
}

// A stretch past the end of the programs is refused before the run.
func TestRepeatPastTheEndIsRefused(t *testing.T) {
	st := &farRing{newRingStream(16, 1<<20, false)}
	top, err := topology.Ring(16)
	require.NoError(t, err)
	m, err := hw.New(top)
	require.NoError(t, err)
	_, err = algos.RunStream(m, st, algos.RunOptions{})
	require.Error(t, err)
	require.Contains(t, err.Error(), "repeat 1")
	require.Contains(t, err.Error(), "passes the end of a program")
}

type farRing struct{ *ringStream }

func (l *farRing) Repeats() []algos.Repeat {
	r := l.ringStream.Repeats()
	r[1].To = l.Len(0) + 1
	return r
}
