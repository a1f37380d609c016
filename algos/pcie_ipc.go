package algos

import (
	"fmt"
	"sort"
	"strings"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/topology"
)

// FlashInfer's PCIe IPC allreduce kernels, read in FlashInfer
// include/flashinfer/comm/pcie_ipc_all_reduce.cuh (PR 4393) with their
// launch policy in flashinfer/comm/pcie_ipc_policy.py (_seed):
//
//   - pcie_ipc_one_shot: push_oneshot_param_kernel (FlashInfer's
//     kUnstaged at four ranks);
//   - pcie_ipc_islands: ipc_topo_rsag8_push_param_kernel (kUnstaged at
//     eight ranks, the policy's choice below 32 KiB): reduce inside each
//     socket's island, owners exchange across, push the result back, all
//     completion carried by the data;
//   - pcie_ipc_staged: ipc_topo_rsag8_ring_push_param_kernel (kStagedRing
//     at eight ranks, the policy's choice from 32 KiB) and, without
//     islands, ipc_rsag_ring_push_param_kernel (kStagedRing at four):
//     pushes in passes of a permutation, one stream out and one in per GPU
//     at a time, a barrier between passes.
//
// The sentinel kernels use +0.0 as "not written": a sender turns real
// zeros into −0.0 (clear_pos_zero), the reader spins until no element is
// +0.0 and writes +0.0 back once it has read (the workspace is zeroed once
// at allocation). The scratch is double-buffered per call: every block
// reads a call-level epoch at entry and the last block to arrive flips it
// (advance_scratch_epoch), so call k uses half k mod 2. Two halves suffice
// here, where Lamport's deferred clear needs three: the reader re-arms its
// slots within the call, before its kernel ends, so a peer that writes
// half k mod 2 again in call k+2 (after seeing this rank's data of call
// k+1) finds it re-armed.
//
// The model leaves out the epoch's entry atomic (one local atomic per
// block, off the data path) and the payload sanitising (register work).

// ipcScratch is the scratch buffer name; slot q of rank at holds what rank
// q stores there, at offset q·S as FlashInfer's rank_stride_packs.
const ipcScratch = "ipc"

// ipcSlot returns bytes [off, off+n) of slot q in rank at's scratch, in
// this call's half of the epoch double buffer.
func ipcSlot(at, q int, S, off, n int64) Range {
	return On(at, ipcScratch, int64(q)*S+off, n).Rotating(2, 0)
}

// ipcFlag is the landing mark (data-carried) or barrier flag kind[from] in
// rank at's memory.
func ipcFlag(at, from int, kind string) Flag {
	return Flag{At: hw.GPUMem(at), Name: fmt.Sprintf("ipc.%s[%d]", kind, from)}
}

// ipcLaunch is FlashInfer's seed launch configuration (_seed in
// pcie_ipc_policy.py) unless blocks or threads are given.
func ipcLaunch(req Request, blocks, threads int) hw.Kernel {
	return hw.Kernel{Blocks: req.IntOpt("blocks", blocks), Threads: req.IntOpt("threads", threads)}
}

var ipcLaunchOptions = []OptionSpec{
	BlocksOption("thread blocks per GPU (default FlashInfer's seed, pcie_ipc_policy.py _seed)"),
	ThreadsOption("threads per block (default FlashInfer's seed)"),
}

// ipcIslandsOption chooses how ranks are grouped into islands.
var ipcIslandsOption = OptionSpec{Name: "islands", Values: []string{"socket", "switch", "none"}, Default: "socket",
	Doc: "socket: FlashInfer's 4+4 grouping by CPU socket; switch: by PCIe switch (else socket); none: all ranks flat"}

