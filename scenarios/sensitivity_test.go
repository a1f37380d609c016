package scenarios

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/topology"
)

func sensitivitiesOf(t *testing.T, preset, algo string, ranks int, bytes int64, parallel int) (float64, map[string]Sensitivity, []Sensitivity) {
	t.Helper()
	p, err := topology.Lookup(preset)
	require.NoError(t, err)
	base, ss, err := Sensitivities(context.Background(), SensitivityConfig{Preset: p, Params: p.DefaultParams(),
		Algo: algo, Ranks: ranks, Bytes: bytes, Launch: hw.Graph, Parallel: parallel})
	require.NoError(t, err)
	by := map[string]Sensitivity{}
	for _, s := range ss {
		by[s.Param.Name] = s
	}
	require.Len(t, by, len(p.DefaultParams().All()), "one entry a parameter")
	return base, by, ss
}

// The one-shot over PCIe across two sockets at 42 KiB is bound by the
// socket link: its bandwidth comes first, the time falling as it grows
// but by less than in proportion (latencies and the launch are the rest).
// What the schedule does not touch moves nothing; switches are not moved.
func TestSensitivitiesOfTheOneShot(t *testing.T) {
	base, by, ss := sensitivitiesOf(t, "rtxpro6000x8-2numa", "pcie_ipc_one_shot", 8, 43008, 0)
	assert.InDelta(t, 9.97, base, 0.01, "the verify pass's per-allreduce time (README)")
	first := ss[0]
	assert.Equal(t, "smp.bandwidth", first.Param.Name)
	assert.Less(t, first.Elasticity, -0.3)
	assert.Greater(t, first.Elasticity, -1.0)
	assert.False(t, first.PlanChanged)
	assert.InDelta(t, 104.5, first.Tried, 1e-9, "+10 %")
	assert.Positive(t, by["pcie.hostbridge_latency"].Elasticity, "a latency on its path")
	assert.Zero(t, by["ce.setup"].Elasticity, "no copy engine in it")
	assert.Zero(t, by["nccl.kernel_fixed"].Elasticity, "not NCCL")
	assert.Equal(t, "a switch", by["p2p.through_host_bridge"].Skipped)
	assert.Equal(t, "at 0 (off)", by["platform.iommu_host_latency"].Skipped)
	// a ratio at its top moves down
	eff := by["pcie.link_efficiency"]
	assert.Less(t, eff.Tried, eff.Param.Value)
	// the largest first, those not moved last
	for i := 1; i < len(ss); i++ {
		if ss[i].moved() && ss[i-1].moved() {
			assert.GreaterOrEqual(t, abs(ss[i-1].Elasticity), abs(ss[i].Elasticity))
		}
		assert.False(t, ss[i].moved() && !ss[i-1].moved(), "moved after not moved at %d", i)
	}
	// the result does not depend on how many run at once
	_, _, again := sensitivitiesOf(t, "rtxpro6000x8-2numa", "pcie_ipc_one_shot", 8, 43008, 1)
	assert.Equal(t, ss, again)
}

// A parameter that makes the algorithm plan another schedule is marked:
// the Lamport one-shot of 256 tokens launches a block per SM. The
// architecture is not moved (it names the GPU, it is not a quantity).
func TestSensitivitiesMarkAnotherPlan(t *testing.T) {
	_, by, _ := sensitivitiesOf(t, "rtxpro6000x8-2numa", "lamport_one_shot", 8, 256*7168*2, 0) // 256 tokens: a block each, more than SMs
	assert.True(t, by["gpu.sms"].PlanChanged)
	assert.False(t, by["smp.bandwidth"].PlanChanged)
	_, by, _ = sensitivitiesOf(t, "rtxpro6000x8-2numa", "nccl", 8, 43008, 0)
	assert.Equal(t, "an architecture", by["gpu.compute_capability"].Skipped)
	assert.False(t, by["gpu.sms"].PlanChanged, "NCCL's plan does not follow the SM count")
	poll := by["hostmem.poll_service"]
	assert.False(t, poll.PlanChanged)
	assert.Positive(t, poll.Elasticity, "NCCL over SHM polls its flags in host memory")
}

func TestSensitivitiesRefuseABadStep(t *testing.T) {
	p, err := topology.Lookup("h200x2")
	require.NoError(t, err)
	for _, step := range []float64{-0.1, 1, 2} {
		_, _, err := Sensitivities(context.Background(), SensitivityConfig{Preset: p, Params: p.DefaultParams(), Algo: "ring", Ranks: 2, Bytes: 1024, Step: step})
		assert.ErrorContains(t, err, "not a fraction between 0 and 1")
	}
	_, _, err = Sensitivities(context.Background(), SensitivityConfig{Preset: p, Params: p.DefaultParams(), Algo: "no_such", Ranks: 2, Bytes: 1024})
	assert.Error(t, err)
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
