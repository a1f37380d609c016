package algos

import (
	"fmt"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/sim"
)

// hostStaged is a custom allreduce whose exchange goes through pinned host
// memory instead of GPU-to-GPU P2P: the kernels of tools/capture
// (kernels.py one_shot_host / two_shot_host), a real PCIe-bound custom
// allreduce that needs no P2P at all. Every byte crosses PCIe twice: posted
// writes up to host memory, non-posted reads back down. Barrier flags live
// in host memory too (rank t's slots on t's socket), so every poll is a
// host read round trip.
//
// one shot: write my input to my host staging copy, fence, start barrier,
// pull every peer's staging copy (16-byte volatile loads) and add, end
// barrier.
//
// two shot: write the parts other ranks own to my staging copy, fence,
// start barrier, reduce my part from all staging copies, publish it to host
// memory, release/acquire barrier, pull the other ranks' reduced parts,
// end barrier.
type hostStaged struct {
	anyRanks
	two bool
}

func init() {
	Register(hostStaged{})
	Register(hostStaged{two: true})
}

func (h hostStaged) Name() string {
	if h.two {
		return "host_two_shot"
	}
	return "host_one_shot"
}

func (h hostStaged) Describe() string {
	if h.two {
		return "custom two-shot through pinned host memory: stage parts, barrier, reduce own part, publish, barrier, gather (no P2P needed)"
	}
	return "custom one-shot through pinned host memory: stage input in host RAM, flag barrier in host RAM, pull peers' copies (no P2P needed)"
}

func (h hostStaged) Options() []OptionSpec {
	o := append(append([]OptionSpec(nil), pullOptions...), rankLoopOption, flagApartOption, flagLayoutOption)
	if h.two {
		o = append(o, midBarrierOption)
	}
	return o
}

// flagLayoutOption: where each thread block's copy of a rank's flags lies.
// "line": a block's slots in a sector, the ranks' sectors flag_apart
// apart, every block's on lines of its own. "vllm": vLLM's Signal layout,
// as tools/capture's flag kernels keep it: each rank's flags in an array
// of their own, a block's slots in one 32-byte sector, the blocks'
// sectors one after another, four to a line, and every rank storing to and
// polling its own slot as well (vLLM's barrier and tools/capture's flag
// kernels run it on threads t < world, their own rank's t included): W
// slots to a sector. Each store landing at another block's sector of a
// polled line adds to its poll's service (hw's slotsPeriod): 3 × W stores
// a barrier from four blocks on.
var flagLayoutOption = OptionSpec{Name: "flag_layout", Values: []string{"line", "vllm"}, Default: "line",
	Doc: "line: every block's flag sectors on lines of their own (flag_apart between ranks); vllm: each rank's flags in an array of their own, the blocks' 32-B sectors adjacent, four to a line (vLLM's Signal)"}

// flagSpacing returns the Apart and BlockStride of the request's flag
// layout (flagLayoutOption).
func flagSpacing(req Request) (apart, blockStride int32) {
	if req.Opt("flag_layout", "line") == "vllm" {
		return 4096, 32 // the ranks' arrays are allocations of their own, pages apart
	}
	return int32(req.IntOpt("flag_apart", 128)), 0
}

// flagApartOption: how far apart the ranks' flag sectors lie in host
// memory. Every rank's sector is written by all the others, and sectors
// whose lines differ only in address bits 7 and 9 (hostmem.collision_mask)
// slow each other's barrier (docs/PER_BLOCK.md: on one H200, 8 ranks'
// barrier 4.1–4.5 µs with the sectors 128 B apart, three such lines each;
// 3.1–3.3 µs 256 or 512 B apart, one; 2.2 µs 1 KiB apart or more, none).
var flagApartOption = OptionSpec{Name: "flag_apart", Values: []string{"128", "256", "512", "1024", "4096"}, Default: "128",
	Doc: "bytes between the ranks' flag sectors in host memory: 128 keeps them next to each other, a line each; 1024 or more keeps them out of each other's way"}

