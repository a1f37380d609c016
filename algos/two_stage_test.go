package algos

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/topology"
)

// sweepWorlds and sweepSizes are the check matrix: world sizes with and
// without a power of two and across both sockets of the 2-NUMA preset;
// sizes from one bf16 element through odd element counts (remainders for
// the last part) to 16 MiB (the checker is symbolic, so big sizes are as
// cheap as small ones).
var (
	sweepWorlds = []int{2, 3, 4, 5, 8}
	sweepSizes  = []int64{2, 14, 43010, 1024, 43008, 1 << 20, 16 << 20}
)

// checkSweep plans algo for every world size and size on preset and
// checks every schedule. allowed says whether a world size may be planned;
// for the others Plan must fail, naming the world size.
func checkSweep(t *testing.T, algo, preset string, sizes []int64, allowed func(n int) bool) {
	t.Helper()
	for _, n := range sweepWorlds {
		for _, sz := range sizes {
			s, err := Plan(algo, req(t, preset, n, sz, nil))
			if !allowed(n) {
				assert.ErrorContains(t, err, fmt.Sprint(n), "%s n=%d must be refused naming the size", algo, n)
				continue
			}
			require.NoError(t, err, "%s n=%d %d B", algo, n, sz)
			assert.NoError(t, Check(s), "%s n=%d %d B on %s", algo, n, sz, preset)
		}
	}
}

func all(int) bool { return true }

// neuterOps replaces rank r's ops matching pred by empty computes with the
// same dependencies, so indices stay valid: a planted bug that removes
// synchronisation without touching anything else.
func neuterOps(s *Schedule, r int, pred func(Op) bool) {
	for i, op := range s.Programs[r] {
		if pred(op) {
			s.Programs[r][i] = Op{Kind: Compute, After: op.After, Label: op.Label + " (removed)"}
		}
	}
}

func TestTwoStageChecks(t *testing.T) {
	// Every world size, including odd ones where the last rank's part
	// takes the remainder, passes the two back-to-back runs without an
	// end barrier: the start barrier of the next run orders reuse.
	checkSweep(t, "two_stage", "rtxpro6000x8-2numa", sweepSizes, all)
	// NVLink machine: same protocol, different fabric.
	checkSweep(t, "two_stage", "h200x8-nvswitch", []int64{14, 43008}, all)
}

func TestTwoStageHasNoEndBarrier(t *testing.T) {
	s := plan(t, "two_stage", req(t, "rtxpro6000x8-2numa", 4, 43008, nil))
	for r, prog := range s.Programs {
		// As in vLLM, the last ops are the stage-2 pulls, not a barrier.
		last := prog[len(prog)-1]
		assert.Equal(t, Read, last.Kind, "rank %d ends with %v", r, last)
		for _, op := range prog {
			if op.Kind == Signal {
				// The mid barrier is the fence: a posted signal after
				// the stage-1 stores, never a flag inside the data.
				assert.False(t, op.Inline, "rank %d %v", r, op)
			}
		}
	}
}

// Planted bug: without the mid barrier a rank finishes while its peers may
// still pull its input in stage 1, and the user overwrites it.
func TestCheckerCatchesTwoStageWithoutMidBarrier(t *testing.T) {
	s := plan(t, "two_stage", req(t, "rtxpro6000x8-2numa", 4, 4096, nil))
	for r := range s.Programs {
		neuterOps(s, r, func(o Op) bool { return o.Label == "mid barrier" })
	}
	err := Check(s)
	require.Error(t, err)
	// Rank 0's input, part 1 (rank 1's part of 4096/4 B): the bytes rank 1
	// pulls in stage 1, unordered with the user's next write.
	assert.Contains(t, err.Error(), "race on gpu0:in bytes [1024, 2048)")
	assert.Contains(t, err.Error(), "rank 0 (user writing its input before allreduce 2)")
	assert.Contains(t, err.Error(), "rank 1 op 10 read [stage 1 pull rank 0] (allreduce 1)")
}

// Planted bug: rank 1 pulls rank 2's reduced part without waiting for the
// mid barrier (its other waits stay): it may read rank 2's tmp before
// rank 2 has stored the stage-1 sum there.
func TestCheckerCatchesTwoStageEarlyStage2Pull(t *testing.T) {
	s := plan(t, "two_stage", req(t, "rtxpro6000x8-2numa", 4, 4096, nil))
	for i, op := range s.Programs[1] {
		if op.Label == "stage 2 pull rank 2" {
			s.Programs[1][i].After = nil
		}
	}
	err := Check(s)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "race on gpu2:tmp bytes [0, 1024)")
	assert.Contains(t, err.Error(), "[stage 2 pull rank 2]")
	assert.Contains(t, err.Error(), "rank 2 op")
	assert.Contains(t, err.Error(), "[stage 1 ")
}

