package algos

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/hw"
)

func TestHostStagedCheck(t *testing.T) {
	for _, name := range []string{"host_one_shot", "host_two_shot"} {
		for _, n := range []int{2, 3, 5, 8} {
			for _, b := range []int64{2, 14, 1024, 43008, 43010, 1 << 20} {
				s := plan(t, name, req(t, "rtxpro6000x8-2numa", n, b, nil))
				require.NoError(t, Check(s), "%s n=%d bytes=%d", name, n, b)
			}
		}
	}
}

// The host-staged one-shot needs no P2P: it runs on a platform that
// forbids GPU-to-GPU access, where one_stage cannot.
func TestHostStagedNeedsNoP2P(t *testing.T) {
	r := req(t, "rtxpro6000x8-2numa", 8, 43008, nil)
	ps := r.Top.Params.Clone()
	require.NoError(t, ps.Set("p2p.through_host_bridge", 0, "test"))
	require.NoError(t, ps.Set("p2p.across_sockets", 0, "test"))
	pre, err := lookupPreset("rtxpro6000x8-2numa")
	require.NoError(t, err)
	top, err := pre.BuildWith(ps)
	require.NoError(t, err)
	r.Top = top
	us := runUs(t, "host_one_shot", r, 2)
	assert.Greater(t, us, 0.0)
	m, err := hw.New(top)
	require.NoError(t, err)
	_, err = Run(m, plan(t, "one_stage", r), RunOptions{})
	assert.ErrorContains(t, err, "P2P over a")
}

// flag_apart: with the ranks' flag sectors a kibibyte apart no rank's
// stores collide; 128 B apart (lines 0–7 of a kibibyte) each rank's line
// collides with three others' (hostmem.collision_mask: line ⊕ 1, 4, 5), so
// each of the one-shot's two barriers is 3 × hostmem.sector_collision
// longer on 8 ranks (one allreduce, nothing else changes); 256 B apart
// (lines 0, 2, …, 14) with one. The schedules stay correct.
func TestHostStagedFlagApart(t *testing.T) {
	one := func(apart string) float64 {
		r := req(t, "rtxpro6000x8-2numa", 8, 14336, map[string]string{"flag_apart": apart})
		require.NoError(t, Check(plan(t, "host_one_shot", r)))
		return runUs(t, "host_one_shot", r, 1)
	}
	coll := req(t, "rtxpro6000x8-2numa", 8, 14336, nil).Top.Params.Get("hostmem.sector_collision") / 1000
	near, mid, far := one("128"), one("256"), one("1024")
	assert.InDelta(t, 2*3*coll, near-far, 1e-3, "two barriers, 3 collisions each")
	assert.InDelta(t, 2*1*coll, mid-far, 1e-3, "256 B apart: one")
	assert.Equal(t, far, one("4096"))
}

// In vLLM's layout every rank stores to and polls its own slot too (its
// barrier runs on threads t < world, its own t included): each barrier
// has n signals and n waits per rank, against n − 1 in the line layout,
// and the schedule stays correct.
func TestHostStagedVLLMLayoutHasTheOwnSlot(t *testing.T) {
	for _, c := range []struct {
		layout string
		per    int
	}{{"line", 7}, {"vllm", 8}} {
		s := plan(t, "host_one_shot", req(t, "rtxpro6000x8-2numa", 8, 14336, map[string]string{"flag_layout": c.layout}))
		require.NoError(t, Check(s))
		signals, waits := 0, 0
		for _, op := range s.Programs[3] {
			switch op.Kind {
			case Signal:
				signals++
			case Wait:
				waits++
			}
		}
		assert.Equal(t, 2*c.per, signals, "%s: two barriers", c.layout)
		assert.Equal(t, 2*c.per, waits, "%s: two barriers", c.layout)
	}
}

