package hw

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
)

// rec holds the fields of a trace record that the micro twins need. The
// full reader is package trace; hw cannot import it without a cycle risk,
// and these tests need only a few fields.
type rec struct {
	Kind        string  `json:"kind"`
	Dir         string  `json:"dir"`
	Bytes       int64   `json:"bytes"`
	US          float64 `json:"us"`
	Op          string  `json:"op"`
	Target      string  `json:"target"`
	Blocks      int     `json:"blocks"`
	Threads     int     `json:"threads"`
	GBps        float64 `json:"gbps"`
	NsPerStep   float64 `json:"ns_per_step"`
	Via         string  `json:"via"`
	OneWayUs    float64 `json:"one_way_us"`
	What        string  `json:"what"`
	GPUs        int     `json:"gpus"`
	BytesPerGPU int64   `json:"bytes_per_gpu"`
	GBpsTotal   float64 `json:"gbps_total"`
	line        int
}

// row is one measured-versus-simulated comparison.
type row struct {
	what                string
	measured, simulated float64
	floor               bool // an eager memcpy bound by the host's issue rate
}

func (r row) errPct() float64 { return (r.simulated - r.measured) / r.measured * 100 }

// twins simulates every h200x2 record that needs no algorithm.
func twins(t *testing.T, top *topology.Topology) []row {
	f, err := os.Open("../testdata/h200x2/measurements.jsonl")
	require.NoError(t, err)
	defer f.Close()
	var rows []row
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		var r rec
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r), "line %d", line)
		var sim_, meas float64
		var what string
		switch r.Kind {
		case "memcpy":
			dir := map[string]CopyDir{"h2d": H2D, "d2h": D2H, "p2p": P2P}[r.Dir]
			sim_, err = MemcpyEager(top, dir, sim.Bytes(r.Bytes), TorchCopy)
			meas, what = r.US, fmt.Sprintf("memcpy %s %d B (µs)", r.Dir, r.Bytes)
			floor := r.Bytes <= 64<<10 || r.Dir == "p2p"
			require.NoError(t, err)
			rows = append(rows, row{what: what, measured: meas, simulated: sim_, floor: floor})
			continue
		case "sm_access":
			if r.Target == "local" {
				continue // local HBM streaming is not modelled (see micro.go)
			}
			sim_, err = SMAccessGBps(top, r.Op == "write", r.Target, r.Blocks, r.Threads, sim.Bytes(r.Bytes))
			meas, what = r.GBps, fmt.Sprintf("sm_access %s %s %d×%d (GB/s)", r.Op, r.Target, r.Blocks, r.Threads)
		case "pointer_chase":
			sim_, err = PointerChaseNs(top, r.Target)
			meas, what = r.NsPerStep, "pointer_chase "+r.Target+" (ns)"
		case "flag_pingpong":
			sim_, err = FlagPingPongUs(top, r.Via, 2000)
			meas, what = r.OneWayUs, "flag_pingpong "+r.Via+" (µs one way)"
		case "empty_kernel":
			sim_, err = EmptyKernelUs(top)
			meas, what = r.US, "empty_kernel (µs)"
		case "host_link_concurrency":
			sim_, err = HostLinkGBps(top, r.What, r.GPUs, sim.Bytes(r.BytesPerGPU))
			meas, what = r.GBpsTotal, fmt.Sprintf("host_link %s %d GPUs (GB/s total)", r.What, r.GPUs)
		default:
			continue
		}
		require.NoError(t, err, "line %d %s", line, what)
		rows = append(rows, row{what: what, measured: meas, simulated: sim_})
	}
	return rows
}

// TestH200x2MicroMeasurements checks the engine against every h200x2
// record that needs no algorithm: copy-engine transfers versus size, SM
// reads and writes of host and peer memory, the host link with one and two
// GPUs, pointer chases and flag ping-pong. The required agreement is 10 %.
func TestH200x2MicroMeasurements(t *testing.T) {
	top, err := topology.Load("h200x2")
	require.NoError(t, err)
	rows := twins(t, top)
	require.NotEmpty(t, rows)
	var abs, floorAbs []float64
	var b strings.Builder
	fmt.Fprintf(&b, "%-44s %12s %12s %8s\n", "measurement", "measured", "simulated", "error")
	for _, r := range rows {
		mark := ""
		if r.floor {
			mark = "  (host path)"
			floorAbs = append(floorAbs, math.Abs(r.errPct()))
		} else {
			assert.LessOrEqual(t, math.Abs(r.errPct()), 10.0, "%s: measured %.3f, simulated %.3f", r.what, r.measured, r.simulated)
		}
		fmt.Fprintf(&b, "%-44s %12.3f %12.3f %+7.1f%%%s\n", r.what, r.measured, r.simulated, r.errPct(), mark)
		abs = append(abs, math.Abs(r.errPct()))
	}
	// Eager copies of 4 B–64 KiB all take the host's issue interval; the
	// capture scatters around it by more than 10 % from one size to the next
	// (p2p: 12.9–20.3 µs, not monotonic in size), which no size-driven model
	// can follow. PyTorch's peer copies of every size carry 12–17 µs of its
	// own work that varies with size (compare the raw cudaMemcpyAsync
	// capture). For these host-path records the median error must stay
	// within 10 %; device-bound records each within 10 %.
	sort.Float64s(floorAbs)
	require.NotEmpty(t, floorAbs)
	assert.LessOrEqual(t, floorAbs[len(floorAbs)/2], 10.0, "median error over the issue-bound copies")
	sort.Float64s(abs)
	fmt.Fprintf(&b, "records %d, median |error| %.1f%%, p95 %.1f%%, max %.1f%%\n", len(abs), abs[len(abs)/2], abs[int(math.Ceil(0.95*float64(len(abs))))-1], abs[len(abs)-1])
	t.Log("\n" + b.String())
}
