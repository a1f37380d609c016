package hw

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
)

// Words spacing bytes apart from a sector's start: the busiest sector holds
// ⌈32/spacing⌉ of them (24 B apart, the words at 0 and 24 share one).
func TestSharersCountTheBusiestUnit(t *testing.T) {
	for _, c := range []struct{ n, spacing, want int }{
		{8, 0, 8}, {8, 4, 8}, {16, 4, 8}, {8, 8, 4}, {8, 12, 3}, {2, 12, 2}, {8, 16, 2}, {8, 24, 2}, {8, 32, 1}, {8, 4096, 1},
	} {
		assert.Equal(t, c.want, sharers(c.n, c.spacing, 32), "%d blocks %d B apart", c.n, c.spacing)
	}
}

// Loads waiting at a line's other sectors: k−1 per other contended sector
// of the first 128-byte line; none for words a sector or more apart, for
// one shared word, or for atomics (queued per line already).
func TestLineWaiting(t *testing.T) {
	for _, c := range []struct {
		n, spacing int
		atomic     bool
		want       int
	}{
		{8, 4, false, 0}, {16, 4, false, 7}, {32, 4, false, 21}, {132, 4, false, 21},
		{8, 8, false, 3}, {16, 8, false, 9}, {6, 12, false, 2}, {12, 12, false, 6},
		{8, 32, false, 0}, {8, 0, false, 0}, {32, 4, true, 0},
	} {
		assert.Equal(t, c.want, lineWaiting(c.n, c.spacing, c.atomic), "%d blocks %d B apart atomic=%v", c.n, c.spacing, c.atomic)
	}
}

// A barrier through host memory on the executor's path: W − 1 peers store
// into rank 0's slots, all in one sector group. Rank 0's waits on them are
// one poll loop (one warp-wide load of the sector, not W − 1 pollers):
// the last is seen one round trip after the stores land plus, per slot,
// hostmem.slot_service and, the ranks' sectors lying next to each other
// (128 B apart), hostmem.sector_collision for each that collides with it
// (1, 1, 3 at W = 2, 4, 8: hostmem.collision_mask) — the twin's barrier of
// the same slots 128 B apart. A flag of no group (NCCL's FIFO tails) keeps the plain period.
func TestHostBarrierSlotsArePolledAsOneLoopSlotBySlot(t *testing.T) {
	pre, err := topology.Lookup("h200x1")
	require.NoError(t, err)
	top, err := pre.Build()
	require.NoError(t, err)
	for _, w := range []int{2, 4, 8} {
		m, err := New(top)
		require.NoError(t, err)
		at := HostMem(0)
		var last sim.Time
		for p := 1; p < w; p++ {
			f := m.NewFlag(fmt.Sprintf("sig0[%d]", p), at, "sig0", 0, 0)
			require.NoError(t, m.WaitFlag(0, at, f, 1, nil, 0, Poll{}, func() { last = max(last, m.Eng.Now()) }))
			require.NoError(t, m.SignalFlag(0, at, f, 1, 1))
		}
		require.NoError(t, m.Eng.Run())
		land, err := m.StoreLanding(0, at)
		require.NoError(t, err)
		rtt, err := m.RoundTrip(0, at)
		require.NoError(t, err)
		period := max(rtt, m.Phys.HostPollService) // one poller, however many slots
		// The W − 1 stores leave one after another: the last lands
		// (W − 1) × gpu.host_store_service after a lone one would.
		collide := map[int]sim.Duration{2: 1, 4: 1, 8: 3}[w]
		want := land + sim.Duration(w-1)*(m.Phys.HostStoreService+m.Phys.HostSlotService) + period + m.Phys.HostPollLoad + collide*m.Phys.HostSectorCollision
		assert.Equal(t, sim.Time(want), last, "W = %d", w)
	}
	// No group: a sector of its own, one store a round.
	m, err := New(top)
	require.NoError(t, err)
	f := m.NewFlag("tail", HostMem(0), "", 0, 0)
	var seen sim.Time
	require.NoError(t, m.WaitFlag(0, HostMem(0), f, 1, nil, 0, Poll{}, func() { seen = m.Eng.Now() }))
	require.NoError(t, m.SignalFlag(0, HostMem(0), f, 1, 8)) // a flag of no group does not queue
	require.NoError(t, m.Eng.Run())
	land, _ := m.StoreLanding(0, HostMem(0))
	rtt, _ := m.RoundTrip(0, HostMem(0))
	assert.Equal(t, sim.Time(land+max(rtt, m.Phys.HostPollService)+m.Phys.HostPollLoad), seen) // one block polling
	// GPU memory queues no polls; the stores after the first that land
	// while they spin wait gpu.spin_store_service each.
	assert.Equal(t, 7*m.Phys.SpinStoreService, m.slotPolls(GPUMem(0), 8, 7))
	assert.Zero(t, m.slotPolls(GPUMem(0), 1, 0))
	// Sectors collide on lines of a page that differ only in address bits
	// 7 and 9 (hostmem.collision_mask): of a kibibyte's eight lines, each
	// collides with three (line ⊕ 1, 4, 5); sectors of one line do not
	// (their stores cost hostmem.line_contention instead).
	assert.Equal(t, 0x280, m.Phys.HostCollisionMask)
	assert.Equal(t, 0, m.barrierCollisions(7, 1024, 0))
	assert.Equal(t, 3, m.barrierCollisions(7, 128, 0))
	assert.Equal(t, 0, m.barrierCollisions(3, 32, 0), "one line")
	assert.Equal(t, 1, m.barrierCollisions(7, 32, 0), "lines 0 and 1, four sectors each: one colliding line")
	assert.Equal(t, 0, m.barrierCollisions(1, 256, 0), "lines 0 and 2")
	assert.Equal(t, 1, m.barrierCollisions(1, 512, 0), "lines 0 and 4")
	assert.Equal(t, 0, m.barrierCollisions(1, 128, 128), "lines 1 and 2")
	assert.Equal(t, 1, m.barrierCollisions(1, 128, 256), "lines 2 and 3")
	assert.Equal(t, 0, m.barrierCollisions(1, 4096, 0), "another page")
	assert.Equal(t, 0, m.barrierCollisions(1, 640, 512), "lines 4 and 9: another kibibyte")
}

