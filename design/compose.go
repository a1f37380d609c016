package design

import (
	"fmt"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/hw"
)

// The composers build the points of the space no built-in algorithm has
// the shape of. Each follows a built-in's structure (named below) with one
// choice changed; the checker proves every schedule they make.

// pullKernel is the pull kernels' launch configuration (vLLM's, as
// algos' one_stage and two_stage use it): 512 threads, blocks =
// min(36, ceil(16-B packs / threads)); one load per peer in flight in each
// loop body, a load-reduce-store loop over buffers buffers (hw.Kernel.Ranks).
// Params override blocks and threads.
func pullKernel(p Params, bytes int64, buffers int) hw.Kernel {
	threads := p.Threads
	if threads == 0 {
		threads = 512
	}
	packs := (bytes + 15) / 16
	blocks := p.Blocks
	if blocks == 0 {
		blocks = int(max(1, min(36, (packs+int64(threads)-1)/int64(threads))))
	}
	return hw.Kernel{Blocks: blocks, Threads: threads, LoadsInFlight: 1, ReduceLoop: true, LoadWaits: p.LoadWaits, Ranks: buffers}
}

// pushKernel is the push kernels' launch configuration: FlashInfer's seed
// of 16 blocks × 256 threads (pcie_ipc_policy.py) unless Params say.
func pushKernel(p Params) hw.Kernel {
	k := hw.Kernel{Blocks: 16, Threads: 256}
	if p.Blocks > 0 {
		k.Blocks = p.Blocks
	}
	if p.Threads > 0 {
		k.Threads = p.Threads
	}
	return k
}

func fence(b *algos.Builder, r int, at hw.Mem, after ...int) int {
	return algos.AddFence(b, r, at, after...)
}

// flagBarrier is a flag barrier in groups: rank r stores 1 into flag
// name[r] in the memory where each rank of to(r) polls (at(p)), and waits
// for name[p] from each rank p of from(r), after after[r]. It returns each
// rank's waits (after[r] when it waits for nobody).
func flagBarrier(b *algos.Builder, n int, name string, k hw.Kernel, at func(p int) hw.Mem, to, from func(r int) []int, after [][]int) [][]int {
	done := make([][]int, n)
	for r := 0; r < n; r++ {
		for _, p := range to(r) {
			b.Add(r, algos.Op{Kind: algos.Signal, Flag: algos.Flag{At: at(p), Name: fmt.Sprintf("%s.%d[%d]", name, p, r)}, Value: 1, Kernel: k, Label: name + " barrier"}, after[r]...)
		}
		for _, p := range from(r) {
			done[r] = append(done[r], b.Add(r, algos.Op{Kind: algos.Wait, Flag: algos.Flag{At: at(r), Name: fmt.Sprintf("%s.%d[%d]", name, r, p)}, Value: 1,
				BlockSync: true, Kernel: k, Label: name + " barrier"}, after[r]...))
		}
		if len(done[r]) == 0 {
			done[r] = after[r]
		}
	}
	return done
}

