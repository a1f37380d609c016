package algos

import (
	"fmt"

	"github.com/arsim/arsim/hw"
)

// halvingDoubling is recursive halving reduce-scatter followed by recursive
// doubling all-gather (Rabenseifner), with pulls and flags between the two
// partners of each round.
//
// Let p be the largest power of two ≤ n. Ranks e ≥ p are folded first:
// rank e−p pulls e's input into its work buffer acc, runs the power-of-two
// algorithm for both, and e pulls the finished result back at the end.
// Among the p core ranks, round t = 0…log2(p)−1 pairs q with q xor 2^t:
// each halves its current region (element-aligned), keeps the lower half if
// bit t of q is 0 and the upper one otherwise, and pulls the partner's
// partial of the kept half, accumulating it (first the nearest partners, so
// on a two-socket box the biggest halves stay inside the socket). The
// all-gather runs the rounds backwards: q pulls the partner's finished
// region into the half it gave away. Finally acc is copied to out.
//
// Flags: before each pull, the partner's flag for that round says its
// region is ready (set after its previous round). A rank writes its region
// of acc only where no partner reads in the same round (the kept half vs.
// the given half), and it rewrites the given half only after the partner's
// all-gather flag, which the partner sets after its own reduce-scatter
// reads. For back-to-back runs, every rank announces its start to all the
// ranks that read its buffers (its partners, and the rank folded into it)
// and writes acc only after their start flags, which follow the end of
// their previous kernels; the folded rank's input is read before the rank
// it folded into signals "done", which the folded rank waits for.
type halvingDoubling struct{ anyRanks }

func init() { Register(halvingDoubling{}) }

func (halvingDoubling) Name() string { return "halving_doubling" }

func (halvingDoubling) Describe() string {
	return "recursive halving reduce-scatter + recursive doubling all-gather by pulls, flags per round; ranks beyond the power of two fold in first"
}

func (halvingDoubling) Options() []OptionSpec { return pullOptions }

func (halvingDoubling) Plan(req Request) (*Schedule, error) {
	n := req.Ranks
	S := req.Bytes
	es := req.DType.Size()
	p, L := 1, 0
	for p*2 <= n {
		p *= 2
		L++
	}
	b := NewBuilder("halving_doubling", n, S, es)
	k, err := pullKernel(S, req) // one pull at a time: the whole kernel drives it
	if err == nil {
		k, err = pullBuffers(k, 2, "each exchange") // its own and one partner's
	}
	if err != nil {
		return nil, fmt.Errorf("algos: halving_doubling: %w", err)
	}
	b.Note("%d core ranks in %d rounds each way, %d folded in; %d blocks × %d threads per GPU", p, L, n-p, k.Blocks, k.Threads)
	acc := func(r int, lo, hi int64) Range { return On(r, "acc", lo, hi-lo) }
	flag := func(at int, name string, from int) Flag {
		return Flag{At: hw.GPUMem(at), Name: fmt.Sprintf("hd.%s[%d]", name, from)}
	}
	sig := func(r int, f Flag, label string, after ...int) int {
		return b.Add(r, Op{Kind: Signal, Flag: f, Value: 1, Kernel: k, Label: label}, after...)
	}
	wait := func(r int, f Flag, label string, after ...int) int {
		return b.Add(r, Op{Kind: Wait, Flag: f, Value: 1, Kernel: k, Label: label}, after...)
	}
	// Folded ranks.
	for e := p; e < n; e++ {
		q := e - p
		launch := b.Add(e, Op{Kind: Launch, Label: "launch"})
		sig(e, flag(q, "start", e), "fold: input ready", launch)
		done := wait(e, flag(e, "done", q), fmt.Sprintf("fold: result of rank %d ready", q), launch)
		b.Add(e, Op{Kind: Read, Src: acc(q, 0, S), Dst: b.Out(e, 0, S), Kernel: k, Label: fmt.Sprintf("fold: pull result from rank %d", q)}, done)
	}
	for q := 0; q < p; q++ {
		launch := b.Add(q, Op{Kind: Launch, Label: "launch"})
		var readers []int // ranks that read q's acc, and q the input of
		for t := 0; t < L; t++ {
			readers = append(readers, q^(1<<t))
		}
		folded := q+p < n
		if folded {
			readers = append(readers, q+p)
		}
		for t := 0; t < L; t++ {
			sig(q, flag(q^(1<<t), "start", q), "start", launch)
		}
		var started []int
		for _, r := range readers {
			started = append(started, wait(q, flag(q, "start", r), fmt.Sprintf("start of rank %d", r), launch))
		}
		cur := b.Add(q, Op{Kind: Read, Src: b.In(q, 0, S), Dst: acc(q, 0, S), Kernel: k, Label: "own input"}, started...)
		if folded {
			cur = b.Add(q, Op{Kind: Read, Accumulate: true, Src: b.In(q+p, 0, S), Dst: acc(q, 0, S), Kernel: k,
				Label: fmt.Sprintf("fold: pull rank %d", q+p)}, cur)
		}
		// Reduce-scatter by recursive halving.
		lo, hi := int64(0), S
		keep := make([][2]int64, L)
		give := make([][2]int64, L)
		for t := 0; t < L; t++ {
			partner := q ^ (1 << t)
			mid := lo + (hi-lo)/es/2*es
			if q&(1<<t) == 0 {
				keep[t], give[t] = [2]int64{lo, mid}, [2]int64{mid, hi}
			} else {
				keep[t], give[t] = [2]int64{mid, hi}, [2]int64{lo, mid}
			}
			name := fmt.Sprintf("rs%d", t)
			sig(q, flag(partner, name, q), fmt.Sprintf("rs round %d ready", t), cur)
			w := wait(q, flag(q, name, partner), fmt.Sprintf("rs round %d rank %d ready", t, partner), launch)
			cur = b.Add(q, Op{Kind: Read, Accumulate: true, Src: acc(partner, keep[t][0], keep[t][1]), Dst: acc(q, keep[t][0], keep[t][1]),
				Kernel: k, Label: fmt.Sprintf("rs round %d pull rank %d", t, partner)}, w, cur)
			lo, hi = keep[t][0], keep[t][1]
		}
		// All-gather by recursive doubling.
		for t := L - 1; t >= 0; t-- {
			partner := q ^ (1 << t)
			name := fmt.Sprintf("ag%d", t)
			sig(q, flag(partner, name, q), fmt.Sprintf("ag round %d ready", t), cur)
			w := wait(q, flag(q, name, partner), fmt.Sprintf("ag round %d rank %d ready", t, partner), launch)
			cur = b.Add(q, Op{Kind: Read, Src: acc(partner, give[t][0], give[t][1]), Dst: acc(q, give[t][0], give[t][1]),
				Kernel: k, Label: fmt.Sprintf("ag round %d pull rank %d", t, partner)}, w, cur)
		}
		b.Add(q, Op{Kind: Read, Src: acc(q, 0, S), Dst: b.Out(q, 0, S), Kernel: k, Label: "result to out"}, cur)
		if folded {
			sig(q, flag(q+p, "done", q), "fold: result ready", cur)
		}
	}
	return b.Schedule(), nil
}