// The blocks' copies of a barrier's sector 32 B apart (vLLM's Signal
// layout): with one block its line holds one sector in use; with b
// blocks, min(b, 4), and each store the barrier's other ranks land at the
// line's other sectors adds hostmem.line_contention to the sector's
// service. Blocks whose sectors lie a line apart (stride 0, 128) never
// share one.
func TestStoresAtTheOtherSectorsOfAPolledLineAddToItsService(t *testing.T) {
	pre, err := topology.Lookup("h200x1")
	require.NoError(t, err)
	top, err := pre.Build()
	require.NoError(t, err)
	// seenAfter: a W-rank barrier's sector group (W − 1 slots) in host
	// memory, rank 0's wait on one slot: the time from the landing to the
	// wait's end, less the slots' own service.
	seenAfter := func(w, stride, blocks int) sim.Duration {
		m, err := New(top)
		require.NoError(t, err)
		at := HostMem(0)
		var fs []*sim.FlagVar
		for p := 1; p < w; p++ {
			fs = append(fs, m.NewFlag(fmt.Sprintf("sig0[%d]", p), at, "sig0", 4096, stride))
		}
		var seen sim.Time
		require.NoError(t, m.WaitFlag(0, at, fs[0], 1, nil, 0, Poll{Blocks: blocks}, func() { seen = m.Eng.Now() }))
		require.NoError(t, m.SignalFlag(0, at, fs[0], 1, 1))
		require.NoError(t, m.Eng.Run())
		land, err := m.StoreLanding(0, at)
		require.NoError(t, err)
		return sim.Duration(seen) - land - m.Phys.HostStoreService - m.pollLoad(at, blocks) - sim.Duration(w-1)*m.Phys.HostSlotService
	}
	m, err := New(top)
	require.NoError(t, err)
	rtt, err := m.RoundTrip(0, HostMem(0))
	require.NoError(t, err)
	svc, line := m.Phys.HostPollService, m.Phys.HostLineContention
	// The other blocks' copies on lines that collide with a block's own
	// (lines 0, 1, 4, 5 of a kibibyte, or 2, 3, 6, 7) cost
	// hostmem.foreign_store_collision per store beyond the first landing
	// on each of their sectors a round, up to hostmem.foreign_collision_cap:
	// nothing at W = 2 (one store a sector), at W = 8 six a sector.
	per, capped := m.Phys.HostForeignStoreCollision, m.Phys.HostForeignCollisionCap
	foreign := map[[2]int]sim.Duration{ // (stride, blocks) at W = 8
		{32, 132}:  capped,   // three colliding lines of four sectors: 72 stores
		{64, 8}:    12 * per, // lines 0–3, two sectors each: line 1 collides with line 0
		{128, 132}: min(18*per, capped),
	}
	for _, w := range []int{2, 8} {
		writers := sim.Duration(w - 1)
		f := func(stride, blocks int) sim.Duration {
			if w == 2 {
				return 0
			}
			return foreign[[2]int{stride, blocks}]
		}
		assert.Equal(t, max(rtt, svc), seenAfter(w, 32, 1), "W = %d", w)
		assert.Equal(t, max(rtt, svc+writers*line), seenAfter(w, 32, 2), "W = %d", w)
		assert.Equal(t, max(rtt, svc+3*writers*line), seenAfter(w, 32, 4), "W = %d", w)
		assert.Equal(t, max(rtt, svc+3*writers*line)+f(32, 132), seenAfter(w, 32, 132), "W = %d: a line holds four sectors", w)
		assert.Equal(t, max(rtt, svc+writers*line)+f(64, 8), seenAfter(w, 64, 8), "W = %d: two blocks' sectors to a line", w)
		assert.Equal(t, max(rtt, svc), seenAfter(w, 0, 132), "W = %d", w)
		assert.Equal(t, max(rtt, svc)+f(128, 132), seenAfter(w, 128, 132), "W = %d", w)
	}
}

