package algos

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/topology"
)

func req(t testing.TB, preset string, ranks int, bytes int64, opts map[string]string) Request {
	top, err := topology.Load(preset)
	require.NoError(t, err)
	return Request{Top: top, Ranks: ranks, Bytes: bytes, DType: BF16, Launch: hw.Graph, Opts: opts}
}

func plan(t testing.TB, algo string, r Request) *Schedule {
	s, err := Plan(algo, r)
	require.NoError(t, err)
	return s
}

func TestOneStageChecks(t *testing.T) {
	for _, n := range []int{2, 3, 4, 8} {
		s := plan(t, "one_stage", req(t, "rtxpro6000x8-2numa", n, 43008, nil))
		require.NoError(t, Check(s), "ranks %d", n)
	}
}

// Planted bug: a one-stage kernel without its end barrier, reused back to
// back, lets a rank overwrite its input for the next allreduce while a
// peer may still be pulling it.
func TestCheckerCatchesMissingEndBarrier(t *testing.T) {
	s := plan(t, "one_stage", req(t, "rtxpro6000x8-2numa", 4, 4096, nil))
	for r := range s.Programs {
		var kept []Op
		for _, op := range s.Programs[r] {
			if op.Label != "end barrier" {
				kept = append(kept, op)
			}
		}
		s.Programs[r] = kept
	}
	err := Check(s)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "race on gpu")
	assert.Contains(t, err.Error(), ":in bytes [0, 4096)")
	assert.Contains(t, err.Error(), "user writing its input before allreduce 2")
}

// Planted bug: a wait on a flag nobody sets.
func TestCheckerCatchesWaitNobodySets(t *testing.T) {
	s := plan(t, "one_stage", req(t, "rtxpro6000x8-2numa", 2, 4096, nil))
	s.Programs[1] = append(s.Programs[1], Op{Kind: Wait, Flag: Flag{At: hw.GPUMem(1), Name: "ghost"}, Value: 1, Label: "ghost wait"})
	err := Check(s)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rank 1 op")
	assert.Contains(t, err.Error(), "[ghost wait]")
	assert.Contains(t, err.Error(), "no op of the same allreduce sets (deadlock)")
}

// A pull that forgets one peer leaves that peer's input out of the sum.
func TestCheckerCatchesMissingInput(t *testing.T) {
	s := plan(t, "one_stage", req(t, "rtxpro6000x8-2numa", 3, 4096, nil))
	prog := s.Programs[2]
	for i, op := range prog {
		if op.Label == "pull rank 0" {
			prog[i].Src.Len, prog[i].Dst.Len = 2048, 2048
		}
	}
	err := Check(s)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rank 2 output bytes [2048, 4096) hold ranks {1,2} of allreduce 1 (2 of 3 inputs)")
}

func TestValidateErrors(t *testing.T) {
	r := req(t, "rtxpro6000x8-2numa", 8, 43008, nil)
	bad := []struct {
		mod  func(*Request)
		want string
	}{
		{func(r *Request) { r.Bytes = 0 }, "one_stage: message size must be > 0 bytes, got 0"},
		{func(r *Request) { r.Bytes = 43007 }, "43007 bytes is not a whole number of bf16 elements (2 B each)"},
		{func(r *Request) { r.Ranks = 1 }, "needs at least 2 ranks, got 1"},
		{func(r *Request) { r.Ranks = 9 }, "9 ranks but topology rtxpro6000x8-2numa has 8 GPUs"},
		{func(r *Request) { r.DType = "int4" }, `dtype "int4" is not one of bf16, fp16, fp32`},
		{func(r *Request) { r.Opts = map[string]string{"proto": "ll"} }, `one_stage has no option "proto" (options: blocks, threads, load_waits, barrier, start_release, end_release, rank_loop)`},
		{func(r *Request) { r.Opts = map[string]string{"blocks": "-3"} }, `option blocks=-3: -3 is below the minimum 1`},
		{func(r *Request) { r.Opts = map[string]string{"blocks": "1.5"} }, `option blocks="1.5" must be a whole number`},
		{func(r *Request) { r.Opts = map[string]string{"blocks": "189"} }, `option blocks=189: 189 is above the limit 188 (the blocks rtxpro6000x8-2numa's GPUs run at once: gpu.sms 188 × gpu.max_blocks_per_sm 1`},
		{func(r *Request) { r.Opts = map[string]string{"threads": "1025"} }, `option threads=1025: 1025 is above the limit 1024 (CUDA's limit of threads per block)`},
		{func(r *Request) { r.Bytes = MaxBytes + 2 }, "message size 1099511627778 B is above the limit 1099511627776 B"},
	}
	for _, c := range bad {
		x := r
		c.mod(&x)
		_, err := Plan("one_stage", x)
		assert.ErrorContains(t, err, c.want)
	}
	_, err := Plan("nope", r)
	assert.ErrorContains(t, err, `unknown algorithm "nope" (valid: `)
}

