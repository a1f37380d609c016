package algos

import (
	"fmt"

	"github.com/arsim/arsim/hw"
)

// lamportOneShot is the Lamport one-shot allreduce of TensorRT-LLM's
// fusion kernels, as read in TensorRT-LLM
// cpp/tensorrt_llm/kernels/communicationKernels/allReduceFusionKernels.cu
// (allreduce_fusion_kernel_oneshot_lamport, struct LamportComm,
// allreduce_fusion_kernel_launcher) and its FlashInfer port
// include/flashinfer/comm/trtllm_allreduce_fusion.cuh (LamportComm):
//
//  1. every block bumps a local arrival counter (LamportComm's
//     constructor: atomicAdd on counter_ptr);
//  2. every thread loads 16-B vectors of its input, turns −0.0 into +0.0
//     (−0.0 is the sentinel), and stores them with plain stores into slot
//     [rank] of every rank's buffer, its own included: posted writes, no
//     flag, no fence;
//  3. it clears the buffer the previous call used (clear_offset =
//     (flag_value + 2) mod 3) back to −0.0, as large as the previous
//     call's data;
//  4. it spins on its own buffer with volatile 16-B loads until no element
//     of any slot is −0.0, then sums the slots;
//  5. block 0 waits until every block has arrived on the counter and
//     advances the buffer index mod 3 (LamportComm::update).
//
// There is no barrier between GPUs. The data carries its own completion
// (a data-carried wait: the store that lands is the flag), and three
// buffers rotate so that a rank one call ahead never writes into the
// buffer a slower rank still reads or clears: a rank enters call k+1 only
// after it has seen every peer's data of call k, so every peer has left
// call k−1; in call k+1 it writes copy (k+1) mod 3, while a peer still in
// call k reads copy k and clears copy k−1. With two copies, the clear of
// call k (copy k−1 = k+1 mod 2) would meet the writes of call k+1; the
// checker shows it (TestCheckerCatchesLamportTwoBuffers).
//
// Launch configuration (allreduce_fusion_kernel_launcher): one cluster of
// blocks per token of hidden elements; a token's hidden/8 16-B accesses
// are split over a cluster of up to 8 blocks (SM ≥ 90; 1 before), at least
// 128 threads a block, fewer, larger blocks once tokens × cluster would
// exceed the SMs. The allreduce's tokens are bytes / (hidden × element
// size); hidden is an option (default 7168, Kimi-K2.5's hidden size of the
// verify pass). TensorRT-LLM takes this kernel up to kOneShotMaxToken = 128
// tokens; the model runs it at any size.
//
// What the model leaves out: the receiver's sum is one pass over n slots
// in the kernel and n accumulations here (more local memory traffic,
// small next to the transfer); the clear is timed as a local copy of the
// previous call's n slots; fused residual/RMSNorm work is not modelled.
type lamportOneShot struct{ anyRanks }

func init() { Register(lamportOneShot{}) }

func (lamportOneShot) Name() string { return "lamport_one_shot" }

func (lamportOneShot) Describe() string {
	return "TensorRT-LLM/FlashInfer Lamport one-shot: push 16-B vectors into every peer's slot, spin locally until no −0.0 sentinel remains, reduce; 3 rotating buffers, no GPU barrier"
}

// LamportHidden is the hidden size the Lamport launch configuration is
// computed for by default: Kimi-K2.5's 7168 (the verify pass).
const LamportHidden = 7168

func (lamportOneShot) Options() []OptionSpec {
	return []OptionSpec{
		BlocksOption("thread blocks per GPU (default TensorRT-LLM's: tokens × cluster size, at most the SMs)"),
		ThreadsOption("threads per block (default TensorRT-LLM's: hidden/8 accesses per token over the cluster, at least 128)"),
		{Name: "hidden", Int: IntRange{Min: 1, Max: MaxHidden, Why: "more than twice the widest published model"},
			Doc: "hidden size whose tokens set the launch configuration (default 7168)"},
	}
}

