package hw

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/sim"
)

func h200x1Machine(t *testing.T) *Machine {
	_, m := h200x1(t)
	return m
}

// readGBps runs a read of bytes of host memory by reader on a fresh
// machine beside writer (no blocks: none), the writer started first.
func readGBps(t *testing.T, reader, writer Kernel) (float64, *Machine) {
	t.Helper()
	m := h200x1Machine(t)
	host := HostMem(m.LocalSocket(0))
	if writer.Blocks > 0 {
		require.NoError(t, m.Write(0, host, 1<<40, writer, "w", nil))
	}
	var end sim.Time
	require.NoError(t, m.Read(0, host, 2<<20, reader, "r", func() { end = m.Eng.Now() }))
	require.NoError(t, m.Eng.RunUntil(sim.Time(sim.Second)))
	require.NotZero(t, end)
	return float64(2<<20) / sim.Duration(end).Seconds() / 1e9, m
}

// Loads of host memory beside blocks streaming stores to it: a round trip
// longer by pcie.posted_wait_one beside one storing block and by
// pcie.posted_wait_per_doubling for each doubling of the storing blocks
// from one (from two on; stores spanning a TiB: the whole wait), and a
// block's bytes in flight at most
// gpu.host_loads_beside_stores; paced, protocol-loop and fenced stores
// and stores to the GPU's own memory do not count, and the count goes
// back to zero when the stores end.
func TestLoadsWaitBehindStreamingStores(t *testing.T) {
	one := Kernel{Blocks: 1, Threads: 512, LoadsInFlight: 1}
	alone, _ := readGBps(t, one, Kernel{})
	m := h200x1Machine(t)
	g := m.Phys.PostedWaitPerDoubling
	require.Positive(t, g)
	rtt := float64(512*16) / (alone * 1e9) // s
	w1 := m.Phys.PostedWaitOne
	require.Positive(t, w1)
	got1, m1 := readGBps(t, one, Kernel{Blocks: 1, Threads: 512})
	assert.InDelta(t, 1.0, m1.StoringBlocks(0), 1e-9)
	assert.InEpsilon(t, float64(512*16)/(rtt+w1.Seconds())/1e9, got1, 0.02, "one load a thread beside one storing block")
	for _, n := range []int{2, 8, 131} {
		got, m := readGBps(t, one, Kernel{Blocks: n, Threads: 512})
		assert.InDelta(t, float64(n), m.StoringBlocks(0), 1e-9)
		want := float64(512*16) / (rtt + g.Seconds()*(1+math.Log2(float64(n)))) / 1e9
		assert.InEpsilon(t, want, got, 0.02, "one load a thread beside %d storing blocks", n)
	}
	four := Kernel{Blocks: 1, Threads: 512, LoadsInFlight: 4}
	got, m := readGBps(t, four, Kernel{Blocks: 131, Threads: 512})
	c := float64(m.Phys.HostLoadsBesideStores)
	assert.InEpsilon(t, c/(rtt+g.Seconds()*(1+math.Log2(131)))/1e9, got, 0.02, "four loads a thread, capped")

	for name, w := range map[string]Kernel{
		"paced":  {Blocks: 131, Threads: 512, RateCap: 10 * sim.GBps},
		"LL":     {Blocks: 131, Threads: 512, Loop: LoopLL},
		"fenced": {Blocks: 131, Threads: 512, StoresPerFence: 4},
	} {
		_, m := readGBps(t, one, w)
		assert.Zero(t, m.StoringBlocks(0), name)
	}
	m = h200x1Machine(t)
	require.NoError(t, m.Write(0, GPUMem(0), 1<<20, Kernel{Blocks: 131, Threads: 512}, "local", nil))
	assert.Zero(t, m.StoringBlocks(0), "stores to local memory")

	m = h200x1Machine(t)
	require.NoError(t, m.Write(0, HostMem(m.LocalSocket(0)), 64<<20, Kernel{Blocks: 8, Threads: 512}, "w", nil))
	assert.InDelta(t, 8.0, m.StoringBlocks(0), 1e-9)
	assert.Positive(t, m.HostLoadWait(0))
	// a lone thread's load (a chase) waits pcie.posted_wait_lone_load of it
	require.True(t, m.Phys.PostedWaitLoneLoad > 0 && m.Phys.PostedWaitLoneLoad < 1)
	assert.InDelta(t, m.Phys.PostedWaitLoneLoad*float64(m.HostLoadWait(0)), float64(m.HostLoneLoadWait(0)), 1)
	require.NoError(t, m.Eng.Run())
	assert.Zero(t, m.StoringBlocks(0), "after the stores land")
	assert.Zero(t, m.HostLoadWait(0))
	assert.Zero(t, m.HostLoneLoadWait(0))
	assert.True(t, m.HostStreamsIdle())
}