// perPeerUs is the time to move bytes of SM-load completions into a rank
// over a PCIe Gen5 x16 link while the same link carries the read requests
// of a peer pulling as much from it: completion TLPs (payload + header)
// plus request TLPs per completion payload, over the link efficiency.
func perPeerUs(t *testing.T, top *topology.Topology, bytes int64) float64 {
	m, err := hw.New(top)
	require.NoError(t, err)
	ph := m.Phys
	rate, err := topology.PCIeRate(5, 16)
	require.NoError(t, err)
	w := (ph.ReadCpl + ph.TLPOverhead + ph.ReadRequest) / ph.ReadCpl / ph.LinkEfficiency
	return float64(bytes) * w / float64(rate) * 1e6
}

// One-stage pulls (n−1)·S into every rank through its own PCIe link, so its
// time grows linearly with the peers.
func TestOneStageTimeGrowsWithPeers(t *testing.T) {
	const S = 4 << 20
	top, err := topology.Load("rtxpro6000x4-1numa")
	require.NoError(t, err)
	per := perPeerUs(t, top, S)
	t2 := runUs(t, "one_stage", req(t, "rtxpro6000x4-1numa", 2, S, nil), 1)
	t3 := runUs(t, "one_stage", req(t, "rtxpro6000x4-1numa", 3, S, nil), 1)
	t4 := runUs(t, "one_stage", req(t, "rtxpro6000x4-1numa", 4, S, nil), 1)
	t.Logf("one_stage 4 MiB on one socket: 2 ranks %.1f µs, 3 ranks %.1f, 4 ranks %.1f; link time per peer %.1f", t2, t3, t4, per)
	// Each extra peer adds S through the rank's link: the increments
	// equal the link time of S (barriers and launch are the same).
	assert.InEpsilon(t, per, t3-t2, 0.03)
	assert.InEpsilon(t, per, t4-t3, 0.03)
	// 2, 4, 8 ranks on the two-socket box: (n−1)·S over the link is a
	// lower bound, reached within 10% plus the fixed barrier costs.
	for _, n := range []int{2, 4, 8} {
		tn := runUs(t, "one_stage", req(t, "rtxpro6000x8-2numa", n, S, nil), 1)
		t.Logf("one_stage 4 MiB, %d ranks on 2 sockets: %.1f µs (bound %.1f)", n, tn, float64(n-1)*per)
		assert.GreaterOrEqual(t, tn, float64(n-1)*per, "n=%d", n)
		assert.LessOrEqual(t, tn, float64(n-1)*per*1.1+15, "n=%d", n)
	}
}

// Two-stage moves 2(n−1)/n·S per rank instead of (n−1)·S: at 16 MiB on 8
// ranks that is 1.75·S against 7·S, about a quarter of the time.
func TestTwoStageBeatsOneStageAtLargeSizes(t *testing.T) {
	const S, n = 16 << 20, 8
	r := req(t, "rtxpro6000x8-2numa", n, S, nil)
	one := runUs(t, "one_stage", r, 1)
	two := runUs(t, "two_stage", r, 1)
	bound := perPeerUs(t, r.Top, S) * 2 * float64(n-1) / n
	t.Logf("16 MiB, 8 ranks: one_stage %.1f µs, two_stage %.1f µs (link bound %.1f)", one, two, bound)
	assert.Less(t, two, one)
	// The ratio is the traffic ratio 2/n, give or take the extra barrier.
	assert.InDelta(t, 2.0/n, two/one, 0.03)
	assert.GreaterOrEqual(t, two, bound)
}

// Every algorithm of this file set also runs three back-to-back
// allreduces on the executor (the checker proves two): flags are
// per-iteration, so a protocol that relied on stale flag values would
// deadlock or finish too early here.
func TestMyAlgorithmsRunBackToBack(t *testing.T) {
	for _, a := range []string{"two_stage", "one_shot_push", "hierarchical", "staged_push", "halving_doubling"} {
		for _, n := range []int{3, 8} {
			us := runUs(t, a, req(t, "rtxpro6000x8-2numa", n, 43008, nil), 3)
			assert.Greater(t, us, 1.0, "%s n=%d", a, n)
		}
	}
}

// Describe and the option table are what `arsim algos` prints.
func TestMyAlgorithmsDescribeThemselves(t *testing.T) {
	for _, name := range []string{"two_stage", "custom_ar", "one_shot_push", "hierarchical", "staged_push", "halving_doubling"} {
		a, err := Lookup(name)
		require.NoError(t, err)
		assert.NotEmpty(t, a.Describe(), name)
		assert.NotContains(t, a.Describe(), "\n", "%s: one line", name)
		for _, o := range a.Options() {
			assert.NotEmpty(t, o.Doc, "%s option %s", name, o.Name)
		}
	}
}

