package hw

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
)

// TestRuntimePullChainIsNvccsUnroll pins the chain of the pull loop whose
// bound is known at run time to what its SASS does: groups of four loads
// in flight, then the remainder one load at a time.
func TestRuntimePullChainIsNvccsUnroll(t *testing.T) {
	gpu, v := 600*sim.Nanosecond, 1100*sim.Nanosecond
	for _, c := range []struct {
		world int
		want  sim.Duration
	}{
		{2, gpu + v},   // remainder only: the local load, then the host one
		{3, gpu + 2*v}, // remainder only
		{4, v},         // one unrolled group
		{6, 3 * v},     // a group, then two host loads in turn
		{8, 2 * v},     // two groups
	} {
		assert.Equal(t, c.want, runtimePullChain(c.world, gpu, v), "world %d", c.world)
	}
}

// A ping-pong's neighbours add loads only where they poll near the pair:
// pollers of its sector, or loads waiting at its line's other sectors;
// stores and other lines add none.
func TestNeighbourLoadsCountPollsNearThePair(t *testing.T) {
	for _, c := range []struct {
		op, place        string
		n                int
		pollers, waiting int
	}{
		{"poll", "same_sector", 6, 3, 0},
		{"pingpong", "same_sector", 2, 1, 0},
		{"poll", "same_half", 6, 0, 3},
		{"poll", "other_half", 2, 0, 1},
		{"poll", "other_line", 6, 0, 0},
		{"poll", "64k_on", 6, 0, 0},
		{"store", "same_sector", 6, 0, 0},
		{"", "", 0, 0, 0},
	} {
		p, w := neighbourLoads(PerBlock{Neighbours: c.n, NeighbourOp: c.op, NeighbourPlace: c.place})
		assert.Equal(t, [2]int{c.pollers, c.waiting}, [2]int{p, w}, "%s %s %d", c.op, c.place, c.n)
	}
}

// The barrier twin: every layout pays hostmem.slot_service for each of
// the W − 1 slots a block polls, whether in one sector or a line each; a
// packed sector also hostmem.sector_collision for each other rank's sector
// that collides with it (hostmem.collision_mask: 128 B apart, lines 0–7 of
// a kibibyte, 1, 1 and 3 of them at W = 2, 4, 8; none 4 KiB apart), and hostmem.line_contention for each store at another sector of
// its line; in host memory each of the round's flag stores that leave the
// GPU before the block's last slot's, gpu.host_store_service; GPU memory
// none of them.
func TestGroupBarrierTwinChargesPackedSlots(t *testing.T) {
	top, m := h200x1(t)
	twin := func(layout, target string, w, g int) float64 {
		v, err := PerBlockValue(top, PerBlock{Kind: "loop", Loop: "group_barrier", Target: target, Layout: layout, World: w, Groups: g, Blocks: w * g, Threads: 32})
		require.NoError(t, err)
		return v
	}
	slot, coll := nsOf(m.Phys.HostSlotService), nsOf(m.Phys.HostSectorCollision)
	// stores: the round's stores that leave before a block's last slot's.
	stores := func(w, g int) float64 {
		return nsOf(m.roundStores(HostMem(0), PerBlock{World: w, Groups: g}, w-1) + m.pollLoad(HostMem(0), w*g))
	}
	none := twin("line_per_slot", "host", 2, 1) - slot - stores(2, 1) // the barrier without its slots
	for _, w := range []int{2, 4, 8} {
		assert.InDelta(t, none+float64(w-1)*slot+stores(w, 16), twin("line_per_slot", "host", w, 16), 1e-9, "a line per slot, W = %d", w)
		collide := map[int]float64{2: 1, 4: 1, 8: 3}[w]
		// the other groups' sectors on colliding lines: at W = 4 two, of
		// three stores a round each (hostmem.foreign_store_collision for
		// each beyond the first); at W = 2 one store each; at W = 8 a
		// group's eight lines are a kibibyte of their own
		foreign := map[int]float64{2: 0, 4: 2 * 2 * nsOf(m.Phys.HostForeignStoreCollision), 8: 0}[w]
		assert.InDelta(t, none+float64(w-1)*slot+collide*coll+foreign+stores(w, 4), twin("packed_128", "host", w, 4), 1e-9, "packed_128, W = %d", w)
		assert.InDelta(t, none+float64(w-1)*slot+stores(w, 4), twin("packed_4k", "host", w, 4), 1e-9, "packed_4k, W = %d", w)
	}
	assert.InDelta(t, none+3*slot+coll+stores(4, 1), twin("packed_512", "host", 4, 1), 1e-9, "4 ranks 512 B apart: lines 0 and 4, 8 and 12 collide")
	// Two ranks' sectors 32 B apart, one group: one store at the other
	// sector of the line (line contention; sectors of one line do not
	// collide).
	assert.InDelta(t, none+slot+stores(2, 1)+nsOf(m.Phys.HostLineContention)+nsOf(m.Phys.HostPollService)-nsOf(max(m.Phys.HostPollService, mustRTT(t, m))),
		twin("packed", "host", 2, 1), 1e-9)
	// 16 groups of 8 ranks: 16 × 8 × 7 stores, the median block's last
	// slot's 7/8 of the way; 128 blocks polling.
	assert.InDelta(t, 16*8*7*7.0/8*nsOf(m.Phys.HostStoreService)+128*nsOf(m.Phys.HostPollLoad), stores(8, 16), 1e-3)
	assert.InDelta(t, twin("line_per_slot", "local", 8, 1), twin("packed", "local", 8, 16), 1e-9, "GPU memory: no slot or line cost")
}

