package hw

import (
	"fmt"
	"math"

	"github.com/arsim/arsim/sim"
)

// A kernel's rate is the sum over its thread blocks of what each block's
// loop moves per iteration over the time an iteration takes; the sum is
// then shared on the links like any flow. Kernel.Loop names the loop a
// transfer runs in; LoopRate turns it into a rate bound. Each loop's terms
// come from the code that runs it (NCCL's primitives, cited where the
// planners build them) and each time from a measurement on one GPU
// (testdata/h200x1-arsim):
//
//   - LoopLL, NCCL's LL protocol (prims_ll.h): each thread moves one 16-byte
//     line, 8 bytes of data, per iteration, and its volatile poll of the
//     line keeps one line in flight. An iteration waits one round trip of a
//     warp-wide 16-byte load to the memory the lines live in
//     (Kernel.LoopAt), plus gpu.ll_iter_overhead and gpu.ll_iter_per_warp
//     for each warp of the block; over host lines a device wrote just
//     before (Kernel.Fresh), hostmem.fresh_line_saving less; a send with
//     no lines to poll (Kernel.NoPoll), gpu.poll_loop_overhead less; in NCCL's
//     steps of Kernel.StepBytes, nccl.ll_step_overhead more per step;
//     with its lines or its reduction's user buffer in device memory
//     rather than the L2 (Kernel.FromDRAM), gpu.dram_src_extra more per
//     iteration (so too LL128's chain over lines in device memory, and a
//     Simple loop's iteration over sources there).
//   - LoopLL128, NCCL's LL128 protocol (prims_ll128.h): a warp moves 128-byte
//     lines, 120 bytes of data and a flag word each, 4 16-byte vectors per
//     thread per iteration (64 bytes, 60 of data), polling until every
//     line's flag matches. An iteration waits the longer of its chain —
//     one round trip of the line loads to Kernel.LoopAt (over fresh host
//     lines, hostmem.fresh_line_saving less) plus gpu.ll128_iter_overhead
//     and gpu.ll128_iter_per_warp for each warp of the thread group (the
//     block's threads times Kernel.Share: the tree's up or down group) —
//     and the SM's issue of the group's lines, loaded and stored on
//     (smIssueTime; measured on H200: one block's local LL128 loop at 640
//     threads moves its lines at the copy loop's SM rate, and over host
//     memory it takes one round trip from 64 to 640 threads); then, in
//     NCCL's loop, which loads its lines again once their flags match
//     (Kernel.Reload), a second round trip; with a reduction,
//     gpu.ll128_reduce_extra more; in NCCL's steps
//     of Kernel.StepBytes, nccl.ll128_step_overhead more per step.
//   - LoopSimple, NCCL's Simple protocol (prims_simple.h, reduceCopy): each
//     thread keeps Kernel.Unroll 16-byte loads per source in flight, so a
//     block's loads turn over Threads × 16 B × Unroll per iteration: a
//     round trip to the sources' memory, gpu.copy_iter_overhead, the
//     issue of the further loads (gpu.vector_issue) and, for each warp, of
//     the further stores (gpu.vector_issue_per_warp), and from host memory
//     each further wait of the compiled loop (gpu.load_wait_host);
//     the SM spends 1/gpu.sm_load_bandwidth on each byte of every source
//     and 1/gpu.sm_local_store_bandwidth on each byte of every destination
//     (and of the output, Kernel.OutStores), 1/gpu.sm_store_bandwidth on
//     each byte it stores out of the GPU (Kernel.StoresOut), added
//     (smIssueSeconds). A copy
//     takes at least one iteration, however few bytes it moves, and its first
//     iteration waits the loop's start more (firstIteration, loopStart).
//
// A loop's rate is in payload bytes per second for the whole kernel (its
// resident blocks, times Kernel.Share).

// LoopKind is the per-thread loop a transfer runs in.
type LoopKind uint8