// The wait behind streaming stores follows the bytes they sweep together:
// the whole of it from pcie.posted_wait_span_knee up, half of it
// pcie.posted_wait_span_doublings / 2 halvings below, none that many
// halvings below; a write's span is Kernel.StoreSpan, else its bytes, and
// two writes' spans add up until each lands.
func TestPostedWaitFollowsTheSpan(t *testing.T) {
	m := h200x1Machine(t)
	knee, d := float64(m.Phys.PostedWaitSpanKnee), m.Phys.PostedWaitSpanDoublings
	require.Positive(t, knee)
	require.Positive(t, d)
	whole := float64(m.Phys.PostedWaitPerDoubling) * (1 + math.Log2(8))
	host := HostMem(m.LocalSocket(0))
	for _, c := range []struct {
		span  float64
		share float64
	}{{2 * knee, 1}, {knee, 1}, {knee / math.Exp2(d/2), 0.5}, {knee / math.Exp2(d), 0}, {knee / math.Exp2(d+3), 0}} {
		m := h200x1Machine(t)
		require.NoError(t, m.Write(0, host, 1<<40, Kernel{Blocks: 8, Threads: 512, StoreSpan: sim.Bytes(c.span)}, "w", nil))
		assert.InDelta(t, c.share, m.PostedWaitSpanShare(sim.Bytes(c.span)), 1e-6, "span %.0f B", c.span)
		assert.InDelta(t, c.share*whole, float64(m.HostLoadWait(0)), 1.0, "span %.0f B", c.span)
	}
	// without StoreSpan a write's span is its bytes; two writes add up
	m = h200x1Machine(t)
	require.NoError(t, m.Write(0, host, 3<<20, Kernel{Blocks: 4, Threads: 512}, "a", nil))
	require.NoError(t, m.Write(0, host, 5<<20, Kernel{Blocks: 4, Threads: 512}, "b", nil))
	assert.Equal(t, sim.Bytes(8<<20), m.StoreSpan(0))
	assert.InDelta(t, whole*m.PostedWaitSpanShare(8<<20), float64(m.HostLoadWait(0)), 1.0)
	require.NoError(t, m.Eng.Run())
	assert.Zero(t, m.StoreSpan(0), "after the stores land")
	// no knee: the whole wait at every span
	m.Phys.PostedWaitSpanKnee = 0
	assert.Equal(t, 1.0, m.PostedWaitSpanShare(4096))
}

// A lone thread's load behind stores striding together follows the
// streaming curve up to pcie.posted_wait_span_part_chase, then rises with
// the span's doublings to the whole at pcie.posted_wait_span_knee_chase;
// behind stores that do not stride together (StoreHalves.Wide false), or
// with the part unset, the streaming curve at every span.
func TestChaseWaitFollowsItsOwnSpanCurve(t *testing.T) {
	m := h200x1Machine(t)
	part, knee := float64(m.Phys.PostedWaitSpanPartChase), float64(m.Phys.PostedWaitSpanKneeChase)
	require.Positive(t, part)
	require.Greater(t, knee, part)
	host := HostMem(m.LocalSocket(0))
	wide := StoreHalves{Known: true, Own: 1, Wide: true}
	share := func(span float64, h StoreHalves) (float64, float64) {
		m := h200x1Machine(t)
		require.NoError(t, m.Write(0, host, 1<<40, Kernel{Blocks: 2, Threads: 512, StoreSpan: sim.Bytes(span)}, "w", nil))
		return m.chaseSpanShare(0, h), m.PostedWaitSpanShare(sim.Bytes(span))
	}
	for _, span := range []float64{part / 4, part} {
		got, streaming := share(span, wide)
		assert.Equal(t, streaming, got, "%.0f B: the streaming curve's", span)
	}
	at := m.PostedWaitSpanShare(sim.Bytes(part))
	mid := math.Sqrt(part * knee) // half the doublings from the part to the knee
	got, streaming := share(mid, wide)
	assert.InDelta(t, at+(1-at)/2, got, 1e-6, "halfway in doublings (the span in whole bytes)")
	assert.Greater(t, got, streaming)
	for _, span := range []float64{knee, 2 * knee} {
		got, _ := share(span, wide)
		assert.Equal(t, 1.0, got, "%.0f B", span)
	}
	got, streaming = share(mid, StoreHalves{Known: true, Own: 1})
	assert.Equal(t, streaming, got, "stores each over their own span")
	m.Phys.PostedWaitSpanPartChase = 0
	require.NoError(t, m.Write(0, host, 1<<40, Kernel{Blocks: 2, Threads: 512, StoreSpan: sim.Bytes(mid)}, "w", nil))
	assert.Equal(t, m.PostedWaitSpanShare(sim.Bytes(mid)), m.chaseSpanShare(0, wide), "no part: the streaming curve")
}