// A GPU's small stores to host memory leave one after another: a barrier
// slot's flag is stored by each of the kernel's blocks, and a flag
// signalled behind others lands after their stores; another GPU's queue
// is its own, and a flag of no group (NCCL's FIFO) queues nothing.
func TestHostFlagStoresQueuePerGPU(t *testing.T) {
	pre, err := topology.Lookup("h200x2")
	require.NoError(t, err)
	top, err := pre.Build()
	require.NoError(t, err)
	m, err := New(top)
	require.NoError(t, err)
	s := m.Phys.HostStoreService
	require.Positive(t, s)
	at := HostMem(m.LocalSocket(0))
	land, err := m.StoreLanding(0, at)
	require.NoError(t, err)
	seen := map[string]sim.Time{}
	flag := func(name string, group string) *sim.FlagVar {
		f := m.NewFlag(name, at, group, 0, 0)
		f.Wait(1, 0, nil, func() { seen[name] = m.Eng.Now() })
		return f
	}
	a, b, c := flag("a", "bar"), flag("b", "bar"), flag("c", "")
	require.NoError(t, m.SignalFlag(0, at, a, 1, 36)) // 36 blocks' copies
	require.NoError(t, m.SignalFlag(0, at, b, 1, 36))
	require.NoError(t, m.SignalFlag(0, at, c, 1, 36)) // no group: no queue
	other := flag("other", "bar")
	require.NoError(t, m.SignalFlag(1, HostMem(m.LocalSocket(1)), other, 1, 36))
	require.False(t, m.HostStoresIdle())
	require.NoError(t, m.Eng.Run())
	assert.Equal(t, sim.Time(land+36*s), seen["a"])
	assert.Equal(t, sim.Time(land+72*s), seen["b"])
	assert.Equal(t, sim.Time(land), seen["c"])
	land1, err := m.StoreLanding(1, HostMem(m.LocalSocket(1)))
	require.NoError(t, err)
	assert.Equal(t, sim.Time(land1+36*s), seen["other"], "GPU 1's stores queue on their own")
	assert.True(t, m.HostStoresIdle())
}

// A system fence beside blocks polling host memory waits half a host round
// trip beside one and gpu.fence_poll_wait_growth of one more for each
// doubling; beside none it waits nothing more.
func TestFenceBesidePolls(t *testing.T) {
	top, m := h200x1(t)
	rtt, err := m.RoundTrip(0, HostMem(0))
	require.NoError(t, err)
	growth := top.Params.Get("gpu.fence_poll_wait_growth")
	require.Greater(t, growth, 0.0)
	none, err := m.FenceBesidePolls(0, HostMem(0), 0)
	require.NoError(t, err)
	assert.Zero(t, none)
	local, err := m.FenceBesidePolls(0, GPUMem(0), 8)
	require.NoError(t, err)
	assert.Zero(t, local, "loads of GPU memory cost a fence nothing")
	require.NoError(t, err)
	assert.Zero(t, none)
	prev := sim.Duration(0)
	for _, n := range []int{1, 2, 4, 128} {
		w, err := m.FenceBesidePolls(0, HostMem(0), n)
		require.NoError(t, err)
		assert.InDelta(t, float64(rtt)*(0.5+growth*math.Log2(float64(n))), float64(w), 1, "beside %d pollers", n)
		assert.Greater(t, w, prev, "beside %d pollers", n)
		prev = w
	}
}