// Loop kinds.
const (
	// LoopNone: no loop bound beyond Little's law on reads and the SM
	// store rate on writes.
	LoopNone LoopKind = iota
	// LoopLL: NCCL LL, one 16-byte line (8 B of data) per thread per
	// iteration, polled until its flags match.
	LoopLL
	// LoopSimple: an unrolled copy or reduction, Unroll 16-byte loads per
	// source in flight per thread (NCCL Simple, custom copy kernels).
	LoopSimple
	// LoopRanks: a pull-and-reduce loop over Kernel.Ranks buffers — the
	// rank's own and its peers' (in their GPU memory, or in host memory
	// with Kernel.RanksInHost) — whose loop over ranks is bounded at run
	// time, so each iteration loads one 16-byte vector per buffer one after
	// another: it waits the sum of their round trips plus
	// gpu.reduce_loop_overhead. Each buffer's transfer moves Threads × 16
	// bytes per iteration. (Loops unrolled over a world size known when
	// compiled, as vLLM's packed_reduce<ngpus> and PyTorch's kernels are,
	// issue every load first and wait one round trip: LoopNone with
	// Kernel.ReduceLoop.)
	LoopRanks
	// LoopLL128: NCCL LL128, 64 bytes of 128-byte lines (60 of data) per
	// thread per iteration, polled until their flags match.
	LoopLL128
)

// ll128DataPerThread is what one thread of an LL128 loop moves per
// iteration: 4 vectors of 16 bytes, 120/128 of them data.
const ll128DataPerThread = 64 * 120 / 128

// ll128LineBytesPerThread is what an LL128 thread loads of lines per
// iteration, flags included: 4 16-byte vectors.
const ll128LineBytesPerThread = 64

// String returns none, ll, simple, ranks or ll128.
func (k LoopKind) String() string { return [...]string{"none", "ll", "simple", "ranks", "ll128"}[k] }

// copyIterTime is one iteration of a LoopSimple loop of rank r: the round
// trip of its loads, gpu.copy_iter_overhead, gpu.vector_issue for every
// further 16-byte load per thread (Unroll × Sources of them), and
// gpu.vector_issue_per_warp per warp for every further 16-byte store (Unroll
// of them: measured on one H200, a two-source copy's iteration grows from
// 128 to 512 threads as a one-source copy's of as many stores, not of as
// many loads; perblock*.jsonl, copy_registers.jsonl).
func (m *Machine) copyIterTime(r int, k Kernel) (sim.Duration, error) {
	return m.copyIterTimeFor(r, k, 0)
}

