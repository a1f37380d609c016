package algos

import (
	"fmt"

	"github.com/arsim/arsim/hw"
)

// twoStage is vLLM / SGLang "2-stage" (cross_device_reduce_2stage): a
// reduce-scatter by pulls followed by an all-gather by pulls.
//
//  1. start barrier;
//  2. stage 1: rank r owns part r, [r·part, (r+1)·part) (the last rank also
//     takes the remainder, element-aligned); it pulls that slice from every
//     peer's input, sums it with its own slice and stores the sum in its
//     own scratch tmp[0, size_r), as vLLM's tmp_out[idx − start];
//  3. mid barrier with system-scope release/acquire: each rank's flag is a
//     normal (non-inline) signal issued once its stage-1 stores are
//     complete, so a peer that sees the flag sees the reduced part;
//  4. stage 2: every rank copies its own reduced part into its output and
//     pulls every other rank's reduced part from that rank's tmp.
//
// There is no end barrier, as in vLLM. Reuse is still safe:
//
//   - my input is read by peers only in stage 1, and each peer signals the
//     mid barrier after its stage-1 reads; I wait for every peer's mid flag
//     before stage 2, so every read of my input is done before my kernel
//     ends and the user may overwrite it;
//   - my tmp is read by peers in stage 2 of allreduce k, and I overwrite it
//     in stage 1 of allreduce k+1 only after the start barrier of k+1; a
//     peer sets its start flag of k+1 only when its kernel k has ended on
//     its stream (all its stage-2 loads returned), so the start barrier
//     orders every peer's stage-2 reads of my tmp before my next stage 1.
//     In vLLM this holds per block too: block b of a peer reaches the next
//     start barrier only after the peer's whole previous kernel finished;
//   - the output is only written locally.
//
// The checker proves this for two back-to-back runs; the argument above is
// per pair of consecutive allreduces, so it holds for any number.
type twoStage struct{ anyRanks }

func init() { Register(twoStage{}) }

func (twoStage) Name() string { return "two_stage" }

func (twoStage) Describe() string {
	return "vLLM/SGLang 2-stage: start barrier, reduce-scatter by pulls into tmp, fenced mid barrier, all-gather by pulls from peers' tmp, no end barrier"
}

func (twoStage) Options() []OptionSpec {
	return append(append([]OptionSpec(nil), pullOptions...), barrierOption, rankLoopOption, OptionSpec{Name: "end_barrier", Values: []string{"no", "yes"}, Default: "no",
		Doc: "add a final barrier (vLLM has none; the project's captured kernel has one)"}, midBarrierOption)
}

// midBarrierOption: how a two-shot's mid barrier publishes its stage-1
// stores. release: its flag is a st.release.sys store, which waits as a
// system-scope fence does (vLLM's multi_gpu_barrier with need_fence);
// fence_release: a __threadfence_system before that store, so two fences
// one after the other (tools/capture's flag kernels, block_barrier mode
// 1). Measured on one H200 (testdata/h200x1-arsim/barrier_modes.jsonl): a
// release store costs what a __threadfence_system does, both together
// about twice that.
var midBarrierOption = OptionSpec{Name: "mid_barrier", Values: []string{"release", "fence_release"}, Default: "release",
	Doc: "release: the mid barrier's flag is a release store, one system fence (vLLM); fence_release: a __threadfence_system before it, two (the project's captured kernels)"}

// midFences adds the mid barrier's system fences on rank r after ops, for
// stores that went to memory at (midBarrierOption), and returns the last.
func midFences(b *Builder, req Request, r int, at hw.Mem, after ...int) int {
	f := fence(b, r, at, after...)
	if req.Opt("mid_barrier", "release") == "fence_release" {
		f = fence(b, r, at, f)
	}
	return f
}

func (twoStage) Plan(req Request) (*Schedule, error) {
	n := req.Ranks
	es := req.DType.Size()
	b := NewBuilder("two_stage", n, req.Bytes, es)
	k, err := pullKernel(req.Bytes, req)
	if err != nil {
		return nil, fmt.Errorf("algos: two_stage: %w", err)
	}
	// As in one_stage: in both stages each thread loads its pack from
	// every rank in one loop body, independent loads, so about one load
	// per peer is in flight at once.
	k.LoadsInFlight = 1
	k.Ranks = n // in both stages an iteration loads a pack from each rank's buffer
	off, size := Split(req.Bytes, es, n)
	b.Note("%d blocks × %d threads per GPU; rank r reduces part r (%d B, last %d B), pulling %d × part in each stage",
		k.Blocks, k.Threads, size[0], size[n-1], n-1)
	launch := b.Launches()
	barrier := barrierFunc(b, req)
	start := barrier("start", 1, k, "start barrier", launch)
	// Stage 1: reduce-scatter into the rank's own tmp.
	s1 := make([][]int, n)
	for r := 0; r < n; r++ {
		own := b.Add(r, Op{Kind: Read, Src: b.In(r, off[r], size[r]), Dst: On(r, "tmp", 0, size[r]), Kernel: k,
			Label: "stage 1 own part"}, start[r]...)
		s1[r] = []int{own}
		for i := 1; i < n; i++ {
			p := (r + i) % n
			s1[r] = append(s1[r], b.Add(r, Op{Kind: Read, Accumulate: true, Src: b.In(p, off[r], size[r]), Dst: On(r, "tmp", 0, size[r]),
				Kernel: k, Label: fmt.Sprintf("stage 1 pull rank %d", p)}, own))
		}
	}
	// Mid barrier: release after the stage-1 stores (a system-scope
	// fence), acquire before stage 2.
	for r := 0; r < n; r++ {
		s1[r] = []int{midFences(b, req, r, hw.GPUMem(r), s1[r]...)} // stage 1 stored into the rank's own tmp
	}
	mid := barrier("mid", 1, k, "mid barrier", s1)
	// Stage 2: all-gather from the peers' tmp.
	s2 := make([][]int, n)
	for r := 0; r < n; r++ {
		s2[r] = append(s2[r], b.Add(r, Op{Kind: Read, Src: On(r, "tmp", 0, size[r]), Dst: b.Out(r, off[r], size[r]), Kernel: k,
			Label: "stage 2 own part"}, mid[r]...))
		for i := 1; i < n; i++ {
			p := (r + i) % n
			s2[r] = append(s2[r], b.Add(r, Op{Kind: Read, Src: On(p, "tmp", 0, size[p]), Dst: b.Out(r, off[p], size[p]), Kernel: k,
				Label: fmt.Sprintf("stage 2 pull rank %d", p)}, mid[r]...))
		}
	}
	if req.Opt("end_barrier", "no") == "yes" {
		barrier("end", 1, k, "end barrier", s2)
	}
	return b.Schedule(), nil
}