// Loads of a peer GPU's memory in flight hold a fence as host memory's do,
// with the peer's round trip (over NVLink on h200x2); loads of the GPU's
// own memory hold it for nothing, on either GPU.
func TestFenceBesideLoadsOfPeerMemory(t *testing.T) {
	top, err := topology.Load("h200x2")
	require.NoError(t, err)
	m, err := New(top)
	require.NoError(t, err)
	growth := top.Params.Get("gpu.fence_poll_wait_growth")
	for r, peer := range []int{1, 0} {
		own, err := m.FenceBesidePolls(r, GPUMem(r), 8)
		require.NoError(t, err)
		assert.Zero(t, own, "rank %d beside loads of its own memory", r)
		rtt, err := m.RoundTrip(r, GPUMem(peer))
		require.NoError(t, err)
		for _, n := range []int{1, 15, 71} {
			w, err := m.FenceBesidePolls(r, GPUMem(peer), n)
			require.NoError(t, err)
			assert.InDelta(t, float64(rtt)*(0.5+growth*math.Log2(float64(n))), float64(w), 1, "rank %d beside %d blocks loading the peer", r, n)
		}
	}
}

// Polls of host memory in flight drain at the lower of the link's rate for
// each request's completion (a warp's pollers on one line share a request)
// and the requests outstanding over a round trip; GPU memory's do not
// queue.
func TestPollDrainTakesTheLowerRate(t *testing.T) {
	m := h200x1Machine(t)
	local, err := m.PollDrain(0, GPUMem(0), 4096, 32, false)
	require.NoError(t, err)
	assert.Zero(t, local)
	rtt, err := m.RoundTrip(0, HostMem(0))
	require.NoError(t, err)
	ph := m.Phys
	link := 63.015e9                              // Gen5 x16, bytes a second on the wire
	perRequest := func(payload float64) float64 { // seconds a request on the link
		return (payload + ph.TLPOverhead) / ph.LinkEfficiency / link
	}
	capped := (float64(rtt) / float64(sim.Second)) / ph.HostRequestsOutstanding
	for _, c := range []struct {
		pollers, spacing int
		want             float64 // seconds
	}{
		{4096, 32, 1024 * max(perRequest(128), capped)}, // four pollers a line: the link binds
		{4096, 0, 1024 * max(perRequest(128), capped)},  // 0: 32 B
		{4096, 64, 2048 * max(perRequest(64), capped)},
		{4096, 128, 4096 * max(perRequest(32), capped)}, // a line each: the requests outstanding bind
		{4096, 4096, 4096 * max(perRequest(32), capped)},
		{2, 32, 2 * max(perRequest(32), capped)}, // fewer than a line's worth: a request each
	} {
		got, err := m.PollDrain(0, HostMem(0), c.pollers, c.spacing, false)
		require.NoError(t, err)
		assert.InDelta(t, c.want*1e12, float64(got), 0.01*c.want*1e12+1, "%d pollers %d B apart", c.pollers, c.spacing)
	}
	assert.Greater(t, perRequest(128), capped, "a sector each (128 B a request) is the link's")
	assert.Less(t, perRequest(32), capped, "a line each is the requests'")

	// With 8-bit tags the GPU keeps a third as many requests outstanding:
	// a sector each the requests bind too.
	capped8 := (float64(rtt) / float64(sim.Second)) / ph.HostRequestsOutstanding8bit
	require.Equal(t, 256.0, ph.HostRequestsOutstanding8bit)
	for _, c := range []struct {
		pollers, spacing int
		want             float64
	}{
		{4096, 32, 1024 * max(perRequest(128), capped8)},
		{4096, 128, 4096 * max(perRequest(32), capped8)},
	} {
		got, err := m.PollDrain(0, HostMem(0), c.pollers, c.spacing, true)
		require.NoError(t, err)
		assert.InDelta(t, c.want*1e12, float64(got), 0.01*c.want*1e12+1, "8-bit tags: %d pollers %d B apart", c.pollers, c.spacing)
	}
	assert.Less(t, perRequest(128), capped8, "with 8-bit tags a sector each is the requests' too")
}