// copyIterTimeFor is copyIterTime for a loop over bytes bytes (0: any
// number): a thread issues no more loads than its share of them.
func (m *Machine) copyIterTimeFor(r int, k Kernel, bytes sim.Bytes) (sim.Duration, error) {
	rtt, err := m.vectorRoundTrip(r, k.LoopAt)
	if err != nil {
		return 0, err
	}
	unroll := max(k.Unroll, 1)
	if bytes > 0 {
		threads := int64(max(1, k.Threads*max(k.Blocks, 1)))
		unroll = int(min(int64(unroll), max(1, (int64(bytes)/16+threads-1)/threads)))
	}
	vectors := unroll*max(k.Sources, 1) - 1
	warps := sim.Duration((int(float64(k.Threads)*k.share()) + 31) / 32)
	hostWarps := sim.Duration(0)
	if k.StoresToHost && !k.LoopAt.Host {
		// stores to host memory issue more slowly than to GPU memory, in
		// NCCL's hunk shape too (measured on one H200: perblock.jsonl,
		// copy_registers.jsonl, nccl_copy.jsonl, 3–5 ns a warp for each
		// further store at 128–512 threads). From host memory the loads'
		// round trip hides it: at 512 threads a copy from host to host
		// memory takes about as much more than host to GPU memory with 8
		// stores a thread as with one, 0.26 and 0.23 µs
		// (host_copies.jsonl, host_copies_2.jsonl).
		hostWarps = warps
	}
	if k.Hunks && (k.LoopAt == GPUMem(r) || k.LoopAt.Host) {
		// NCCL's reduceCopy over local memory: a warp's loads are one
		// contiguous hunk, and each further load costs gpu.vector_issue
		// alone (measured on one H200: testdata/h200x1-arsim/nccl_copy.jsonl,
		// loop_start.jsonl). Over host memory the same (one H200's touched
		// pages, host_copies_4.jsonl: 1.53 → 1.69 µs from 96 to 544
		// threads to GPU memory, where the per-warp cost gave 1.65 → 2.15;
		// the H100's perblock_more*.jsonl, perblock_rest*.jsonl). Over a
		// peer's memory it is not measured, and NCCL's Simple on two H200s
		// (NVLink) runs slower than even the plain loop's issue gives: the
		// per-warp cost stays.
		warps = 0
	}
	issue := m.Phys.VectorIssue
	if k.SrcInL2 && k.LoopAt == GPUMem(r) {
		// From the L2 a further load costs its issue alone
		// (gpu.vector_issue_l2); gpu.vector_issue, measured over fresh
		// data, holds what device memory adds to each.
		issue = m.Phys.VectorIssueL2
	}
	it := rtt + m.copyIterOverhead(k) + sim.Duration(vectors)*issue +
		sim.Duration(unroll-1)*(warps*m.Phys.VectorIssuePerWarp+hostWarps*m.Phys.HostStoreIssuePerWarp)
	if k.LoadWaits > 1 && k.LoopAt == GPUMem(r) && !k.SrcInL2 {
		// Sources fresh in the rank's own device memory: each further
		// wait is another whole trip to it, the round trip and
		// gpu.copy_dram_extra, on top of the loads' issue (measured on one
		// H200: reduce_depth.jsonl, copies and reductions of 1–8 sources
		// at 128 and 512 threads whose SASS waits 2–7 times an iteration,
		// 330–350 ns a wait). From host memory each further wait costs
		// about a third of its round trip (below).
		it += sim.Duration(k.LoadWaits-1) * (rtt + m.Phys.CopyDRAMExtra)
	} else if k.LoadWaits > 1 && k.LoopAt == GPUMem(r) {
		// Sources in the L2: each further wait is another trip to it,
		// gpu.load_wait_l2 (measured on one H200: load_waits_lb.jsonl,
		// NCCL's reduceCopy compiled for 256 and 1,024 threads, 2–7 waits
		// an iteration at 128 threads, sources in the L2).
		it += sim.Duration(k.LoadWaits-1) * m.Phys.LoadWaitL2
	} else if k.LoadWaits > 1 && k.LoopAt.Host {
		// From pinned host memory each further wait costs a fraction of
		// the round trip: the later batches' loads were issued before the
		// first wait ended (gpu.load_wait_host, measured on one H200:
		// perblock.jsonl, two-source copies of 4 and 8 packs a source,
		// three waits an iteration).
		it += sim.Duration(k.LoadWaits-1) * m.Phys.LoadWaitHost
	}
	if k.FromDRAM {
		it += m.Phys.DRAMSrcExtra
	}
	if k.SpillLoads > 0 && !k.Hunks && k.LoopAt == GPUMem(r) {
		// A loop that spills registers and reads its sources in its own
		// GPU's memory waits once more an iteration for its reloads
		// (gpu.spill_reload_wait, measured on one H200: perblock.jsonl,
		// pb_copy_8_2 at 128 threads), whether it reads them plain or
		// volatile: on one H100 (volatile_loads*.jsonl, spill_reloads.jsonl)
		// its volatile side saves one wait of its loads (its SASS issues
		// them in another order, Kernel.LoadWaits) and pays this one. The
		// spilling builds of NCCL's reduceCopy (Hunks) are not charged:
		// with it one H200's load_waits.jsonl reductions would go from
		// −4…+24 % to +26…+43 %. From host memory the records show no
		// such wait.
		it += m.Phys.SpillReloadWait
	}
	if k.StoresHost && k.LoopAt.Host {
		// the loads wait behind the block's own stores to the host
		// (Kernel.StoresHost), as beside one storing block (HostLoadWait)
		it += m.Phys.PostedWaitOne
	}
	if k.LoopAt == GPUMem(r) && !k.SrcInL2 {
		blocks := min(max(k.Blocks, 1), m.Phys.SMs*m.Phys.MaxBlocksPerSM)
		it = m.loaded(it, float64(blocks)*float64(k.Threads)*k.share()*16*float64(unroll*max(k.Sources, 1)))
	}
	return it, nil
}

