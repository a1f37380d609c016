package validate

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// collideByMask says whether the 128-byte lines of two byte offsets of
// one page differ only in address bits 7 and 9 (or are one line): the
// rule hostmem.collision_mask = 0x280 states, written out here so the
// measurements are checked against the rule, not against the model.
func collideByMask(a, b int) bool { return (a^b)&^(0x280|127) == 0 }

// hostBarriers reads a capture's host-memory group barriers.
func hostBarriers(t *testing.T, file string) []trace.Record {
	t.Helper()
	recs, bad, err := trace.ReadJSONLFile(file, trace.ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, bad)
	return slices.DeleteFunc(recs, func(r trace.Record) bool { return r.Loop != "group_barrier" || r.Target != "host" })
}

// barrier_pairs.jsonl (predicted before the run: a distance rule, or
// address bits), and the same part on another instance (address_2.jsonl):
// within a kibibyte of the page, every pair of lines that differ only in
// address bits 7 and 9 is slower than every pair that does not — two
// bands, 2.24–2.36 µs and 1.84–1.98 µs on the first instance, 2.06–2.18
// and 1.61–1.81 on the second — and 128 or 384 B apart is in either band
// by where the pair starts, which no distance rule says. The model, which
// counts the mask's collisions, predicts those records within 12 % on the
// instance it was fitted on and within 16 % on the other (which is
// faster throughout).
func TestHostLinesCollideByAddressBits(t *testing.T) {
	for _, c := range []struct {
		file     string
		slowOver float64
		within   float64
	}{{"barrier_pairs.jsonl", 2100, 12}, {"address_2.jsonl", 1950, 16}} {
		file := "../testdata/h200x1-arsim/" + c.file
		var slow, fast []float64
		band := map[[2]int]bool{} // (x, A): slow
		for _, r := range hostBarriers(t, file) {
			if r.Layout != "rank_stride" || r.GroupStrideBytes != 0 || r.FlagOffset%1024+r.StrideBytes >= 1024 {
				continue
			}
			if collideByMask(r.FlagOffset, r.FlagOffset+r.StrideBytes) {
				slow = append(slow, r.NsPerIter)
			} else {
				fast = append(fast, r.NsPerIter)
			}
			band[[2]int{r.StrideBytes, r.FlagOffset}] = r.NsPerIter > c.slowOver
		}
		require.Len(t, slow, 34, c.file) // 17 pairs, two passes
		require.Len(t, fast, 44, c.file)
		assert.Greater(t, slices.Min(slow), slices.Max(fast), "%s: the bands overlap", c.file)
		assert.Greater(t, slices.Min(slow)/slices.Max(fast), 1.05, c.file)
		assert.True(t, band[[2]int{128, 0}] && !band[[2]int{128, 128}], "%s: 128 B apart: slow from 0, fast from 128", c.file)
		assert.True(t, band[[2]int{384, 128}] && !band[[2]int{384, 0}], "%s: 384 B apart: slow from 128, fast from 0", c.file)

		v, recs := runFile(t, file)
		byLine := recordsByLine(recs)
		n := 0
		for _, rc := range v.Records {
			r := byLine[rc.Line]
			if r.Loop == "group_barrier" && r.Layout == "rank_stride" && r.GroupStrideBytes == 0 && r.FlagOffset%1024+r.StrideBytes < 1024 {
				n++
				assert.LessOrEqual(t, math.Abs(rc.ErrorPct), c.within, "%s line %d: lines at %d and %d B", c.file, rc.Line, r.FlagOffset, r.FlagOffset+r.StrideBytes)
			}
		}
		assert.Equal(t, 78, n, c.file)
	}
}

