package validate

import (
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// gpu.host_store_issue_per_warp, fitted on perblock.jsonl's copies
// (TestPerBlockFits), predicts one block's copies from GPU memory to host
// memory on the other files of the H200 (the suite's repeats, other
// builds, NCCL's loop shape, 256 threads, the spilling copy): median
// |error| 8.2 → 3.8 %, nearer on 96 of 101; and on the H100, a chip nobody
// fitted: 7.8 → 5.4 %, nearer on 142 of 159. The test holds those: the
// median below 4.5 % and 6 %, under that without it, nearer on 85 %.
func TestHostStoreIssueOnItsPredictedSide(t *testing.T) {
	for _, c := range []struct {
		preset, dir string
		most        float64
		files       []string
	}{
		{"h200x1", "h200x1-arsim", 4.5, []string{"perblock_3.jsonl", "perblock_3b.jsonl", "perblock_4.jsonl",
			"copy_registers.jsonl", "host_copies.jsonl", "nccl_copy.jsonl"}},
		{"h100x1", "h100x1-arsim", 6, []string{"perblock.jsonl", "perblock_2.jsonl", "perblock_b.jsonl",
			"perblock_more.jsonl", "perblock_more_2.jsonl", "host_shot.jsonl", "host_shot_2.jsonl"}},
	} {
		p, err := topology.Lookup(c.preset)
		require.NoError(t, err)
		without := p.DefaultParams().Clone()
		require.NoError(t, without.Set("gpu.host_store_issue_per_warp", 0, "test"))
		var recs []trace.Record
		for _, r := range readCaptures(t, c.dir, c.files...) {
			if r.Kind == trace.KindLoop && r.Loop == "copy" && r.Src == "local" && r.Dst == "host" && r.Blocks == 1 && r.Iters >= 16 {
				recs = append(recs, r)
			}
		}
		require.GreaterOrEqual(t, len(recs), 40, c.preset)
		with, err := Run(recs, Options{})
		require.NoError(t, err)
		wo, err := Run(recs, Options{Params: map[string]*topology.Params{c.preset: without}})
		require.NoError(t, err)
		var a, b []float64
		nearer := 0
		for i := range with.Records {
			x, y := math.Abs(with.Records[i].ErrorPct), math.Abs(wo.Records[i].ErrorPct)
			a, b = append(a, x), append(b, y)
			if x <= y {
				nearer++
			}
		}
		slices.Sort(a)
		slices.Sort(b)
		t.Logf("%s: %d copies to host memory, median |error| %.1f %% (without %.1f %%), nearer on %d", c.preset, len(a), a[len(a)/2], b[len(b)/2], nearer)
		assert.LessOrEqual(t, a[len(a)/2], c.most, c.preset)
		assert.Less(t, a[len(a)/2], b[len(b)/2], c.preset)
		assert.GreaterOrEqual(t, float64(nearer), 0.85*float64(len(a)), c.preset)
	}
}