// composeHostFlagPull is one_stage (shape one_shot) or two_stage (shape
// two_shot) with every barrier flag in pinned host memory of the waiting
// GPU's socket, as host_staged places its flags: the stores are posted
// writes to host memory, every poll a host-memory round trip.
func composeHostFlagPull(p Params, req algos.Request) (*algos.Schedule, error) {
	n, S, es := req.Ranks, req.Bytes, req.DType.Size()
	b := algos.NewBuilder("design", n, S, es)
	sock := func(r int) hw.Mem { return hw.HostMem(req.Top.GPU(r).Socket) }
	others := func(r int) []int {
		var out []int
		for d := 1; d < n; d++ {
			out = append(out, (r+d)%n)
		}
		return out
	}
	launch := b.Launches()
	if p.Shape == "one_shot" {
		k := pullKernel(p, S, n)
		b.Note("one_stage's pulls with flags in host memory; %d blocks × %d threads", k.Blocks, k.Threads)
		start := flagBarrier(b, n, "start", k, sock, others, others, launch)
		ends := make([][]int, n)
		for r := 0; r < n; r++ {
			own := b.Add(r, algos.Op{Kind: algos.Read, Src: b.In(r, 0, S), Dst: b.Out(r, 0, S), Kernel: k, Label: "own input"}, start[r]...)
			ends[r] = []int{own}
			for _, q := range others(r) {
				ends[r] = append(ends[r], b.Add(r, algos.Op{Kind: algos.Read, Accumulate: true, Src: b.In(q, 0, S), Dst: b.Out(r, 0, S), Kernel: k, Label: fmt.Sprintf("pull rank %d", q)}, own))
			}
		}
		flagBarrier(b, n, "end", k, sock, others, others, ends)
		return b.Schedule(), nil
	}
	off, size := algos.Split(S, es, n)
	k := pullKernel(p, S, n)
	b.Note("two_stage's pulls with flags in host memory; %d blocks × %d threads", k.Blocks, k.Threads)
	start := flagBarrier(b, n, "start", k, sock, others, others, launch)
	mid := make([][]int, n)
	for r := 0; r < n; r++ {
		tmp := algos.On(r, "tmp", 0, size[r])
		own := b.Add(r, algos.Op{Kind: algos.Read, Src: b.In(r, off[r], size[r]), Dst: tmp, Kernel: k, Label: "stage 1 own part"}, start[r]...)
		s1 := []int{own}
		for _, q := range others(r) {
			s1 = append(s1, b.Add(r, algos.Op{Kind: algos.Read, Accumulate: true, Src: b.In(q, off[r], size[r]), Dst: tmp, Kernel: k, Label: fmt.Sprintf("stage 1 pull rank %d", q)}, own))
		}
		mid[r] = []int{fence(b, r, hw.GPUMem(r), s1...)}
	}
	mid = flagBarrier(b, n, "mid", k, sock, others, others, mid)
	for r := 0; r < n; r++ {
		b.Add(r, algos.Op{Kind: algos.Read, Src: algos.On(r, "tmp", 0, size[r]), Dst: b.Out(r, off[r], size[r]), Kernel: k, Label: "stage 2 own part"}, mid[r]...)
		for _, q := range others(r) {
			b.Add(r, algos.Op{Kind: algos.Read, Src: algos.On(q, "tmp", 0, size[q]), Dst: b.Out(r, off[q], size[q]), Kernel: k, Label: fmt.Sprintf("stage 2 pull rank %d", q)}, mid[r]...)
		}
	}
	return b.Schedule(), nil
}

