package algos

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/hw"
)

func TestStagedPushChecks(t *testing.T) {
	checkSweep(t, "staged_push", "rtxpro6000x8-2numa", sweepSizes, all)
	checkSweep(t, "staged_push", "h200x8-nvswitch", []int64{14, 43008}, all)
}

// Round k sends r → (r+k) mod n: every round is a permutation, so each GPU
// has exactly one outbound and one inbound push per round.
func TestStagedPushRoundsArePermutations(t *testing.T) {
	const n = 8
	s := plan(t, "staged_push", req(t, "rtxpro6000x8-2numa", n, 43008, nil))
	in := map[int]map[int]int{} // round → receiver → pushes
	for r, prog := range s.Programs {
		k := 0
		for _, op := range prog {
			if op.Kind != Write {
				continue
			}
			k++
			assert.Equal(t, (r+k)%n, op.Dst.Buf.At.Rank, "rank %d round %d", r, k)
			if in[k] == nil {
				in[k] = map[int]int{}
			}
			in[k][op.Dst.Buf.At.Rank]++
		}
		assert.Equal(t, n-1, k, "rank %d pushes once per round", r)
	}
	for k, recv := range in {
		assert.Len(t, recv, n, "round %d reaches every rank", k)
	}
}

// On the executor, a rank's pushes never overlap: one outbound stream.
func TestStagedPushOneOutboundStream(t *testing.T) {
	r := req(t, "rtxpro6000x8-2numa", 8, 1<<20, nil)
	s := plan(t, "staged_push", r)
	m, err := hw.New(r.Top)
	require.NoError(t, err)
	res, err := Run(m, s, RunOptions{Iterations: 1, Spans: true})
	require.NoError(t, err)
	last := map[int]int64{}
	for _, sp := range res.Spans {
		if s.Programs[sp.Rank][sp.Op].Kind != Write {
			continue
		}
		assert.GreaterOrEqual(t, int64(sp.Start), last[sp.Rank], "rank %d op %d starts before its previous push ended", sp.Rank, sp.Op)
		last[sp.Rank] = int64(sp.End)
	}
	// Serial pushes of S at one stream each cannot beat the concurrent
	// one-shot push, whose flows share the same links.
	assert.Greater(t, res.MeanUs(), runUs(t, "one_shot_push", r, 1))
}