// A read under way takes its new rate when the stores beside it land: the
// reader of a capture that outlives its writer ends its tail alone.
func TestReadSpeedsUpWhenTheStoresLand(t *testing.T) {
	one := Kernel{Blocks: 1, Threads: 512, LoadsInFlight: 1}
	alone, _ := readGBps(t, one, Kernel{})
	beside, _ := readGBps(t, one, Kernel{Blocks: 131, Threads: 512})
	m := h200x1Machine(t)
	host := HostMem(m.LocalSocket(0))
	var landed, end sim.Time
	require.NoError(t, m.Write(0, host, 64<<20, Kernel{Blocks: 131, Threads: 512}, "w", func() { landed = m.Eng.Now() }))
	require.NoError(t, m.Read(0, host, 2<<20, one, "r", func() { end = m.Eng.Now() }))
	require.NoError(t, m.Eng.Run())
	require.Positive(t, landed)
	require.Greater(t, end, landed, "the reader outlives the stores")
	// bytes read beside the stores at that rate, the rest alone
	besideBytes := beside * 1e9 * sim.Duration(landed).Seconds()
	want := sim.Duration(landed).Seconds() + (float64(2<<20)-besideBytes)/(alone*1e9)
	assert.InEpsilon(t, want, sim.Duration(end).Seconds(), 0.03)
	assert.Zero(t, m.StoringBlocks(0))
}

// A load of host memory waits behind the GPU's other loads of it only
// where they fill the link: none behind one block of 512 threads (its
// window sets its rate), the window's time on the link behind 16 blocks,
// and behind 132 blocks no more than gpu.host_loads_outstanding's time,
// however many threads load; none once the reads are done.
func TestLoadsWaitBehindLoadsThatFillTheLink(t *testing.T) {
	wait := func(k Kernel) (sim.Duration, *Machine) {
		m := h200x1Machine(t)
		host := HostMem(m.LocalSocket(0))
		require.NoError(t, m.Read(0, host, 64<<20, k, "r", nil))
		require.NoError(t, m.Eng.RunUntil(sim.Time(50*sim.Microsecond)))
		alone, err := m.RoundTrip(0, host)
		require.NoError(t, err)
		return m.HostReadQueueWait(0, alone), m
	}
	w1, _ := wait(Kernel{Blocks: 1, Threads: 512})
	assert.Zero(t, w1, "one block's window does not fill the link")
	w16, m := wait(Kernel{Blocks: 16, Threads: 512})
	assert.Positive(t, w16)
	w132, _ := wait(Kernel{Blocks: 132, Threads: 512})
	w132x4, _ := wait(Kernel{Blocks: 132, Threads: 1024, LoadsInFlight: 8})
	assert.Greater(t, w132, 2*w16)
	n := float64(m.Phys.HostLoadsOutstanding)
	require.Positive(t, n)
	// 8.6 times the window moves the wait by under a third, and it stays
	// under the outstanding bytes' time at 45 GB/s (the loads move 51)
	assert.Less(t, float64(w132x4), 1.3*float64(w132))
	assert.Less(t, w132x4.Seconds(), n/45e9)

	require.NoError(t, m.Eng.Run())
	alone, err := m.RoundTrip(0, HostMem(m.LocalSocket(0)))
	require.NoError(t, err)
	assert.Zero(t, m.HostReadQueueWait(0, alone), "after the reads")
}

