package hw

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
)

// allPull starts, on an 8-GPU machine, every GPU reading bytes from each of
// the 7 others at once (56 contending read flows, the traffic of a
// one-stage allreduce) and returns the machine after the run.
func allPull(t testing.TB, preset string, bytes sim.Bytes, rec *sim.Recorder) *Machine {
	top, err := topology.Load(preset)
	require.NoError(t, err)
	m, err := New(top)
	require.NoError(t, err)
	if rec != nil {
		m.Net.SetObserver(rec)
	}
	n := m.NumRanks()
	for r := 0; r < n; r++ {
		for p := 0; p < n; p++ {
			if p != r {
				require.NoError(t, m.Read(r, GPUMem(p), bytes, Kernel{Blocks: 36, Threads: 512}, fmt.Sprintf("r%d←%d", r, p), nil))
			}
		}
	}
	require.NoError(t, m.Eng.Run())
	return m
}

// The same scenario twice, and under GOMAXPROCS 1 and 8, gives the same
// event log, bit for bit.
func TestDeterministicAcrossRunsAndGOMAXPROCS(t *testing.T) {
	logs := map[int]string{}
	for _, procs := range []int{1, 8, 1} {
		prev := runtime.GOMAXPROCS(procs)
		rec := &sim.Recorder{}
		allPull(t, "rtxpro6000x8-2numa", 1<<20, rec)
		runtime.GOMAXPROCS(prev)
		s := rec.String()
		require.NotEmpty(t, s)
		if old, ok := logs[procs]; ok {
			require.Equal(t, old, s)
		}
		logs[procs] = s
	}
	require.Equal(t, logs[1], logs[8])
}

// No link ever carries more than its capacity, and the wire bytes the links
// carried equal the payload bytes moved times each hop's wire weight.
func TestConservationUnderContention(t *testing.T) {
	rec := &sim.Recorder{}
	const bytes = 1 << 20
	m := allPull(t, "rtxpro6000x8-2numa", bytes, rec)
	assert.Empty(t, rec.Overloads)
	started, finished := m.Net.Counts()
	assert.EqualValues(t, 56, started)
	assert.Equal(t, started, finished)
	var carried float64
	for _, r := range m.Net.Resources() {
		carried += r.Carried()
		assert.InDelta(t, rec.BusyBytes[r.ID], r.Carried(), 1e-3*r.Carried()+1, r.Name)
	}
	// Expected: every flow's payload times the sum of its hop weights.
	var want float64
	n := m.NumRanks()
	for r := 0; r < n; r++ {
		for p := 0; p < n; p++ {
			if p == r {
				continue
			}
			pa, err := m.path(GPUMem(p), GPUMem(r))
			require.NoError(t, err)
			for _, h := range m.route(pa, smLoad, 1, true) {
				want += bytes * h.Weight
			}
		}
	}
	// Each finish is rounded up to the next picosecond, so a flow may carry
	// up to rate × 1 ps more: a relative 1e-8 covers it.
	assert.InDelta(t, want, carried, want*1e-8)
}

// A read-based transfer slows when threads × 16 B × loads in flight does not
// cover the round trip: one block of 64 threads reading host memory is
// bound by Little's law, 64 blocks are bound by the link.
func TestReadsAreBoundByBytesInFlight(t *testing.T) {
	top, err := topology.Load("rtxpro6000x8-2numa")
	require.NoError(t, err)
	small, err := SMAccessGBps(top, false, "host", 1, 64, 64<<20)
	require.NoError(t, err)
	m, _ := New(top)
	rtt, _ := m.RoundTrip(0, HostMem(0))
	want := 64 * 16 * m.Phys.LoadsInFlight / rtt.Seconds() / 1e9
	assert.InDelta(t, want, small, want*0.01)
	big, err := SMAccessGBps(top, false, "host", 64, 512, 64<<20)
	require.NoError(t, err)
	assert.Greater(t, big, 10*small)
	assert.Less(t, big, 63.0, "never above the raw Gen5 x16 rate")
	// Writes are posted: one block already streams at its SM's store rate.
	w, err := SMAccessGBps(top, true, "host", 1, 64, 64<<20)
	require.NoError(t, err)
	assert.Greater(t, w, 3*small)
}

func TestP2PRulesAreEnforced(t *testing.T) {
	pre, err := topology.Lookup("rtxpro6000x8-2numa")
	require.NoError(t, err)
	ps := pre.DefaultParams()
	require.NoError(t, ps.Set("p2p.across_sockets", 0, "test"))
	top, err := pre.BuildWith(ps)
	require.NoError(t, err)
	m, err := New(top)
	require.NoError(t, err)
	err = m.Read(0, GPUMem(4), 1024, Kernel{Blocks: 1, Threads: 32}, "x", nil)
	assert.ErrorContains(t, err, "GPU0 cannot read GPU4's memory: P2P over a SYS path is not allowed")
	assert.NoError(t, m.Read(0, GPUMem(1), 1024, Kernel{Blocks: 1, Threads: 32}, "y", nil))
	assert.ErrorContains(t, m.Read(0, GPUMem(9), 1, Kernel{Blocks: 1, Threads: 1}, "z", nil), "no GPU rank 9")
	assert.ErrorContains(t, m.Write(0, GPUMem(1), 1, Kernel{}, "k", nil), "blocks and threads must be > 0")
}

