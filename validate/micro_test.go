package validate

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// row is one measured-versus-simulated comparison.
type row struct {
	what                string
	measured, simulated float64
	floor               bool // an eager memcpy bound by the host's issue rate
}

func (r row) errPct() float64 { return (r.simulated - r.measured) / r.measured * 100 }

// microRows simulates every record of path that needs no algorithm
// through the micro twins directly.
func microRows(t *testing.T, top *topology.Topology, path string) []row {
	recs, _, err := trace.ReadJSONLFile(path, trace.ReadOptions{})
	require.NoError(t, err)
	var rows []row
	for _, r := range recs {
		var sim_, meas float64
		var what string
		switch r.Kind {
		case trace.KindMemcpy:
			dir := map[string]hw.CopyDir{"h2d": hw.H2D, "d2h": hw.D2H, "p2p": hw.P2P}[r.Dir]
			sim_, err = MemcpyEager(top, dir, sim.Bytes(r.Bytes), TorchCopy)
			meas, what = r.Us, fmt.Sprintf("memcpy %s %d B (µs)", r.Dir, r.Bytes)
			// Host path: up to 128 KiB the copy engine needs about as long as
			// the host takes to issue the next copy or less (H2D 128 KiB:
			// 2.4 µs of transfer + 1.4 µs setup against 3.7–7.6 µs of issue
			// on our five instances), so the host sets the mean; there the
			// host's jitter also adds 0.4–2 µs (E[max(issue, device)] > the
			// max of the means), not modelled.
			floor := r.Bytes <= 128<<10 || r.Dir == "p2p"
			require.NoError(t, err)
			rows = append(rows, row{what: what, measured: meas, simulated: sim_, floor: floor})
			continue
		case trace.KindSMAccess:
			if r.Target == "local" {
				continue // local HBM streaming is not modelled
			}
			sim_, err = SMAccessGBps(top, r.Op == "write", r.Op == "read_only_loop" && r.Load == "volatile", r.Target, r.Blocks, r.Threads, sim.Bytes(r.Bytes))
			meas, what = r.Gbps, fmt.Sprintf("sm_access %s %s %d×%d (GB/s)", r.Op, r.Target, r.Blocks, r.Threads)
		case trace.KindPointerChase:
			sim_, err = PointerChaseNs(top, r.Target)
			meas, what = r.NsPerStep, "pointer_chase "+r.Target+" (ns)"
		case trace.KindFlagPingpong:
			sim_, err = FlagPingPongUs(top, r.Via, [2]int{0, 1}, 2000)
			meas, what = r.OneWayUs, "flag_pingpong "+r.Via+" (µs one way)"
		case trace.KindEmptyKernel:
			sim_, err = EmptyKernelUs(top)
			meas, what = r.Us, "empty_kernel (µs)"
			require.NoError(t, err)
			rows = append(rows, row{what: what, measured: meas, simulated: sim_, floor: true})
			continue
		case trace.KindHostLinkConcurrency:
			sim_, err = HostLinkGBps(top, r.What, r.GPUs, sim.Bytes(r.BytesPerGPU))
			meas, what = r.GbpsTotal, fmt.Sprintf("host_link %s %d GPUs (GB/s total)", r.What, r.GPUs)
		default:
			continue
		}
		require.NoError(t, err, "line %d %s", r.Line, what)
		rows = append(rows, row{what: what, measured: meas, simulated: sim_})
	}
	return rows
}

