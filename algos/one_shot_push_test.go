package algos

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOneShotPushChecks(t *testing.T) {
	// Every world size and size, two back-to-back runs: the slot-free
	// handshake orders the next run's stores after this run's reductions.
	checkSweep(t, "one_shot_push", "rtxpro6000x8-2numa", sweepSizes, all)
	checkSweep(t, "one_shot_push", "h200x8-nvswitch", []int64{14, 43008}, all)
}

// Planted bug: rank 1 reduces rank 0's slot without waiting for rank 0's
// data flag: the reduction may read the slot while rank 0's stores are
// still landing.
func TestCheckerCatchesOneShotPushMissingDataWait(t *testing.T) {
	s := plan(t, "one_shot_push", req(t, "rtxpro6000x8-2numa", 4, 4096, nil))
	neuterOps(s, 1, func(o Op) bool { return o.Label == "data from rank 0" })
	err := Check(s)
	require.Error(t, err)
	// Slot 0 of rank 1's recv area is [0, 4096).
	assert.Contains(t, err.Error(), "race on gpu1:recv bytes [0, 4096)")
	assert.Contains(t, err.Error(), "rank 0 op 5 write [push to rank 1] (allreduce 1)")
	assert.Contains(t, err.Error(), "rank 1 op 15 reduce [reduce slot 0] (allreduce 1)")
}

// Planted bug: rank 0 pushes into rank 1 without waiting for rank 1's
// "slots free": its next allreduce's stores may overwrite rank 1's slot
// while rank 1 is still reducing the previous one — the reason the
// handshake (or double buffering) exists.
func TestCheckerCatchesOneShotPushSlotReuse(t *testing.T) {
	s := plan(t, "one_shot_push", req(t, "rtxpro6000x8-2numa", 4, 4096, nil))
	neuterOps(s, 0, func(o Op) bool { return o.Label == "rank 1 slots free" })
	err := Check(s)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "race on gpu1:recv bytes [0, 4096)")
	assert.Contains(t, err.Error(), "rank 1 op 15 reduce [reduce slot 0] (allreduce 1)")
	assert.Contains(t, err.Error(), "rank 0 op 5 write [push to rank 1] (allreduce 2)")
}

// At small sizes the push needs one posted store and one flag per peer,
// against one-stage's two barriers and non-posted reads whose rate is
// bounded by loads in flight / round trip: it is faster. At 16 MiB both
// are bound by (n−1)·S through each GPU's link.
func TestOneShotPushTiming(t *testing.T) {
	r := req(t, "rtxpro6000x8-2numa", 8, 14336, nil)
	push, pull := runUs(t, "one_shot_push", r, 2), runUs(t, "one_stage", r, 2)
	t.Logf("14336 B, 8 ranks: one_shot_push %.2f µs, one_stage %.2f µs", push, pull)
	assert.Less(t, push, pull)
	r = req(t, "rtxpro6000x8-2numa", 8, 16<<20, nil)
	push, pull = runUs(t, "one_shot_push", r, 1), runUs(t, "one_stage", r, 1)
	t.Logf("16 MiB, 8 ranks: one_shot_push %.1f µs, one_stage %.1f µs", push, pull)
	assert.InEpsilon(t, pull, push, 0.1)
}