// Beside two or more blocks streaming stores to host memory a load waits
// the stores' queue and not the other loads': none behind 132 reader
// blocks beside 2 or 132 storing blocks, where beside one storing block
// the readers' loads fill the link and it waits behind them.
func TestLoadsBesideStreamingStoresWaitTheStoresNotTheLoads(t *testing.T) {
	wait := func(storing int) sim.Duration {
		m := h200x1Machine(t)
		host := HostMem(m.LocalSocket(0))
		require.NoError(t, m.Write(0, host, 1<<40, Kernel{Blocks: storing, Threads: 512}, "w", nil))
		require.NoError(t, m.Read(0, host, 1<<40, Kernel{Blocks: 132, Threads: 512}, "r", nil))
		require.NoError(t, m.Eng.RunUntil(sim.Time(100*sim.Microsecond)))
		require.InDelta(t, float64(storing), m.StoringBlocks(0), 1e-9)
		alone, err := m.RoundTrip(0, host)
		require.NoError(t, err)
		return m.HostReadQueueWait(0, alone)
	}
	assert.Positive(t, wait(1), "beside one storing block the readers fill the link")
	assert.Zero(t, wait(2))
	assert.Zero(t, wait(132))
}

// A read whose flow starts after blocks began streaming stores to host
// memory (its first request was on its way when they started) takes the
// wait behind them as one started after them does; a write whose stores
// follow its loads one for one (PacedStores) does not count.
func TestReadStartedDuringItsFirstRequestTakesTheStoringBlocks(t *testing.T) {
	reader := Kernel{Blocks: 1, Threads: 512, LoadsInFlight: 1}
	writer := Kernel{Blocks: 131, Threads: 512}
	after := func(paced bool, readFirst bool) float64 {
		_, m := h200x1(t)
		w := writer
		w.PacedStores = paced
		var end sim.Time
		read := func() {
			require.NoError(t, m.Read(0, HostMem(0), 1<<20, reader, "read", func() { end = m.Eng.Now() }))
		}
		if readFirst {
			read()
		}
		require.NoError(t, m.Write(0, HostMem(0), 1<<30, w, "write", nil))
		if !readFirst {
			read()
		}
		require.NoError(t, m.Eng.Run())
		return float64(end)
	}
	assert.InDelta(t, after(false, false), after(false, true), after(false, false)*0.02, "the same wait, whichever asked first")
	assert.Greater(t, after(false, true), 3*after(true, true), "paced stores do not slow the read")
}