// composeChunkedPush is the data-carried one-shot push (lamport_one_shot
// with Rearm deferred, pcie_ipc_one_shot with Rearm reader) with the
// message in Chunks pieces: each rank stores chunk c to every peer before
// chunk c+1, each chunk's landing its own completion, so a receiver sums
// chunk c while c+1 is on the wire.
func composeChunkedPush(p Params, req algos.Request) (*algos.Schedule, error) {
	n, S, es := req.Ranks, req.Bytes, req.DType.Size()
	chunks := int(min(int64(max(p.Chunks, 1)), S/es))
	off, size := algos.Split(S, es, chunks)
	deferred := p.Rearm == "deferred"
	copies := 2
	if deferred {
		copies = 3
	}
	b := algos.NewBuilder("design", n, S, es)
	k := pushKernel(p)
	push := k
	push.Share = 1 / float64(n-1)
	b.Note("data-carried one-shot push in %d chunks, %d rotating copies (%s re-arm); %d blocks × %d threads", chunks, copies, map[bool]string{true: "deferred", false: "reader"}[deferred], k.Blocks, k.Threads)
	slot := func(at, from, c int) algos.Range {
		return algos.On(at, "dx", int64(from)*S+off[c], size[c]).Rotating(copies, 0)
	}
	flag := func(at, from, c int) algos.Flag {
		return algos.Flag{At: hw.GPUMem(at), Name: fmt.Sprintf("dx.slot[%d].c%d", from, c)}
	}
	for r := 0; r < n; r++ {
		launch := b.Add(r, algos.Op{Kind: algos.Launch, Label: "launch"})
		if deferred {
			b.Clear(r, algos.On(r, "dx", 0, int64(n)*S).Rotating(3, 2), k, "clear previous call's buffer", launch)
		}
		prev := make([]int, n)
		for q := range prev {
			prev[q] = launch
		}
		for c := 0; c < chunks; c++ {
			for i := 0; i < n; i++ {
				q := (r + i) % n
				w := b.Add(r, algos.Op{Kind: algos.Write, Src: b.In(r, off[c], size[c]), Dst: slot(q, r, c), Kernel: push, Label: fmt.Sprintf("chunk %d to rank %d", c, q)}, prev[q])
				b.Carry(r, flag(q, r, c), 1, push, fmt.Sprintf("chunk %d to rank %d landed", c, q), w)
				prev[q] = w
			}
		}
		for c := 0; c < chunks; c++ {
			first := -1
			for i := 0; i < n; i++ {
				q := (r - i + n) % n
				got := b.DataWait(r, flag(r, q, c), 1, slot(r, q, c), k, fmt.Sprintf("spin on chunk %d from rank %d", c, q), launch)
				var x int
				if first < 0 {
					x = b.Add(r, algos.Op{Kind: algos.Read, Src: slot(r, q, c), Dst: b.Out(r, off[c], size[c]), Kernel: k, Label: fmt.Sprintf("sum chunk %d: own", c)}, got)
					first = x
				} else {
					x = b.Add(r, algos.Op{Kind: algos.Reduce, Src: slot(r, q, c), Dst: b.Out(r, off[c], size[c]), Kernel: k, Label: fmt.Sprintf("sum chunk %d: rank %d", c, q)}, got, first)
				}
				if !deferred {
					b.Clear(r, slot(r, q, c), k, fmt.Sprintf("re-arm chunk %d of rank %d", c, q), x)
				}
			}
		}
	}
	return b.Schedule(), nil
}

// composeIslands is algos' hierarchical (reduce-scatter inside each
// island by pulls, exchange one share with the counterparts in the other
// islands, all-gather inside by pulls) with the islands and the exchange
// chosen: Exchange pull as hierarchical (a barrier with the counterparts,
// then pulls of their partial sums), or push (each member stores its
// island's partial sum into a receive slot of every counterpart and flags
// it; the counterpart announces at launch that its slots are free, as
// one_shot_push does).
func composeIslands(p Params, req algos.Request) (*algos.Schedule, error) {
	by := p.Islands
	if by == "" {
		by = "socket"
	}
	il, err := groupIslands(req, by)
	if err != nil {
		return nil, err
	}
	if p.LoadWaits > il.G {
		return nil, fmt.Errorf("design: load_waits %d: the island's pulls load one pack from each of its %d members' buffers an iteration, so they wait at most %d times", p.LoadWaits, il.G, il.G)
	}
	c := newIslandsComposer(p, req, il)
	push := p.Exchange == "push"
	c.b.Note("%d %s islands of %d: %v; exchange by %s; %d blocks × %d threads", il.M, by, il.G, il.Isl, map[bool]string{true: "push", false: "pull"}[push], c.k.Blocks, c.k.Threads)
	launch := c.b.Launches()
	startTo := func(r int) []int { return append(il.Peers(r), il.Counterparts(r)...) }
	if push {
		startTo = il.Peers
		c.announceSlotsFree(launch)
	}
	start := flagBarrier(c.b, c.n, "start", c.k, hw.GPUMem, startTo, startTo, launch)
	rs := c.reduceScatter(start)
	var ex [][]int
	if push {
		ex = c.exchangeByPush(rs, launch)
	} else {
		ex = c.exchangeByPull(rs)
	}
	c.allGather(ex)
	return c.b.Schedule(), nil
}