// TestH200x2MicroMeasurements checks the engine against every record of
// the shared h200x2 set that needs no algorithm: copy-engine transfers
// versus size, SM reads and writes of host and peer memory, the host link
// with one and two GPUs, pointer chases and flag ping-pong. No parameter
// comes from this set (the provenance test), so it is held out.
// Device-bound records must agree within 10 % each.
//
// Host-path records (eager copies of 4 B–128 KiB, which take the host's
// issue interval, PyTorch's peer copies, and the empty-kernel launch) are
// listed but not bounded here: the host's cost is a property of the
// machine instance and process, not of the GPUs. The shared set's host
// took 6.5–7.8 µs per small H2D tensor.copy_ where ours took 3.7–7.6 on
// five instances, and 8.4 µs per empty launch where ours took 6.2. TestH200x2OwnTorchCopies
// checks the host-path model against the captures its parameters come
// from.
func TestH200x2MicroMeasurements(t *testing.T) {
	top, err := topology.Load("h200x2")
	require.NoError(t, err)
	rows := microRows(t, top, "../testdata/h200x2/measurements.jsonl")
	require.NotEmpty(t, rows)
	var abs []float64
	devices := 0
	var b strings.Builder
	fmt.Fprintf(&b, "%-44s %12s %12s %8s\n", "measurement", "measured", "simulated", "error")
	for _, r := range rows {
		mark := ""
		if r.floor {
			mark = "  (host path, held-out host)"
		} else {
			devices++
			assert.LessOrEqual(t, math.Abs(r.errPct()), 10.0, "%s: measured %.3f, simulated %.3f", r.what, r.measured, r.simulated)
		}
		fmt.Fprintf(&b, "%-44s %12.3f %12.3f %+7.1f%%%s\n", r.what, r.measured, r.simulated, r.errPct(), mark)
		abs = append(abs, math.Abs(r.errPct()))
	}
	assert.GreaterOrEqual(t, devices, 40, "device-bound records checked")
	sort.Float64s(abs)
	fmt.Fprintf(&b, "records %d, median |error| %.1f%%, p95 %.1f%%, max %.1f%%\n", len(abs), abs[len(abs)/2], abs[int(math.Ceil(0.95*float64(len(abs))))-1], abs[len(abs)-1])
	t.Log("\n" + b.String())
}

// TestH200x2OwnTorchCopies checks the eager tensor.copy_ model (host issue
// interval, PyTorch's peer-copy overhead, then the copy engine) against the
// project's capture of it: 16 process launches on 5 machine instances ×
// 27 sizes × 3 directions, the median over launches at each size. Each torch.copy_ parameter is a
// median of these records, so this is an in-sample check of the model's
// shape over size, not a prediction: the median error over the host-path
// sizes, and each device-bound size, within 10 %.
func TestH200x2OwnTorchCopies(t *testing.T) {
	top, err := topology.Load("h200x2")
	require.NoError(t, err)
	var all []row
	for _, f := range []string{"host_costs_a.jsonl", "host_costs_b.jsonl", "host_costs_c.jsonl", "host_costs_d.jsonl", "host_costs_e.jsonl"} {
		all = append(all, microRows(t, top, "../testdata/h200x2-arsim/"+f)...)
	}
	require.Len(t, all, 16*81)
	// One row per direction and size: the median over process launches
	// (one process's trials can be disturbed: 45.5 µs against a 42.2 µs
	// median at H2D 2 MiB).
	byWhat := map[string][]row{}
	var order []string
	for _, r := range all {
		if _, ok := byWhat[r.what]; !ok {
			order = append(order, r.what)
		}
		byWhat[r.what] = append(byWhat[r.what], r)
	}
	var rows []row
	for _, w := range order {
		rs := byWhat[w]
		ms := make([]float64, len(rs))
		for i, r := range rs {
			ms[i] = r.measured
		}
		sort.Float64s(ms)
		m := ms[len(ms)/2]
		if len(ms)%2 == 0 {
			m = (ms[len(ms)/2-1] + ms[len(ms)/2]) / 2
		}
		rows = append(rows, row{what: w, measured: m, simulated: rs[0].simulated, floor: rs[0].floor})
	}
	var floorAbs []float64
	for _, r := range rows {
		if r.floor {
			floorAbs = append(floorAbs, math.Abs(r.errPct()))
		} else {
			assert.LessOrEqual(t, math.Abs(r.errPct()), 10.0, "%s: measured %.3f, simulated %.3f", r.what, r.measured, r.simulated)
		}
	}
	require.Len(t, rows, 81)
	sort.Float64s(floorAbs)
	assert.LessOrEqual(t, floorAbs[len(floorAbs)/2], 10.0, "median error over the host-path copies")
}
