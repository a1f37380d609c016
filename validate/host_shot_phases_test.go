package validate

import (
	"cmp"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostShotPhases is one configuration of testdata/h200x1-arsim/system/
// host_shot_phases.json.gz (tools/capture's pb_host_shot_ts): per block
// its start, then per iteration the ends of staging, the first barrier,
// the pull and the second barrier, ns from the launch's first block start.
type hostShotPhases struct {
	Phases        int       `json:"phases"`
	Bytes         int64     `json:"bytes"`
	BlocksPerRank int       `json:"blocks_per_rank"`
	Iters         int       `json:"iters"`
	SpinTimeout   bool      `json:"spin_timeout"`
	TS            [][]int64 `json:"ts_ns"`
}

func readHostShotPhases(t *testing.T) []hostShotPhases {
	var out []hostShotPhases
	readGzJSON(t, "../testdata/h200x1-arsim/system/host_shot_phases.json.gz", &out)
	return out
}

// What hw's hostShotDrift rests on, held against the capture: a one-shot
// through host memory whose blocks loop over its parts (1 MiB, 36 and 66
// blocks a rank) ends its first staging with every block within a
// microsecond, but its blocks' pulls end tens of µs apart, and from the
// second iteration on the blocks' staging ends lie more than an iteration
// apart, with or without the barriers (which meet only block b of each
// rank).
func TestHostShotBlocksDriftApart(t *testing.T) {
	cfgs := readHostShotPhases(t)
	require.Len(t, cfgs, 16)
	seen := 0
	for _, c := range cfgs {
		require.False(t, c.SpinTimeout)
		require.Len(t, c.TS, 2*c.BlocksPerRank)
		if c.Bytes != 1<<20 || c.BlocksPerRank < 36 {
			continue
		}
		seen++
		end := func(k, i, p int) int64 { return c.TS[k][1+4*i+p] }
		var last int64
		for k := range c.TS {
			require.Len(t, c.TS[k], 1+4*c.Iters)
			last = max(last, c.TS[k][4*c.Iters])
		}
		iter := float64(last) / float64(c.Iters)
		var st, pl []int64
		for k := range c.TS {
			st, pl = append(st, end(k, 0, 0)), append(pl, end(k, 0, 2))
		}
		assert.Less(t, slices.Max(st)-slices.Min(st), int64(2000), "phases %d, %d blocks: first staging in step", c.Phases, c.BlocksPerRank)
		assert.Greater(t, slices.Max(pl)-slices.Min(pl), int64(20000), "phases %d, %d blocks: first pulls end apart", c.Phases, c.BlocksPerRank)
		var spreads []float64
		for i := 1; i < c.Iters; i++ {
			var ends []int64
			for k := range c.TS {
				ends = append(ends, end(k, i, 0))
			}
			spreads = append(spreads, float64(slices.Max(ends)-slices.Min(ends))/iter)
		}
		slices.Sort(spreads)
		assert.Greater(t, spreads[len(spreads)/2], 1.0, "phases %d, %d blocks: staging ends an iteration apart", c.Phases, c.BlocksPerRank)
	}
	assert.Equal(t, 4, seen)
}

// host_shot_sizes.jsonl: a block pair's two barriers hide by degrees
// behind the other pairs' data. What they add to the part alone (staging,
// phases 3 − 1; the pull, 6 − 4), as a share of the barriers alone
// (phases 2), falls with the pairs and the size: at most half at 2–4 MiB
// from 16 blocks a rank, at least four fifths at 128 KiB to staging from
// 2 to 66 blocks a rank and at 2–4 blocks a rank to the pull at every
// size but one. The twin adds the barriers whole (reading A): +2…+14 %
// at 2–4 MiB, +13…+37 % at 512 KiB from 8 blocks a rank, which these
// bounds hold until a model follows the pairs' drift.
func TestHostShotBarriersHideByDegrees(t *testing.T) {
	v, recs := runFile(t, "../testdata/h200x1-arsim/host_shot_sizes.jsonl")
	type key struct {
		phases int
		bytes  int64
		bpr    int
	}
	at := map[key]float64{}
	barriers := map[int]float64{}
	for _, r := range recs {
		if r.Loop != "host_shot" {
			continue
		}
		if r.Phases == 2 {
			barriers[r.BlocksPerRank] = r.NsPerIterSlowestBlock
			continue
		}
		at[key{r.Phases, r.Bytes, r.BlocksPerRank}] = r.NsPerIterSlowestBlock
	}
	require.Len(t, at, 120)
	require.Len(t, barriers, 6)
	share := func(with, alone int, bytes int64, bpr int) float64 {
		return (at[key{with, bytes, bpr}] - at[key{alone, bytes, bpr}]) / barriers[bpr]
	}
	for _, pair := range [][2]int{{3, 1}, {6, 4}} {
		for _, bytes := range []int64{2 << 20, 4 << 20} {
			for _, bpr := range []int{16, 36, 66} {
				assert.LessOrEqual(t, share(pair[0], pair[1], bytes, bpr), 0.5, "phases %d at %d B, %d blocks a rank", pair[0], bytes, bpr)
			}
		}
	}
	for _, bpr := range []int{2, 4, 8, 16, 36, 66} {
		assert.GreaterOrEqual(t, share(3, 1, 128<<10, bpr), 0.8, "staging at 128 KiB, %d blocks a rank", bpr)
	}
	low := 0
	for _, bytes := range []int64{128 << 10, 256 << 10, 512 << 10, 2 << 20, 4 << 20} {
		for _, bpr := range []int{2, 4} {
			if share(6, 4, bytes, bpr) < 0.8 {
				low++
			}
		}
	}
	assert.LessOrEqual(t, low, 1, "the pull at 2 and 4 blocks a rank")
	n := 0
	for _, c := range v.Records {
		if c.Group != "loop host_shot" {
			continue
		}
		n++
		assert.InDelta(t, 0, c.ErrorPct, 40, "line %d", c.Line)
	}
	assert.Equal(t, 126, n)
}

// system/host_shot_phases_2.json.gz: where the barriers hide partly
// (256 KiB–2 MiB, 4–66 blocks a rank), the share of their own time they
// add to staging or the pull falls as the block pairs' data ends spread
// over more of it (Spearman −0.77 over the 30 configurations), by degrees:
// no threshold of spread tells hidden from exposed.
func TestHostShotBarrierShareFallsWithDrift(t *testing.T) {
	var confs []hostShotPhases
	readGzJSON(t, "../testdata/h200x1-arsim/system/host_shot_phases_2.json.gz", &confs)
	require.Len(t, confs, 75)
	type key struct {
		phases int
		bytes  int64
		bpr    int
	}
	iter := map[key]float64{}
	byKey := map[key]hostShotPhases{}
	for _, c := range confs {
		require.False(t, c.SpinTimeout)
		last := int64(0)
		for _, b := range c.TS {
			last = max(last, b[len(b)-1])
		}
		k := key{c.Phases, c.Bytes, c.BlocksPerRank}
		iter[k], byKey[k] = float64(last)/float64(c.Iters), c
	}
	var spread, share []float64
	for _, bpr := range []int{4, 8, 16, 36, 66} {
		for _, bytes := range []int64{256 << 10, 512 << 10, 2 << 20} {
			barriers := iter[key{2, bytes, bpr}]
			for _, p := range []struct{ with, alone, end int }{{3, 1, 0}, {6, 4, 2}} {
				c := byKey[key{p.with, bytes, bpr}]
				var apart []float64
				for i := 1; i < c.Iters; i++ {
					lo, hi := int64(math.MaxInt64), int64(0)
					for q := range bpr {
						e := max(c.TS[q][1+4*i+p.end], c.TS[bpr+q][1+4*i+p.end])
						lo, hi = min(lo, e), max(hi, e)
					}
					apart = append(apart, float64(hi-lo))
				}
				spread = append(spread, median(apart)/barriers)
				share = append(share, (iter[key{p.with, bytes, bpr}]-iter[key{p.alone, bytes, bpr}])/barriers)
			}
		}
	}
	rank := func(v []float64) []float64 {
		idx := make([]int, len(v))
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(v[a], v[b]) })
		r := make([]float64, len(v))
		for k, i := range idx {
			r[i] = float64(k)
		}
		return r
	}
	rs, rh := rank(spread), rank(share)
	n := float64(len(rs))
	var d2 float64
	for i := range rs {
		d2 += (rs[i] - rh[i]) * (rs[i] - rh[i])
	}
	rho := 1 - 6*d2/(n*(n*n-1))
	assert.Less(t, rho, -0.6, "the share falls as the spread grows")
	over, mostly := 0, 0
	for i := range spread {
		if spread[i] > 1 {
			over++
			if share[i] >= 0.5 {
				mostly++
			}
		}
	}
	assert.Equal(t, 27, over)
	assert.Greater(t, mostly, 5, "spread beyond the barriers' time, and still half of them added")
}

