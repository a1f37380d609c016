package algos

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/algos/ncclmodel"
)

// Every world size, protocol, transport and shape must give every rank the
// sum of all inputs, two back to back allreduces included.
func TestTreeChecks(t *testing.T) {
	checkNCCLSweep(t, "tree")
	for _, n := range []int{2, 3, 4, 5, 8} {
		t.Run(fmt.Sprintf("n%d/chain/3ch", n), func(t *testing.T) {
			s := plan(t, "tree", req(t, "rtxpro6000x8-2numa", n, 43008+6, map[string]string{"shape": "chain", "channels": "3"}))
			require.NoError(t, Check(s))
		})
	}
	t.Run("h200x8/64MiB", func(t *testing.T) {
		s := plan(t, "tree", req(t, "h200x8-nvswitch", 8, 64<<20, map[string]string{"proto": "ll128"}))
		t.Logf("%d ops", opCount(s))
		require.NoError(t, Check(s))
	})
}

// The two trees are binary, and each is a tree (every rank reaches the
// root); tree 1 is tree 0 shifted so that a rank is a leaf in at most one
// of them (for n ≥ 3, where there are enough inner nodes).
func TestDoubleBinaryTreeShape(t *testing.T) {
	for n := 2; n <= 16; n++ {
		leaves := make([]int, n)
		for tr := 0; tr < 2; tr++ {
			par := treeParents(n, tr, false)
			kids := make([]int, n)
			roots := 0
			for r, p := range par {
				if p < 0 {
					roots++
					continue
				}
				kids[p]++
				// Walking up must end at the root within n steps.
				x, steps := r, 0
				for par[x] >= 0 && steps <= n {
					x, steps = par[x], steps+1
				}
				assert.LessOrEqual(t, steps, n, "n=%d tree %d: rank %d is on a cycle", n, tr, r)
			}
			assert.Equal(t, 1, roots, "n=%d tree %d", n, tr)
			for r, k := range kids {
				assert.LessOrEqual(t, k, 2, "n=%d tree %d rank %d", n, tr, r)
				if k == 0 {
					leaves[r]++
				}
			}
		}
		if n%2 == 0 {
			for r, l := range leaves {
				assert.LessOrEqual(t, l, 1, "n=%d: rank %d is a leaf of both trees", n, r)
			}
		}
	}
}

// Planted bug: in tree 0 over 4 ranks, rank 2 is a leaf under rank 1 (tree
// 0 puts rank r at in-order position r+1: 3 is the root, 1 its child, 0 and
// 2 the leaves). Rank 2 sends its reduce-up slice to the wrong parent,
// rank 3, while rank 1 still waits for it: rank 1 then reduces a slot
// nothing wrote, and rank 2's input is missing from the sum.
func TestCheckerCatchesTreeWrongParent(t *testing.T) {
	s := plan(t, "tree", req(t, "rtxpro6000x8-2numa", 4, 4096, map[string]string{"channels": "1"}))
	require.Equal(t, []int{1, 3, 1, -1}, treeParents(4, 0, false))
	moved := 0
	for i, op := range s.Programs[2] {
		if op.Kind == Write && op.Dst.Buf.Name == "tree.ch0.up.2>1" {
			s.Programs[2][i].Dst = On(3, "tree.ch0.up.2>3", op.Dst.Off, op.Dst.Len)
			moved++
		}
	}
	require.Equal(t, 1, moved)
	err := Check(s)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rank 1 op")
	assert.Contains(t, err.Error(), "gpu1:tree.ch0.up.2>1[0:4096] bytes from 0 before anything was written there")
}

// A small tree's latency grows with its depth, a chain's with n: at 8
// ranks the double binary tree beats the chain for a tiny message.
func TestTreeDepth(t *testing.T) {
	bt := runUs(t, "tree", req(t, "rtxpro6000x8-2numa", 8, 1024, map[string]string{"proto": "ll"}), 3)
	chain := runUs(t, "tree", req(t, "rtxpro6000x8-2numa", 8, 1024, map[string]string{"proto": "ll", "shape": "chain"}), 3)
	t.Logf("1 KiB tree/ll: dbtree %.1f µs, chain %.1f µs", bt, chain)
	assert.Less(t, bt, chain)
}

// NCCL's tree/Simple moves chunks of one buffer step (4 MiB / NCCL_STEPS)
// at every size and channel count (NCCL 2.20 on: calcCollChunking halves
// the chunk for CollNet, NVLS and the LL128 tree only); LL128's tree
// steps are halved for calls with few chunks per channel, LL's are the
// protocol's step.
func TestTreeChunks(t *testing.T) {
	for _, bytes := range []int64{64 << 10, 1 << 20, 8 << 20, 256 << 20} {
		for _, ch := range []int{1, 4, 24} {
			assert.Equal(t, int64(512<<10), protoSimple.treeChunk(bytes, ch, 1, ncclmodel.Release{}), "%d B, %d channels", bytes, ch)
			assert.Equal(t, protoLL.sliceBytes(), protoLL.treeChunk(bytes, ch, 1, ncclmodel.Release{}))
		}
	}
	assert.Less(t, protoLL128.treeChunk(1<<20, 24, 1, ncclmodel.Release{}), protoLL128.treeChunk(1<<30, 24, 1, ncclmodel.Release{}), "LL128: halved for few chunks per channel")
	// NCCL 2.19 halves Simple's tree chunk for mid sizes: on 8 ranks
	// (depth 7) 8 MiB over 4 channels has 4 chunks of 512 KiB a channel,
	// fewer than 56, so 128 KiB; then 16 chunks, fewer than 28: 64 KiB;
	// then 32, not fewer than 7: stays.
	r19 := ncclmodel.Release{Minor: 19, Patch: 4}
	assert.Equal(t, int64(64<<10), protoSimple.treeChunk(8<<20, 4, 7, r19))
	assert.Equal(t, int64(512<<10), protoSimple.treeChunk(1<<30, 4, 7, r19), "enough chunks: a buffer step")
	assert.Equal(t, int64(32<<10), protoSimple.treeChunk(64<<10, 1, 7, r19), "never below 32 KiB")
}
