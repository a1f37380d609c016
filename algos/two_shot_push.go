package algos

import (
	"fmt"

	"github.com/arsim/arsim/hw"
)

// twoShotPush is PyTorch symmetric memory's in-place two-shot allreduce
// (two_shot_all_reduce_, the kernel two_shot_all_reduce_kernel_inplace in
// torch/csrc/distributed/c10d/symm_mem/CUDASymmetricMemoryOps.cu, read for
// PyTorch 2.11):
//
//  1. start barrier (sync_remote_blocks: each block's thread p signals
//     peer p and waits for peer p's signal);
//  2. rank r owns shard r; every thread loads its 16-byte pack of shard r
//     from every rank's buffer, sums it, and stores the sum into shard r
//     of every rank's buffer, its own included (posted stores to peers);
//  3. end barrier with release and acquire: a system-scope fence makes the
//     pushed stores visible before the signal, so a peer that passes the
//     barrier holds every shard.
//
// Unlike vLLM's 2-stage (two_stage) there is no scratch buffer and no mid
// barrier: the all-gather is done by pushes, and one barrier both publishes
// them and keeps the next call from overwriting a shard a peer is still
// reading. Reuse: my buffer's shard p is read by p in step 2 and written by
// p only; every other rank's writes land in shards I do not read, so within
// one call there is no race, and across calls the start barrier orders the
// next call's reads after every rank's previous kernel.
//
// The model runs the pulls of a shard, then its pushes (one op per peer):
// in the kernel they interleave pack by pack, but the pulls load the
// reverse direction of each link and the pushes the forward one, so the
// bytes each link direction carries are the same either way.
type twoShotPush struct{ anyRanks }

func init() { Register(twoShotPush{}) }

func (twoShotPush) Name() string { return "two_shot_push" }

func (twoShotPush) Describe() string {
	return "PyTorch symm-mem two-shot (in place): start barrier, pull-reduce own shard, push it to every rank, fenced end barrier"
}

func (twoShotPush) Options() []OptionSpec {
	return []OptionSpec{
		BlocksOption("thread blocks per GPU (default PyTorch's: up to 24, see TorchSymmMemLaunch)"),
		ThreadsOption("threads per block (default PyTorch's: one per 16-byte pack of a shard, at most 1024)"),
		{Name: "barrier", Values: []string{"atomic", "flag"}, Default: "atomic",
			Doc: "atomic: PyTorch's compare-and-swap signals (its kernel); flag: vLLM's posted flag stores"},
	}
}

// TorchSymmMemLaunch is PyTorch's launch configuration for its
// symmetric-memory one-shot and two-shot allreduce kernels
// (torch/csrc/distributed/c10d/symm_mem/CUDASymmetricMemoryOps.cu,
// init_elementwise_launch_config): 16-byte packs, split into world parts
// for two-shot; one block with one thread per pack (at least world, rounded
// to a warp) when that fits in the thread limit, else up to 24 blocks of
// the limit (512 threads one-shot, 1024 two-shot).
func TorchSymmMemLaunch(bytes int64, world int, twoShot bool) (blocks, threads int) {
	maxThreads, splits := int64(512), int64(1)
	if twoShot {
		maxThreads, splits = 1024, int64(world)
	}
	packs := (bytes + 15) / 16
	perSplit := (packs + splits - 1) / splits
	if perSplit <= maxThreads {
		t := max(perSplit, int64(world))
		t = (t + 31) / 32 * 32
		return 1, int(t)
	}
	return int(min(24, (perSplit+maxThreads-1)/maxThreads)), int(maxThreads)
}

func (twoShotPush) Plan(req Request) (*Schedule, error) {
	n := req.Ranks
	es := req.DType.Size()
	b := NewBuilder("two_shot_push", n, req.Bytes, es)
	b.s.Output = b.s.Input // in place
	blocks, threads := TorchSymmMemLaunch(req.Bytes, n, true)
	k := hw.Kernel{Blocks: req.IntOpt("blocks", blocks), Threads: req.IntOpt("threads", threads), ReduceLoop: true,
		LoadsInFlight: 1} // one independent load per rank in each loop body
	off, size := Split(req.Bytes, es, n)
	b.Note("%d blocks × %d threads per GPU; rank r reduces shard r (%d B, last %d B) from %d peers and pushes it to them",
		k.Blocks, k.Threads, size[0], size[n-1], n-1)
	launch := b.Launches()
	barrier := b.AtomicBarrier
	if req.Opt("barrier", "atomic") == "flag" {
		barrier = b.Barrier
	}
	start := barrier("start", 1, k, "start barrier", launch)
	ends := make([][]int, n)
	for r := 0; r < n; r++ {
		shard := func(at int) Range { return b.In(at, off[r], size[r]) }
		// The sum is built in registers ("acc", local to the rank).
		own := b.Add(r, Op{Kind: Read, Src: shard(r), Dst: On(r, "acc", 0, size[r]), Kernel: k, Label: "own shard"}, start[r]...)
		pulls := []int{own}
		for i := 1; i < n; i++ {
			p := (r + i) % n
			pulls = append(pulls, b.Add(r, Op{Kind: Read, Accumulate: true, Src: shard(p), Dst: On(r, "acc", 0, size[r]), Kernel: k,
				Label: fmt.Sprintf("pull shard from rank %d", p)}, own))
		}
		home := b.Add(r, Op{Kind: Read, Src: On(r, "acc", 0, size[r]), Dst: shard(r), Kernel: k, Label: "store own shard"}, pulls...)
		stores := []int{home}
		for i := 1; i < n; i++ {
			p := (r + i) % n
			w := b.Add(r, Op{Kind: Write, Src: On(r, "acc", 0, size[r]), Dst: shard(p), Kernel: k,
				Label: fmt.Sprintf("push shard to rank %d", p)}, pulls...)
			// Release: the pushed stores are visible before the end signal.
			stores = append(stores, fence(b, r, hw.GPUMem(p), w))
		}
		ends[r] = stores
	}
	barrier("end", 1, k, "end barrier", ends)
	return b.Schedule(), nil
}
