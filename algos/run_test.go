package algos

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/hw"
)

func runUs(t testing.TB, algo string, r Request, iters int) float64 {
	s := plan(t, algo, r)
	m, err := hw.New(r.Top)
	require.NoError(t, err)
	res, err := Run(m, s, RunOptions{Iterations: iters, Launch: r.Launch})
	require.NoError(t, err)
	return res.MeanUs()
}

func TestOneStageRuns(t *testing.T) {
	us := runUs(t, "one_stage", req(t, "rtxpro6000x8-2numa", 8, 43008, nil), 3)
	t.Logf("one_stage 8×RTX PRO 6000 2-NUMA, 43008 B: %.2f µs", us)
	assert.Greater(t, us, 5.0)
	assert.Less(t, us, 60.0)
}

func TestRunReportsDeadlock(t *testing.T) {
	r := req(t, "rtxpro6000x8-2numa", 2, 4096, nil)
	s := plan(t, "one_stage", r)
	s.Programs[1] = append(s.Programs[1], Op{Kind: Wait, Flag: Flag{At: hw.GPUMem(1), Name: "ghost"}, Value: 1, Label: "ghost wait"})
	m, err := hw.New(r.Top)
	require.NoError(t, err)
	_, err = Run(m, s, RunOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "deadlock")
	assert.Contains(t, err.Error(), "rank 1 op")
	assert.Contains(t, err.Error(), "gpu1:ghost ≥ 1 (holds 0)")
}