func mustRTT(t *testing.T, m *Machine) sim.Duration {
	t.Helper()
	rtt, err := m.RoundTrip(0, HostMem(0))
	require.NoError(t, err)
	return rtt
}

// A streaming loop's value is the kernel's end where its blocks keep a
// shared resource busy: copies to host memory from enough blocks to fill
// the link, local copies from enough to fill the GPU's memory. One block,
// a few blocks that do not fill the link, and loops that are not streams
// (barriers, polls) are any block's time.
func TestPerBlockEndsWhereBlocksShareABusyResource(t *testing.T) {
	top, _ := h200x1(t)
	copyLoop := func(src, dst string, unroll, blocks int) PerBlock {
		return PerBlock{Kind: "loop", Loop: "copy", Src: src, Dst: dst, Unroll: unroll, Sources: 1, Blocks: blocks, Threads: 512, Iters: 8}
	}
	for _, c := range []struct {
		name string
		rec  PerBlock
		want bool
	}{
		{"to host, 132 blocks", copyLoop("local", "host", 1, 132), true},
		{"to host, 8 blocks of 8 loads", copyLoop("local", "host", 8, 8), true},
		{"to host, 1 block", copyLoop("local", "host", 8, 1), false},
		{"to host, 2 blocks of 1 load", copyLoop("local", "host", 1, 2), false},
		{"local, 132 blocks of 8 loads", copyLoop("local", "local", 8, 132), true},
		{"local, 8 blocks of 8 loads", copyLoop("local", "local", 8, 8), false},
		{"barrier", PerBlock{Kind: "loop", Loop: "group_barrier", Target: "host", Layout: "packed_4k", World: 8, Groups: 4, Blocks: 32, Threads: 32}, false},
		{"poll", PerBlock{Kind: "poll", Target: "host", Request: "load_volatile", Blocks: 132, Threads: 32}, false},
	} {
		got, err := PerBlockEnds(top, c.rec)
		require.NoError(t, err, c.name)
		assert.Equal(t, c.want, got, c.name)
	}
}

// A copy loop's iteration adds gpu.copy_iter_overhead to its loads' round
// trip; from host memory, whose round trip already holds its DRAM, or
// from the L2, less gpu.copy_dram_extra (the fitted local copy's round
// trip was an L2 hit, its data fresh from device memory).
func TestCopyIterOverheadFromHostLeavesOutDeviceMemory(t *testing.T) {
	_, m := h200x1(t)
	assert.Equal(t, m.Phys.CopyIterOverhead, m.copyIterOverhead(Kernel{LoopAt: GPUMem(0)}))
	assert.Equal(t, m.Phys.CopyIterOverhead-m.Phys.CopyDRAMExtra, m.copyIterOverhead(Kernel{LoopAt: HostMem(0)}))
	assert.Equal(t, m.Phys.CopyIterOverhead-m.Phys.CopyDRAMExtra, m.copyIterOverhead(Kernel{LoopAt: GPUMem(0), SrcInL2: true}))
	k := Kernel{Blocks: 1, Threads: 128, Loop: LoopSimple, Unroll: 1, Sources: 1}
	k.LoopAt = HostMem(0)
	host, err := m.copyIterTime(0, k)
	require.NoError(t, err)
	v, err := m.vectorRoundTrip(0, HostMem(0))
	require.NoError(t, err)
	assert.Equal(t, v+m.Phys.CopyIterOverhead-m.Phys.CopyDRAMExtra, host)
}

// A fence beside other blocks' streams of stores and a barrier whose polls
// pause are measured but not modelled: each says so.
func TestFenceBesideStreamsAndPausedPollsAreNotModelled(t *testing.T) {
	err := PerBlock{Kind: "loop", Loop: "fence", Fence: "sc", Stores: 1, Threads: 32, Blocks: 1, Neighbours: 8, NeighbourOp: "stream", NeighbourPlace: "host"}.Modelled()
	require.ErrorIs(t, err, ErrNotModelled)
	assert.Contains(t, err.Error(), "beside 8 blocks streaming stores to host memory")
	err = PerBlock{Kind: "loop", Loop: "group_barrier", Target: "local", Layout: "packed_4k", World: 4, Groups: 1, Blocks: 4, Threads: 32, PollSleep: 300}.Modelled()
	require.ErrorIs(t, err, ErrNotModelled)
	assert.Contains(t, err.Error(), "pause 300 ns")
	require.NoError(t, PerBlock{Kind: "loop", Loop: "group_barrier", Target: "local", Layout: "packed_4k", World: 4, Groups: 1, Blocks: 4, Threads: 32}.Modelled())
}

// A loop's iteration over its own GPU memory grows with the load its
// blocks put on it: base + gpu.mem_loaded_latency × loads / (iteration ×
// rate), solved for the iteration; nothing without load or parameter.
func TestLoadedIterationGrowsWithTheKernelsOwnLoad(t *testing.T) {
	_, m := h200x1(t)
	base := 400 * sim.Nanosecond
	assert.Equal(t, base, m.loaded(base, 0))
	per := float64(32 * 512 * 16)
	it := m.loaded(base, per)
	busy := per / float64(m.Phys.GPUMemBandwidth) * float64(sim.Second)
	assert.InDelta(t, float64(base)+float64(m.Phys.MemLoadedLatency)*busy/float64(it), float64(it), 2, "the iteration solves its own equation")
	assert.Greater(t, m.loaded(base, 4*per), it, "more load, a longer iteration")
	m.Phys.MemLoadedLatency = 0
	assert.Equal(t, base, m.loaded(base, per))
}

