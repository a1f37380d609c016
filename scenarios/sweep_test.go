package scenarios

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/topology"
)

// A sweep given schedules already planned for its request (as the
// proof before the timing plans them) times them as it would have timed
// the ones it plans itself, and points without one are planned as ever.
func TestSweepPlannedEqualsPlanning(t *testing.T) {
	top, err := topology.Load("rtxpro6000x8-2numa")
	require.NoError(t, err)
	names := []string{"ring", "one_stage", "nccl"}
	cfg := SweepConfig{Top: top, Algos: names, Sizes: []int64{1024, 43008, 1 << 20}, Opts: map[string]string{"proto": "ll"}}
	want, err := Sweep(context.Background(), cfg)
	require.NoError(t, err)
	cfg.Planned = map[PlanKey]*algos.Schedule{}
	for _, a := range names {
		for _, b := range cfg.Sizes[1:] {
			s, err := algos.Plan(a, algos.Request{Top: top, Ranks: top.NumGPUs(), Bytes: b, DType: algos.BF16, Launch: hw.Graph, Opts: optsFor(a, cfg.Opts)})
			require.NoError(t, err)
			cfg.Planned[PlanKey{a, b}] = s
		}
	}
	got, err := Sweep(context.Background(), cfg)
	require.NoError(t, err)
	assert.Equal(t, goldenTable(want), goldenTable(got))
	assert.Equal(t, want, got)
}
