package algos

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHalvingDoublingChecks(t *testing.T) {
	// 3 and 5 ranks fold one rank in; odd sizes make uneven halves and,
	// for one element, empty ones.
	checkSweep(t, "halving_doubling", "rtxpro6000x8-2numa", sweepSizes, all)
	checkSweep(t, "halving_doubling", "h200x8-nvswitch", []int64{14, 43008}, all)
}

func TestHalvingDoublingShape(t *testing.T) {
	s := plan(t, "halving_doubling", req(t, "rtxpro6000x8-2numa", 5, 43008, nil))
	assert.Contains(t, s.Notes[0], "4 core ranks in 2 rounds each way, 1 folded in")
	// The folded rank only hands its input over and pulls the result.
	var kinds []OpKind
	for _, op := range s.Programs[4] {
		kinds = append(kinds, op.Kind)
	}
	assert.Equal(t, []OpKind{Launch, Signal, Wait, Read}, kinds)
	// Rank 0 pulls half of its partner's data in round 0 (distance 1),
	// then a quarter (distance 2): the largest pulls stay near.
	var pulls []int64
	for _, op := range s.Programs[0] {
		if op.Kind == Read && op.Accumulate && op.Src.Buf.Name == "acc" {
			pulls = append(pulls, op.Src.Len)
			assert.Contains(t, []int{1, 2}, op.Src.Buf.At.Rank)
		}
	}
	assert.Equal(t, []int64{21504, 10752}, pulls)
}

// Reduce-scatter plus all-gather moves 2(p−1)/p·S per rank, like two_stage,
// so at 16 MiB it beats one_stage's 7·S by far.
func TestHalvingDoublingTiming(t *testing.T) {
	r := req(t, "rtxpro6000x8-2numa", 8, 16<<20, nil)
	hd, one := runUs(t, "halving_doubling", r, 1), runUs(t, "one_stage", r, 1)
	t.Logf("16 MiB, 8 ranks: halving_doubling %.1f µs, one_stage %.1f µs", hd, one)
	assert.Less(t, hd, one/2)
}

// Planted bug: rank 1 pulls its round-0 partner's half without the
// partner's ready flag.
func TestCheckerCatchesHalvingDoublingMissingRoundFlag(t *testing.T) {
	s := plan(t, "halving_doubling", req(t, "rtxpro6000x8-2numa", 4, 4096, nil))
	neuterOps(s, 1, func(o Op) bool { return o.Label == "rs round 0 rank 0 ready" })
	err := Check(s)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "race on gpu0:acc bytes [2048, 4096)")
	assert.Contains(t, err.Error(), "rank 1 op")
	assert.Contains(t, err.Error(), "[rs round 0 pull rank 0]")
}
