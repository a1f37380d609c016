package algos

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/sim"
)

// storedStream serves a stored schedule as a Stream with the given window.
type storedStream struct {
	s      *Schedule
	window int
	flags  []StreamFlag
	ids    map[Flag]int
}

func newStoredStream(s *Schedule, window int) *storedStream {
	st := &storedStream{s: s, window: window, ids: map[Flag]int{}}
	for _, prog := range s.Programs {
		for _, op := range prog {
			if op.Kind != Signal && op.Kind != Wait {
				continue
			}
			id, ok := st.ids[op.Flag]
			if !ok {
				id = len(st.flags)
				st.ids[op.Flag] = id
				st.flags = append(st.flags, StreamFlag{Flag: op.Flag})
			}
			if op.Kind == Signal {
				st.flags[id].Stride = max(st.flags[id].Stride, op.Value)
			}
		}
	}
	return st
}

func (st *storedStream) Header() Schedule {
	h := *st.s
	h.Programs = nil
	return h
}

func (st *storedStream) Len(r int) int       { return len(st.s.Programs[r]) }
func (st *storedStream) Window() int         { return st.window }
func (st *storedStream) Flags() []StreamFlag { return st.flags }

func (st *storedStream) Op(r, i int, op *Op) int {
	src := &st.s.Programs[r][i]
	after := append(op.After, src.After...)
	*op = *src
	op.After = after
	if op.Kind == Signal || op.Kind == Wait {
		return st.ids[op.Flag]
	}
	return -1
}

// Every algorithm, served as a stream, runs bit-identically to its stored
// schedule when the window holds the whole program, and with smaller
// windows either runs bit-identically or stops with the window error:
// never a different time.
func TestStreamMatchesStoredSchedules(t *testing.T) {
	exact, refused := 0, 0
	for _, preset := range []string{"h200x8-nvswitch", "rtxpro6000x8-2numa"} {
		for _, name := range Names() {
			for _, ranks := range []int{2, 3, 8} {
				for _, bytes := range []int64{4096, 1 << 20} {
					r := req(t, preset, ranks, bytes, nil)
					s, err := Plan(name, r)
					if err != nil {
						continue // a world size or size the algorithm refuses
					}
					mat, err := Materialize(newStoredStream(s, 1))
					require.NoError(t, err)
					require.Equal(t, s.Programs, mat.Programs)
					for _, opt := range []RunOptions{
						{Launch: hw.Graph},
						{Iterations: 3, Launch: hw.Eager, Spans: true},
						{Iterations: 2, Gap: 2 * sim.Microsecond, Launch: hw.Graph},
					} {
						what := fmt.Sprintf("%s %s ranks %d, %d B, %d allreduces", preset, name, ranks, bytes, opt.Iterations)
						m, err := hw.New(r.Top)
						require.NoError(t, err)
						want, err := Run(m, s, opt)
						require.NoError(t, err, what)
						for _, w := range []int{1 << 30, 64, 8, 2} {
							m, err := hw.New(r.Top)
							require.NoError(t, err)
							got, err := RunStream(m, newStoredStream(s, w), opt)
							if err != nil && w < 1<<30 {
								require.Contains(t, err.Error(), "outside the window", "%s, window %d", what, w)
								refused++
								continue
							}
							require.NoError(t, err, "%s, window %d", what, w)
							require.Equal(t, want, got, "%s, window %d", what, w)
							if w < 1<<30 {
								exact++
							}
						}
					}
				}
			}
		}
	}
	t.Logf("small windows: %d runs exact, %d refused", exact, refused)
	require.Positive(t, exact)
	require.Positive(t, refused)
}

func computeOp(d sim.Duration, label string, after ...int) Op {
	return Op{Kind: Compute, Dur: d, Label: label, After: after}
}

// An op that should start while outside the window is refused, whether the
// window moves on later (the op would start late) or never (the run would
// stall).
func TestStreamWindowTooSmall(t *testing.T) {
	r := req(t, "h200x8-nvswitch", 2, 4096, nil)
	late := &Schedule{Algo: "late", Ranks: 1, Programs: [][]Op{{
		computeOp(10*sim.Microsecond, "slow"),
		computeOp(sim.Microsecond, "independent"),
	}}}
	m, err := hw.New(r.Top)
	require.NoError(t, err)
	_, err = RunStream(m, newStoredStream(late, 1), RunOptions{})
	require.ErrorContains(t, err, "rank 0 op 1 (independent) was ready before 10 µs but outside the window of 1 ops")
	m, err = hw.New(r.Top)
	require.NoError(t, err)
	_, err = RunStream(m, newStoredStream(late, 2), RunOptions{})
	require.NoError(t, err)

	f := Flag{At: hw.GPUMem(0), Name: "f"}
	stall := &Schedule{Algo: "stall", Ranks: 1, Programs: [][]Op{{
		{Kind: Wait, Flag: f, Value: 1, Label: "wait for op 1"},
		{Kind: Signal, Flag: f, Value: 1, Inline: true, Label: "set"},
	}}}
	m, err = hw.New(r.Top)
	require.NoError(t, err)
	_, err = RunStream(m, newStoredStream(stall, 1), RunOptions{})
	require.ErrorContains(t, err, "rank 0 op 1 (set) is ready but outside the window of 1 ops")
	m, err = hw.New(r.Top)
	require.NoError(t, err)
	_, err = RunStream(m, newStoredStream(stall, 2), RunOptions{})
	require.NoError(t, err)
}

