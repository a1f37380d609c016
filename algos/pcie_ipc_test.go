package algos

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPCIeIPCChecks(t *testing.T) {
	checkSweep(t, "pcie_ipc_one_shot", "rtxpro6000x8-2numa", sweepSizes, all)
	// Socket islands must be equal: 5 ranks on two sockets are 4 + 1.
	notFive := func(n int) bool { return n != 5 }
	checkSweep(t, "pcie_ipc_islands", "rtxpro6000x8-2numa", sweepSizes, notFive)
	checkSweep(t, "pcie_ipc_staged", "rtxpro6000x8-2numa", sweepSizes, notFive)
	checkSweep(t, "pcie_ipc_islands", "rtxpro6000x8-switches", []int64{14, 43008}, notFive)
	checkSweep(t, "pcie_ipc_staged", "rtxpro6000x8-switches", []int64{14, 43008}, notFive)
	for _, algo := range []string{"pcie_ipc_islands", "pcie_ipc_staged"} {
		for _, n := range sweepWorlds {
			for _, sz := range []int64{14, 43010, 1 << 20} {
				s, err := Plan(algo, req(t, "rtxpro6000x8-2numa", n, sz, map[string]string{"islands": "none"}))
				require.NoError(t, err)
				assert.NoError(t, Check(s), "%s islands=none n=%d %d B", algo, n, sz)
			}
		}
	}
}

// Planted bug: FlashInfer's own negative control
// (FLASHINFER_PCIE_IPC_DEBUG_NO_BLOCK_EPOCH): one scratch half for every
// call. A rank in call k+1 stores into a slot its slower peer is still
// reading, or re-arming, in call k.
func TestCheckerCatchesPCIeIPCWithoutEpochDoubleBuffer(t *testing.T) {
	s := plan(t, "pcie_ipc_one_shot", req(t, "rtxpro6000x8-2numa", 4, 4096, nil))
	mapRanges(s, func(_ *Op, x *Range) { x.Buf.Rotate, x.Buf.Shift = 0, 0 })
	err := Check(s)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "race on gpu")
	assert.Contains(t, err.Error(), ":ipc bytes")
	assert.Contains(t, err.Error(), "(allreduce 1)")
	assert.Contains(t, err.Error(), "(allreduce 2)")
}

// Planted bug: the reader does not write +0.0 back. The two halves hold
// the sentinel from allocation for the first two calls; the third stores
// over the first call's data.
func TestCheckerCatchesPCIeIPCWithoutSentinelWriteBack(t *testing.T) {
	s := plan(t, "pcie_ipc_one_shot", req(t, "rtxpro6000x8-2numa", 4, 4096, nil))
	for r := range s.Programs {
		neuterOps(s, r, func(o Op) bool { return o.Src.IsSentinel() })
	}
	err := Check(s)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "(allreduce 3) stores into gpu")
	assert.Contains(t, err.Error(), ":ipc{0/2}")
	assert.Contains(t, err.Error(), "of allreduce 1")
	assert.Contains(t, err.Error(), "not the sentinel")
}

// Planted bug: the island kernel without its epoch double buffer. The
// pair barrier releases both islands together; a counterpart that runs
// ahead into the next call stores its island sum into the slot this rank
// is still adding — the cross-island race FlashInfer's comment on
// ipc_topo_rsag8_ring_push_param_kernel describes.
func TestCheckerCatchesPCIeIPCStagedWithoutEpochDoubleBuffer(t *testing.T) {
	s := plan(t, "pcie_ipc_staged", req(t, "rtxpro6000x8-2numa", 8, 43008, nil))
	mapRanges(s, func(_ *Op, x *Range) { x.Buf.Rotate, x.Buf.Shift = 0, 0 })
	err := Check(s)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "race on gpu")
	assert.Contains(t, err.Error(), ":ipc.blk bytes")
	assert.Contains(t, err.Error(), "island sum")
}

// With the double buffer, the island kernel's last island barrier is not
// needed by back-to-back calls of this kernel alone: a peer stores into
// the same half again only in call k+2, after the first island barrier of
// call k+2, which this rank reaches only after its copy-out of call k.
// (FlashInfer keeps it; its comment dates it to before the double buffer,
// and the scratch region's epoch is shared with other kernels, which this
// check does not cover.)
func TestPCIeIPCStagedEndBarrierCoveredByDoubleBuffer(t *testing.T) {
	s := plan(t, "pcie_ipc_staged", req(t, "rtxpro6000x8-2numa", 8, 43008, nil))
	for r := range s.Programs {
		neuterOps(s, r, func(o Op) bool { return o.Label == "end barrier" })
	}
	assert.NoError(t, Check(s))
	// Without the double buffer, the end barrier cannot save it either.
	mapRanges(s, func(_ *Op, x *Range) { x.Buf.Rotate, x.Buf.Shift = 0, 0 })
	assert.Error(t, Check(s))
}

// Socket islands of four on the two-socket box, chunks of S/4.
func TestPCIeIPCIslands(t *testing.T) {
	s := plan(t, "pcie_ipc_islands", req(t, "rtxpro6000x8-2numa", 8, 43008, nil))
	assert.Contains(t, s.Notes[0], "2 socket islands of 4: [[0 1 2 3] [4 5 6 7]]; chunks of 10752 B")
	s = plan(t, "pcie_ipc_staged", req(t, "rtxpro6000x8-2numa", 8, 43008, nil))
	assert.Contains(t, s.Notes[0], "2 socket islands of 4")
	assert.Contains(t, s.Notes[0], "1 blocks × 256 threads") // the seed: 42 KiB / 256 KiB → 1 block
	_, err := Plan("pcie_ipc_islands", req(t, "rtxpro6000x8-2numa", 6, 43008, nil))
	assert.ErrorContains(t, err, "6 ranks on rtxpro6000x8-2numa form socket islands of unequal sizes 4, 2")
}

// Timing on the two-socket PCIe box: at 42 KiB the island push crosses the
// socket link with one chunk per owner (S/4 per GPU) and waits on no
// barrier, so it beats every built-in; the staged kernel pays eight
// barriers (1 µs and more each) and loses at this size.
func TestPCIeIPCTiming(t *testing.T) {
	r := req(t, "rtxpro6000x8-2numa", 8, 43008, nil)
	isl := runUs(t, "pcie_ipc_islands", r, 3)
	staged := runUs(t, "pcie_ipc_staged", r, 3)
	for _, other := range []string{"two_stage", "hierarchical", "one_shot_push"} {
		o := runUs(t, other, r, 3)
		t.Logf("43008 B, 8 ranks: pcie_ipc_islands %.2f µs, %s %.2f µs", isl, other, o)
		assert.Less(t, isl, o, other)
	}
	t.Logf("pcie_ipc_staged %.2f µs", staged)
	assert.Greater(t, staged, isl)
}