// loaded is a loop iteration of base that waits on loads of the rank's
// own GPU memory, perIter bytes of them an iteration from all the
// kernel's blocks: their round trip grows with the load they put on the
// memory, by gpu.mem_loaded_latency at full load — base + latency ×
// perIter / (iteration × gpu.mem_bandwidth × gpu.mem_efficiency), solved
// for the iteration. Measured on one H200: a one-load copy's iteration
// grows from 397 ns at 1 block to 430, 478, 552 and 678 at 8, 32, 66 and
// 132 blocks. The load is the device memory's: loops whose loads the L2
// serves (a copy's sources in the L2, Kernel.SrcInL2; a line loop whose
// launch touches less than gpu.l2_size, not Kernel.FromDRAM) wait none of
// it. Measured on H200s and H100s (perblock*.jsonl, nothing refitted): LL
// recv_reduce_send over local lines, 512 threads, 353–362 ns an
// iteration from 1 to 32 blocks, whose launch stays in the L2, then 667
// and 825 at 66 and 132, past it; NCCL's LL128 reduction at 640 threads
// 1,030–1,040 ns to 16 blocks, then 1,480–1,500 at 32, the first count
// past the L2 (the H100: 1,750–1,815).
func (m *Machine) loaded(base sim.Duration, perIter float64) sim.Duration {
	if m.Phys.MemLoadedLatency <= 0 || perIter <= 0 || m.Phys.GPUMemBandwidth <= 0 {
		return base
	}
	b := float64(base)
	busy := perIter / float64(m.Phys.GPUMemBandwidth) * float64(sim.Second) // ps the memory needs for them
	return sim.Duration((b + math.Sqrt(b*b+4*float64(m.Phys.MemLoadedLatency)*busy)) / 2)
}

// copyIterOverhead is what a copy loop's iteration of kernel k adds to the
// round trip of its loads: gpu.copy_iter_overhead, measured over fresh
// data in device memory against a dependent load that hits the L2, so it
// holds the device memory beyond the L2 (gpu.copy_dram_extra) as well as
// the store and the loop. Sources in the L2 (Kernel.SrcInL2) or in host
// memory, whose round trip already holds the host's DRAM, add only the
// store and the loop: that less gpu.copy_dram_extra.
func (m *Machine) copyIterOverhead(k Kernel) sim.Duration {
	if k.LoopAt.Host || k.SrcInL2 {
		return max(0, m.Phys.CopyIterOverhead-m.Phys.CopyDRAMExtra)
	}
	return m.Phys.CopyIterOverhead
}

// firstIteration is what a LoopSimple copy of bytes waits before its
// stream at the loop's rate: one iteration (copyIterTimeFor) less the time
// the stream takes, so that a copy of less than an iteration takes the
// iteration, and a longer one its bytes at the loop's rate; and the
// loop's start (loopStart) on top.
func (m *Machine) firstIteration(r int, k Kernel, bytes sim.Bytes) (sim.Duration, error) {
	it, err := m.copyIterTimeFor(r, k, bytes)
	if err != nil {
		return 0, err
	}
	tail, iter1, noWhole, err := m.hunkTail(r, k, bytes)
	if err != nil {
		return 0, err
	}
	if noWhole {
		it = iter1 // NCCL's reduceCopy: no whole hunk, only passes of one load a thread
	}
	start := m.loopStart(k, bytes)
	rate, err := m.LoopRate(r, k)
	if err != nil || rate <= 0 {
		return it + tail + start, err
	}
	stream, err := sim.FromSeconds(float64(bytes) / float64(rate))
	if err != nil {
		return 0, fmt.Errorf("hw: copy of %d B at %v: %w", bytes, rate, err)
	}
	return max(0, it-stream) + tail + start, nil
}