// A stream must declare each flag's stride as Run would derive it, and
// name existing flags and earlier ops.
func TestStreamRejectsBadDeclarations(t *testing.T) {
	r := req(t, "h200x8-nvswitch", 2, 4096, nil)
	s := plan(t, "one_stage", r)
	run := func(st Stream) error {
		m, err := hw.New(r.Top)
		require.NoError(t, err)
		_, err = RunStream(m, st, RunOptions{Iterations: 2})
		return err
	}
	require.NoError(t, run(newStoredStream(s, 16)))

	st := newStoredStream(s, 16)
	st.flags[0].Stride++
	require.ErrorContains(t, run(st), "declares stride")
	_, err := Materialize(st)
	require.ErrorContains(t, err, "declares stride")

	st = newStoredStream(s, 16)
	st.flags[0].Stride--
	require.ErrorContains(t, run(st), "above the flag's declared stride")

	st = newStoredStream(s, 16)
	st.flags = append(st.flags, st.flags[0])
	require.ErrorContains(t, run(st), "are both")

	bad := &Schedule{Algo: "bad", Ranks: 1, Programs: [][]Op{{computeOp(1, "a", 1), computeOp(1, "b")}}}
	require.ErrorContains(t, run(newStoredStream(bad, 4)), "rank 0 op 0 depends on op 1, which is not an earlier op")
	m, err := hw.New(r.Top)
	require.NoError(t, err)
	_, err = Run(m, bad, RunOptions{})
	require.ErrorContains(t, err, "rank 0 op 0 depends on op 1, which is not an earlier op")
}

// A window slot fills half a cache line.
func TestSlotIsHalfACacheLine(t *testing.T) {
	require.Equal(t, uintptr(32), unsafe.Sizeof(slot{}))
}

// compactStream serves a stored schedule in compact form (CompactStream),
// interning its buffers, kernels and labels.
type compactStream struct {
	*storedStream
	tables StreamTables
	bufs   map[Buf]int32
	kerns  map[hw.Kernel]int32
	labels map[string]int32
}

func newCompactStream(s *Schedule, window int) *compactStream {
	st := &compactStream{storedStream: newStoredStream(s, window), bufs: map[Buf]int32{}, kerns: map[hw.Kernel]int32{}, labels: map[string]int32{}}
	for _, prog := range s.Programs {
		for _, op := range prog {
			for _, b := range []Buf{op.Src.Buf, op.Dst.Buf} {
				if _, ok := st.bufs[b]; !ok {
					st.bufs[b] = int32(len(st.tables.Bufs))
					st.tables.Bufs = append(st.tables.Bufs, b)
				}
			}
			if _, ok := st.kerns[op.Kernel]; !ok {
				st.kerns[op.Kernel] = int32(len(st.tables.Kernels))
				st.tables.Kernels = append(st.tables.Kernels, op.Kernel)
			}
			if _, ok := st.labels[op.Label]; !ok {
				st.labels[op.Label] = int32(len(st.tables.Labels))
				st.tables.Labels = append(st.tables.Labels, op.Label)
			}
		}
	}
	return st
}

func (st *compactStream) Tables() StreamTables { return st.tables }

func (st *compactStream) CompactOp(r, i int, op *StreamOp) {
	o := &st.s.Programs[r][i]
	op.Kind, op.Accumulate, op.Inline, op.Atomic, op.BlockSync, op.Fenced, op.Fused = o.Kind, o.Accumulate, o.Inline, o.Atomic, o.BlockSync, o.Fenced, o.Fused
	op.Src, op.Dst = st.bufs[o.Src.Buf], st.bufs[o.Dst.Buf]
	op.SrcOff, op.DstOff, op.Len = o.Src.Off, o.Dst.Off, o.Src.Len
	op.Value, op.Dur = o.Value, o.Dur
	op.Kernel, op.Label = st.kerns[o.Kernel], st.labels[o.Label]
	op.After = append(op.After, o.After...)
	if o.Kind == Signal || o.Kind == Wait {
		op.Flag = int32(st.ids[o.Flag])
	}
}

// Every algorithm, served as a compact stream, runs bit-identically to its
// stored schedule.
func TestCompactStreamMatchesStoredSchedules(t *testing.T) {
	runs := 0
	for _, preset := range []string{"h200x8-nvswitch", "rtxpro6000x8-2numa"} {
		for _, name := range Names() {
			for _, ranks := range []int{2, 3, 8} {
				r := req(t, preset, ranks, 1<<20, nil)
				s, err := Plan(name, r)
				if err != nil {
					continue
				}
				for _, opt := range []RunOptions{{Launch: hw.Graph}, {Iterations: 3, Launch: hw.Eager, Spans: true}} {
					what := fmt.Sprintf("%s %s ranks %d, %d allreduces", preset, name, ranks, opt.Iterations)
					m, err := hw.New(r.Top)
					require.NoError(t, err)
					want, err := Run(m, s, opt)
					require.NoError(t, err, what)
					m, err = hw.New(r.Top)
					require.NoError(t, err)
					got, err := RunStream(m, newCompactStream(s, 1<<30), opt)
					require.NoError(t, err, what)
					require.Equal(t, want, got, what)
					runs++
				}
			}
		}
	}
	require.Positive(t, runs)
}

// A compact stream that names a buffer, kernel, label or flag it does not
// have is refused.
func TestCompactStreamRejectsBadIndices(t *testing.T) {
	r := req(t, "h200x8-nvswitch", 2, 4096, nil)
	s := plan(t, "one_stage", r)
	run := func(st Stream) error {
		m, err := hw.New(r.Top)
		require.NoError(t, err)
		_, err = RunStream(m, st, RunOptions{})
		return err
	}
	st := newCompactStream(s, 16)
	require.NoError(t, run(st))
	st.tables.Labels = st.tables.Labels[:1]
	require.ErrorContains(t, run(st), "names kernel")
	st = newCompactStream(s, 16)
	st.tables.Bufs = st.tables.Bufs[:1]
	require.ErrorContains(t, run(st), "names buffers")
}