// With the posted-write collapse on, one GPU writing to GPUs behind two
// other root complexes drops to the collapse rate; one destination does not.
func TestWriteCollapse(t *testing.T) {
	pre, err := topology.Lookup("rtxpro6000x8-2numa")
	require.NoError(t, err)
	ps := pre.DefaultParams()
	require.NoError(t, ps.Set("collapse.enabled", 1, "test"))
	top, err := pre.BuildWith(ps)
	require.NoError(t, err)
	rate := func(dests ...int) float64 {
		m, err := New(top)
		require.NoError(t, err)
		var end sim.Time
		const b = 16 << 20
		for _, d := range dests {
			require.NoError(t, m.Write(0, GPUMem(d), b, Kernel{Blocks: 32, Threads: 512}, "w", func() { end = max(end, m.Eng.Now()) }))
		}
		require.NoError(t, m.Eng.Run())
		return float64(len(dests)*b) / sim.Duration(end).Seconds() / 1e9
	}
	assert.Greater(t, rate(1), 45.0, "one destination complex: full link")
	assert.InDelta(t, ps.Get("collapse.bandwidth"), rate(1, 2), 0.2, "two destination complexes: aggregate collapses")
}

func BenchmarkAllPull56Flows(b *testing.B) {
	var events uint64
	for b.Loop() {
		m := allPull(b, "rtxpro6000x8-2numa", 1<<20, nil)
		events += m.Eng.Processed()
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}

// A RateCap caps each transfer on its own; with a CapGroup the transfers
// of the group share it: two concurrent 1 MiB writes at a 10 GB/s cap end
// together after 1 MiB / 10 GB/s each alone, after 2 MiB / 10 GB/s grouped.
func TestRateCapGroupIsShared(t *testing.T) {
	top, err := topology.Load("h200x2")
	require.NoError(t, err)
	const bytes = sim.MiB
	capr := 10 * sim.GBps
	run := func(group string) (ends [2]sim.Time) {
		m, err := New(top)
		require.NoError(t, err)
		k := Kernel{Blocks: 16, Threads: 512, RateCap: capr, CapGroup: group}
		for i := range ends {
			require.NoError(t, m.Write(0, GPUMem(1), bytes, k, fmt.Sprint("w", i), func() { ends[i] = m.Eng.Now() }))
		}
		require.NoError(t, m.Eng.Run())
		return ends
	}
	alone, grouped := run(""), run("conn")
	xfer := func(b sim.Bytes) float64 { return float64(b) / float64(capr) * 1e6 } // µs at the cap
	for i := range alone {
		// Both cases add the same route latency; only the cap's share differs.
		assert.InDelta(t, xfer(bytes), sim.Duration(alone[i]).Micros(), 2.0, "alone %d", i)
		assert.InDelta(t, xfer(2*bytes)-xfer(bytes), sim.Duration(grouped[i]-alone[i]).Micros(), 0.01, "grouped %d", i)
	}
}

// A cap group used with two different caps is an error, not a silent
// choice of the first.
func TestRateCapGroupMustAgree(t *testing.T) {
	top, err := topology.Load("h200x2")
	require.NoError(t, err)
	m, err := New(top)
	require.NoError(t, err)
	k := Kernel{Blocks: 1, Threads: 512, RateCap: 10 * sim.GBps, CapGroup: "conn"}
	require.NoError(t, m.Write(0, GPUMem(1), sim.KiB, k, "a", nil))
	k.RateCap = 20 * sim.GBps
	assert.ErrorContains(t, m.Write(0, GPUMem(1), sim.KiB, k, "b", nil), "rate cap group conn")
}

// A read whose rate its loads in flight set takes whole iterations of its
// loop, each a round trip (a warp's 16-B loads of host memory, one a
// thread: the lone load's and gpu.vector_load_extra_pcie): one window's
// bytes take one round trip, not
// the engine's first-window wait plus the window at the cap (two), and
// n windows take n (testdata/h200x1-arsim/store_width.jsonl's pull_iters:
// a pull of 1 iteration took 1.81 µs against 1.68 a steady iteration).
func TestReadTakesWholeIterations(t *testing.T) {
	top, err := topology.Load("h200x1")
	require.NoError(t, err)
	readUs := func(windows float64) float64 {
		return hostReadUs(t, top, sim.Bytes(windows*64*16), Kernel{Blocks: 1, Threads: 64, LoadsInFlight: 1})
	}
	m, err := New(top)
	require.NoError(t, err)
	rtt, err := m.RoundTrip(0, HostMem(0))
	require.NoError(t, err)
	it := (rtt + m.Phys.VectorLoadExtraPCIe).Seconds() * 1e6
	for _, n := range []float64{2, 8} {
		assert.InDelta(t, n*it, readUs(n), 1e-3*n*it, "%g windows", n)
	}
	// With four loads a thread in flight each window still waits for the
	// last of its completions: the same round trip, four times the bytes.
	four := hostReadUs(t, top, sim.Bytes(8*64*16*4), Kernel{Blocks: 1, Threads: 64, LoadsInFlight: 4})
	assert.InDelta(t, 8*it, four, 1e-3*8*it, "8 windows of four loads")
	// One window or less: its round trip, then its bytes cross the link
	// (1 KiB: 19 ns), no second round trip.
	assert.InDelta(t, it, readUs(1), 0.02*it, "one window")
	assert.InDelta(t, it, readUs(0.25), 0.01*it, "a quarter window waits its round trip")
	assert.InDelta(t, 3*it, readUs(2.5), 1e-3*it, "a partial last window is an iteration")

	// A cap that is a bandwidth, not a window (Kernel.RateCap without
	// RateCapIter), keeps the round trip before the bytes at the cap.
	m2, err := New(top)
	require.NoError(t, err)
	capr := sim.Rate(1e9)
	k := Kernel{Blocks: 1, Threads: 64, LoadsInFlight: 64, RateCap: capr}
	require.NoError(t, m2.Read(0, HostMem(0), 4096, k, "read", func() {}))
	require.NoError(t, m2.Eng.Run())
	assert.InDelta(t, rtt.Seconds()*1e6+4096/1e9*1e6, sim.Duration(m2.Eng.Now()).Seconds()*1e6, 1e-3*it, "64 loads a thread in flight: the lone load's round trip")
}

// A pull whose compiled loop waits for its loads twice an iteration
// (Kernel.LoadWaits 2, as `arsim sass` reads a SASS) takes, per window of
// its loads, the reduce loop's round trip and one more vector load's round
// trip to the source; 0 and 1 keep every load in flight at once. The same
// chain as the pull twin's (pullTwin): eight windows over host memory.
func TestPullLoadWaitsAddVectorRoundTrips(t *testing.T) {
	top, err := topology.Load("h200x1")
	require.NoError(t, err)
	const windows = 8
	readUs := func(waits int) float64 {
		return hostReadUs(t, top, windows*64*16, Kernel{Blocks: 1, Threads: 64, LoadsInFlight: 1, ReduceLoop: true, LoadWaits: waits})
	}
	m, err := New(top)
	require.NoError(t, err)
	rtt, err := m.RoundTrip(0, HostMem(0))
	require.NoError(t, err)
	v, err := m.vectorRoundTrip(0, HostMem(0))
	require.NoError(t, err)
	it := (rtt + m.Phys.ReduceLoopOverhead + m.Phys.ReduceLoopExtraPCIe).Seconds() * 1e6
	assert.InDelta(t, windows*it, readUs(0), 1e-3*windows*it)
	assert.Equal(t, readUs(0), readUs(1), "one wait: every load in flight")
	want := windows * (it + v.Seconds()*1e6)
	assert.InDelta(t, want, readUs(2), 1e-3*want, "each iteration waits one more vector round trip")
	want3 := windows * (it + 2*v.Seconds()*1e6)
	assert.InDelta(t, want3, readUs(3), 1e-3*want3)
	// Lines written just before (Kernel.Fresh: a staging) are read
	// hostmem.fresh_line_saving sooner in each further wait, as the pull
	// twin counts them.
	wantF := windows * (it + (v-m.Phys.FreshLineSaving).Seconds()*1e6)
	assert.InDelta(t, wantF, hostReadUs(t, top, windows*64*16, Kernel{Blocks: 1, Threads: 64, LoadsInFlight: 1, ReduceLoop: true, LoadWaits: 2, Fresh: true}), 1e-3*wantF)

	// A negative count is refused, naming the op.
	m2, err := New(top)
	require.NoError(t, err)
	assert.ErrorContains(t, m2.Read(0, HostMem(0), 1024, Kernel{Blocks: 1, Threads: 64, ReduceLoop: true, LoadWaits: -1}, "pull", nil),
		"read pull: load waits must be ≥ 0, got -1")
}

// hostReadUs is how long, in µs, rank 0 of a fresh machine on top takes
// to read bytes of host memory with kernel k.
func hostReadUs(t *testing.T, top *topology.Topology, bytes sim.Bytes, k Kernel) float64 {
	m, err := New(top)
	require.NoError(t, err)
	require.NoError(t, m.Read(0, HostMem(0), bytes, k, "read", func() {}))
	require.NoError(t, m.Eng.Run())
	return sim.Duration(m.Eng.Now()).Seconds() * 1e6
}