// host_shot's staging and pull left free (phases 5), on four H100
// instances (host_shot_free*.jsonl, host_shot_apart.jsonl): up to 42 KiB
// the two delay each other (left free takes more than the two alone one
// after the other), and a pull that reads lines nothing stages
// (pull_src apart) is delayed as much: the traffic's delay, not the
// lines'. The twin's drift with one block's chain on top (hw's
// hostShotDrift, chosen after these files; nothing fitted) holds left
// free within 20 % from 42 KiB to 512 KiB; at 14 KiB, where the parts
// are bound by their blocks' own chains and the twin adds to them the
// staging fence's wait for the other blocks' loads, within 25 %. Both
// were predicted before the runs of host_shot_free_threads*.jsonl and
// host_shot_small.jsonl (other threads and sizes), held in
// TestHostShotLeftFreeHeldOut.
func TestHostShotLeftFreeDelaysByItsTraffic(t *testing.T) {
	type key struct {
		bytes         int64
		phases, block int
		apart         bool
	}
	var checked, small int
	for _, f := range []string{"host_shot_free", "host_shot_free_2", "host_shot_free_3", "host_shot_apart"} {
		v, recs := runFile(t, "../testdata/h100x1-arsim/"+f+".jsonl")
		byLine := recordsByLine(recs)
		slowest := map[key]float64{}
		errPct := map[key]float64{}
		for _, c := range v.Records {
			r := byLine[c.Line]
			if r.Loop != "host_shot" || r.Bytes > 512<<10 {
				continue
			}
			k := key{r.Bytes, r.Phases, r.BlocksPerRank, r.PullSrc == "apart"}
			slowest[k], errPct[k] = c.Measured, c.ErrorPct
		}
		for k, free := range slowest {
			if k.phases != 5 {
				continue
			}
			parts := slowest[key{k.bytes, 1, k.block, false}] + slowest[key{k.bytes, 4, k.block, false}]
			require.Positive(t, parts, "%s: %+v has its parts alone", f, k)
			if k.bytes <= 42<<10 {
				assert.Greater(t, free/parts, 1.15, "%s %+v: left free delays", f, k)
				small++
			}
			if k.apart {
				staged := slowest[key{k.bytes, 5, k.block, false}]
				assert.InDelta(t, 1.08, free/staged, 0.1, "%s %+v: apart as staged", f, k)
				continue
			}
			if k.bytes < 42<<10 {
				assert.InDelta(t, 0, errPct[k], 25, "%s %+v: 14 KiB", f, k)
				continue
			}
			assert.InDelta(t, 0, errPct[k], 20, "%s %+v", f, k)
			checked++
		}
	}
	assert.Equal(t, 3*2*4+2*2*4, small, "configurations left free up to 42 KiB, staged and apart")
	assert.Equal(t, 3*5*4+4*4, checked, "staged configurations left free from 42 KiB to 512 KiB")
}

// The held-out side of the one-shot left free (the readings and the
// model's values written down before each run, tools/capture/README.md):
// at 256 and 1,024 threads, 28–384 KiB, on two instances
// (host_shot_free_threads*.jsonl: 38 and 39 of 40 within 20 %), and at
// 7–21 KiB, 128–1,024 threads, 1–8 blocks a rank, on two instances
// (host_shot_small*.jsonl: 36 of 36 each).
func TestHostShotLeftFreeHeldOut(t *testing.T) {
	for _, c := range []struct {
		file            string
		records, within int
	}{{"host_shot_free_threads", 40, 38}, {"host_shot_free_threads_2", 40, 39}, {"host_shot_small", 36, 36}, {"host_shot_small_2", 36, 36}} {
		v, recs := runFile(t, "../testdata/h100x1-arsim/"+c.file+".jsonl")
		byLine := recordsByLine(recs)
		n, within := 0, 0
		for _, r := range v.Records {
			if byLine[r.Line].Phases != 5 {
				continue
			}
			n++
			if math.Abs(r.ErrorPct) <= 20 {
				within++
			}
		}
		assert.Equal(t, c.records, n, c.file)
		assert.GreaterOrEqual(t, within, c.within, c.file)
	}
}
