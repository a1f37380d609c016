package algos

import (
	"fmt"

	"github.com/arsim/arsim/hw"
)

// oneShotPush is the one-shot push allreduce (vLLM's newest push kernels,
// TRT-LLM ONESHOT with PUSH_MODE, SGLang v2 1shot_push): every rank writes
// its whole input into slot [rank] of every peer's receive area recv with
// posted stores, then sets one flag per peer (a separate, non-inline
// signal issued when its stores have landed: a release); each rank waits
// for every peer's flag and sums its own input and the n−1 slots into out.
//
// Reuse of the receive slots. A schedule is the same program for every
// allreduce, so it cannot name a different buffer on odd and even epochs,
// and a wait may only name a flag value of its own allreduce: epoch-parity
// double buffering (which vLLM uses, correct for any number of runs because
// a rank enters allreduce k+2 only after it has seen every peer's data flag
// of k+1, which each peer sets only after its kernel k, the last reader of
// the parity-k slots, has ended) cannot be written down in this IR. The
// protocol here instead uses a "slot free" handshake at the start: right
// after its launch, rank p tells every peer q "my recv slots are free"
// (flag free[p] in q's memory; p's kernel starts only after its previous
// kernel, which read every slot, has ended); q waits for free[p] before it
// writes into p. This is one one-way flag latency before the first store to
// each peer, no end barrier. It is correct for any number of back-to-back
// runs by the same argument each time: every write of allreduce k+1 into
// p's slot is preceded by p's free flag of k+1, itself after all of p's
// reads of allreduce k.
//
// The local sum: out ← in, then one accumulation per slot as its flag
// arrives (they commute); a real kernel fuses them into one pass, which
// costs (n+1)·S of memory traffic instead of the model's concurrent
// passes — small next to the P2P transfer.
type oneShotPush struct{ anyRanks }

func init() { Register(oneShotPush{}) }

func (oneShotPush) Name() string { return "one_shot_push" }

func (oneShotPush) Describe() string {
	return "one-shot push: write own input into every peer's recv slot (posted stores), flag per peer, reduce locally; slot-free handshake at start, no end barrier"
}

var pushOptions = []OptionSpec{
	BlocksOption("thread blocks per GPU (default min(36, ceil(bytes/16/threads)); vLLM push kDefaultPushBlocks = 36)"),
	ThreadsOption("threads per block (default 256, vLLM push kPushThreads)"),
}

func (oneShotPush) Options() []OptionSpec { return pushOptions }

// pushKernel is the launch configuration of a push kernel: 256 threads,
// blocks = min(36, ceil(packs/threads)) with 16-byte packs.
func pushKernel(bytes int64, req Request) hw.Kernel {
	threads := req.IntOpt("threads", 256)
	packs := (bytes + 15) / 16
	blocks := int(min(36, (packs+int64(threads)-1)/int64(threads)))
	blocks = req.IntOpt("blocks", max(blocks, 1))
	return hw.Kernel{Blocks: blocks, Threads: threads}
}

// freeFlag is the flag in q's memory by which p says its receive slots
// are free for this allreduce.
func freeFlag(q, p int, name string) Flag {
	return Flag{At: hw.GPUMem(q), Name: fmt.Sprintf("%s.free[%d]", name, p)}
}

func (oneShotPush) Plan(req Request) (*Schedule, error) {
	n := req.Ranks
	S := req.Bytes
	b := NewBuilder("one_shot_push", n, S, req.DType.Size())
	k := pushKernel(S, req)
	k.Share = 1 / float64(n-1)
	b.Note("%d blocks × %d threads per GPU; each rank writes %d × %d B into peers' recv slots", k.Blocks, k.Threads, n-1, S)
	slot := func(at, from int) Range { return On(at, "recv", int64(from)*S, S) }
	for r := 0; r < n; r++ {
		launch := b.Add(r, Op{Kind: Launch, Label: "launch"})
		for i := 1; i < n; i++ {
			q := (r + i) % n
			b.Add(r, Op{Kind: Signal, Flag: freeFlag(q, r, "push"), Value: 1, Kernel: k, Label: "slots free"}, launch)
		}
		for i := 1; i < n; i++ {
			q := (r + i) % n // rotated order spreads the load
			free := b.Add(r, Op{Kind: Wait, Flag: freeFlag(r, q, "push"), Value: 1, Kernel: k, Label: fmt.Sprintf("rank %d slots free", q)}, launch)
			w := b.Add(r, Op{Kind: Write, Src: b.In(r, 0, S), Dst: slot(q, r), Kernel: k, Label: fmt.Sprintf("push to rank %d", q)}, free)
			b.Add(r, Op{Kind: Signal, Flag: Flag{At: hw.GPUMem(q), Name: fmt.Sprintf("push.data[%d]", r)}, Value: 1, Kernel: k,
				Label: fmt.Sprintf("data flag to rank %d", q)}, w)
		}
		own := b.Add(r, Op{Kind: Read, Src: b.In(r, 0, S), Dst: b.Out(r, 0, S), Kernel: k, Label: "own input"}, launch)
		for i := 1; i < n; i++ {
			p := (r - i + n) % n // slots in the order they are written to this rank
			got := b.Add(r, Op{Kind: Wait, Flag: Flag{At: hw.GPUMem(r), Name: fmt.Sprintf("push.data[%d]", p)}, Value: 1, Kernel: k,
				Label: fmt.Sprintf("data from rank %d", p)}, launch)
			b.Add(r, Op{Kind: Reduce, Src: slot(r, p), Dst: b.Out(r, 0, S), Kernel: k, Label: fmt.Sprintf("reduce slot %d", p)}, got, own)
		}
	}
	return b.Schedule(), nil
}