// Beside storing blocks all in one half of the SMs a load waits its half's
// wait, the other half's whatever their count (pcie.posted_wait_other_half),
// its own half's growing by pcie.posted_wait_own_half_per_doubling a
// doubling of its blocks from two where their TPCs are not known, of
// their TPCs where they are, times the span's share, a lone thread
// pcie.posted_wait_lone_load_halves of it (_other behind the other half's
// alone); in both halves the two one
// after the other, or the count's wait where that is longer; where the
// halves are not known, the count's.
func TestLoadsWaitByTheStoringSMsHalves(t *testing.T) {
	at := func(storing int, span sim.Bytes) *Machine {
		m := h200x1Machine(t)
		require.NoError(t, m.Write(0, HostMem(m.LocalSocket(0)), 1<<40, Kernel{Blocks: storing, Threads: 512, StoreSpan: span}, "w", nil))
		return m
	}
	full := sim.Bytes(256 << 20)
	ph := at(2, full).Phys
	own, other, per := ph.PostedWaitOwnHalf, ph.PostedWaitOtherHalf, ph.PostedWaitOwnHalfPerDoubling
	require.Positive(t, own)
	require.Positive(t, per)
	require.Greater(t, own, other, "its own half's stores delay a load more")
	assert.Equal(t, StoreHalves{}, StoresInHalves(0, 0))
	for _, n := range []int{2, 8, 64} {
		m := at(n, full)
		grown := own + sim.Duration(math.Log2(float64(n)/2)*float64(per))
		assert.InDelta(t, float64(grown), float64(m.HostLoadWaitIn(0, StoresInHalves(n, 0))), 1, "%d storing blocks", n)
		// where their TPCs are known the TPCs double: n blocks on n / 2
		// TPCs wait as n / 2 blocks of unknown TPCs, n on n TPCs as n
		tpcs := func(k int) StoreHalves {
			h := StoresInHalves(n, 0)
			h.OwnTPCs = k
			return h
		}
		assert.Equal(t, m.HostLoadWaitIn(0, StoresInHalves(n, 0)), m.HostLoadWaitIn(0, tpcs(n)), "%d blocks on as many TPCs", n)
		if n > 2 {
			half := at(n/2, full)
			assert.InDelta(t, float64(half.HostLoadWaitIn(0, StoresInHalves(n/2, 0))), float64(m.HostLoadWaitIn(0, tpcs(n/2))), 1, "%d blocks on %d TPCs", n, n/2)
		}
		// a lone thread's share falls by pcie.posted_wait_lone_load_halves_per_doubling
		// a doubling of the own half's TPCs
		lone := m.Phys.PostedWaitLoneLoadHalves - m.Phys.PostedWaitLoneLoadHalvesPerDoubling*math.Log2(float64(n)/2)
		assert.InDelta(t, lone*float64(m.HostLoadWaitIn(0, tpcs(n))), float64(m.HostLoneLoadWaitIn(0, tpcs(n))), 1, "%d TPCs: the lone share", n)
		assert.Equal(t, other, m.HostLoadWaitIn(0, StoresInHalves(0, n)), "%d storing blocks", n)
		assert.Equal(t, m.HostLoadWait(0), m.HostLoadWaitIn(0, StoreHalves{}))
		// behind the other half's alone, its own share
		assert.InDelta(t, m.Phys.PostedWaitLoneLoadHalvesOther*float64(other), float64(m.HostLoneLoadWaitIn(0, StoresInHalves(0, n))), 1)
	}
	m := at(2, full)
	both := StoresInHalves(1, 1)
	assert.True(t, both.Both())
	c := m.Phys.PostedWaitOtherHalfBesideOwn
	require.Greater(t, c, 0.0)
	require.Less(t, c, 1.0, "beside its own half's stores a load waits part of the other half's")
	mixed := own + sim.Duration(math.Round(c*float64(other)))
	assert.InDelta(t, float64(max(mixed, m.HostLoadWait(0))), float64(m.HostLoadWaitIn(0, both)), 1, "one of each: none added for one block of its own half")
	assert.InDelta(t, m.Phys.PostedWaitLoneLoadHalves*float64(mixed), float64(m.HostLoneLoadWaitIn(0, both)), 1, "a lone load's share as in one half")
	all := at(131, full)
	assert.Equal(t, all.HostLoadWait(0), all.HostLoadWaitIn(0, StoresInHalves(65, 66)), "beside 131 the count's wait is longer")
	small := at(2, 1<<20)
	assert.Less(t, small.HostLoadWaitIn(0, StoresInHalves(2, 0)), own, "a small span's share")
	one := at(1, full)
	assert.Equal(t, one.HostLoadWait(0), one.HostLoadWaitIn(0, StoresInHalves(1, 0)), "one storing block: the count's")
}