// hostBarrier: every rank writes v into its slot of every peer's flag
// array, which lives in host memory on the peer's socket, then polls its
// own array; in vLLM's layout (stride > 0) its own slot of its own array
// too. Returns the wait indices per rank.
func hostBarrier(b *Builder, m func(r int) hw.Mem, name string, v int64, k hw.Kernel, apart, stride int32, label string, after [][]int) [][]int {
	n := b.s.Ranks
	done := make([][]int, n)
	self := stride > 0 // vLLM's layout: each rank stores to and polls its own slot too (threads t < world)
	for r := 0; r < n; r++ {
		for p := 0; p < n; p++ {
			if p != r || self {
				b.Add(r, Op{Kind: Signal, Flag: Flag{At: m(p), Name: fmt.Sprintf("%s.sig%d[%d]", name, p, r), Sector: fmt.Sprintf("%s.sig%d", name, p), Apart: apart, BlockStride: stride}, Value: v, Kernel: k, Label: label}, after[r]...)
			}
		}
		for p := 0; p < n; p++ {
			if p != r || self {
				done[r] = append(done[r], b.Add(r, Op{Kind: Wait, Flag: Flag{At: m(r), Name: fmt.Sprintf("%s.sig%d[%d]", name, r, p), Sector: fmt.Sprintf("%s.sig%d", name, r), Apart: apart, BlockStride: stride}, Value: v, Kernel: k, Label: label}, after[r]...))
			}
		}
	}
	return done
}

func (h hostStaged) Plan(req Request) (*Schedule, error) {
	n := req.Ranks
	b := NewBuilder(h.Name(), n, req.Bytes, req.DType.Size())
	socket := func(r int) int { return req.Top.GPU(r).Socket }
	home := func(r int) hw.Mem { return hw.HostMem(socket(r)) }
	stage := func(r int, off, l int64) Range { return OnHost(socket(r), fmt.Sprintf("stage%d", r), off, l) }
	apart, stride := flagSpacing(req)
	kb := req.Bytes
	if h.two {
		kb = max(req.Bytes/int64(n), 16)
	}
	k, err := pullKernel(kb, req)
	if err != nil {
		return nil, fmt.Errorf("algos: %s: %w", h.Name(), err)
	}
	k.LoadsInFlight = 1  // one load per rank in flight in each loop body
	k.Ranks = n          // … from each rank's buffer (hw.Kernel.Ranks)
	k.RanksInHost = true // the peers' copies are staged in host memory
	k.Fresh = true       // … just before the pull reads them (hostmem.fresh_line_saving)
	b.Note("%d blocks × %d threads per GPU; staging buffers and flags in host memory of each rank's socket", k.Blocks, k.Threads)
	launch := b.Launches()
	if !h.two {
		staged := make([][]int, n)
		for r := 0; r < n; r++ {
			staged[r] = []int{b.Add(r, Op{Kind: Write, Src: b.In(r, 0, req.Bytes), Dst: stage(r, 0, req.Bytes), Kernel: k, Label: "stage input in host memory"}, launch[r]...)}
		}
		start := hostBarrier(b, home, "start", 1, k, apart, stride, "start barrier (host flags)", staged)
		ends := make([][]int, n)
		for r := 0; r < n; r++ {
			own := b.Add(r, Op{Kind: Read, Src: b.In(r, 0, req.Bytes), Dst: b.Out(r, 0, req.Bytes), Kernel: k, Label: "own input"}, start[r]...)
			ends[r] = []int{own}
			pk := k
			pk.Share = 1
			for i := 1; i < n; i++ {
				p := (r + i) % n
				ends[r] = append(ends[r], b.Add(r, Op{Kind: Read, Accumulate: true, Src: stage(p, 0, req.Bytes), Dst: b.Out(r, 0, req.Bytes), Kernel: pk,
					Label: fmt.Sprintf("pull rank %d's host copy", p)}, own))
			}
		}
		hostBarrier(b, home, "end", 1, k, apart, stride, "end barrier (host flags)", ends)
		return b.Schedule(), nil
	}
	off, size := Split(req.Bytes, req.DType.Size(), n)
	staged := make([][]int, n)
	wk := k
	wk.Share = 1 / float64(n-1)
	for r := 0; r < n; r++ {
		for p := 0; p < n; p++ {
			if p != r && size[p] > 0 {
				staged[r] = append(staged[r], b.Add(r, Op{Kind: Write, Src: b.In(r, off[p], size[p]), Dst: stage(r, off[p], size[p]), Kernel: wk,
					Label: fmt.Sprintf("stage part %d in host memory", p)}, launch[r]...))
			}
		}
		if len(staged[r]) == 0 {
			staged[r] = launch[r]
		}
	}
	start := hostBarrier(b, home, "start", 1, k, apart, stride, "start barrier (host flags)", staged)
	homes := make([]hw.Mem, n)
	for r := range homes {
		homes[r] = home(r)
	}
	batch, err := hw.LoadBatches(req.Top, homes, k)
	if err != nil {
		return nil, fmt.Errorf("algos: %s: %w", h.Name(), err)
	}
	mids := make([][]int, n)
	for r := 0; r < n; r++ {
		own := b.Add(r, Op{Kind: Read, Src: b.In(r, off[r], size[r]), Dst: b.Out(r, off[r], size[r]), Kernel: k, Label: "own part"}, start[r]...)
		red := []int{own}
		for i := 1; i < n; i++ {
			p := (r + i) % n
			red = append(red, b.Add(r, Op{Kind: Read, Accumulate: true, Src: stage(p, off[r], size[r]), Dst: b.Out(r, off[r], size[r]), Kernel: k,
				Label: fmt.Sprintf("reduce part %d: pull rank %d's host copy", r, p)}, own))
		}
		pubs := publishFused(b, r, b.Out(r, off[r], size[r]), OnHost(socket(r), fmt.Sprintf("tmp%d", r), 0, size[r]), batch[r], int64(req.DType.Size()), k, red)
		mids[r] = []int{midFences(b, req, r, home(r), append(pubs, red[1:]...)...)}
	}
	mid := hostBarrier(b, home, "mid", 1, k, apart, stride, "mid barrier (release/acquire, host flags)", mids)
	ends := make([][]int, n)
	for r := 0; r < n; r++ {
		for i := 1; i < n; i++ {
			p := (r + i) % n
			ends[r] = append(ends[r], b.Add(r, Op{Kind: Read, Src: OnHost(socket(p), fmt.Sprintf("tmp%d", p), 0, size[p]), Dst: b.Out(r, off[p], size[p]), Kernel: k,
				Label: fmt.Sprintf("gather part %d from host memory", p)}, mid[r]...))
		}
	}
	hostBarrier(b, home, "end", 1, k, apart, stride, "end barrier (host flags)", ends)
	return b.Schedule(), nil
}

