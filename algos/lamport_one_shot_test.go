package algos

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLamportOneShotChecks(t *testing.T) {
	// Three rotating buffers, no barrier: the checker runs enough calls
	// back to back to cover every phase of the rotation (see Check).
	checkSweep(t, "lamport_one_shot", "rtxpro6000x8-2numa", sweepSizes, all)
	checkSweep(t, "lamport_one_shot", "h200x8-nvswitch", []int64{14, 43008}, all)
}

// mapRanges applies f to every range of every op of s (data and polled).
func mapRanges(s *Schedule, f func(op *Op, x *Range)) {
	for r := range s.Programs {
		for i := range s.Programs[r] {
			op := &s.Programs[r][i]
			f(op, &op.Src)
			f(op, &op.Dst)
		}
	}
}

// Planted bug: two rotating buffers instead of three (the clear still
// re-arms the previous call's copy, now (k+1) mod 2). A rank in call k+1
// writes into the copy a slower peer, still in call k, is clearing.
func TestCheckerCatchesLamportTwoBuffers(t *testing.T) {
	s := plan(t, "lamport_one_shot", req(t, "rtxpro6000x8-2numa", 4, 4096, nil))
	mapRanges(s, func(_ *Op, x *Range) {
		if x.Buf.Rotate == 3 {
			x.Buf.Rotate = 2
			if x.Buf.Shift == 2 { // the previous call's copy
				x.Buf.Shift = 1
			}
		}
	})
	err := Check(s)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "race on gpu")
	assert.Contains(t, err.Error(), ":lamport{")
	assert.Contains(t, err.Error(), "[clear previous call's buffer]")
	assert.Contains(t, err.Error(), "write [push to rank")
}

// Planted bug: nobody re-arms the buffers. The first three calls find
// their copies holding the sentinel from allocation; the fourth stores
// over the data of the first, and its poll could end on that stale data.
func TestCheckerCatchesLamportNoClear(t *testing.T) {
	s := plan(t, "lamport_one_shot", req(t, "rtxpro6000x8-2numa", 4, 4096, nil))
	for r := range s.Programs {
		neuterOps(s, r, func(o Op) bool { return o.Label == "clear previous call's buffer" })
	}
	err := Check(s)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "(allreduce 4) stores into gpu")
	assert.Contains(t, err.Error(), ":lamport{0/3}")
	assert.Contains(t, err.Error(), "of allreduce 1")
	assert.Contains(t, err.Error(), "not the sentinel: nothing re-armed them")
}

// Planted bug: the clear re-arms the live buffer (this call's copy)
// instead of the previous call's: it meets the peers' pushes of this call.
func TestCheckerCatchesLamportClearOfLiveBuffer(t *testing.T) {
	s := plan(t, "lamport_one_shot", req(t, "rtxpro6000x8-2numa", 4, 4096, nil))
	mapRanges(s, func(op *Op, x *Range) {
		if op.Label == "clear previous call's buffer" && x.Buf.Rotate == 3 {
			x.Buf.Shift = 0
		}
	})
	err := Check(s)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "race on gpu")
	assert.Contains(t, err.Error(), "[clear previous call's buffer] (allreduce 1)")
	assert.Contains(t, err.Error(), "(allreduce 1)")
}

// Planted bug: a rank polls the wrong slot (its peer never stores there
// in this call): the poll never ends.
func TestCheckerCatchesDataWaitOnUnwrittenBytes(t *testing.T) {
	s := plan(t, "lamport_one_shot", req(t, "rtxpro6000x8-2numa", 2, 4096, nil))
	for i, op := range s.Programs[0] {
		if op.Label == "spin until slot 1 holds no sentinel" {
			s.Programs[0][i].Src.Off += 2 * 4096 // slot 1 moved past both slots
		}
	}
	err := Check(s)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "polls gpu0:lamport{0/3} bytes [12288, 16384), which still hold the sentinel")
}

// The data-carried wait needs its mark inline with the data: a separate
// flag write could land before the data it stands for.
func TestCheckerRefusesDataWaitOnSeparateFlag(t *testing.T) {
	s := plan(t, "lamport_one_shot", req(t, "rtxpro6000x8-2numa", 2, 4096, nil))
	for i, op := range s.Programs[1] {
		if op.Kind == Signal && op.Inline {
			s.Programs[1][i].Inline = false
		}
	}
	err := Check(s)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a data-carried wait, but rank 1 op")
	assert.Contains(t, err.Error(), "marks the landing with a separate flag write")
}

// No barrier and one store per peer: at 14 KiB on eight PCIe GPUs it beats
// every pull kernel (two barriers, reads bound by loads in flight per
// round trip) and the handshaking one-shot push.
func TestLamportOneShotTiming(t *testing.T) {
	r := req(t, "rtxpro6000x8-2numa", 8, 14336, nil)
	lam := runUs(t, "lamport_one_shot", r, 3)
	for _, other := range []string{"one_shot_push", "one_stage", "two_stage"} {
		o := runUs(t, other, r, 3)
		t.Logf("14336 B, 8 ranks: lamport_one_shot %.2f µs, %s %.2f µs", lam, other, o)
		assert.Less(t, lam, o, other)
	}
}

func TestLamportLaunch(t *testing.T) {
	// Kimi-K2.5 (hidden 7168, bf16) on an sm120 GPU with 188 SMs: 896
	// accesses per token over a cluster of 8 is 112 threads, doubled to
	// 224 over 4 blocks; 3 tokens → 12 blocks.
	b, th := LamportLaunch(3, 7168, 2, 188, 120)
	assert.Equal(t, 12, b)
	assert.Equal(t, 224, th)
	// 73 tokens × 4 > 188 SMs: larger blocks, clusters of 2.
	b, th = LamportLaunch(73, 7168, 2, 188, 120)
	assert.Equal(t, 146, b)
	assert.Equal(t, 448, th)
	// Before sm90 there are no clusters: one block per token.
	b, th = LamportLaunch(3, 7168, 2, 80, 70)
	assert.Equal(t, 3, b)
	assert.Equal(t, 896, th)
}