// loopStart is what a LoopSimple loop moving bytes waits beyond its
// steady iterations: its warps start together, after a block barrier or
// the launch, and each warp's first loads wait behind the others':
// gpu.loop_start, and gpu.loop_start_per_load for each warp and each load
// a thread issues before the loop runs steady, up to
// gpu.loop_start_loads of them (Unroll a pass, predicated where a thread
// has no data, over the passes the bytes take). Measured on one H200
// (testdata/h200x1-arsim/loop_start.jsonl): one-load copies of 1, 2 and 4
// iterations at 64–1,024 threads wait 90–400 ns more than steady ones,
// whether they store to local or host memory. NCCL's reduceCopy
// (Kernel.Hunks) waits none.
func (m *Machine) loopStart(k Kernel, bytes sim.Bytes) sim.Duration {
	if k.Loop != LoopSimple || k.Hunks || bytes <= 0 {
		return 0
	}
	threads := float64(k.Threads) * k.share()
	unroll := int64(max(k.Unroll, 1))
	window := int64(max(k.Blocks, 1)) * int64(max(threads, 1)) * 16 * unroll
	loads := min(float64((int64(bytes)+window-1)/window*unroll), m.Phys.LoopStartLoads)
	warps := float64((int(threads) + 31) / 32)
	return m.Phys.LoopStart + sim.Duration(warps*loads*float64(m.Phys.LoopStartPerLoad))
}

// llFittedWarpOps is the memory instructions a warp issues each iteration
// in the loop gpu.ll_iter_per_warp was fitted on (recv_reduce_send).
const llFittedWarpOps = 3

// llIterTime is one LL loop iteration of a block of threads threads whose
// lines live in memory at: the lines' round trip, gpu.ll_iter_overhead
// and, for each warp, gpu.ll_iter_per_warp, fitted on recv_reduce_send's
// three memory instructions a warp (the line, the user buffer, the sent
// line), taken in proportion to the loop's own ops (Kernel.LLWarpOps; 0:
// three). Measured on one H200, 64–512 threads, the operation compiled
// in (ll_ops_2.jsonl): a warp adds 1.2 ns to recv (two ops) and 2.4 ns to
// recv_reduce_send, 3.9 to recv_copy_send, 5.3 to recv_reduce_copy_send
// (four); the proportion's form was chosen after seeing them.
func (m *Machine) llIterTime(r int, at Mem, threads, ops int) (sim.Duration, error) {
	rtt, err := m.vectorRoundTrip(r, at)
	if err != nil {
		return 0, err
	}
	warps := (threads + 31) / 32
	perWarp := m.Phys.LLIterPerWarp
	if ops > 0 {
		perWarp = perWarp * sim.Duration(ops) / llFittedWarpOps
	}
	return rtt + m.Phys.LLIterOverhead + sim.Duration(warps)*perWarp, nil
}

// vectorRoundTrip is the round trip of a warp-wide 16-byte load by rank r
// of memory at: a dependent load's round trip, plus, over PCIe, what
// splitting a warp's 512 bytes into read completions adds
// (gpu.vector_load_extra_pcie).
func (m *Machine) vectorRoundTrip(r int, at Mem) (sim.Duration, error) {
	rtt, err := m.RoundTrip(r, at)
	if err != nil {
		return 0, err
	}
	if at.Host || at.Rank != r {
		p, err := m.path(GPUMem(r), at)
		if err != nil {
			return 0, err
		}
		if !p.nvlink() {
			rtt += m.Phys.VectorLoadExtraPCIe
		}
	}
	return rtt, nil
}