// barrier_chunks_2.jsonl (three readings written down before the run):
// the passes repeat (within 10 %), so where vLLM-layout chunks lie
// decides, not noise: with two chunks of four groups within a kibibyte,
// the barrier is at least 25 % above one chunk's where the two chunks'
// lines collide by the mask and within 10 % of it where they do not, at 4
// and 8 ranks and every offset of the first chunk.
func TestVLLMChunksCollideByAddressBits(t *testing.T) {
	const file = "../testdata/h200x1-arsim/barrier_chunks_2.jsonl"
	type key struct{ w, g, chunk, off int }
	passes := map[key][]float64{}
	chunkOf := map[string]int{"vllm": 128, "vllm_chunk256": 256, "vllm_chunk384": 384, "vllm_chunk512": 512,
		"vllm_chunk768": 768, "vllm_chunk1k": 1024, "vllm_chunk2k": 2048}
	for _, r := range hostBarriers(t, file) {
		d, ok := chunkOf[r.Layout]
		require.True(t, ok, r.Layout)
		k := key{r.World, r.Groups, d, r.FlagOffset}
		passes[k] = append(passes[k], r.NsPerIter)
	}
	require.Len(t, passes, 120)
	median := func(v []float64) float64 {
		s := slices.Sorted(slices.Values(v))
		return s[len(s)/2]
	}
	for k, v := range passes {
		require.Len(t, v, 3, "%+v", k)
		assert.Less(t, (slices.Max(v)-slices.Min(v))/median(v), 0.10, "%+v: passes %v", k, v)
	}
	checked := 0
	for _, w := range []int{4, 8} {
		for _, off := range []int{0, 256, 512} {
			one := median(passes[key{w, 4, 128, off}])
			for _, d := range []int{128, 256, 384, 512, 768} {
				if off+d >= 1024 {
					continue
				}
				two := median(passes[key{w, 8, d, off}])
				if collideByMask(off, off+d) {
					assert.GreaterOrEqual(t, two/one, 1.25, "W = %d, chunks at %d and %d B", w, off, off+d)
				} else {
					assert.InDelta(t, 1, two/one, 0.10, "W = %d, chunks at %d and %d B", w, off, off+d)
				}
				checked++
			}
		}
	}
	assert.Equal(t, 24, checked)
}

// barrier_groups_apart.jsonl (two readings written down before the run):
// another group's line that collides with a barrier's polled one costs
// two ranks' barriers little — at 2–16 groups they take within 12 % of
// what they take beside groups whose lines do not collide, where
// the barrier's own colliding sector costs 430–470 ns — and four ranks'
// 12 % or more, one colliding line of two groups (the lines written three
// times a round). The model, which counts no other group's line, is
// within 12 % at two ranks there.
func TestOtherGroupsCollidingLines(t *testing.T) {
	const file = "../testdata/h200x1-arsim/barrier_groups_apart.jsonl"
	type key struct{ w, g, d int }
	ns := map[key][]float64{}
	for _, r := range hostBarriers(t, file) {
		require.Equal(t, "rank_stride", r.Layout)
		k := key{r.World, r.Groups, r.GroupStrideBytes}
		ns[k] = append(ns[k], r.NsPerIter)
	}
	require.Len(t, ns, 100)
	mean := func(k key) float64 {
		v := ns[k]
		require.Len(t, v, 2, "%+v", k)
		return (v[0] + v[1]) / 2
	}
	for _, g := range []int{2, 3, 4, 6, 8, 16} {
		apart := (mean(key{2, g, 768}) + mean(key{2, g, 1024})) / 2
		for _, d := range []int{128, 512} {
			assert.InDelta(t, 1, mean(key{2, g, d})/apart, 0.125, "W = 2, %d groups %d B apart", g, d)
		}
	}
	apart := (mean(key{4, 2, 768}) + mean(key{4, 2, 1024})) / 2
	for _, d := range []int{128, 512, 640} {
		assert.GreaterOrEqual(t, mean(key{4, 2, d})/apart, 1.12, "W = 4, two groups %d B apart", d)
	}

	v, recs := runFile(t, file)
	byLine := recordsByLine(recs)
	n := 0
	for _, c := range v.Records {
		if r := byLine[c.Line]; r.Loop == "group_barrier" && r.World == 2 && r.Groups <= 16 {
			n++
			assert.LessOrEqual(t, math.Abs(c.ErrorPct), 12.0, "line %d: %d groups %d B apart", c.Line, r.Groups, r.GroupStrideBytes)
		}
	}
	assert.Equal(t, 86, n)
}