func lookupPreset(name string) (*topology.Preset, error) { return topology.Lookup(name) }

// PyTorch-style atomic barriers are as correct as vLLM's flag barriers.
func TestAtomicBarriersCheck(t *testing.T) {
	for _, algo := range []string{"one_stage", "two_stage"} {
		for _, n := range []int{2, 3, 8} {
			s := plan(t, algo, req(t, "h200x8-nvswitch", n, 43008, map[string]string{"barrier": "atomic"}))
			require.NoError(t, Check(s), "%s n=%d", algo, n)
		}
	}
}

// A rotating buffer needs a bound on how far one rank runs ahead of
// another. Two ranks that never synchronise give none: the checker says
// so instead of proving reuse for the calls it happened to run.
func TestCheckerRefusesUnboundedRotation(t *testing.T) {
	b := NewBuilder("lonely", 2, 64, 2)
	for r := 0; r < 2; r++ {
		tmp := On(r, "tmp", 0, 64).Rotating(2, 0)
		x := b.Add(r, Op{Kind: Read, Src: b.In(r, 0, 64), Dst: tmp})
		b.Add(r, Op{Kind: Read, Src: tmp, Dst: b.Out(r, 0, 64)}, x)
	}
	err := Check(b.Schedule())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "algos: check lonely: allreduce 1 is not ordered before all of allreduce 24: nothing bounds how far one rank runs ahead of another")
}

// The rotation's copies print as what call k uses.
func TestRotatingBufferNames(t *testing.T) {
	x := On(3, "lamport", 0, 16).Rotating(3, 2)
	assert.Equal(t, "gpu3:lamport{k+2 mod 3}[0:16]", x.String())
	assert.Equal(t, "lamport{2/3}", x.Buf.Copy(0).Name)
	assert.Equal(t, "lamport{0/3}", x.Buf.Copy(1).Name)
	assert.Equal(t, "lamport{1/3}", x.Buf.Copy(5).Name)
	assert.Equal(t, "tmp", On(0, "tmp", 0, 1).Buf.Copy(7).Name)
}

// Planted bug: NCCL's ring with its tail counter's steps signalled out of
// order (each step's tail without the one before's). At 512 KiB over
// four channels a channel runs two loops; loop 1's first step can raise
// the tail to 3 before loop 0's second step raises it to 2, and a wait
// for tail ≥ 2 would end on the 3, before its step's data has landed.
func TestCheckerCatchesCounterSignalledOutOfOrder(t *testing.T) {
	s := plan(t, "ring", req(t, "h200x2", 2, 512<<10, map[string]string{"proto": "ll", "transport": "shm", "channels": "4"}))
	require.NoError(t, Check(s))
	unchained := 0
	for r, prog := range s.Programs {
		for i := range prog {
			op := &s.Programs[r][i]
			if op.Kind != Signal || !strings.HasSuffix(op.Flag.Name, ".tail") {
				continue
			}
			var kept []int
			for _, d := range op.After {
				if prog[d].Kind != Signal {
					kept = append(kept, d)
				}
			}
			if len(kept) < len(op.After) {
				unchained++
			}
			op.After = kept
		}
	}
	require.Positive(t, unchained)
	err := Check(s)
	require.Error(t, err)
	assert.Contains(t, err.Error(), ".tail")
	assert.Contains(t, err.Error(), "which nothing orders after")
	assert.Contains(t, err.Error(), "may end on the larger value before the smaller is set")
}