// groupIslands groups the request's ranks by socket or switch (by); it
// refuses a single island or islands of unequal sizes as not composable.
func groupIslands(req algos.Request, by string) (*algos.IslandGroup, error) {
	n := req.Ranks
	isl, err := algos.Islands(req.Top, n, by)
	if err != nil {
		return nil, err
	}
	m, g := len(isl), len(isl[0])
	if m < 2 {
		return nil, notComposable("%d ranks on %s are one %s island", n, req.Top.Name, by)
	}
	for _, x := range isl {
		if len(x) != g {
			return nil, notComposable("%d ranks on %s form %s islands of unequal sizes", n, req.Top.Name, by)
		}
	}
	return algos.NewIslandGroup(isl, n), nil
}

// islandsComposer writes composeIslands' phases. Member j of every island
// owns share j of the message; its buffers: "tmp" (the island's partial
// sum of the share), "red" (the whole sum of it) and, for the push
// exchange, "dx.recv" (a slot of S bytes per island).
type islandsComposer struct {
	*algos.IslandGroup
	b         *algos.Builder
	n         int
	S         int64
	off, size []int64   // share j: offset and length
	k, wk     hw.Kernel // the pull kernel; wk: its share for one of m−1 pushes
}

// newIslandsComposer starts the schedule of point p for req on islands il.
func newIslandsComposer(p Params, req algos.Request, il *algos.IslandGroup) *islandsComposer {
	n, S, es := req.Ranks, req.Bytes, req.DType.Size()
	c := &islandsComposer{IslandGroup: il, b: algos.NewBuilder("design", n, S, es), n: n, S: S}
	c.off, c.size = algos.Split(S, es, il.G)
	c.k = pullKernel(p, S, il.G) // the island's buffers: its reduce-scatter and all-gather
	c.wk = c.k
	c.wk.Share = 1 / float64(il.M-1)
	return c
}

// share is rank r's share of the message in its buffer name.
func (c *islandsComposer) share(r int, name string) algos.Range {
	return algos.On(r, name, 0, c.size[c.Where[r][1]])
}

// announceSlotsFree: at launch every rank tells each counterpart that its
// exchange slot is free.
func (c *islandsComposer) announceSlotsFree(launch [][]int) {
	for r := 0; r < c.n; r++ {
		for _, x := range c.Counterparts(r) {
			c.b.Add(r, algos.Op{Kind: algos.Signal, Flag: algos.Flag{At: hw.GPUMem(x), Name: fmt.Sprintf("dx.free[%d]", r)}, Value: 1, Kernel: c.k, Label: "exchange slots free"}, launch[r]...)
		}
	}
}

// reduceScatter: each rank sums its share over its island into tmp (its
// own input, then a pull from each peer) after start[r]; it returns each
// rank's ops.
func (c *islandsComposer) reduceScatter(start [][]int) [][]int {
	rs := make([][]int, c.n)
	for r := 0; r < c.n; r++ {
		j := c.Where[r][1]
		tmp := c.share(r, "tmp")
		own := c.b.Add(r, algos.Op{Kind: algos.Read, Src: c.b.In(r, c.off[j], c.size[j]), Dst: tmp, Kernel: c.k, Label: "rs own share"}, start[r]...)
		rs[r] = []int{own}
		for _, q := range c.Peers(r) {
			rs[r] = append(rs[r], c.b.Add(r, algos.Op{Kind: algos.Read, Accumulate: true, Src: c.b.In(q, c.off[j], c.size[j]), Dst: tmp, Kernel: c.k, Label: fmt.Sprintf("rs pull rank %d", q)}, own))
		}
	}
	return rs
}

