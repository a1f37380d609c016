package validate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// The RTX machines' PCIe path latencies come from the rtx6kpro wiki's GPU
// ping-pongs (testdata/rtx6kpro/wrx90_pingpong_*.jsonl), recomputed here
// from the records: the crossing of a root complex's PCIe side from the
// pairs across two switches on one root complex, the fabric between two
// root complexes from those on two; the GPU port so that the model's
// ping-pong within a switch is the pairs' mean. Each record is on the
// fitted side of one of them.
func TestPCIePathLatenciesFromThePingPongs(t *testing.T) {
	mean := func(file string, same bool) float64 {
		recs, bad, err := trace.ReadJSONLFile("../testdata/rtx6kpro/"+file, trace.ReadOptions{})
		require.NoError(t, err)
		require.Empty(t, bad)
		sum, n := 0.0, 0
		for _, r := range recs {
			f, covered := fitOf("rtx6kpro/"+file, r)
			require.True(t, covered)
			require.NotNil(t, f, "every ping-pong is fitted on")
			if sameWRX90Switch(r) == same {
				sum += r.OneWayUs * 1000
				n++
			}
		}
		require.Equal(t, map[bool]int{true: 2, false: 4}[same], n)
		return sum / float64(n)
	}
	within := (mean("wrx90_pingpong_a.jsonl", true) + mean("wrx90_pingpong_b.jsonl", true)) / 2
	oneRoot := mean("wrx90_pingpong_b.jsonl", false)
	twoRoots := mean("wrx90_pingpong_a.jsonl", false)
	pr, err := topology.Lookup("rtxpro6000x8-switches")
	require.NoError(t, err)
	ps := pr.DefaultParams()
	assert.InDelta(t, (oneRoot-within-ps.Get("pcie.switch_latency"))/2, ps.Get("pcie.hostbridge_latency"), 0.01)
	assert.InDelta(t, twoRoots-oneRoot, ps.Get("cpu.fabric_latency"), 0.01)
	for _, p := range []string{"pcie.hostbridge_latency", "cpu.fabric_latency", "pcie.gpu_port_latency"} {
		par, _ := ps.Lookup(p)
		assert.Contains(t, par.Source, "wrx90_pingpong", p)
	}
	top, _, err := topology.ImportFile("../testdata/topologies/pcie8_2switch_1root_topo_m.txt", topology.ImportOptions{})
	require.NoError(t, err)
	us, err := FlagPingPongUs(top, "peer", [2]int{0, 1}, 100)
	require.NoError(t, err)
	assert.InDelta(t, within, us*1000, 1, "the model's ping-pong within a switch")
}

// A ping-pong names its pair whole or not at all, two GPUs the machine has.
func TestFlagPingPongPairIsChecked(t *testing.T) {
	twin := twins[trace.KindFlagPingpong]
	_, err := twin(trace.Record{Kind: trace.KindFlagPingpong, Via: "peer", PingGPU: 2})
	assert.ErrorContains(t, err, "ping_gpu 2 without pong_gpu")
	_, err = twin(trace.Record{Kind: trace.KindFlagPingpong, Via: "peer", PingGPU: 3, PongGPU: 3})
	assert.ErrorContains(t, err, "ping_gpu and pong_gpu are both GPU 3")
	tw, err := twin(trace.Record{Kind: trace.KindFlagPingpong, Via: "peer", PingGPU: 1, PongGPU: 5})
	require.NoError(t, err)
	assert.Equal(t, "flag_pingpong peer gpu1-gpu5", tw.Group)
	top, err := topology.Load("h200x2")
	require.NoError(t, err)
	_, err = FlagPingPongUs(top, "peer", [2]int{0, 5}, 10)
	assert.ErrorContains(t, err, "flag ping-pong between GPUs 0 and 5: h200x2 has GPUs 0–1")
}