// h200x1 is the preset of testdata/h200x1-arsim, built, and a machine on it.
func h200x1(t *testing.T) (*topology.Topology, *Machine) {
	t.Helper()
	pre, err := topology.Lookup("h200x1")
	require.NoError(t, err)
	top, err := pre.Build()
	require.NoError(t, err)
	m, err := New(top)
	require.NoError(t, err)
	return top, m
}

// The capture's pb_fence_blocks loop (LoopCode) takes at least a fence
// after local stores plus its own loop code (capture.fence_loop_code),
// whichever memory it stores to; a fence to host memory that costs more
// sets the iteration. The one-warp fence kernels (no LoopCode) take the
// fence alone.
func TestFenceLoopTwinHasTheCapturesCodeAsAFloor(t *testing.T) {
	top, m := h200x1(t)
	floor := nsOf(m.Phys.FenceLocal + m.Phys.FenceLoopCode)
	for _, dst := range []string{"local", "host"} {
		f, err := m.FenceCost(0, mem(dst))
		require.NoError(t, err)
		v, err := PerBlockValue(top, PerBlock{Kind: "loop", Loop: "fence", Dst: dst, Fence: "sc", Stores: 1, Threads: 32, Blocks: 1, Iters: 200, LoopCode: true})
		require.NoError(t, err)
		assert.InDelta(t, max(floor, nsOf(f)), v, 1e-9, dst)
		v, err = PerBlockValue(top, PerBlock{Kind: "loop", Loop: "fence", Dst: dst, Fence: "sc", Stores: 1, Threads: 32, Blocks: 1, Iters: 200})
		require.NoError(t, err)
		assert.InDelta(t, max(nsOf(m.Phys.FenceLocal), nsOf(f)), v, 1e-9, dst)
		assert.Less(t, v, floor, dst)
	}
}

// A barrier whose blocks store to and poll their own slot too (SelfSlot,
// vLLM's) has World slots to a sector, each written: one slot more to
// poll, and from four groups' sectors to a line one store more at each of
// the line's three other sectors, and one more store a block in the round.
func TestGroupBarrierTwinCountsTheOwnSlot(t *testing.T) {
	top, m := h200x1(t)
	twin := func(self bool, g int) float64 {
		v, err := PerBlockValue(top, PerBlock{Kind: "loop", Loop: "group_barrier", Target: "host", Layout: "vllm", World: 2,
			Groups: g, Blocks: 2 * g, Threads: 128, SelfSlot: self})
		require.NoError(t, err)
		return v
	}
	slot, line := nsOf(m.Phys.HostSlotService), nsOf(m.Phys.HostLineContention)
	stores := func(g, slots int) float64 {
		return nsOf(m.roundStores(HostMem(0), PerBlock{World: 2, Groups: g}, slots) + m.pollLoad(HostMem(0), 2*g))
	}
	assert.InDelta(t, slot+3*line+stores(4, 2)-stores(4, 1), twin(true, 4)-twin(false, 4), 1e-9)
	// Past one line, the round's stores and pollers, and the other groups'
	// sectors on the three lines that collide with a group's own (four
	// sectors each, two stores a round: one beyond the first).
	assert.InDelta(t, stores(66, 2)-stores(4, 2)+3*4*nsOf(m.Phys.HostForeignStoreCollision), twin(true, 66)-twin(true, 4), 1e-9)
}