// Behind storing SMs whose TPCs' shares interleave unevenly in the stride
// (StoreHalves.Uneven) a warp's load waits pcie.posted_wait_uneven_stride_warp
// of its own half's wait, pcie.posted_wait_uneven_stride_warp_other of the
// other's, a lone thread's pcie.posted_wait_uneven_stride and _other of
// its, where the stores span the whole knee; below it, as behind any set.
func TestUnevenStridesWaitLessAtFullSpan(t *testing.T) {
	at := func(span sim.Bytes) *Machine {
		m := h200x1Machine(t)
		require.NoError(t, m.Write(0, HostMem(m.LocalSocket(0)), 1<<40, Kernel{Blocks: 8, Threads: 512, StoreSpan: span}, "w", nil))
		return m
	}
	full := at(256 << 20)
	own, other := StoresInHalves(8, 0), StoresInHalves(0, 8)
	own.StrideLevels, other.StrideLevels = true, true // four TPCs of one GPC
	unOwn, unOther := own, other
	unOwn.Uneven, unOther.Uneven = true, true
	r, ro := full.Phys.PostedWaitUnevenStride, full.Phys.PostedWaitUnevenStrideOther
	w, wo := full.Phys.PostedWaitUnevenStrideWarp, full.Phys.PostedWaitUnevenStrideWarpOther
	require.Greater(t, r, 0.0)
	require.Less(t, r, ro, "the own half's levels lie further apart")
	require.Less(t, w, wo)
	require.Less(t, r, w, "a lone thread's levels lie further apart than a warp's")
	assert.InDelta(t, w*float64(full.HostLoadWaitIn(0, own)), float64(full.HostLoadWaitIn(0, unOwn)), 1)
	assert.InDelta(t, wo*float64(full.HostLoadWaitIn(0, other)), float64(full.HostLoadWaitIn(0, unOther)), 1)
	lone, loneOther := full.Phys.PostedWaitLoneLoadHalves, full.Phys.PostedWaitLoneLoadHalvesOther
	assert.InDelta(t, lone*r*float64(full.HostLoadWaitIn(0, own)), float64(full.HostLoneLoadWaitIn(0, unOwn)), 2)
	assert.InDelta(t, loneOther*ro*float64(full.HostLoadWaitIn(0, other)), float64(full.HostLoneLoadWaitIn(0, unOther)), 2)
	small := at(8 << 20)
	assert.Equal(t, small.HostLoadWaitIn(0, own), small.HostLoadWaitIn(0, unOwn), "below the knee the levels are gone")
	assert.Equal(t, small.HostLoadWaitIn(0, other), small.HostLoadWaitIn(0, unOther))
	both := StoresInHalves(4, 4)
	both.Uneven = true
	assert.Equal(t, full.HostLoadWaitIn(0, StoresInHalves(4, 4)), full.HostLoadWaitIn(0, both), "the rule speaks for one half's SMs")
}

// A kernel whose blocks lie in two places beside the storing ones loads
// at the pace of the place that waits longer (StoresBeside.StoresHalfSlowest), which
// ever of the two is named first; places not Known count for nothing.
func TestLoadsWaitTheirSlowestPlace(t *testing.T) {
	writer := Kernel{Blocks: 2, Threads: 512}
	own, other := StoresInHalves(2, 0), StoresInHalves(0, 2)
	at := func(h StoreHalves, also ...StoreHalves) float64 {
		k := Kernel{Blocks: 4, Threads: 512, LoadsInFlight: 1, Beside: &StoresBeside{StoresHalf: h}}
		copy(k.Beside.StoresHalfSlowest[:], also)
		v, _ := readGBps(t, k, writer)
		return v
	}
	a, b := at(own), at(other)
	require.NotEqual(t, a, b)
	assert.Equal(t, min(a, b), at(own, other))
	assert.Equal(t, min(a, b), at(other, own))
	assert.Equal(t, a, at(own, StoreHalves{}))
}

// Loads from SMs shared with a writer kernel's blocks queue at
// gpu.host_loads_writer_on_sm_rate behind the shared blocks' bytes in
// flight; where only some blocks share an SM the kernel goes at the pace
// of its slower blocks: never faster than with none shared, and slower
// the more are.
func TestLoadsBesideAWriterKernelOnTheirSMs(t *testing.T) {
	writer := Kernel{Blocks: 131, Threads: 512}
	at := func(shared int, all bool) float64 {
		k := Kernel{Blocks: 100, Threads: 1024}
		if shared > 0 {
			k.Beside = &StoresBeside{WriterOnItsSMs: true}
			if !all {
				k.Beside.WriterOnSMBlocks = shared
			}
		}
		v, _ := readGBps(t, k, writer)
		return v
	}
	none, some, more, all := at(0, false), at(10, false), at(99, false), at(100, true)
	assert.LessOrEqual(t, some, none)
	assert.Less(t, more, some)
	assert.InEpsilon(t, all, more, 0.05, "99 of 100 shared goes near all of them")
	m := h200x1Machine(t)
	c := float64(m.Phys.HostLoadsWriterOnSMRate) / 1e9
	assert.Less(t, all, c, "below the shared SMs' rate")
}