// hostmem.foreign_store_collision and hostmem.foreign_collision_cap,
// recomputed from their fitted sides: the first by least squares through
// 0 of each four-rank barrier's time beyond the model's with it at 0 (the
// cap out of the way), over the foreign stores the model counts (its
// prediction's growth per nanosecond of the parameter), on
// barrier_groups_apart.jsonl; the second as the median of each
// eight-rank barrier's time beyond the model's with the cap at 0, over
// the records where the model counts foreign stores, on
// barrier_chunks_2.jsonl.
func TestForeignCollisionParametersFromTheirFittedSides(t *testing.T) {
	p, err := topology.Lookup("h200x1")
	require.NoError(t, err)
	run := func(file string, set map[string]float64) (*Validation, []trace.Record) {
		path := "../testdata/h200x1-arsim/" + file
		recs, bad, err := trace.ReadJSONLFile(path, trace.ReadOptions{})
		require.NoError(t, err)
		require.Empty(t, bad)
		ps := p.DefaultParams()
		for k, v := range set {
			require.NoError(t, ps.Set(k, v, "the fit"))
		}
		v, err := Run(recs, Options{File: path, Params: map[string]*topology.Params{"h200x1": ps}})
		require.NoError(t, err)
		return v, recs
	}
	fitted := func(v *Validation, name string) []int {
		var out []int
		for i, r := range v.Records {
			if slices.Contains(strings.Split(r.FittedFor, ", "), name) {
				out = append(out, i)
			}
		}
		return out
	}
	const perStore, capName = "hostmem.foreign_store_collision", "hostmem.foreign_collision_cap"
	v0, _ := run("barrier_groups_apart.jsonl", map[string]float64{perStore: 0, capName: 100000})
	v1, _ := run("barrier_groups_apart.jsonl", map[string]float64{perStore: 1000, capName: 100000})
	var xy, xx float64
	side := fitted(v0, perStore)
	require.Len(t, side, 100) // W = 4: 50 configurations, two passes
	for _, i := range side {
		x := (v1.Records[i].Predicted - v0.Records[i].Predicted) / 1000
		xy, xx = xy+x*(v0.Records[i].Measured-v0.Records[i].Predicted), xx+x*x
	}
	t.Logf("%s: %.2f ns", perStore, xy/xx)
	assert.InDelta(t, p.DefaultParams().Get(perStore), xy/xx, 0.05)

	c0, _ := run("barrier_chunks_2.jsonl", map[string]float64{capName: 0})
	c1, _ := run("barrier_chunks_2.jsonl", map[string]float64{capName: 100000})
	var excess []float64
	side = fitted(c0, capName)
	require.Len(t, side, 180) // W = 8: 60 configurations, three passes
	for _, i := range side {
		if c1.Records[i].Predicted > c0.Records[i].Predicted {
			excess = append(excess, c0.Records[i].Measured-c0.Records[i].Predicted)
		}
	}
	require.Len(t, excess, 60, "the 20 configurations whose chunks collide, three passes")
	slices.Sort(excess)
	med := (excess[(len(excess)-1)/2] + excess[len(excess)/2]) / 2
	t.Logf("%s: %d records, %.1f ns", capName, len(excess), med)
	assert.InDelta(t, p.DefaultParams().Get(capName), med, 0.5)
}

