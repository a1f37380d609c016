package hw

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/sim"
)

// shareCaps starts a writer streaming to host memory, then a read of host
// memory by reader, runs to the middle of the read and returns the caps
// the share gives the writer and the reader there, and the machine.
func shareCaps(t *testing.T, reader, writer Kernel) (w, r sim.Rate, m *Machine) {
	t.Helper()
	m = h200x1Machine(t)
	host := HostMem(m.LocalSocket(0))
	require.NoError(t, m.Write(0, host, 1<<40, writer, "w", nil))
	require.NoError(t, m.Eng.RunUntil(sim.Time(sim.Micros(10))))
	require.NoError(t, m.Read(0, host, 64<<20, reader, "r", nil))
	require.NoError(t, m.Eng.RunUntil(sim.Time(sim.Micros(200))))
	require.Len(t, m.hostWrites, 1)
	require.Len(t, m.hostReads, 1)
	require.True(t, m.hostReads[0].f.Active())
	for _, f := range []*sim.Flow{m.hostWrites[0].f, m.hostReads[0].f} {
		assert.LessOrEqual(t, float64(f.Rate()), float64(f.Spec.Cap)*(1+1e-9), "%s within its cap", f.Spec.Label)
	}
	return m.hostWrites[0].f.Spec.Cap, m.hostReads[0].f.Spec.Cap, m
}

// Beside one block streaming stores to host memory, a few readers that
// could load more get what the stores leave of pcie.sm_host_bandwidth, the
// stores keeping their own cap.
func TestReadersGetWhatOneStoringBlockLeaves(t *testing.T) {
	w, r, m := shareCaps(t, Kernel{Blocks: 4, Threads: 512}, Kernel{Blocks: 1, Threads: 512})
	s := m.Phys.SMHostRate
	require.Greater(t, m.hostReads[0].own, s-m.Phys.SMStoreRate, "the loads alone would take more")
	assert.InEpsilon(t, float64(m.Phys.SMStoreRate), float64(w), 1e-9, "the stores keep their cap")
	assert.InEpsilon(t, float64(s-m.Phys.SMStoreRate), float64(r), 1e-9, "the loads get the rest")
}

// Beside many reader blocks the stores give way: they get
// S·B_w/(B_w + B_r) of pcie.sm_host_bandwidth (B_w pcie.store_share_bytes,
// B_r the loads' bytes in flight, at most gpu.host_loads_outstanding as
// HostReadQueueWait counts them), the loads the rest; when the loads end
// the stores take their own cap back.
func TestStoresGiveWayToManyReaders(t *testing.T) {
	reader := Kernel{Blocks: 132, Threads: 512}
	w, r, m := shareCaps(t, reader, Kernel{Blocks: 1, Threads: 512})
	s := float64(m.Phys.SMHostRate)
	bw, n := float64(m.Phys.StoreShareBytes), float64(m.Phys.HostLoadsOutstanding)
	br := n * -math.Expm1(-m.loadWindow(0, HostMem(m.LocalSocket(0)), reader)/n)
	want := s * bw / (bw + br)
	require.Less(t, want, float64(m.Phys.SMStoreRate))
	assert.InEpsilon(t, want, float64(w), 1e-9, "the stores' share")
	assert.InEpsilon(t, s-want, float64(r), 1e-9, "the loads' share")
	f, id := m.hostReads[0].f, m.hostReads[0].id
	require.NoError(t, m.Eng.RunUntil(sim.Time(5*sim.Millisecond)))
	require.False(t, f.ID == id && f.Active(), "the read is done")
	m.pruneHostWrites()
	require.Len(t, m.hostWrites, 1)
	assert.Equal(t, m.hostWrites[0].own, m.hostWrites[0].f.Spec.Cap, "the stores' cap after the loads")
}

// Beside 132 storing blocks, whose queue holds a few reader blocks to a
// GB/s or so, the stores keep what the link gives them; a protocol loop's
// loads (NCCL's Simple) do not take part.
func TestStoresKeepTheirCapBesideSlowOrProtocolReaders(t *testing.T) {
	w, r, m := shareCaps(t, Kernel{Blocks: 4, Threads: 512, LoadsInFlight: 1}, Kernel{Blocks: 132, Threads: 512})
	assert.Less(t, float64(r), 2e9, "the loads wait behind the stores' queue")
	assert.InEpsilon(t, float64(m.routeRate(m.hostWrites[0].f.Spec.Route)), float64(w), 1e-9, "the loads' own rate leaves the stores the link")
	_, r, m = shareCaps(t, Kernel{Blocks: 8, Threads: 512, Loop: LoopSimple}, Kernel{Blocks: 1, Threads: 512})
	assert.Equal(t, m.hostReads[0].own, r, "a protocol loop's loads keep their own cap")
	assert.False(t, m.hostShared[0])
}