// The two-rank host one-shot's twin: with the barriers, the sum of its
// phases' twins, the pull after the staging reading lines written just
// before (PerBlock.Fresh); a phase alone (no barrier holds the blocks
// together) repeats as a stream, each iteration the longer of one block's
// part and the part's bytes at the rate the blocks share, a fenced part's
// block waiting besides for half an iteration of the other blocks' stores
// at that rate; staging and pull left free and bound by their blocks'
// own chains: the two one after the other, the staging fence waiting
// besides for the other blocks' pull loads. Staging and pull both bound
// by what the blocks share: the blocks drift apart and overlap their
// streams, so the two take less than one after the other and at least
// either alone, with or without the barriers, which come on top.
func TestHostShotTwinIsTheSumOfItsPhases(t *testing.T) {
	top, m := h200x1(t)
	v := func(phases, b int, bytes int64) float64 {
		x, err := PerBlockValue(top, PerBlock{Kind: "loop", Loop: "host_shot", World: 2, Phases: phases, Bytes: bytes,
			BlocksPerRank: b, Blocks: 2 * b, Threads: 128})
		require.NoError(t, err)
		return x
	}
	val := func(r PerBlock) float64 {
		x, err := PerBlockValue(top, r)
		require.NoError(t, err)
		return x
	}
	drifted := 0
	for _, b := range []int{1, 8, 36, 66} {
		for _, n := range []int64{14336, 1 << 20} {
			packs := n / 16
			blocks := int(min(int64(b), (packs+127)/128))
			iters := int((packs + int64(blocks*128) - 1) / int64(blocks*128))
			staging := PerBlock{Kind: "loop", Loop: "copy", Src: "local", Dst: "host", Unroll: 1, Sources: 1, Fence: "sc", SrcInL2: true,
				Blocks: 2 * blocks, Threads: 128, Iters: iters, Bytes: 2 * n}
			pull := PerBlock{Kind: "loop", Loop: "pull", Bound: "runtime", World: 2, Blocks: 2 * blocks, Threads: 128, Iters: iters, Bytes: 2 * n}
			fresh := pull
			fresh.Fresh = true
			it := float64(iters)
			assert.InDelta(t, it*val(staging)+v(2, b, n), v(3, b, n), 1e-6, "%d blocks, %d B", b, n)
			if b == 1 { // one block's pull waits its loads' round trips; 66 blocks' is bound by the link
				assert.Less(t, val(fresh), val(pull), "%d blocks, %d B: the staged lines are read sooner", b, n)
			}
			alone := map[int]float64{}
			shared := true
			for _, c := range []struct {
				phases int
				part   PerBlock
			}{{1, staging}, {4, pull}, {5, fresh}} {
				one, long := c.part, c.part
				one.Blocks, one.Bytes = 1, 0
				long.Iters, long.Bytes = c.part.Iters*8, c.part.Bytes*8
				own := it * val(one)
				if c.part.Fence != "" {
					// the fence waits for half an iteration of the other blocks' stores
					own += val(long) * float64(c.part.Blocks-1) / float64(2*c.part.Blocks)
				}
				alone[c.phases] = max(own, it*val(long))
				if c.phases != 4 {
					shared = shared && val(long) > val(one)
				}
				if c.phases < 5 {
					assert.InDelta(t, alone[c.phases], v(c.phases, b, n), 1e-6, "phases %d alone, %d blocks, %d B", c.phases, b, n)
				}
			}
			if !shared {
				assert.InDelta(t, it*(val(staging)+val(fresh))+v(2, b, n), v(7, b, n), 1e-6, "%d blocks, %d B", b, n)
				// left free, the staging fence waits for the other blocks' pull loads
				w, err := m.FenceBesidePolls(0, HostMem(0), (2*blocks-1)*128)
				require.NoError(t, err)
				assert.InDelta(t, alone[1]+alone[5]+nsOf(w), v(5, b, n), 1e-6, "%d blocks, %d B", b, n)
				continue
			}
			drifted++
			assert.Less(t, v(5, b, n), alone[1]+alone[5], "%d blocks, %d B: drifted blocks overlap staging and pull", b, n)
			assert.GreaterOrEqual(t, v(5, b, n), max(alone[1], alone[5]), "%d blocks, %d B", b, n)
			assert.InDelta(t, v(5, b, n)+v(2, b, n), v(7, b, n), 1e-6, "%d blocks, %d B: the barriers come on top", b, n)
		}
	}
	assert.Equal(t, 3, drifted, "8, 36 and 66 blocks a rank at 1 MiB, where the blocks' loads queue together for the way to the host (queueHostReads); one block a rank's stream is its own chain's (its staging copy reads the L2, gpu.mem_loaded_latency none); none at 14 KiB")
	_, err := PerBlockValue(top, PerBlock{Kind: "loop", Loop: "host_shot", World: 3, Phases: 7, Bytes: 1024, BlocksPerRank: 1, Blocks: 3, Threads: 128})
	assert.ErrorContains(t, err, "want world 2")
	_, err = PerBlockValue(top, PerBlock{Kind: "loop", Loop: "host_shot", World: 2, Phases: 4, Bytes: 8, BlocksPerRank: 1, Blocks: 2, Threads: 128})
	assert.ErrorContains(t, err, "no 16-B element")
}

// A plain copy loop waits its start once, beyond its steady iterations:
// gpu.loop_start, and gpu.loop_start_per_load per warp and load a thread
// issues before it runs steady, up to gpu.loop_start_loads loads; NCCL's
// reduceCopy (Kernel.Hunks) waits none.
func TestCopyLoopPaysItsStartOnce(t *testing.T) {
	top, m := h200x1(t)
	most := top.Params.Get("gpu.loop_start_loads")
	for _, threads := range []int{128, 512} {
		k := Kernel{Blocks: 1, Threads: threads, Loop: LoopSimple, LoopAt: GPUMem(0), Unroll: 1, Sources: 1, SrcInL2: true}
		warps := float64(threads / 32)
		for _, iters := range []int64{1, 2, 4, 64} {
			bytes := sim.Bytes(iters * int64(threads) * 16)
			want := m.Phys.LoopStart + sim.Duration(warps*min(float64(iters), most)*float64(m.Phys.LoopStartPerLoad))
			assert.Equal(t, want, m.loopStart(k, bytes), "%d threads, %d iterations", threads, iters)
		}
		// An unrolled pass issues all its loads, predicated where a
		// thread has no data: a step of 16 B pays the cap.
		k.Unroll = 8
		assert.Equal(t, m.Phys.LoopStart+sim.Duration(warps*most*float64(m.Phys.LoopStartPerLoad)), m.loopStart(k, 16))
		it, err := m.copyIterTimeFor(0, k, 16)
		require.NoError(t, err)
		one, err := m.firstIteration(0, k, 16)
		require.NoError(t, err)
		rate, err := m.LoopRate(0, k)
		require.NoError(t, err)
		stream, err := sim.FromSeconds(16 / float64(rate))
		require.NoError(t, err)
		assert.Equal(t, it-stream+m.loopStart(k, 16), one, "%d threads", threads)
		k.Hunks = true
		assert.Zero(t, m.loopStart(k, 16), "NCCL's reduceCopy")
	}
}