// LoopRate is the most the kernel's loop moves for one transfer of rank r,
// in payload bytes per second over all its resident blocks (times
// k.Share); 0 when k.Loop is LoopNone.
func (m *Machine) LoopRate(r int, k Kernel) (sim.Rate, error) {
	if k.Loop == LoopNone {
		return 0, nil
	}
	w := m.loopWays(r)
	if w != nil {
		for i := range w.e {
			if e := &w.e[i]; e.ok && sameKernel(&e.k, &k) {
				return e.rate, nil
			}
		}
	}
	key := loopRateKey{rank: r, k: k}
	rate, ok := m.loopRates[key]
	if !ok {
		var err error
		if rate, err = m.loopRate(r, k); err != nil {
			return 0, err
		}
		if m.loopRates == nil {
			m.loopRates = map[loopRateKey]sim.Rate{}
		}
		m.loopRates[key] = rate
	}
	if w != nil {
		w.e[w.next] = loopMemo{ok: true, k: k, rate: rate}
		w.next = (w.next + 1) % len(w.e)
	}
	return rate, nil
}

// loopMemos are a rank's last loop rates (LoopRate), found by comparing
// kernels as bytes (sameKernel) before the map, whose key hashes the
// kernel's strings.
type loopMemos struct {
	e    [4]loopMemo
	next int
}

type loopMemo struct {
	ok   bool
	k    Kernel
	rate sim.Rate
}

// loopWays returns GPU rank r's loop rate memos, nil for another rank.
func (m *Machine) loopWays(r int) *loopMemos {
	if uint(r) >= uint(m.Top.NumGPUs()) {
		return nil
	}
	if m.loopMemo == nil {
		m.loopMemo = make([]loopMemos, m.Top.NumGPUs())
	}
	return &m.loopMemo[r]
}

// loopRateKey is a rank's kernel: what its loop rate depends on besides
// the machine.
type loopRateKey struct {
	rank int
	k    Kernel
}