// LamportLaunch is TensorRT-LLM's launch configuration of its allreduce
// fusion kernels (allreduce_fusion_kernel_launcher) for tokens tokens of
// hidden elements of elem bytes on a GPU with sms SMs of compute
// capability sm (× 10, e.g. 120).
func LamportLaunch(tokens, hidden int, elem int64, sms, sm int) (blocks, threads int) {
	perAccess := int(16 / elem)
	threadsPerToken := max(1, hidden/perAccess)
	cluster := 1
	if sm >= 90 {
		cluster = 8
	}
	for threadsPerToken%cluster != 0 && cluster > 1 {
		cluster /= 2
	}
	threads = threadsPerToken / cluster
	for threads < 128 && cluster >= 2 {
		threads *= 2
		cluster /= 2
	}
	for tokens*cluster > sms && cluster > 1 && threads <= 512 {
		threads *= 2
		cluster /= 2
	}
	blocks = min(sms, tokens*cluster) / cluster * cluster
	return max(blocks, 1), min(threads, 1024)
}

// lamportKernel returns the Lamport kernel's launch configuration for req.
func lamportKernel(req Request) hw.Kernel {
	elem := req.DType.Size()
	hidden := req.IntOpt("hidden", LamportHidden)
	tokenBytes := int64(hidden) * elem
	tokens := int(max(1, (req.Bytes+tokenBytes-1)/tokenBytes))
	sms := int(req.Top.Params.Get("gpu.sms"))
	blocks, threads := LamportLaunch(tokens, hidden, elem, sms, computeCapability(req.Top))
	return hw.Kernel{Blocks: req.IntOpt("blocks", blocks), Threads: req.IntOpt("threads", threads)}
}

// lamportFlag is the flag in rank at's memory that marks slot from as
// landed: the data itself, in the kernel.
func lamportFlag(at, from int) Flag {
	return Flag{At: hw.GPUMem(at), Name: fmt.Sprintf("lamport.slot[%d]", from)}
}

func (lamportOneShot) Plan(req Request) (*Schedule, error) {
	n, S := req.Ranks, req.Bytes
	const copies = 3
	b := NewBuilder("lamport_one_shot", n, S, req.DType.Size())
	k := lamportKernel(req)
	push := k
	push.Share = 1 / float64(n-1) // the remote stores split the kernel's store rate
	b.Note("%d blocks × %d threads per GPU; each rank stores %d × %d B into its slot of every rank's buffer (%d rotating copies, sentinel −0.0)",
		k.Blocks, k.Threads, n, S, copies)
	// slot(at, from): slot [from] of rank at's buffer of this call.
	slot := func(at, from int) Range { return On(at, "lamport", int64(from)*S, S).Rotating(copies, 0) }
	for r := 0; r < n; r++ {
		launch := b.Add(r, Op{Kind: Launch, Label: "launch"})
		arrive := Flag{At: hw.GPUMem(r), Name: "lamport.arrive"}
		b.Add(r, Op{Kind: Signal, Flag: arrive, Value: 1, Atomic: true, Kernel: k, Label: "block arrives (local counter)"}, launch)
		for i := 0; i < n; i++ {
			q := (r + i) % n // own slot first, then the peers in rotated order
			what := fmt.Sprintf("push to rank %d", q)
			if q == r {
				what = "own slot"
			}
			w := b.Add(r, Op{Kind: Write, Src: b.In(r, 0, S), Dst: slot(q, r), Kernel: push, Label: what}, launch)
			b.Carry(r, lamportFlag(q, r), 1, push, what+" landed", w)
		}
		// Re-arm the copy the previous call used: (k + copies − 1) mod copies.
		b.Clear(r, On(r, "lamport", 0, int64(n)*S).Rotating(copies, copies-1), k, "clear previous call's buffer", launch)
		var first int
		var sums []int
		for i := 0; i < n; i++ {
			p := (r - i + n) % n // own slot first, then in the order peers' pushes come
			got := b.DataWait(r, lamportFlag(r, p), 1, slot(r, p), k, fmt.Sprintf("spin until slot %d holds no sentinel", p), launch)
			if i == 0 {
				first = b.Add(r, Op{Kind: Read, Src: slot(r, p), Dst: b.Out(r, 0, S), Kernel: k, Label: "sum: own slot"}, got)
				sums = append(sums, first)
				continue
			}
			sums = append(sums, b.Add(r, Op{Kind: Reduce, Src: slot(r, p), Dst: b.Out(r, 0, S), Kernel: k, Label: fmt.Sprintf("sum: slot %d", p)}, got, first))
		}
		b.Add(r, Op{Kind: Wait, Flag: arrive, Value: 1, Kernel: k, Label: "block 0 waits for every block, advances the buffer index"}, sums...)
	}
	return b.Schedule(), nil
}
