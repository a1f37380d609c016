package scenarios

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/topology"
)

// On the default machine the verify pass's allreduce (42 KiB) has a firm
// winner: no parameter halved or doubled alone makes another algorithm
// faster. At one token (14 KiB) the one-shot wins by little, and a socket
// link a fifth slower (smp.bandwidth, an estimate) hands it to the
// islands; timed directly, the flip is real.
func TestFirmness(t *testing.T) {
	p, err := topology.Lookup("rtxpro6000x8-2numa")
	require.NoError(t, err)
	names := []string{"pcie_ipc_one_shot", "pcie_ipc_islands", "lamport_one_shot", "ring"}
	cfg := SensitivityConfig{Preset: p, Params: p.DefaultParams(), Ranks: 8, Bytes: BytesPerAllreduce(3), Launch: hw.Graph}
	f, err := Firmness(context.Background(), cfg, names)
	require.NoError(t, err)
	assert.Equal(t, "pcie_ipc_islands", f.Winner)
	assert.Equal(t, []string{"pcie_ipc_islands", "pcie_ipc_one_shot", "lamport_one_shot"}, f.Contenders, "ring is over 2× the winner")
	assert.Empty(t, f.Moves)
	assert.Equal(t, len(p.DefaultParams().All()), f.Held+f.NotMoved)

	cfg.Bytes = BytesPerAllreduce(1)
	f, err = Firmness(context.Background(), cfg, names)
	require.NoError(t, err)
	assert.Equal(t, "pcie_ipc_islands", f.Winner)
	require.NotEmpty(t, f.Moves)
	first := f.Moves[0]
	assert.Equal(t, "smp.bandwidth", first.Param.Name)
	assert.Equal(t, 1.25, first.Factor)
	assert.Equal(t, 118.75, first.Tried)
	assert.Equal(t, "pcie_ipc_one_shot", first.Winner)
	assert.Less(t, first.Ratio, 1.0)
	for i := 1; i < len(f.Moves); i++ {
		assert.LessOrEqual(t, math.Abs(math.Log(f.Moves[i-1].Factor)), math.Abs(math.Log(f.Moves[i].Factor)))
	}
	assert.Equal(t, len(p.DefaultParams().All()), f.Held+f.NotMoved+len(f.Moves))
	// the flip, timed directly
	timed := func(algo string, bw float64) float64 {
		ps := p.DefaultParams()
		require.NoError(t, ps.Set("smp.bandwidth", bw, ""))
		c := cfg
		c.Algo, c.Params = algo, ps
		require.NoError(t, c.defaults())
		us, _, err := c.timeWith(ps)
		require.NoError(t, err)
		return us
	}
	assert.Less(t, timed("pcie_ipc_islands", 95), timed("pcie_ipc_one_shot", 95))
	assert.Less(t, timed("pcie_ipc_one_shot", 118.75), timed("pcie_ipc_islands", 118.75))
	assert.InDelta(t, first.Ratio, timed("pcie_ipc_one_shot", 118.75)/timed("pcie_ipc_islands", 118.75), 1e-12)

	// alone within 2×: no move is tried
	f, err = Firmness(context.Background(), cfg, []string{"ring", "pcie_ipc_one_shot"})
	require.NoError(t, err)
	assert.Equal(t, "pcie_ipc_one_shot", f.Winner)
	assert.Equal(t, []string{"pcie_ipc_one_shot"}, f.Contenders)
	assert.Empty(t, f.Moves)
	assert.Zero(t, f.Held)
	_, err = Firmness(context.Background(), cfg, []string{"no_such"})
	assert.ErrorContains(t, err, "none of [no_such] runs here")
}
