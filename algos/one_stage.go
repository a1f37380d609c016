package algos

import (
	"fmt"

	"github.com/arsim/arsim/hw"
)

// oneStage is vLLM / SGLang "1-stage" (cross_device_reduce_1stage): a
// start barrier, every rank pulls every peer's whole buffer with 16-byte
// loads and sums in registers, then an end barrier so that no peer is still
// reading a rank's input when its next kernel overwrites it.
type oneStage struct{ anyRanks }

func init() { Register(oneStage{}) }

func (oneStage) Name() string { return "one_stage" }

func (oneStage) Describe() string {
	return "vLLM/SGLang 1-stage: start barrier, pull every peer's whole buffer (16-B loads), reduce, end barrier"
}

func (oneStage) Options() []OptionSpec {
	return append(append([]OptionSpec(nil), pullOptions...), barrierOption, startReleaseOption, endReleaseOption, rankLoopOption)
}

// startReleaseOption: PyTorch's one-shot (since it may copy a local input
// into the symmetric buffer first) also starts with sync_remote_blocks of
// acquire-release order: its release signal is a system fence
// (torch/csrc/distributed/c10d/symm_mem/CUDASymmetricMemoryOps.cu,
// one_shot_all_reduce_kernel; a release store or atomic costs a fence,
// testdata/h200x1-arsim/barrier_modes.jsonl). vLLM's start barrier is
// relaxed.
var startReleaseOption = OptionSpec{Name: "start_release", Values: []string{"false", "true"}, Default: "false",
	Doc: "true: the start barrier's signal is a release (a system fence first), as PyTorch's one-shot's is"}

// endReleaseOption: PyTorch's one-shot ends with sync_remote_blocks of
// acquire-release order, whose release waits until the kernel's output
// stores are visible system-wide; vLLM's end barrier is relaxed.
var endReleaseOption = OptionSpec{Name: "end_release", Values: []string{"false", "true"}, Default: "false",
	Doc: "true: the end barrier first makes the output stores visible system-wide (a fence), as PyTorch's one-shot does"}

var pullOptions = []OptionSpec{
	BlocksOption("thread blocks per GPU (default min(36, ceil(bytes/16/threads)), as vLLM)"),
	ThreadsOption("threads per block (default 512, as vLLM)"),
	loadWaitsOption,
}

// Barriers: the kernel's blocks each run the same flag handshake in
// parallel; one representative barrier stands for all of them (the timing
// is the same, the schedule is blocks times smaller).
func (oneStage) Plan(req Request) (*Schedule, error) {
	n := req.Ranks
	b := NewBuilder("one_stage", n, req.Bytes, req.DType.Size())
	k, err := pullKernel(req.Bytes, req)
	if err != nil {
		return nil, fmt.Errorf("algos: one_stage: %w", err)
	}
	// Each thread loads its pack from every rank in one loop body: the
	// loads are independent, so one is in flight per peer at once.
	k.LoadsInFlight = 1
	k.Ranks = n // an iteration loads a pack from each rank's buffer (hw.Kernel.Ranks)
	b.Note("%d blocks × %d threads per GPU; each rank pulls %d × %d B", k.Blocks, k.Threads, n-1, req.Bytes)
	launch := b.Launches()
	barrier := barrierFunc(b, req)
	if req.Opt("start_release", "false") == "true" {
		for r := 0; r < n; r++ {
			launch[r] = []int{fence(b, r, hw.GPUMem(r), launch[r]...)}
		}
	}
	start := barrier("start", 1, k, "start barrier", launch)
	ends := make([][]int, n)
	for r := 0; r < n; r++ {
		own := b.Add(r, Op{Kind: Read, Src: b.In(r, 0, req.Bytes), Dst: b.Out(r, 0, req.Bytes), Kernel: k, Label: "own input"}, start[r]...)
		ends[r] = []int{own}
		for i := 1; i < n; i++ {
			p := (r + i) % n // rotated peer order spreads the load
			ends[r] = append(ends[r], b.Add(r, Op{Kind: Read, Accumulate: true, Src: b.In(p, 0, req.Bytes), Dst: b.Out(r, 0, req.Bytes), Kernel: k,
				Label: fmt.Sprintf("pull rank %d", p)}, own))
		}
	}
	if req.Opt("end_release", "false") == "true" {
		for r := 0; r < n; r++ {
			ends[r] = []int{fence(b, r, hw.GPUMem(r), ends[r]...)}
		}
	}
	barrier("end", 1, k, "end barrier", ends)
	return b.Schedule(), nil
}