// exchangeByPush: each rank stores its partial sum into the exchange slot
// of its island at every counterpart once that slot is free, and flags
// it; then it adds, into red, its own partial sum and each counterpart's
// as it lands. It returns each rank's ops.
func (c *islandsComposer) exchangeByPush(rs, launch [][]int) [][]int {
	ex := make([][]int, c.n)
	for r := 0; r < c.n; r++ {
		i, j := c.Where[r][0], c.Where[r][1]
		tmp := c.share(r, "tmp")
		for _, x := range c.Counterparts(r) {
			free := c.b.Add(r, algos.Op{Kind: algos.Wait, Flag: algos.Flag{At: hw.GPUMem(r), Name: fmt.Sprintf("dx.free[%d]", x)}, Value: 1, Kernel: c.k, Label: fmt.Sprintf("exchange slot free at rank %d", x)}, launch[r]...)
			w := c.b.Add(r, algos.Op{Kind: algos.Write, Src: tmp, Dst: algos.On(x, "dx.recv", int64(i)*c.S, c.size[j]), Kernel: c.wk, Label: fmt.Sprintf("exchange push to rank %d", x)}, append([]int{free}, rs[r]...)...)
			c.b.Add(r, algos.Op{Kind: algos.Signal, Flag: algos.Flag{At: hw.GPUMem(x), Name: fmt.Sprintf("dx.ex[%d]", r)}, Value: 1, Kernel: c.wk, Label: fmt.Sprintf("exchange flag to rank %d", x)}, w)
		}
		red := c.share(r, "red")
		own := c.b.Add(r, algos.Op{Kind: algos.Read, Src: tmp, Dst: red, Kernel: c.k, Label: "exchange own partial"}, rs[r]...)
		ex[r] = []int{own}
		for _, x := range c.Counterparts(r) {
			got := c.b.Add(r, algos.Op{Kind: algos.Wait, Flag: algos.Flag{At: hw.GPUMem(r), Name: fmt.Sprintf("dx.ex[%d]", x)}, Value: 1, Kernel: c.k, Label: fmt.Sprintf("exchange from rank %d", x)}, launch[r]...)
			ex[r] = append(ex[r], c.b.Add(r, algos.Op{Kind: algos.Reduce, Src: algos.On(r, "dx.recv", int64(c.Where[x][0])*c.S, c.size[j]), Dst: red, Kernel: c.k, Label: fmt.Sprintf("exchange add rank %d", x)}, got, own))
		}
	}
	return ex
}

// exchangeByPull: a barrier with the counterparts, then each rank sums,
// into red, its own partial sum and a pull of each counterpart's. It
// returns each rank's ops.
func (c *islandsComposer) exchangeByPull(rs [][]int) [][]int {
	ex := make([][]int, c.n)
	mid := flagBarrier(c.b, c.n, "rs", c.k, hw.GPUMem, c.Counterparts, c.Counterparts, rs)
	for r := 0; r < c.n; r++ {
		red := c.share(r, "red")
		own := c.b.Add(r, algos.Op{Kind: algos.Read, Src: c.share(r, "tmp"), Dst: red, Kernel: c.k, Label: "exchange own partial"}, append(append([]int{}, rs[r]...), mid[r]...)...)
		ex[r] = []int{own}
		for _, x := range c.Counterparts(r) {
			ex[r] = append(ex[r], c.b.Add(r, algos.Op{Kind: algos.Read, Accumulate: true, Src: c.share(x, "tmp"), Dst: red, Kernel: c.k, Label: fmt.Sprintf("exchange pull rank %d", x)}, own))
		}
	}
	return ex
}

// allGather: a barrier inside each island, then each rank copies its own
// share and pulls each peer's into its output.
func (c *islandsComposer) allGather(ex [][]int) {
	ag := flagBarrier(c.b, c.n, "ag", c.k, hw.GPUMem, c.Peers, c.Peers, ex)
	for r := 0; r < c.n; r++ {
		j := c.Where[r][1]
		dep := append(append([]int{}, ex[r]...), ag[r]...)
		c.b.Add(r, algos.Op{Kind: algos.Read, Src: c.share(r, "red"), Dst: c.b.Out(r, c.off[j], c.size[j]), Kernel: c.k, Label: "ag own share"}, dep...)
		for _, q := range c.Peers(r) {
			jq := c.Where[q][1]
			c.b.Add(r, algos.Op{Kind: algos.Read, Src: c.share(q, "red"), Dst: c.b.Out(r, c.off[jq], c.size[jq]), Kernel: c.k, Label: fmt.Sprintf("ag pull rank %d", q)}, dep...)
		}
	}
}