// loopRate is LoopRate uncached.
func (m *Machine) loopRate(r int, k Kernel) (sim.Rate, error) {
	blocks := min(k.Blocks, m.Phys.SMs*m.Phys.MaxBlocksPerSM)
	threads := float64(k.Threads) * k.share()
	switch k.Loop {
	case LoopLL:
		it, err := m.llIterTime(r, k.LoopAt, int(threads), k.LLWarpOps) // the thread group's warps (the tree's up or down group)
		if err != nil {
			return 0, err
		}
		if k.Fresh && k.LoopAt.Host {
			it = max(it-m.Phys.FreshLineSaving, 1)
		}
		if k.NoPoll {
			it = max(it-m.Phys.PollLoopOverhead, 1)
		}
		if k.FromDRAM {
			it += m.Phys.DRAMSrcExtra
		}
		if k.RuntimeOp {
			it += m.Phys.LLRuntimeOp
		}
		if k.LoopAt == GPUMem(r) && k.FromDRAM {
			it = m.loaded(it, k.memLoads(float64(blocks)*threads*16, float64(blocks)*threads*8)) // its lines, or all it loads (Kernel.MemLoads)
		}
		if k.NCCLLoop {
			it += m.Phys.LLIterExtra
		}
		if perIter := threads * 8; k.StepBytes > 0 && perIter > 0 {
			// A step's bookkeeping, spread over its iterations.
			it += sim.Duration(float64(m.Phys.LLStepOverhead) * perIter / float64(k.StepBytes))
		}
		return sim.Rate(float64(blocks) * threads * 8 / it.Seconds()), nil
	case LoopLL128:
		warps := (int(threads) + 31) / 32
		rtt, err := m.vectorRoundTrip(r, k.LoopAt)
		if err != nil {
			return 0, err
		}
		// The chain of one iteration (the lines' round trip, the loop's
		// own work and each warp's), or the block's line loads at the
		// SM's load rate, whichever is longer.
		chain := rtt + m.Phys.LL128IterOverhead + sim.Duration(warps)*m.Phys.LL128IterPerWarp
		if k.Fresh && k.LoopAt.Host {
			chain = max(chain-m.Phys.FreshLineSaving, 1)
		}
		if k.FromDRAM {
			chain += m.Phys.DRAMSrcExtra
		}
		if k.LoopAt == GPUMem(r) && k.FromDRAM {
			chain = m.loaded(chain, k.memLoads(float64(blocks)*float64(warps*32*ll128LineBytesPerThread), float64(blocks)*threads*ll128DataPerThread))
		}
		lines := float64(warps * 32 * ll128LineBytesPerThread)
		local, remote := lines, 0.0 // the lines loaded, and stored on (or their data)
		if k.StoresOut {
			local, remote = 0, lines
		}
		it := max(chain, sim.Duration(math.Ceil(m.smIssueSeconds(lines, local, remote)*float64(sim.Second))))
		if k.Reload {
			it += rtt
		}
		if k.NCCLLoop {
			it += m.Phys.LL128IterExtra
		}
		if k.Sources != 1 {
			it += m.Phys.LL128ReduceExtra // what the reduction adds: the user buffer's load and the add
		}
		if perIter := threads * ll128DataPerThread; k.StepBytes > 0 && perIter > 0 {
			it += sim.Duration(float64(m.Phys.LL128StepOverhead) * perIter / float64(k.StepBytes))
		}
		return sim.Rate(float64(blocks) * threads * ll128DataPerThread / it.Seconds()), nil
	case LoopSimple:
		it, err := m.copyIterTime(r, k)
		if err != nil {
			return 0, err
		}
		unroll := float64(max(k.Unroll, 1))
		sources := float64(max(k.Sources, 1))
		// The SM issues every source's loads and every destination's
		// stores (a push: wire bytes) of each payload byte, out of the GPU
		// at its remote rate (smIssueSeconds).
		local, remote := k.wire()+float64(max(k.OutStores, 0)), 0.0
		if k.StoresOut {
			local, remote = float64(max(k.OutStores, 0)), k.wire()
		}
		sources += k.SpillLoads / (16 * unroll) // register spills, issued as the copy's own (Kernel.SpillLoads)
		local += k.SpillStores / (16 * unroll)
		perBlock := threads * 16 * unroll / it.Seconds()
		if s := m.smIssueSeconds(sources, local, remote); s > 0 {
			perBlock = min(perBlock, k.share()/s)
		}
		return sim.Rate(float64(blocks) * perBlock), nil
	case LoopRanks:
		it, err := m.rankLoopTime(r, k)
		if err != nil {
			return 0, err
		}
		return sim.Rate(float64(blocks) * float64(k.Threads) * 16 / it.Seconds()), nil
	}
	return 0, fmt.Errorf("hw: unknown loop kind %d", k.Loop)
}

// smIssueTime is how long one block's SM takes to issue loads of loaded
// bytes and stores of stored bytes: its load/store pipe spends
// 1/gpu.sm_load_bandwidth on each byte loaded and
// 1/gpu.sm_local_store_bandwidth on each byte stored, one after the other
// (and 1/gpu.sm_store_bandwidth on each byte stored out of the GPU:
// smIssueSeconds). Measured on one H200
// (testdata/h200x1-arsim/nccl_copy.jsonl, NCCL's loop shape, one block of
// 512 threads, sources in the L2): a copy moves 48.9 GB/s and a two-source
// reduction 39.9, which set the two rates; the same loop storing to two
// destinations then moves 27.6 GB/s from one source and 24.5 from two
// (nccl_dests.jsonl), as the sum predicts (27.7 and 24.5), where separate
// bounds on loads and stores give 25 and 24.
func (m *Machine) smIssueTime(loaded, stored float64) sim.Duration {
	return sim.Duration(math.Ceil(m.smIssueSeconds(loaded, stored, 0) * float64(sim.Second)))
}