// socketIslands groups ranks 0…n−1 by CPU socket, islands ordered by their
// lowest rank, members by rank.
func socketIslands(top *topology.Topology, n int) [][]int {
	by := map[int][]int{}
	for r := 0; r < n; r++ {
		s := top.GPU(r).Socket
		by[s] = append(by[s], r)
	}
	var out [][]int
	for _, isl := range by {
		out = append(out, isl)
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// ipcIslands returns the islands req asks for (one island of all ranks for
// "none"), refusing unequal ones.
func ipcIslands(name string, req Request) ([][]int, string, error) {
	n := req.Ranks
	var isl [][]int
	by := req.Opt("islands", "socket")
	switch by {
	case "none":
		all := make([]int, n)
		for r := range all {
			all[r] = r
		}
		return [][]int{all}, "no islands", nil
	case "switch":
		var err error
		isl, by, err = islands(req.Top, n)
		if err != nil {
			return nil, "", fmt.Errorf("algos: %s: %w", name, err)
		}
	default:
		isl = socketIslands(req.Top, n)
	}
	var sizes []string
	for _, x := range isl {
		sizes = append(sizes, fmt.Sprint(len(x)))
		if len(x) != len(isl[0]) {
			return nil, "", fmt.Errorf("algos: %s: %d ranks on %s form %s islands of unequal sizes %s; islands must be equal (or islands=none)",
				name, n, req.Top.Name, by, strings.Join(sizes, ", "))
		}
	}
	return isl, by + " islands", nil
}

// ipcOneShot is push_oneshot_param_kernel: every rank stores its input,
// zeros sanitised, into slot [rank] of every rank's scratch (its own
// included); each rank spins until none of its n slots holds +0.0, sums
// them into its output and writes +0.0 back into the slots it read.
type ipcOneShot struct{ anyRanks }

func init() { Register(ipcOneShot{}) }

func (ipcOneShot) Name() string { return "pcie_ipc_one_shot" }

func (ipcOneShot) Describe() string {
	return "FlashInfer PCIe IPC one-shot push: store into every rank's slot, spin until no +0.0 sentinel remains, reduce, write the sentinel back; per-call epoch double buffer, no barrier"
}

func (ipcOneShot) Options() []OptionSpec { return ipcLaunchOptions }

func (ipcOneShot) Plan(req Request) (*Schedule, error) {
	n, S := req.Ranks, req.Bytes
	b := NewBuilder("pcie_ipc_one_shot", n, S, req.DType.Size())
	threads := 256
	if n == 2 {
		threads = 128 // the seed's two-rank configuration
	}
	k := ipcLaunch(req, 16, threads)
	push := k
	push.Share = 1 / float64(n-1)
	b.Note("%d blocks × %d threads per GPU; each rank stores %d × %d B into its slot of every rank's scratch (sentinel +0.0, epoch double buffer)", k.Blocks, k.Threads, n, S)
	for r := 0; r < n; r++ {
		launch := b.Add(r, Op{Kind: Launch, Label: "launch"})
		for i := 0; i < n; i++ {
			q := (r + i) % n
			what := fmt.Sprintf("push to rank %d", q)
			if q == r {
				what = "own slot"
			}
			w := b.Add(r, Op{Kind: Write, Src: b.In(r, 0, S), Dst: ipcSlot(q, r, S, 0, S), Kernel: push, Label: what}, launch)
			b.Carry(r, ipcFlag(q, r, "slot"), 1, push, what+" landed", w)
		}
		first := -1
		for i := 0; i < n; i++ {
			p := (r - i + n) % n
			got := b.DataWait(r, ipcFlag(r, p, "slot"), 1, ipcSlot(r, p, S, 0, S), k, fmt.Sprintf("spin until slot %d holds no +0.0", p), launch)
			var sum int
			if first < 0 {
				sum = b.Add(r, Op{Kind: Read, Src: ipcSlot(r, p, S, 0, S), Dst: b.Out(r, 0, S), Kernel: k, Label: "sum: own slot"}, got)
				first = sum
			} else {
				sum = b.Add(r, Op{Kind: Reduce, Src: ipcSlot(r, p, S, 0, S), Dst: b.Out(r, 0, S), Kernel: k, Label: fmt.Sprintf("sum: slot %d", p)}, got, first)
			}
			b.Clear(r, ipcSlot(r, p, S, 0, S), k, fmt.Sprintf("write +0.0 back into slot %d", p), sum)
		}
	}
	return b.Schedule(), nil
}

// ipcIslandsPush is ipc_topo_rsag8_push_param_kernel generalised from two
// islands of four to m equal islands of g: member j of each island owns
// chunk j (of g); every rank stores each chunk of its input into its slot
// at the chunk's owner in its island; the owner spins on the g slots,
// sums them, writes +0.0 back, stores the island sum into its slot at
// each counterpart (member j of the other islands), spins on theirs, adds
// them for the chunk's final value, and stores that into its slot at each
// island peer, who spins on it and copies it out. No barrier anywhere.
// With one island (islands=none, or every rank on one socket) this is the
// data-carried reduce-scatter/all-gather push ipc_rsag_push_param_kernel.
type ipcIslandsPush struct{ anyRanks }

func init() { Register(ipcIslandsPush{}) }

func (ipcIslandsPush) Name() string { return "pcie_ipc_islands" }

func (ipcIslandsPush) Describe() string {
	return "FlashInfer PCIe IPC island push (8-rank kUnstaged): reduce each chunk at its owner inside the socket island, owners exchange across sockets, push back; +0.0 sentinel, no barrier"
}

func (ipcIslandsPush) Options() []OptionSpec {
	return append(append([]OptionSpec(nil), ipcLaunchOptions...), ipcIslandsOption)
}

func (a ipcIslandsPush) Plan(req Request) (*Schedule, error) {
	n, S, es := req.Ranks, req.Bytes, req.DType.Size()
	isl, by, err := ipcIslands(a.Name(), req)
	if err != nil {
		return nil, err
	}
	m, g := len(isl), len(isl[0])
	where := islandIndex(isl, n)
	off, size := Split(S, es, g)
	b := NewBuilder(a.Name(), n, S, es)
	k := ipcLaunch(req, 16, 256)
	push := k
	if g > 1 {
		push.Share = 1 / float64(g-1)
	}
	cross := k
	if m > 1 {
		cross.Share = 1 / float64(m-1)
	}
	b.Note("%d %s of %d: %v; chunks of %d B (last %d B); %d blocks × %d threads per GPU; sentinel +0.0, epoch double buffer",
		m, by, g, isl, size[0], size[g-1], k.Blocks, k.Threads)
	for r := 0; r < n; r++ {
		i, j := where[r][0], where[r][1]
		launch := b.Add(r, Op{Kind: Launch, Label: "launch"})
		// 1. Every chunk of the input to its owner in the island.
		for d := 0; d < g; d++ {
			c := (j + d) % g
			o := isl[i][c]
			what := fmt.Sprintf("chunk %d to owner rank %d", c, o)
			w := b.Add(r, Op{Kind: Write, Src: b.In(r, off[c], size[c]), Dst: ipcSlot(o, r, S, off[c], size[c]), Kernel: push, Label: what}, launch)
			b.Carry(r, ipcFlag(o, r, "in"), 1, push, what+" landed", w)
		}
		// 2. The owner sums its chunk over the island into ipc.sum.
		sum := On(r, "ipc.sum", 0, size[j])
		var sums []int
		first := -1
		for d := 0; d < g; d++ {
			q := isl[i][(j-d+g)%g]
			got := b.DataWait(r, ipcFlag(r, q, "in"), 1, ipcSlot(r, q, S, off[j], size[j]), k, fmt.Sprintf("spin on the chunk from rank %d", q), launch)
			var x int
			if first < 0 {
				x = b.Add(r, Op{Kind: Read, Src: ipcSlot(r, q, S, off[j], size[j]), Dst: sum, Kernel: k, Label: "island sum: own chunk"}, got)
				first = x
			} else {
				x = b.Add(r, Op{Kind: Reduce, Src: ipcSlot(r, q, S, off[j], size[j]), Dst: sum, Kernel: k, Label: fmt.Sprintf("island sum: rank %d", q)}, got, first)
			}
			sums = append(sums, x)
			b.Clear(r, ipcSlot(r, q, S, off[j], size[j]), k, fmt.Sprintf("write +0.0 back (chunk from rank %d)", q), x)
		}
		// 3. Exchange island sums with the counterparts.
		final := []int{b.Add(r, Op{Kind: Read, Src: sum, Dst: b.Out(r, off[j], size[j]), Kernel: k, Label: "final: island sum"}, sums...)}
		for d := 1; d < m; d++ {
			x := isl[(i+d)%m][j]
			w := b.Add(r, Op{Kind: Write, Src: sum, Dst: ipcSlot(x, r, S, off[j], size[j]), Kernel: cross, Label: fmt.Sprintf("island sum to counterpart rank %d", x)}, sums...)
			b.Carry(r, ipcFlag(x, r, "cross"), 1, cross, fmt.Sprintf("island sum to rank %d landed", x), w)
		}
		for d := 1; d < m; d++ {
			x := isl[(i-d+m)%m][j]
			got := b.DataWait(r, ipcFlag(r, x, "cross"), 1, ipcSlot(r, x, S, off[j], size[j]), k, fmt.Sprintf("spin on the island sum from rank %d", x), launch)
			f := b.Add(r, Op{Kind: Reduce, Src: ipcSlot(r, x, S, off[j], size[j]), Dst: b.Out(r, off[j], size[j]), Kernel: k, Label: fmt.Sprintf("final: add the island sum from rank %d", x)}, got, final[0])
			final = append(final, f)
			b.Clear(r, ipcSlot(r, x, S, off[j], size[j]), k, fmt.Sprintf("write +0.0 back (island sum from rank %d)", x), f)
		}
		// 4. The final chunk to the island peers.
		for d := 1; d < g; d++ {
			q := isl[i][(j+d)%g]
			w := b.Add(r, Op{Kind: Write, Src: b.Out(r, off[j], size[j]), Dst: ipcSlot(q, r, S, off[j], size[j]), Kernel: push, Label: fmt.Sprintf("final chunk to rank %d", q)}, final...)
			b.Carry(r, ipcFlag(q, r, "final"), 1, push, fmt.Sprintf("final chunk to rank %d landed", q), w)
		}
		// 5. The other chunks from their owners.
		for d := 1; d < g; d++ {
			c := (j - d + g) % g
			o := isl[i][c]
			got := b.DataWait(r, ipcFlag(r, o, "final"), 1, ipcSlot(r, o, S, off[c], size[c]), k, fmt.Sprintf("spin on chunk %d from rank %d", c, o), launch)
			x := b.Add(r, Op{Kind: Read, Src: ipcSlot(r, o, S, off[c], size[c]), Dst: b.Out(r, off[c], size[c]), Kernel: k, Label: fmt.Sprintf("copy out chunk %d", c)}, got)
			b.Clear(r, ipcSlot(r, o, S, off[c], size[c]), k, fmt.Sprintf("write +0.0 back (chunk %d)", c), x)
		}
	}
	return b.Schedule(), nil
}

// islandIndex returns, per rank, its island and its index in the island.
func islandIndex(isl [][]int, n int) [][2]int {
	where := make([][2]int, n)
	for i, x := range isl {
		for j, r := range x {
			where[r] = [2]int{i, j}
		}
	}
	return where
}

// IslandGroup is a grouping of ranks into M islands of G members each
// (see Islands), with every rank's island and place in it.
type IslandGroup struct {
	Isl   [][]int  // Isl[i][j]: member j of island i
	M, G  int      // islands, members of each
	Where [][2]int // Where[r]: rank r's island and place in it
}

// NewIslandGroup indexes islands of equal sizes over ranks 0…n−1.
func NewIslandGroup(isl [][]int, n int) *IslandGroup {
	return &IslandGroup{Isl: isl, M: len(isl), G: len(isl[0]), Where: islandIndex(isl, n)}
}

// Peers returns the other members of r's island, from the next one on.
func (il *IslandGroup) Peers(r int) []int {
	i, j := il.Where[r][0], il.Where[r][1]
	var out []int
	for d := 1; d < il.G; d++ {
		out = append(out, il.Isl[i][(j+d)%il.G])
	}
	return out
}

// Counterparts returns the members in r's place of the other islands,
// from the next island on.
func (il *IslandGroup) Counterparts(r int) []int {
	i, j := il.Where[r][0], il.Where[r][1]
	var out []int
	for d := 1; d < il.M; d++ {
		out = append(out, il.Isl[(i+d)%il.M][j])
	}
	return out
}

// ipcStaged is FlashInfer's staged kernels. With two or more islands
// (ipc_topo_rsag8_ring_push_param_kernel, content-blind, barriers): the
// island reduce-scatter runs in g−1 passes, in pass p member j storing
// chunk (j+1+p) mod g into its slot at that chunk's owner, a fence and an
// island barrier after each pass; the owner sums its chunk, stores the
// sum into its slot at each counterpart, fences and meets them at a pair
// barrier; adds their sums; the island all-gather runs in g−1 passes of
// the same permutation with barriers; each rank copies the chunks the
// others own out of its scratch, and a last island barrier keeps the next
// call's stores off slots still being read. The epoch double buffer covers
// the cross-island slots, which no barrier of the next call protects.
//
// Without islands (ipc_rsag_ring_push_param_kernel, sentinel, barriers):
// a reduce-scatter in n−1 passes to peer (r+1+p) mod n with a barrier
// after each, the owner spins on its slots, sums and writes +0.0 back,
// then an all-gather in n−1 passes with barriers; the readers spin on
// each chunk, copy it out and write +0.0 back. 2(n−1) barriers in all.
//
// FlashInfer's barrier (block_barrier) is a release store of a generation
// number into each peer's slot and an acquire spin, between two
// __syncthreads: here a system-scope fence, flags, and waits with the
// block's synchronisation.
type ipcStaged struct{ anyRanks }

func init() { Register(ipcStaged{}) }

func (ipcStaged) Name() string { return "pcie_ipc_staged" }

func (ipcStaged) Describe() string {
	return "FlashInfer PCIe IPC staged push (kStagedRing): permutation passes, one stream out and one in per GPU, barrier between passes; 4+4 socket islands: reduce inside, owners exchange across, gather inside"
}

func (ipcStaged) Options() []OptionSpec {
	return append(append([]OptionSpec(nil), ipcLaunchOptions...), ipcIslandsOption)
}

// ipcStagedBlocks is the seed's block count for the staged ring:
// payload / 256 KiB, between 1 and 4 (_SEED_RING_BYTES_PER_BLOCK,
// _SEED_RING_MAX_BLOCKS).
func ipcStagedBlocks(bytes int64) int { return int(max(1, min(4, bytes/(256<<10)))) }

// ipcBarrier is FlashInfer's block_barrier among a group: rank r fences its
// stores to the memories in fenced, stores flag phase into each of to(r)'s
// memory and waits for each of from(r)'s; returns the waits per rank.
func ipcBarrier(b *Builder, phase string, k hw.Kernel, to, from func(r int) []int, fenced func(r int) []hw.Mem, after [][]int) [][]int {
	n := b.s.Ranks
	done := make([][]int, n)
	for r := 0; r < n; r++ {
		dep := after[r]
		if fenced != nil {
			var fs []int
			for _, at := range fenced(r) {
				fs = append(fs, fence(b, r, at, dep...))
			}
			if len(fs) > 0 {
				dep = fs
			}
		}
		for _, p := range to(r) {
			b.Add(r, Op{Kind: Signal, Flag: ipcFlag(p, r, phase), Value: 1, Kernel: k, Label: phase + " barrier"}, dep...)
		}
		for _, p := range from(r) {
			done[r] = append(done[r], b.Add(r, Op{Kind: Wait, Flag: ipcFlag(r, p, phase), Value: 1, BlockSync: true, Kernel: k, Label: phase + " barrier"}, dep...))
		}
		if len(done[r]) == 0 {
			done[r] = dep
		}
	}
	return done
}

func (a ipcStaged) Plan(req Request) (*Schedule, error) {
	isl, by, err := ipcIslands(a.Name(), req)
	if err != nil {
		return nil, err
	}
	if len(isl) > 1 {
		return a.islands(req, isl, by), nil
	}
	return a.flat(req), nil
}

// islands plans the staged kernel over two or more equal islands (see
// ipcStaged): own chunk to own slot, the island reduce-scatter in passes,
// the island sums exchanged with the counterparts, the island all-gather
// in passes, the copy out and a last island barrier.
func (a ipcStaged) islands(req Request, isl [][]int, by string) *Schedule {
	n, S, es := req.Ranks, req.Bytes, req.DType.Size()
	st := &stagedIslands{IslandGroup: NewIslandGroup(isl, n), b: NewBuilder(a.Name(), n, S, es), n: n, S: S}
	st.off, st.size = Split(S, es, st.G)
	st.k = ipcLaunch(req, ipcStagedBlocks(S), 256)
	st.b.Note("%d %s of %d: %v; chunks of %d B (last %d B); %d blocks × %d threads per GPU; %d island passes each way, barriers between, epoch double buffer",
		st.M, by, st.G, isl, st.size[0], st.size[st.G-1], st.k.Blocks, st.k.Threads, st.G-1)
	cur := st.b.Launches()
	own := st.ownChunks(cur)
	cur = st.reduceScatter(cur)
	cur = st.finals(st.pairBarrier(st.sendIslandSums(own, cur)))
	cur = st.allGather(cur)
	ipcBarrier(st.b, "end", st.k, st.Peers, st.Peers, nil, st.copyOut(cur))
	return st.b.Schedule()
}

// stagedIslands writes ipcStaged's schedule over m islands of g members:
// member j of each island owns chunk j; rank q's slot in rank at's
// scratch ("ipc.blk", two rotating copies) holds chunks at q·S.
type stagedIslands struct {
	*IslandGroup
	b         *Builder
	n         int
	S         int64
	off, size []int64 // chunk c: offset and length
	k         hw.Kernel
}

// slot is chunk c of rank q's slot in rank at's scratch.
func (st *stagedIslands) slot(at, q, c int) Range {
	return On(at, "ipc.blk", int64(q)*st.S+st.off[c], st.size[c]).Rotating(2, 0)
}

// pass returns r's island peer in pass p (from 0): the member p+1 places
// on.
func (st *stagedIslands) pass(r, p int) int {
	i, j := st.Where[r][0], st.Where[r][1]
	return st.Isl[i][(j+1+p)%st.G]
}

// passFenced is what a rank fences before the barrier after pass p: its
// stores to that pass's peer.
func (st *stagedIslands) passFenced(p int) func(r int) []hw.Mem {
	return func(r int) []hw.Mem { return []hw.Mem{hw.GPUMem(st.pass(r, p))} }
}

// ownChunks copies each rank's own chunk into its own slot after
// launch[r]; it returns the copies.
func (st *stagedIslands) ownChunks(launch [][]int) []int {
	own := make([]int, st.n)
	for r := 0; r < st.n; r++ {
		j := st.Where[r][1]
		own[r] = st.b.Add(r, Op{Kind: Read, Src: st.b.In(r, st.off[j], st.size[j]), Dst: st.slot(r, r, j), Kernel: st.k, Label: "own chunk to own slot"}, launch[r]...)
	}
	return own
}

// reduceScatter runs the island reduce-scatter in g−1 passes: in pass p
// each rank stores the chunk its pass peer owns into its slot there, then
// a fence and an island barrier. It returns the last barrier's waits.
func (st *stagedIslands) reduceScatter(cur [][]int) [][]int {
	for p := 0; p < st.G-1; p++ {
		stored := make([][]int, st.n)
		for r := 0; r < st.n; r++ {
			o := st.pass(r, p)
			t := st.Where[o][1]
			stored[r] = []int{st.b.Add(r, Op{Kind: Write, Src: st.b.In(r, st.off[t], st.size[t]), Dst: st.slot(o, r, t), Kernel: st.k, Label: fmt.Sprintf("rs pass %d: chunk %d to rank %d", p, t, o)}, cur[r]...)}
		}
		cur = ipcBarrier(st.b, fmt.Sprintf("rs%d", p), st.k, st.Peers, st.Peers, st.passFenced(p), stored)
	}
	return cur
}

// sendIslandSums: each rank adds its peers' slots into its own (after its
// own chunk's copy and cur[r]) for the island sum of its chunk and stores
// that into its slot at each counterpart. It returns each rank's stores
// (its sums where it has no counterpart).
func (st *stagedIslands) sendIslandSums(own []int, cur [][]int) [][]int {
	sent := make([][]int, st.n)
	ck := st.k
	ck.Share = 1 / float64(max(1, st.M-1))
	for r := 0; r < st.n; r++ {
		j := st.Where[r][1]
		var sums []int
		for _, q := range st.Peers(r) {
			sums = append(sums, st.b.Add(r, Op{Kind: Reduce, Src: st.slot(r, q, j), Dst: st.slot(r, r, j), Kernel: st.k, Label: fmt.Sprintf("island sum: rank %d", q)}, append([]int{own[r]}, cur[r]...)...))
		}
		if len(sums) == 0 {
			sums = append([]int{own[r]}, cur[r]...)
		}
		for _, x := range st.Counterparts(r) {
			sent[r] = append(sent[r], st.b.Add(r, Op{Kind: Write, Src: st.slot(r, r, j), Dst: st.slot(x, r, j), Kernel: ck, Label: fmt.Sprintf("island sum to counterpart rank %d", x)}, sums...))
		}
		if len(sent[r]) == 0 {
			sent[r] = sums
		}
	}
	return sent
}

// pairBarrier: each rank fences its stores to its counterparts and meets
// them at a barrier after sent[r]; it returns the barrier's waits.
func (st *stagedIslands) pairBarrier(sent [][]int) [][]int {
	return ipcBarrier(st.b, "pair", st.k, st.Counterparts, st.Counterparts, func(r int) []hw.Mem {
		var at []hw.Mem
		for _, x := range st.Counterparts(r) {
			at = append(at, hw.GPUMem(x))
		}
		return at
	}, sent)
}

// finals: each rank writes its chunk's final value into its output (its
// island sum plus each counterpart's) and back into its own slot for the
// all-gather, then fences. It returns the fences.
func (st *stagedIslands) finals(pair [][]int) [][]int {
	cur := make([][]int, st.n)
	for r := 0; r < st.n; r++ {
		j := st.Where[r][1]
		out := st.b.Out(r, st.off[j], st.size[j])
		f := st.b.Add(r, Op{Kind: Read, Src: st.slot(r, r, j), Dst: out, Kernel: st.k, Label: "final: island sum"}, pair[r]...)
		fs := []int{f}
		for _, x := range st.Counterparts(r) {
			fs = append(fs, st.b.Add(r, Op{Kind: Reduce, Src: st.slot(r, x, j), Dst: out, Kernel: st.k, Label: fmt.Sprintf("final: add the island sum from rank %d", x)}, f))
		}
		keep := st.b.Add(r, Op{Kind: Read, Src: out, Dst: st.slot(r, r, j), Kernel: st.k, Label: "final chunk to own slot"}, fs...)
		cur[r] = []int{fence(st.b, r, hw.GPUMem(r), keep)}
	}
	return cur
}

// allGather runs the island all-gather in g−1 passes: in pass p each rank
// stores its final chunk into its slot at its pass peer, then a fence and
// an island barrier. It returns the last barrier's waits.
func (st *stagedIslands) allGather(cur [][]int) [][]int {
	for p := 0; p < st.G-1; p++ {
		stored := make([][]int, st.n)
		for r := 0; r < st.n; r++ {
			j := st.Where[r][1]
			q := st.pass(r, p)
			stored[r] = []int{st.b.Add(r, Op{Kind: Write, Src: st.slot(r, r, j), Dst: st.slot(q, r, j), Kernel: st.k, Label: fmt.Sprintf("ag pass %d: final chunk to rank %d", p, q)}, cur[r]...)}
		}
		cur = ipcBarrier(st.b, fmt.Sprintf("ag%d", p), st.k, st.Peers, st.Peers, st.passFenced(p), stored)
	}
	return cur
}

// copyOut: each rank copies the chunks its peers own out of its scratch
// into its output after cur[r]; it returns the copies (cur[r] where it
// has no peer).
func (st *stagedIslands) copyOut(cur [][]int) [][]int {
	done := make([][]int, st.n)
	for r := 0; r < st.n; r++ {
		for _, o := range st.Peers(r) {
			c := st.Where[o][1]
			done[r] = append(done[r], st.b.Add(r, Op{Kind: Read, Src: st.slot(r, o, c), Dst: st.b.Out(r, st.off[c], st.size[c]), Kernel: st.k, Label: fmt.Sprintf("copy out chunk %d", c)}, cur[r]...))
		}
		if len(done[r]) == 0 {
			done[r] = cur[r]
		}
	}
	return done
}

func (a ipcStaged) flat(req Request) *Schedule {
	n, S, es := req.Ranks, req.Bytes, req.DType.Size()
	off, size := Split(S, es, n)
	b := NewBuilder(a.Name(), n, S, es)
	k := ipcLaunch(req, ipcStagedBlocks(S), 256)
	b.Note("%d blocks × %d threads per GPU; %d passes each way, one peer per pass, barriers between; sentinel +0.0, epoch double buffer", k.Blocks, k.Threads, n-1)
	slot := func(at, q, c int) Range { return ipcSlot(at, q, S, off[c], size[c]) }
	others := func(r int) []int {
		var out []int
		for d := 1; d < n; d++ {
			out = append(out, (r+d)%n)
		}
		return out
	}
	launch := b.Launches()
	cur := launch
	for r := 0; r < n; r++ {
		w := b.Add(r, Op{Kind: Write, Src: b.In(r, off[r], size[r]), Dst: slot(r, r, r), Kernel: k, Label: "own chunk to own slot"}, launch[r]...)
		b.Carry(r, ipcFlag(r, r, "rs"), 1, k, "own chunk landed", w)
	}
	// Reduce-scatter in n−1 passes.
	for p := 0; p < n-1; p++ {
		stored := make([][]int, n)
		for r := 0; r < n; r++ {
			t := (r + 1 + p) % n
			w := b.Add(r, Op{Kind: Write, Src: b.In(r, off[t], size[t]), Dst: slot(t, r, t), Kernel: k, Label: fmt.Sprintf("rs pass %d: chunk %d to rank %d", p, t, t)}, cur[r]...)
			b.Carry(r, ipcFlag(t, r, "rs"), 1, k, fmt.Sprintf("rs pass %d landed", p), w)
			stored[r] = []int{w}
		}
		cur = ipcBarrier(b, fmt.Sprintf("rs%d", p), k, others, others, func(r int) []hw.Mem { return []hw.Mem{hw.GPUMem((r + 1 + p) % n)} }, stored)
	}
	// The owner spins on its chunk's slots, sums, writes +0.0 back.
	for r := 0; r < n; r++ {
		first := -1
		var sums []int
		for d := 0; d < n; d++ {
			q := (r - d + n) % n
			got := b.DataWait(r, ipcFlag(r, q, "rs"), 1, slot(r, q, r), k, fmt.Sprintf("spin on the chunk from rank %d", q), cur[r]...)
			var x int
			if first < 0 {
				x = b.Add(r, Op{Kind: Read, Src: slot(r, q, r), Dst: b.Out(r, off[r], size[r]), Kernel: k, Label: "sum: own chunk"}, got)
				first = x
			} else {
				x = b.Add(r, Op{Kind: Reduce, Src: slot(r, q, r), Dst: b.Out(r, off[r], size[r]), Kernel: k, Label: fmt.Sprintf("sum: chunk from rank %d", q)}, got, first)
				b.Clear(r, slot(r, q, r), k, fmt.Sprintf("write +0.0 back (chunk from rank %d)", q), x)
			}
			sums = append(sums, x)
		}
		cur[r] = sums
	}
	// All-gather in n−1 passes.
	for p := 0; p < n-1; p++ {
		stored := make([][]int, n)
		for r := 0; r < n; r++ {
			t := (r + 1 + p) % n
			w := b.Add(r, Op{Kind: Write, Src: b.Out(r, off[r], size[r]), Dst: slot(t, r, r), Kernel: k, Label: fmt.Sprintf("ag pass %d: reduced chunk to rank %d", p, t)}, cur[r]...)
			b.Carry(r, ipcFlag(t, r, "ag"), 1, k, fmt.Sprintf("ag pass %d landed", p), w)
			stored[r] = []int{w}
		}
		cur = ipcBarrier(b, fmt.Sprintf("ag%d", p), k, others, others, func(r int) []hw.Mem { return []hw.Mem{hw.GPUMem((r + 1 + p) % n)} }, stored)
	}
	// Consume the other owners' chunks, then re-arm the own slot.
	for r := 0; r < n; r++ {
		for _, o := range others(r) {
			got := b.DataWait(r, ipcFlag(r, o, "ag"), 1, slot(r, o, o), k, fmt.Sprintf("spin on chunk %d", o), cur[r]...)
			x := b.Add(r, Op{Kind: Read, Src: slot(r, o, o), Dst: b.Out(r, off[o], size[o]), Kernel: k, Label: fmt.Sprintf("copy out chunk %d", o)}, got)
			b.Clear(r, slot(r, o, o), k, fmt.Sprintf("write +0.0 back (chunk %d)", o), x)
		}
		b.Clear(r, slot(r, r, r), k, "write +0.0 back (own chunk)", cur[r]...)
	}
	return b.Schedule()
}

// Islands groups ranks 0…n−1 of top into islands: by "socket" (CPU
// socket), or by "switch" (GPUs behind one PCIe switch, else by socket,
// as hierarchical does). Islands are ordered by their lowest rank,
// members by rank; they may differ in size.
func Islands(top *topology.Topology, n int, by string) ([][]int, error) {
	switch by {
	case "socket":
		return socketIslands(top, n), nil
	case "switch":
		isl, _, err := islands(top, n)
		return isl, err
	}
	return nil, fmt.Errorf("algos: islands by %q: want socket or switch", by)
}