// pcie.first_burst_held is the value that makes the median error of its
// fitted side 0 (store_burst.jsonl: one iteration of 4.3–8.7 MB from 66
// and 132 blocks, the launches the link holds back), recomputed here by
// bisection to within 2 kB.
func TestFirstBurstHeldFromItsFittedSide(t *testing.T) {
	const name, file = "pcie.first_burst_held", "../testdata/h200x1-arsim/store_burst.jsonl"
	p, err := topology.Lookup("h200x1")
	require.NoError(t, err)
	recs, bad, err := trace.ReadJSONLFile(file, trace.ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, bad)
	medianErr := func(v float64) float64 {
		ps := p.DefaultParams()
		require.NoError(t, ps.Set(name, math.Round(v), "bisection"))
		out, err := Run(recs, Options{File: file, Params: map[string]*topology.Params{"h200x1": ps}})
		require.NoError(t, err)
		var errs []float64
		for _, c := range out.Records {
			if slices.Contains(strings.Split(c.FittedFor, ", "), name) {
				errs = append(errs, c.ErrorPct)
			}
		}
		require.Len(t, errs, 3)
		slices.Sort(errs)
		return errs[1]
	}
	lo, hi := 1e6, 5e6 // more held, lower predictions
	require.Positive(t, medianErr(lo))
	require.Negative(t, medianErr(hi))
	for hi-lo > 1000 {
		if mid := (lo + hi) / 2; medianErr(mid) > 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	t.Logf("%s: %.0f B", name, (lo+hi)/2)
	assert.InDelta(t, p.DefaultParams().Get(name), (lo+hi)/2, 2000)
}

// hostmem.crowded_line_collision and hostmem.crowded_line_cap, recomputed
// from their fitted side (barrier_lines.jsonl, barrier_lines_2.jsonl:
// two-rank barriers of layout packed at 2–32 groups): each record's time
// beyond the model's with both at 0; the records where the model counts
// one other barrier on a crowded line (2 groups) give the first, as their
// median; the others (4–32 groups, where it counts three or more) the cap.
func TestCrowdedLineParametersFromTheirFittedSide(t *testing.T) {
	const per, capName = "hostmem.crowded_line_collision", "hostmem.crowded_line_cap"
	p, err := topology.Lookup("h200x1")
	require.NoError(t, err)
	var one, more []float64
	for _, file := range []string{"barrier_lines.jsonl", "barrier_lines_2.jsonl"} {
		path := "../testdata/h200x1-arsim/" + file
		recs, bad, err := trace.ReadJSONLFile(path, trace.ReadOptions{})
		require.NoError(t, err)
		require.Empty(t, bad)
		run := func(a, c float64) *Validation {
			ps := p.DefaultParams()
			require.NoError(t, ps.Set(per, a, "the fit"))
			require.NoError(t, ps.Set(capName, c, "the fit"))
			v, err := Run(recs, Options{File: path, Params: map[string]*topology.Params{"h200x1": ps}})
			require.NoError(t, err)
			return v
		}
		v0, v1 := run(0, 0), run(1000, 100000)
		for i, r := range v0.Records {
			if !slices.Contains(strings.Split(r.FittedFor, ", "), per) {
				continue
			}
			others := math.Round((v1.Records[i].Predicted - r.Predicted) / 1000)
			require.Positive(t, others, "line %d", r.Line)
			if others == 1 {
				one = append(one, r.Measured-r.Predicted)
			} else {
				more = append(more, r.Measured-r.Predicted)
			}
		}
	}
	require.Len(t, one, 2, "2 groups, one record a file")
	require.Len(t, more, 8, "4, 8, 16 and 32 groups")
	median := func(v []float64) float64 {
		slices.Sort(v)
		return (v[(len(v)-1)/2] + v[len(v)/2]) / 2
	}
	t.Logf("%s %.1f ns, %s %.1f ns", per, median(one), capName, median(more))
	assert.InDelta(t, p.DefaultParams().Get(per), median(one), 0.5)
	assert.InDelta(t, p.DefaultParams().Get(capName), median(more), 0.5)
}