// Blocks loading host memory alone queue for it together: a read of n
// blocks moves what exact mean value analysis gives n customers, each a
// block's window served at the route's rate and thinking for the rest of
// its round trip alone; one block keeps its own rate, and many fill the
// route. Two reads at once: each at most its own rate, together at most
// the route's.
func TestBlocksQueueForHostMemory(t *testing.T) {
	m := h200x1Machine(t)
	host := HostMem(m.LocalSocket(0))
	rate := func(k Kernel) (got, own, c float64) {
		m := h200x1Machine(t)
		require.NoError(t, m.Read(0, host, 1<<30, k, "r", nil))
		require.NoError(t, m.Eng.RunUntil(sim.Time(sim.Micros(50))))
		require.Len(t, m.hostReads, 1)
		h := m.hostReads[0]
		return float64(h.f.Rate()), float64(h.own), float64(m.routeRate(h.f.Spec.Route))
	}
	var prev float64
	for _, n := range []int{1, 2, 4, 8, 12, 16, 132} {
		k := Kernel{Blocks: n, Threads: 512, LoadsInFlight: 1}
		got, own, c := rate(k)
		w := m.loadWindow(0, host, k) / float64(n)
		d := w / c
		z := float64(n)*w/own - d
		var x, q float64
		for i := 1; i <= n; i++ {
			x = float64(i) / (z + d*(1+q))
			q = x * d * (1 + q)
		}
		assert.InEpsilon(t, min(x*w, c), got, 1e-9, "%d blocks", n)
		assert.LessOrEqual(t, got, own*(1+1e-9), "%d blocks: at most the window over the round trip", n)
		assert.Greater(t, got, prev, "%d blocks: more blocks move more", n)
		if n == 1 {
			assert.InEpsilon(t, own, got, 1e-9, "one block keeps its own rate")
		}
		if n == 8 {
			assert.Less(t, got, 0.9*min(own, c), "8 blocks: their loads wait for each other's")
		}
		prev = got
	}
	_, _, c132 := rate(Kernel{Blocks: 132, Threads: 512, LoadsInFlight: 1})
	assert.InEpsilon(t, c132, prev, 0.01, "132 blocks fill the route")

	// two reads queue together
	m2 := h200x1Machine(t)
	a, b := Kernel{Blocks: 4, Threads: 512, LoadsInFlight: 1}, Kernel{Blocks: 6, Threads: 256, LoadsInFlight: 1}
	require.NoError(t, m2.Read(0, host, 1<<30, a, "a", nil))
	require.NoError(t, m2.Read(0, host, 1<<30, b, "b", nil))
	require.NoError(t, m2.Eng.RunUntil(sim.Time(sim.Micros(50))))
	require.Len(t, m2.hostReads, 2)
	var sum float64
	for _, h := range m2.hostReads {
		assert.LessOrEqual(t, float64(h.f.Spec.Cap), float64(h.own)*(1+1e-9), "%s: at most its own rate", h.label)
		sum += float64(h.f.Rate())
	}
	aAlone, _, c := rate(a)
	assert.Less(t, float64(m2.hostReads[0].f.Rate()), aAlone, "beside another read a read's blocks wait longer")
	assert.LessOrEqual(t, sum, c*(1+1e-9))
}

// NCCL's LL128 loops load host memory in the same queue as plain loops:
// readers beside blocks that keep reloading LL128 lines of host memory (a
// receive waiting for its flags) get less the more such blocks there are,
// each kernel in proportion to what its blocks keep in flight, not half the
// way each (measured on one H100, testdata/h100x1-arsim/perblock_rest*.jsonl
// ll128_spin: 4 reader blocks move 28.4 GB/s alone, 25.3, 17.3, 11.2, 8.0,
// 4.4 beside 1, 2, 4, 8, 16 spinning blocks).
func TestLL128LoadsQueueWithOtherLoads(t *testing.T) {
	readerRate := func(spinners int) (reader, total float64) {
		m := h200x1Machine(t)
		host := HostMem(m.LocalSocket(0))
		if spinners > 0 {
			spin := Kernel{Blocks: spinners, Threads: 640, Loop: LoopLL128, Sources: 1, Wire: 128.0 / 120, LoopAt: host}
			require.NoError(t, m.Read(0, host, 1<<40, spin, "spin", nil))
		}
		require.NoError(t, m.Read(0, host, 1<<30, Kernel{Blocks: 4, Threads: 640, LoadsInFlight: 1}, "r", nil))
		require.NoError(t, m.Eng.RunUntil(sim.Time(sim.Micros(50))))
		for _, h := range m.hostReads {
			total += float64(h.f.Rate())
			if h.label == "r" {
				reader = float64(h.f.Rate())
			}
		}
		return reader, total
	}
	alone, _ := readerRate(0)
	prev := alone
	for _, p := range []int{1, 2, 4, 8, 16} {
		r, total := readerRate(p)
		assert.Less(t, r, prev, "%d spinning blocks leave the readers less than %d", p, p/2)
		assert.Greater(t, r, 0.0)
		if p >= 4 {
			assert.Less(t, r, 0.45*total, "%d spinning blocks: the readers' share follows the queue, not half the way", p)
		}
		if p == 16 {
			assert.Less(t, r, total/4, "16 spinning blocks: the readers keep less than a quarter")
		}
		prev = r
	}
}