// In NCCL's reduceCopy shape over local and host memory a further load
// costs gpu.vector_issue alone; over a peer's memory (not measured in that
// shape) the plain loop's per-warp cost stays.
func TestHunksIssueTheirLoadsWithoutThePerWarpCost(t *testing.T) {
	top, err := topology.Load("h200x2")
	require.NoError(t, err)
	m, err := New(top)
	require.NoError(t, err)
	for _, at := range []Mem{GPUMem(0), HostMem(0), GPUMem(1)} {
		plain := Kernel{Blocks: 1, Threads: 256, Loop: LoopSimple, LoopAt: at, Unroll: 8, Sources: 1}
		hunks := plain
		hunks.Hunks = true
		p, err := m.copyIterTime(0, plain)
		require.NoError(t, err)
		h, err := m.copyIterTime(0, hunks)
		require.NoError(t, err)
		if at == GPUMem(1) {
			assert.Equal(t, p, h, "over the peer's memory")
			continue
		}
		if at.Host {
			assert.Equal(t, 7*8*m.Phys.VectorIssuePerWarp, p-h, "over host memory")
			continue
		}
		// 7 further loads, 8 warps, less what the memory's load adds
		// back (hw.Machine.loaded: the faster loop loads it more).
		assert.InEpsilon(t, float64(7*8*m.Phys.VectorIssuePerWarp), float64(p-h), 0.02)
	}
}

// A copy from GPU memory storing to host memory issues each further store
// gpu.host_store_issue_per_warp a warp more than one storing to GPU
// memory, in NCCL's reduceCopy shape too; from host memory it does not.
func TestStoresToHostIssueMoreAWarp(t *testing.T) {
	_, m := h200x1(t)
	for _, c := range []struct {
		at    Mem
		hunks bool
		want  sim.Duration
	}{
		{GPUMem(0), false, 7 * 4 * m.Phys.HostStoreIssuePerWarp},
		{GPUMem(0), true, 7 * 4 * m.Phys.HostStoreIssuePerWarp},
		{HostMem(0), false, 0},
	} {
		local := Kernel{Blocks: 1, Threads: 128, Loop: LoopSimple, LoopAt: c.at, Unroll: 8, Sources: 1, Hunks: c.hunks}
		host := local
		host.StoresToHost = true
		l, err := m.copyIterTime(0, local)
		require.NoError(t, err)
		h, err := m.copyIterTime(0, host)
		require.NoError(t, err)
		require.Positive(t, m.Phys.HostStoreIssuePerWarp)
		// 7 further stores, 4 warps, less what the memory's load gives
		// back (hw.Machine.loaded: the slower loop loads it less)
		assert.InDelta(t, float64(c.want), float64(h-l), 0.02*float64(c.want)+1, "loads at %v, hunks %v", c.at, c.hunks)
	}
}

// A local LL loop is no faster than its block's SM issues what it loads
// (the polled line, 16 B a thread, and a reduction's 8 B of user buffer)
// and stores (the sent line, 16 B, and the kept result, 8 B): each byte
// at gpu.sm_load_bandwidth or gpu.sm_local_store_bandwidth, added.
func TestLocalLLLoopIssuesAtTheBlocksRate(t *testing.T) {
	_, m := h200x1(t)
	for _, c := range []struct {
		op          string
		load, store int
	}{{"recv", 16, 8}, {"recv_send", 16, 16}, {"recv_reduce_send", 24, 16}, {"recv_copy_send", 16, 24}, {"recv_reduce_copy", 24, 8}, {"recv_reduce_copy_send", 24, 24}} {
		rec := PerBlock{Kind: "loop", Loop: "ll", LLOp: c.op, Recv: "local", Dst: "local", Blocks: 1, Threads: 1024, Iters: 10}
		secs := float64(1024*c.load*10)/float64(m.Phys.SMLoadRate) + float64(1024*c.store*10)/float64(m.Phys.SMLocalStoreRate)
		assert.InDelta(t, secs*float64(sim.Second), float64(m.blockIssue(rec, "ll")), 1, c.op)
	}
	assert.Zero(t, m.blockIssue(PerBlock{LLOp: "recv_send", Threads: 1024, Iters: 10}, "ll128"))
}

// A block's SM spends 1/gpu.sm_load_bandwidth on each byte its loop loads
// and 1/gpu.sm_local_store_bandwidth on each it stores: a reduction of S
// sources to D destinations moves at most 1/(S/load + D/store) a block,
// and a primitive that also stores its output (Kernel.OutStores) stores
// once more; the destinations' stores out of the GPU (Kernel.StoresOut)
// cost 1/gpu.sm_store_bandwidth instead.
func TestSimpleLoopIssuesLoadsAndStoresInTurn(t *testing.T) {
	_, m := h200x1(t)
	load, store, remote := float64(m.Phys.SMLoadRate), float64(m.Phys.SMLocalStoreRate), float64(m.Phys.SMStoreRate)
	for _, c := range []struct {
		sources, dests, out int
		away                bool
	}{{1, 1, 0, false}, {2, 1, 0, false}, {2, 1, 1, false}, {1, 2, 0, false}, {8, 1, 0, false}, {1, 1, 0, true}, {2, 1, 1, true}} {
		k := Kernel{Blocks: 1, Threads: 4096, Loop: LoopSimple, LoopAt: GPUMem(0), Unroll: 8, Sources: c.sources,
			Wire: float64(c.dests), OutStores: c.out, StoresOut: c.away, SrcInL2: true, Hunks: true} // enough threads that the chain does not bound it
		rate, err := m.LoopRate(0, k)
		require.NoError(t, err)
		per := float64(c.sources)/load + float64(c.dests+c.out)/store
		if c.away {
			per = float64(c.sources)/load + float64(c.out)/store + float64(c.dests)/remote
		}
		assert.InEpsilon(t, 1/per, float64(rate), 1e-9, "%+v", c)
	}
}