// A fence after a kernel's pulls from a peer waits for the other blocks'
// loads of the peer still in flight (hw.Machine.FenceBesidePolls with the
// peer's memory): two_stage's mid fences (both with
// mid_barrier=fence_release, the second inheriting the first's) and
// one_stage's end_release fence name the peer they follow the pulls of;
// one_stage's start_release fence, after the launch, names none.
// PyTorch's two-shot's fence after pushing what it pulled names the peer;
// the PCIe IPC staged ring's, after pushes that follow no pull, none. With one
// block there is no other block, and the pass takes what it took before;
// with 16 each fence takes FenceBesidePolls more, for the other 15
// blocks' threads' loads of the peer.
func TestFencesAfterPullsWaitForPeerLoads(t *testing.T) {
	loads := func(s *Schedule, r int) []hw.Mem {
		var out []hw.Mem
		for _, op := range s.Programs[r] {
			if op.Kind == Fence {
				if op.Src.Buf.Name == FenceLoadsName {
					out = append(out, op.Src.Buf.At)
				} else {
					out = append(out, hw.Mem{Rank: -1})
				}
			}
		}
		return out
	}
	none := hw.Mem{Rank: -1}
	s := plan(t, "two_stage", req(t, "h200x2", 2, 43008, map[string]string{"mid_barrier": "fence_release"}))
	assert.Equal(t, []hw.Mem{hw.GPUMem(1), hw.GPUMem(1)}, loads(s, 0))
	assert.Equal(t, []hw.Mem{hw.GPUMem(0), hw.GPUMem(0)}, loads(s, 1))
	s = plan(t, "one_stage", req(t, "h200x2", 2, 43008, map[string]string{"start_release": "true", "end_release": "true"}))
	assert.Equal(t, []hw.Mem{none, hw.GPUMem(1)}, loads(s, 0))
	// PyTorch's two-shot fences the pushes of what it pulled: its fence,
	// paid for by the pushes, names the peer; the PCIe IPC staged ring's
	// fences follow pushes that follow no pull and name none.
	s = plan(t, "two_shot_push", req(t, "h200x2", 2, 1<<20, nil))
	assert.Equal(t, []hw.Mem{hw.GPUMem(1)}, loads(s, 0))
	s = plan(t, "pcie_ipc_staged", req(t, "rtxpro6000x8-2numa", 8, 43008, nil))
	require.NotEmpty(t, loads(s, 0))
	for _, l := range loads(s, 0) {
		assert.Equal(t, none, l)
	}

	for _, blocks := range []int{1, 16} {
		m, s, fences := rank0Fences(t, "two_stage", map[string]string{"blocks": fmt.Sprint(blocks), "mid_barrier": "fence_release"})
		n := 0
		for _, sp := range fences {
			n++
			after, err := m.FenceAfterLanding(0, hw.GPUMem(0))
			require.NoError(t, err)
			k := s.Programs[0][sp.Op].Kernel
			require.Equal(t, blocks, k.Blocks)
			loads := (blocks - 1) * k.Threads * max(int(k.LoadsInFlight), 1) // every thread's pull of the peer in flight
			wait, err := m.FenceBesidePolls(0, hw.GPUMem(1), loads)
			require.NoError(t, err)
			if blocks == 1 {
				assert.Zero(t, wait)
			} else {
				assert.Positive(t, wait)
			}
			assert.Equal(t, after+wait, sp.End.Sub(sp.Start), "%d blocks", blocks)
		}
		assert.Equal(t, 2, n, "%d blocks: two mid fences on rank 0", blocks)
	}
}

// rank0Fences runs algorithm name once on h200x2 at 43,008 B with opts and
// returns the machine, the schedule and rank 0's spans of its Fence ops.
func rank0Fences(t *testing.T, name string, opts map[string]string) (*hw.Machine, *Schedule, []Span) {
	t.Helper()
	r := req(t, "h200x2", 2, 43008, opts)
	s := plan(t, name, r)
	m, err := hw.New(r.Top)
	require.NoError(t, err)
	res, err := Run(m, s, RunOptions{Iterations: 1, Launch: r.Launch, Spans: true})
	require.NoError(t, err)
	var out []Span
	for _, sp := range res.Spans {
		if sp.Rank == 0 && s.Programs[sp.Rank][sp.Op].Kind == Fence {
			out = append(out, sp)
		}
	}
	return m, s, out
}
