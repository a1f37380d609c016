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