// Barrier layouts that name their offsets refuse records that do not give
// them, or give them malformed, with what is wrong.
func TestBarrierOffsetLayoutsRefuseBadRecords(t *testing.T) {
	top, _ := h200x1(t)
	for _, c := range []struct {
		rec  PerBlock
		want string
	}{
		{PerBlock{Layout: "rank_stride", World: 2}, "needs stride_bytes"},
		{PerBlock{Layout: "rank_offsets", World: 2}, "needs the field rank_offsets"},
		{PerBlock{Layout: "rank_offsets", World: 3, RankOffsets: "0,128"}, "2 offsets for 3 ranks"},
		{PerBlock{Layout: "rank_offsets", World: 2, RankOffsets: "0,100"}, `rank 1's offset "100"`},
		{PerBlock{Layout: "rank_offsets", World: 2, RankOffsets: "0,x"}, `rank 1's offset "x"`},
	} {
		c.rec.Kind, c.rec.Loop, c.rec.Target, c.rec.Groups, c.rec.Blocks, c.rec.Threads = "loop", "group_barrier", "host", 1, c.rec.World, 32
		_, err := PerBlockValue(top, c.rec)
		assert.ErrorContains(t, err, c.want, "%+v", c.rec)
	}
	v, err := PerBlockValue(top, PerBlock{Kind: "loop", Loop: "group_barrier", Target: "host", Layout: "rank_offsets", World: 2,
		Groups: 1, Blocks: 2, Threads: 32, RankOffsets: "0, 512"})
	require.NoError(t, err)
	assert.Positive(t, v)
}

// Ping-pongs in GPU memory: the other pairs whose flags share the line
// store there while its loads spin, gpu.spin_store_service each (4 B apart
// sixteen pairs to a line); pairs a line apart share nothing.
func TestLocalPingPongsPayTheStoresOnTheirLine(t *testing.T) {
	top, m := h200x1(t)
	pp := func(pairs, spacing int) float64 {
		v, err := PerBlockValue(top, PerBlock{Kind: "block_pingpong", Target: "local", Mode: "volatile", Pairs: pairs,
			Spacing: spacing, Blocks: 2 * pairs, Threads: 32})
		require.NoError(t, err)
		return v
	}
	spin := nsOf(m.Phys.SpinStoreService)
	assert.InDelta(t, 3*spin, pp(4, 4)-pp(1, 4), 1e-9)
	assert.InDelta(t, 15*spin, pp(16, 4)-pp(1, 4), 1e-9)
	assert.InDelta(t, 15*spin, pp(66, 4)-pp(1, 4), 1e-9, "sixteen pairs to a line at most")
	assert.InDelta(t, pp(1, 128), pp(66, 128), 1e-9)
}

// A fence beside pulling blocks waits for their loads of host memory in
// flight, counted per load (each thread's NeighbourLoads): beside one block
// of 32 threads pulling one load each, what FenceBesidePolls gives for 32
// pollers; beside 131 blocks of 512 threads with 8 loads in flight, which
// fill the link, their bytes in flight at their rate beyond a round trip
// come first (over 100 µs). Copies of what they load (read_stream) count
// as their loads do; streaming stores beside the fence are not modelled.
func TestFenceBesidePullsCountsTheirLoads(t *testing.T) {
	top, m := h200x1(t)
	rec := PerBlock{Kind: "loop", Loop: "fence", Dst: "local", Fence: "sc", Stores: 1, Threads: 32, Blocks: 1, Iters: 200,
		Neighbours: 1, NeighbourOp: "pull", NeighbourPlace: "host", NeighbourThreads: 32, NeighbourLoads: 1}
	require.NoError(t, rec.Modelled())
	alone, err := PerBlockValue(top, PerBlock{Kind: "loop", Loop: "fence", Dst: "local", Fence: "sc", Stores: 1, Threads: 32, Blocks: 1, Iters: 200})
	require.NoError(t, err)
	one, err := PerBlockValue(top, rec)
	require.NoError(t, err)
	w, err := m.FenceBesidePolls(0, HostMem(0), 32)
	require.NoError(t, err)
	assert.InDelta(t, alone+nsOf(w), one, 1e-6, "unsaturated: the per-load wait alone")
	rec.Neighbours, rec.NeighbourThreads, rec.NeighbourLoads = 131, 512, 8
	full, err := PerBlockValue(top, rec)
	require.NoError(t, err)
	assert.Greater(t, full, 100_000.0, "131 blocks × 512 × 8 loads fill the link: their 8.6 MB drain first")
	rec.NeighbourOp = "read_stream"
	require.NoError(t, rec.Modelled())
	copies, err := PerBlockValue(top, rec)
	require.NoError(t, err)
	assert.InDelta(t, full, copies, 1e-6, "a copy's loads hold the fence as a pull's")
	rec.NeighbourOp = "stream"
	assert.ErrorIs(t, rec.Modelled(), ErrNotModelled)
}