// publishFused adds rank r's publish of src (its reduced part) to dst in
// host memory, as the reduce loop that makes it stores each element in the
// iteration that makes it (tools/capture's two_shot_host): beside the
// loop's loads (Op.Fused; red: the loop's ops, its start first), but for
// the stores of the loads that come back together at the end (batch:
// hw.LoadBatches), which follow the loop. It returns the writes.
func publishFused(b *Builder, r int, src, dst Range, batch sim.Bytes, es int64, k hw.Kernel, red []int) []int {
	tail := min(src.Len, max(es, int64(batch)/es*es))
	head := src.Len - tail
	var pubs []int
	if head > 0 {
		// each store follows the load that gives its value: the stores
		// do not queue ahead of the loop's loads (hw.Kernel.PacedStores)
		pk := k
		pk.PacedStores = true
		pubs = append(pubs, b.Add(r, Op{Kind: Write, Fused: true, Src: Range{Buf: src.Buf, Off: src.Off, Len: head}, Dst: Range{Buf: dst.Buf, Off: dst.Off, Len: head},
			Kernel: pk, Label: "publish reduced part to host memory"}, red...))
	}
	return append(pubs, b.Add(r, Op{Kind: Write, Src: Range{Buf: src.Buf, Off: src.Off + head, Len: tail}, Dst: Range{Buf: dst.Buf, Off: dst.Off + head, Len: tail},
		Kernel: k, Label: "publish the last batch to host memory"}, red...))
}