// The two-shot's mid barrier fences its stores to host memory while the
// kernel's other blocks keep loads of host memory in flight: each fence
// waits hw.Machine.FenceBesidePolls for the blocks − 1 others on top of
// its cost after the stores landed (both fences with
// mid_barrier=fence_release: the first follows the reduce loop, whose
// stores are fused with its loads, not a write of its own); one block
// waits for nobody.
func TestHostTwoShotFencesWaitForTheOtherBlocks(t *testing.T) {
	for _, blocks := range []int{1, 16} {
		r := req(t, "h200x2", 2, 43008, map[string]string{"blocks": fmt.Sprint(blocks), "mid_barrier": "fence_release"})
		s := plan(t, "host_two_shot", r)
		m, err := hw.New(r.Top)
		require.NoError(t, err)
		res, err := Run(m, s, RunOptions{Iterations: 1, Launch: r.Launch, Spans: true})
		require.NoError(t, err)
		n := 0
		for _, sp := range res.Spans {
			op := s.Programs[sp.Rank][sp.Op]
			if sp.Rank != 0 || op.Kind != Fence || op.Fenced {
				continue
			}
			n++
			home := op.Dst.Buf.At // the rank's host memory, where it published
			require.True(t, home.Host)
			after, err := m.FenceAfterLanding(0, home)
			require.NoError(t, err)
			wait, err := m.FenceBesidePolls(0, home, blocks-1)
			require.NoError(t, err)
			if blocks == 1 {
				assert.Zero(t, wait)
			} else {
				assert.Positive(t, wait)
			}
			assert.Equal(t, op.Kernel.Blocks, blocks, "the fence runs in the kernel of the ops it follows")
			assert.Equal(t, after+wait, sp.End.Sub(sp.Start), "%d blocks", blocks)
		}
		assert.Equal(t, 2, n, "%d blocks: two plain fences on rank 0", blocks)
	}
}

// The host two-shot's reduce loop stores its result to host memory as it
// goes (Op.Fused): at 1 MiB on two H200s the publish starts with the
// pulls, not after them, and only the last batch of loads' stores follow
// them (hw.LoadBatches); at 42 KiB the whole part comes back in one batch
// and the publish follows the pulls as a write of its own.
func TestHostTwoShotPublishIsFusedWithItsPulls(t *testing.T) {
	for _, c := range []struct {
		bytes int64
		fused bool
	}{{1 << 20, true}, {43008, false}} {
		r := req(t, "h200x2", 2, c.bytes, nil)
		s := plan(t, "host_two_shot", r)
		require.NoError(t, Check(s))
		m, err := hw.New(r.Top)
		require.NoError(t, err)
		res, err := Run(m, s, RunOptions{Iterations: 1, Launch: r.Launch, Spans: true})
		require.NoError(t, err)
		spans := map[string]Span{}
		for _, sp := range res.Spans {
			if sp.Rank == 0 {
				spans[s.Programs[0][sp.Op].Label] = sp
			}
		}
		pull, ok := spans["reduce part 0: pull rank 1's host copy"]
		require.True(t, ok)
		last, ok := spans["publish the last batch to host memory"]
		require.True(t, ok)
		assert.Equal(t, pull.End, last.Start, "%d B: the last batch's stores follow the loads", c.bytes)
		head, ok := spans["publish reduced part to host memory"]
		assert.Equal(t, c.fused, ok, "%d B", c.bytes)
		if ok {
			assert.Equal(t, pull.Start, head.Start, "the fused publish starts with the pulls")
			assert.Less(t, head.Start, pull.End)
		}
	}
}

// A fused write may end before its producers: an op that waits for it
// must name them too, or the checker refuses the schedule; a fused op that
// is not a write with a producer is refused as well.
func TestFusedWriteSuccessorsNameItsProducers(t *testing.T) {
	r := req(t, "h200x2", 2, 4096, nil)
	build := func(withProducer bool, kind OpKind) error {
		b := NewBuilder("fused", 2, 4096, 2)
		launch := b.Launches()
		k := hw.Kernel{Blocks: 1, Threads: 512}
		for rk := 0; rk < 2; rk++ {
			own := b.Add(rk, Op{Kind: Read, Src: b.In(rk, 0, 4096), Dst: b.Out(rk, 0, 4096), Kernel: k}, launch[rk]...)
			pull := b.Add(rk, Op{Kind: Read, Accumulate: true, Src: b.In((rk+1)%2, 0, 4096), Dst: b.Out(rk, 0, 4096), Kernel: k}, own)
			pub := b.Add(rk, Op{Kind: kind, Fused: true, Src: b.Out(rk, 0, 4096), Dst: OnHost(0, fmt.Sprintf("tmp%d", rk), 0, 4096), Kernel: k}, own, pull)
			after := []int{pub}
			if withProducer {
				after = append(after, pull)
			}
			b.Add(rk, Op{Kind: Fence, Dst: Range{Buf: Buf{At: hw.HostMem(0)}}, Kernel: k}, after...)
		}
		return Check(b.Schedule())
	}
	_ = r
	err := build(false, Write)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not for its producer")
	err = build(true, Read)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a fused write is a Write")
}