// LoadBatches: the loads a kernel keeps in flight come back together
// where they leave the link short of full (its window); where they fill
// it, what the link returns in one of their round trips.
func TestLoadBatchesAreTheWindowOrTheLinksRoundTrip(t *testing.T) {
	top, m := h200x1(t)
	host := HostMem(0)
	small := Kernel{Blocks: 1, Threads: 32, LoadsInFlight: 1}
	big := Kernel{Blocks: 132, Threads: 512, LoadsInFlight: 8}
	got, err := LoadBatches(top, []Mem{host}, small)
	require.NoError(t, err)
	assert.InDelta(t, m.loadWindow(0, host, small), float64(got[0]), 1, "latency-bound: the window")
	two, err := topology.Load("h200x2")
	require.NoError(t, err)
	both, err := LoadBatches(two, []Mem{HostMem(0), HostMem(0)}, big)
	require.NoError(t, err)
	assert.Equal(t, both[0], both[1], "each read alone, one after the other")
	got, err = LoadBatches(top, []Mem{host}, big)
	require.NoError(t, err)
	rtt, err := m.RoundTrip(0, host)
	require.NoError(t, err)
	assert.Less(t, float64(got[0]), m.loadWindow(0, host, big)/10, "bandwidth-bound: far below its 8.6 MB in flight")
	assert.Greater(t, float64(got[0]), 40e9*rtt.Seconds(), "at least 40 GB/s over a host round trip")
}

// An LL receive loop's cost per warp follows the memory instructions a
// warp issues each iteration: gpu.ll_iter_per_warp is recv_reduce_send's
// three, and a send or a schedule's loop (no ops given) keeps it whole.
func TestLLIterPerWarpFollowsTheOps(t *testing.T) {
	ops := map[string]int{"recv": 2, "recv_send": 2, "recv_reduce_send": 3, "recv_copy_send": 3, "recv_reduce_copy": 3, "recv_reduce_copy_send": 4}
	for op, n := range ops {
		assert.Equal(t, n, llWarpOps(PerBlock{Loop: "ll", LLOp: op, Recv: "local"}), op)
	}
	assert.Equal(t, 0, llWarpOps(PerBlock{Loop: "ll", LLOp: "send", Recv: "none"}), "a send keeps the fitted cost")
	_, m := h200x1(t)
	at := func(threads, ops int) sim.Duration {
		it, err := m.llIterTime(0, GPUMem(0), threads, ops)
		require.NoError(t, err)
		return it
	}
	assert.Equal(t, at(1024, 0), at(1024, 3))
	assert.Equal(t, 31*m.Phys.LLIterPerWarp, at(1024, 3)-at(32, 3))
	assert.Equal(t, 31*(m.Phys.LLIterPerWarp*2/3), at(1024, 2)-at(32, 2))
	assert.Greater(t, at(1024, 4), at(1024, 3))
}

// Simple steps from several blocks at once, each storing its slices to
// host memory, share the GPU's link: past the link's rate a step takes
// the blocks' slices at that rate (SM stores to host alone: 51–52 GB/s
// measured, pcie.sm_host_bandwidth's note), and below it about what one
// block's step takes.
func TestSimpleStepsOfManyBlocksShareTheHostLink(t *testing.T) {
	top, _ := h200x1(t)
	step := func(blocks int, slice int64) float64 {
		v, err := PerBlockValue(top, PerBlock{Kind: "loop", Loop: "simple_step", Dst: "host", Slice: slice, Fence: "acq_rel",
			Blocks: blocks, Threads: 512, SrcInL2: true, Hunks: true})
		require.NoError(t, err)
		return v
	}
	gbps := float64(4*65536) / (step(8, 65536) - step(4, 65536)) // bytes per ns
	assert.InDelta(t, 51.5, gbps, 4, "four more blocks' 64-KiB slices a step")
	assert.InDelta(t, step(1, 2048), step(2, 2048), 0.1*step(1, 2048), "two blocks' 2-KiB slices leave the link idle")
	assert.Greater(t, step(2, 65536), step(1, 65536), "two blocks' 64-KiB slices share the link")
}

// A copy from host memory to host memory that the link bounds moves its
// bytes at the link's rate over what each byte puts on the direction
// towards the host, its stores (SM write TLPs) and its own loads' read
// requests (Kernel.OwnStoresHost), against what each puts on the other
// direction (read completions) for the same loads storing to GPU memory.
func TestHostToHostCopyStoresCrossTheUpstream(t *testing.T) {
	top, m := h200x1(t)
	rec := PerBlock{Kind: "loop", Loop: "copy", Src: "host", Dst: "local", Blocks: 32, Threads: 512, Unroll: 8, Sources: 1, Iters: 8}
	toLocal, err := PerBlockValue(top, rec)
	require.NoError(t, err)
	rec.Dst = "host"
	toHost, err := PerBlockValue(top, rec)
	require.NoError(t, err)
	ph := m.Phys
	up := (ph.SMWritePayload+ph.TLPOverhead)/ph.SMWritePayload + ph.ReadRequest/ph.ReadCpl
	down := (ph.ReadCpl + ph.TLPOverhead) / ph.ReadCpl
	assert.InDelta(t, up/down, toHost/toLocal, 0.02*up/down)
	// a second source in GPU memory adds no bytes to the link
	rec.Sources = 2
	two, err := PerBlockValue(top, rec)
	require.NoError(t, err)
	assert.InDelta(t, toHost, two, 0.02*toHost)
}