// smIssueSeconds is the seconds one block's SM spends issuing loads of
// loaded bytes, stores of local bytes into its own GPU's memory and of
// remote bytes out of it (gpu.sm_load_bandwidth,
// gpu.sm_local_store_bandwidth, gpu.sm_store_bandwidth; 0 for a rate not
// set).
func (m *Machine) smIssueSeconds(loaded, local, remote float64) float64 {
	var s float64
	if m.Phys.SMLoadRate > 0 {
		s += loaded / float64(m.Phys.SMLoadRate)
	}
	if m.Phys.SMLocalStoreRate > 0 {
		s += local / float64(m.Phys.SMLocalStoreRate)
	}
	if m.Phys.SMStoreRate > 0 {
		s += remote / float64(m.Phys.SMStoreRate)
	}
	return s
}

// rankLoopTime is one iteration of a LoopRanks loop of rank r: the round
// trips to every buffer in turn, plus the loop's own overhead
// (gpu.reduce_loop_overhead, and gpu.reduce_loop_extra_pcie once when a
// buffer is across PCIe).
func (m *Machine) rankLoopTime(r int, k Kernel) (sim.Duration, error) {
	it := m.Phys.GPUMemLatency + m.Phys.ReduceLoopOverhead
	pcie := false
	for q := 0; q < k.Ranks; q++ {
		if q == r {
			continue
		}
		at := GPUMem(q)
		if k.RanksInHost {
			at = HostMem(m.LocalSocket(q))
		}
		rtt, err := m.vectorRoundTrip(r, at)
		if err != nil {
			return 0, err
		}
		if k.Fresh && at.Host {
			rtt = max(rtt-m.Phys.FreshLineSaving, 1)
		}
		it += rtt
		p, err := m.path(GPUMem(r), at)
		if err != nil {
			return 0, err
		}
		pcie = pcie || !p.nvlink()
	}
	if pcie {
		it += m.Phys.ReduceLoopExtraPCIe
	}
	return it, nil
}

// LocalTime is how long rank r takes to reduce inputs sources of bytes
// each into its own memory (inputs 1: a copy): at the GPU's memory
// bandwidth (ReduceTime), and no faster than the kernel's loop moves them
// (but for LoopRanks, whose iteration time counts the own load), a
// LoopSimple loop's start (loopStart) on top.
func (m *Machine) LocalTime(r, inputs int, bytes sim.Bytes, k Kernel) (sim.Duration, error) {
	d := m.ReduceTime(inputs, bytes)
	if k.Loop == LoopRanks {
		return d, nil // the peers' loads carry the loop's time, the rank's own load included
	}
	rate, err := m.LoopRate(r, k)
	if err != nil || rate <= 0 {
		return d, err
	}
	l, err := sim.FromSeconds(float64(bytes) / float64(rate))
	if err != nil {
		return 0, fmt.Errorf("hw: local %d B at %v: %w", bytes, rate, err)
	}
	return max(d, l) + m.loopStart(k, bytes), nil
}

// LocalPass runs a pass of rank r's loop over bytes of its own memory
// (inputs 1: a copy, 2: a reduction), such as NCCL's last receive that
// copies a FIFO step into the output, and calls done when it ends. With a
// Kernel.LoopGroup the pass is a transfer over the group's resource, so it
// takes the block's loop time that the group's sends share (the block runs
// NCCL's primitives one after another); otherwise it takes LocalTime.
func (m *Machine) LocalPass(r, inputs int, bytes sim.Bytes, k Kernel, label string, done func()) error {
	if k.LoopGroup == "" || k.Loop == LoopNone || k.Loop == LoopRanks {
		d, err := m.LocalTime(r, inputs, bytes, k)
		if err != nil {
			return err
		}
		m.Eng.After(d, done)
		return nil
	}
	route, capr, err := m.capped(nil, sim.Rate(float64(m.Phys.GPUMemBandwidth)/float64(inputs+1)), k)
	if err != nil {
		return err
	}
	if route, capr, err = m.loopBound(r, route, capr, k); err != nil {
		return err
	}
	tail, _, _, err := m.hunkTail(r, k, bytes)
	if err != nil {
		return err
	}
	return m.launchInOrder(r, &k, tail, sim.FlowSpec{Label: label, Kind: sim.Read, Route: route, Bytes: bytes, Cap: capr, Done: done}, nil, tail == 0)
}
