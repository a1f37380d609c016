package algos

import (
	"fmt"

	"github.com/arsim/arsim/hw"
)

// stagedPush is a one-shot push with the pushes staggered in rounds so
// that each GPU has one outbound and one inbound stream at a time (no
// root port fans its posted writes out to several root complexes at once,
// which is where PCIe write collapse bites; meant for islands of four GPUs
// per socket but correct for any n): in round k = 1…n−1 rank r writes its
// whole input into slot [r] of rank (r+k) mod n's recv area, then sets a
// data flag there (non-inline, after the stores land); round k+1 starts
// when round k's stores have landed. The receiver accumulates each slot
// into out as its flag arrives.
//
// Reuse: as in one_shot_push, each rank announces at launch that its
// receive slots are free (its previous kernel, the last reader, has
// ended), and a sender waits for that before its first store into the
// receiver; with one push per receiver per allreduce this costs one flag
// latency in round 1 only, and is correct for any number of back-to-back
// allreduces (see oneShotPush).
type stagedPush struct{ anyRanks }

func init() { Register(stagedPush{}) }

func (stagedPush) Name() string { return "staged_push" }

func (stagedPush) Describe() string {
	return "staggered push: in round k rank r writes its input into rank (r+k) mod n's recv slot, one stream out and one in per GPU at a time, flag per push, receiver accumulates"
}

func (stagedPush) Options() []OptionSpec { return pushOptions }

func (stagedPush) Plan(req Request) (*Schedule, error) {
	n := req.Ranks
	S := req.Bytes
	b := NewBuilder("staged_push", n, S, req.DType.Size())
	k := pushKernel(S, req) // one flow at a time: the whole kernel drives it
	b.Note("%d blocks × %d threads per GPU; %d rounds, each rank pushes %d B per round to one peer", k.Blocks, k.Threads, n-1, S)
	slot := func(at, from int) Range { return On(at, "recv", int64(from)*S, S) }
	for r := 0; r < n; r++ {
		launch := b.Add(r, Op{Kind: Launch, Label: "launch"})
		// Announce free slots to the ranks that push to this one, in the
		// order their pushes come.
		for kk := 1; kk < n; kk++ {
			src := (r - kk + n) % n
			b.Add(r, Op{Kind: Signal, Flag: freeFlag(src, r, "staged"), Value: 1, Kernel: k, Label: "slots free"}, launch)
		}
		prev := launch
		for kk := 1; kk < n; kk++ {
			dst := (r + kk) % n
			free := b.Add(r, Op{Kind: Wait, Flag: freeFlag(r, dst, "staged"), Value: 1, Kernel: k, Label: fmt.Sprintf("rank %d slots free", dst)}, launch)
			w := b.Add(r, Op{Kind: Write, Src: b.In(r, 0, S), Dst: slot(dst, r), Kernel: k, Label: fmt.Sprintf("round %d push to rank %d", kk, dst)}, free, prev)
			b.Add(r, Op{Kind: Signal, Flag: Flag{At: hw.GPUMem(dst), Name: fmt.Sprintf("staged.data[%d]", r)}, Value: 1, Kernel: k,
				Label: fmt.Sprintf("round %d data flag to rank %d", kk, dst)}, w)
			prev = w
		}
		own := b.Add(r, Op{Kind: Read, Src: b.In(r, 0, S), Dst: b.Out(r, 0, S), Kernel: k, Label: "own input"}, launch)
		acc := own
		for kk := 1; kk < n; kk++ {
			src := (r - kk + n) % n
			got := b.Add(r, Op{Kind: Wait, Flag: Flag{At: hw.GPUMem(r), Name: fmt.Sprintf("staged.data[%d]", src)}, Value: 1, Kernel: k,
				Label: fmt.Sprintf("round %d data from rank %d", kk, src)}, launch)
			acc = b.Add(r, Op{Kind: Reduce, Src: slot(r, src), Dst: b.Out(r, 0, S), Kernel: k, Label: fmt.Sprintf("round %d accumulate slot %d", kk, src)}, got, acc)
		}
	}
	return b.Schedule(), nil
}