// The counts behind the ping-pong's line terms, worked by hand: flags 4 B
// apart fill a 32-B sector with 8 and a 128-B line with 32; flags 12 B
// apart put 3, 3, 2 and 3 on the first line's sectors (0–24, 36–60, 72–84,
// 96–120).
func TestPingPongLineCounts(t *testing.T) {
	assert.InDelta(t, 1.0, changingFlagPollers(2, 4), 1e-9)   // one pair in a sector
	assert.InDelta(t, 7.0, changingFlagPollers(8, 4), 1e-9)   // a full sector
	assert.InDelta(t, 28.0, changingFlagPollers(32, 4), 1e-9) // a full line
	assert.InDelta(t, 12.0, changingFlagPollers(16, 8), 1e-9) // a line of four sectors of four
	assert.InDelta(t, 0.0, changingFlagPollers(8, 32), 1e-9)  // a sector each
	// 12 B apart, 11 flags on the first line (0–120): 2+2+1+2 = 7 further pollers each
	assert.InDelta(t, 7.0, changingFlagPollers(11, 12), 1e-9)
	assert.InDelta(t, 1.0, otherFlagsOnLine(2, 32), 1e-9)
	assert.InDelta(t, (4*3+2*1)/6.0, otherFlagsOnLine(6, 32), 1e-9)
	assert.InDelta(t, (3*2+3*2)/6.0, otherFlagsOnLine(6, 48), 1e-9) // 0, 48, 96 | 144, 192, 240
	assert.InDelta(t, 0.0, otherFlagsOnLine(4, 128), 1e-9)
}

// One layout, two names: layout packed and rank_stride with the same
// offsets (the ranks' sectors 32 B apart, the groups' W × 32 B) put the
// same flags at the same addresses, so their barriers take the same time
// (rank_stride once counted only one rank's sectors on a line).
func TestPackedIsRankStrideOfItsOffsets(t *testing.T) {
	top, _ := h200x1(t)
	for _, w := range []int{2, 3, 4, 8} {
		for _, g := range []int{1, 2, 4, 16} {
			rec := PerBlock{Kind: "loop", Loop: "group_barrier", Target: "host", Layout: "packed", World: w, Groups: g, Blocks: w * g, Threads: 32}
			p, err := PerBlockValue(top, rec)
			require.NoError(t, err)
			rec.Layout, rec.StrideBytes, rec.GroupStrideBytes = "rank_stride", 32, 32*w
			r, err := PerBlockValue(top, rec)
			require.NoError(t, err)
			assert.InDelta(t, p, r, 1e-9, "%d ranks, %d groups", w, g)
		}
	}
}

// localTraffic counts what an all-local line loop moves through the GPU's
// memory per data byte: the lines read, a live producer's stores of them,
// the user buffer, the lines stored, and what a receive keeps.
func TestLocalTrafficCountsEveryByteMoved(t *testing.T) {
	ll128 := Kernel{Loop: LoopLL128, Wire: 128.0 / 120}
	w := 128.0 / 120
	for _, c := range []struct {
		rec  PerBlock
		k    Kernel
		want float64
		why  string
	}{
		{PerBlock{Recv: "local", Dst: "none", LLOp: "recv"}, ll128, 2 * w, "lines read, then kept whole"},
		{PerBlock{Recv: "local", Dst: "none", LLOp: "recv", Live: true}, ll128, 3 * w, "and stored by the live producers"},
		{PerBlock{Recv: "local", Dst: "local", LLOp: "recv_reduce_send"}, ll128, 2*w + 1, "lines read and stored on, the user buffer loaded"},
		{PerBlock{Recv: "none", Dst: "local", LLOp: "send"}, ll128, w + 1, "a send loads the user buffer and stores lines"},
		{PerBlock{Recv: "local", Dst: "none", LLOp: "recv"}, Kernel{Loop: LoopLL, Wire: 2}, 2 + 1, "LL keeps its data, not its lines"},
	} {
		assert.InDelta(t, c.want, localTraffic(c.rec, c.k), 1e-12, c.why)
	}
}

// Host atomics on words of one line are served at hostmem.atomic_service
// each; once the blocks' words span several lines, each line's at
// hostmem.atomic_service_lines. Other blocks' atomics add no
// gpu.host_poll_load, as their loads would: a block's own line's atomics
// take one round trip at 1 and at 132 blocks.
func TestHostAtomicsSpanningLinesServeSlower(t *testing.T) {
	top, m := h200x1(t)
	one, several := top.Params.Get("hostmem.atomic_service"), top.Params.Get("hostmem.atomic_service_lines")
	require.Greater(t, several, one)
	ns := func(request string, blocks, spacing int) float64 {
		v, err := m.perBlock(PerBlock{Kind: "poll", Target: "host", Request: request, Spacing: spacing, Blocks: blocks, Threads: 32})
		require.NoError(t, err)
		return v
	}
	assert.InDelta(t, 16*one, ns("atomic_add", 16, 8), 1, "one line of 16 words")
	assert.InDelta(t, 16*several, ns("atomic_add", 32, 8), 1, "two lines of 16 words")
	assert.InDelta(t, 4*several, ns("atomic_add", 132, 32), 1, "33 lines of 4 words")
	assert.InDelta(t, max(ns("atomic_cas", 1, 128), several), ns("atomic_cas", 132, 128), 1e-9, "a line each: one round trip, or one line's service")
	load := top.Params.Get("gpu.host_poll_load")
	assert.InDelta(t, 131*load, ns("load_volatile", 132, 128)-ns("load_volatile", 1, 128), 1e-6, "loads: each other block's adds gpu.host_poll_load")
}
