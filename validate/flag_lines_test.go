package validate

import (
	"compress/gzip"
	"encoding/json"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// pingpong_line.jsonl (reading S, written down before the run): ping-pong
// pairs through host flags 4 B apart take 22–36 µs one way from 8 pairs
// on, whatever the pairs (one line full at 16, two from 20), where the
// model's sector queue of pure polls gave 10–15 µs (−40 % or worse on every
// record). With a line's changing flags modelled (hostmem.changing_flag_wait,
// its cap fitted on this file's volatile pairs at 16–32 pairs) the
// release/acquire pairs and the volatile ones at 8–14 pairs, predicted, lie
// within −38…+29 %.
func TestPingPongLineQueueStopsGrowing(t *testing.T) {
	v, recs := runFile(t, "../testdata/h200x1-arsim/pingpong_line.jsonl")
	n := 0
	for _, r := range recs {
		if r.Kind != trace.KindBlockPingpong {
			continue
		}
		n++
		assert.GreaterOrEqual(t, r.OneWayNs, 22e3, "%s, %d pairs", r.Mode, r.Pairs)
		assert.LessOrEqual(t, r.OneWayNs, 37e3, "%s, %d pairs", r.Mode, r.Pairs)
	}
	assert.Equal(t, 16, n)
	m, predicted := 0, 0
	for _, c := range v.Records {
		if c.Kind != string(trace.KindBlockPingpong) {
			continue
		}
		m++
		if c.FittedFor == "" {
			predicted++
			assert.Greater(t, c.ErrorPct, -40.0, "line %d", c.Line)
			assert.Less(t, c.ErrorPct, 30.0, "line %d", c.Line)
		}
	}
	assert.Equal(t, 16, m)
	assert.Equal(t, 12, predicted)
}

// system/line_latency.json.gz: a local line's round trip from one SM
// comes in two halves of the L2 (the same lines slow from SMs 0, 33, 66
// and 131, fast from SM 99), but the far half adds only 12–19 ns, so the
// model's one local round trip stands: every line within ±15 % of the
// median from every SM.
func TestLocalLineLatencyHalves(t *testing.T) {
	var bySM []struct {
		SM     int       `json:"sm"`
		KHz    float64   `json:"clock_khz"`
		Cycles []float64 `json:"cycles_per_load"`
	}
	readGzJSON(t, "../testdata/h200x1-arsim/system/line_latency.json.gz", &bySM)
	require.Len(t, bySM, 5)
	slow := map[int][]bool{}
	for _, s := range bySM {
		require.Len(t, s.Cycles, 2048)
		m := median(s.Cycles)
		within, lo, hi := 0, []float64{}, []float64{}
		for _, c := range s.Cycles {
			if math.Abs(c/m-1) <= 0.15 {
				within++
			}
			if c > m {
				hi = append(hi, c)
			} else {
				lo = append(lo, c)
			}
			slow[s.SM] = append(slow[s.SM], c > m)
		}
		assert.Equal(t, 2048, within, "SM %d", s.SM)
		gapNs := (median(hi) - median(lo)) / (s.KHz / 1e6)
		assert.InDelta(t, 15.5, gapNs, 4.5, "SM %d: the far half's extra round trip", s.SM)
	}
	agree := func(a, b int) float64 {
		n := 0
		for i := range slow[a] {
			if slow[a][i] == slow[b][i] {
				n++
			}
		}
		return float64(n) / float64(len(slow[a]))
	}
	assert.Greater(t, agree(33, 131), 0.9)
	assert.Less(t, agree(33, 99), 0.25, "SM 99 is near the other half")
}

// system/line_place.json.gz: a local line's atomics come in two bands
// about 93 ns apart by the 4 KiB page it lies in (slow where address bits
// 12 and 13 differ), whichever SM issues them, while the L2's halves add
// 12–25 ns to a load: the per-block runs' local atomics, 173–200 ns on
// four instances and 293 on a fifth, are these bands (the records do not
// say where their word lay, so the model keeps one value).
func TestLocalAtomicsByPage(t *testing.T) {
	var d struct {
		KHz      float64   `json:"clock_khz"`
		Lines    []int     `json:"lines_bytes"`
		Load33   []float64 `json:"load_33"`
		Load99   []float64 `json:"load_99"`
		Atomic33 []float64 `json:"atomic_33"`
		Atomic99 []float64 `json:"atomic_99"`
	}
	readGzJSON(t, "../testdata/h200x1-arsim/system/line_place.json.gz", &d)
	require.Len(t, d.Lines, 256)
	ns := func(c float64) float64 { return c / (d.KHz / 1e6) }
	var fast, slow []float64
	for i, at := range d.Lines {
		for _, c := range []float64{d.Atomic33[i], d.Atomic99[i]} {
			if (at>>12^at>>13)&1 == 1 {
				slow = append(slow, ns(c))
			} else {
				fast = append(fast, ns(c))
			}
		}
	}
	assert.InDelta(t, 93, median(slow)-median(fast), 15, "slow pages against fast, ns")
	assert.Less(t, slices.Max(fast), slices.Min(slow), "the bands do not overlap")
	var near, far []float64
	for i := range d.Lines {
		a, b := d.Load33[i], d.Load99[i]
		if a < b-10 {
			near, far = append(near, ns(a)), append(far, ns(b))
		}
	}
	assert.InDelta(t, 18, median(far)-median(near), 8, "a load's far half, ns")
}

// system/atomic_pages.json.gz: a local atomic takes one of two times by
// its 4 KiB page (163 and 257 ns, half the pages each, nothing between:
// gpu.atomic_slow_page_extra is the gap);
// within a 2 MiB page the slow ones are exactly those whose address bits
// 12, 13, 15, 17 and 19 have odd parity, and each 2 MiB page follows that
// rule or its complement (a physical bit above 2 MiB takes part).
func TestLocalAtomicPagesHash(t *testing.T) {
	var d struct {
		KHz    float64   `json:"clock_khz"`
		Base   int       `json:"base_mod_2mib"`
		Page   int       `json:"page_bytes"`
		Cycles []float64 `json:"cycles_per_atomic"`
	}
	readGzJSON(t, "../testdata/h200x1-arsim/system/atomic_pages.json.gz", &d)
	require.Len(t, d.Cycles, 16384)
	require.Equal(t, 0, d.Base)
	var fast, slow []float64
	same, flipped := 0, 0
	for chunk := range 32 {
		agree := 0
		for p := range 512 {
			i := chunk*512 + p
			ns := d.Cycles[i] / (d.KHz / 1e6)
			isSlow := ns > 210
			if isSlow {
				slow = append(slow, ns)
			} else {
				fast = append(fast, ns)
			}
			a := i * d.Page
			if ((a>>12^a>>13^a>>15^a>>17^a>>19)&1 == 1) == isSlow {
				agree++
			}
		}
		switch agree {
		case 512:
			same++
		case 0:
			flipped++
		}
	}
	assert.Equal(t, 32, same+flipped, "every 2 MiB page follows the rule or its complement")
	assert.Positive(t, same)
	assert.Positive(t, flipped)
	assert.Len(t, slow, 8192)
	assert.InDelta(t, 94, median(slow)-median(fast), 10)
	p, err := topology.Lookup("h200x1")
	require.NoError(t, err)
	ps := p.DefaultParams()
	assert.InDelta(t, median(slow)-median(fast), ps.Get("gpu.atomic_slow_page_extra"), 0.01, "the parameter is this file's gap")
	par, _ := ps.Lookup("gpu.atomic_slow_page_extra")
	assert.Contains(t, par.Source, "testdata/h200x1-arsim/system/atomic_pages.json.gz")
	assert.Less(t, slices.Max(fast), 190.0)
	assert.Greater(t, slices.Min(slow), 215.0)
}

// system/pp_pages.json.gz: plain flags do not pay for the page that makes
// atomics slow: a ping-pong's cases (fast or slow pages for the two flags)
// lie within 10 ns one way at their medians, where an atomic pays 94 ns.
func TestFlagsIgnoreAtomicPages(t *testing.T) {
	var d struct {
		KHz    float64   `json:"clock_khz"`
		Atomic []float64 `json:"atomic_cycles"`
		Slow   []int     `json:"slow_pages"`
		PP     []struct {
			Case   string  `json:"case"`
			Cycles float64 `json:"one_way_cycles"`
			Spin   bool    `json:"spin_timeout"`
		} `json:"pingpong"`
	}
	readGzJSON(t, "../testdata/h200x1-arsim/system/pp_pages.json.gz", &d)
	assert.Equal(t, []int{1, 2, 5, 6}, d.Slow, "the pages the parity rule calls slow")
	byCase := map[string][]float64{}
	for _, p := range d.PP {
		require.False(t, p.Spin)
		byCase[p.Case] = append(byCase[p.Case], p.Cycles/(d.KHz/1e6))
	}
	require.Len(t, byCase, 4)
	var meds []float64
	for _, v := range byCase {
		require.Len(t, v, 4)
		meds = append(meds, median(v))
	}
	assert.Less(t, slices.Max(meds)-slices.Min(meds), 15.0, "ns between the cases' medians")
}

// readGzJSON decodes the gzipped JSON file path into v.
func readGzJSON(t *testing.T, path string, v any) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	z, err := gzip.NewReader(f)
	require.NoError(t, err)
	require.NoError(t, json.NewDecoder(z).Decode(v))
}

// poll_pages.jsonl, the predicted side of gpu.atomic_slow_page_extra:
// atomics on a page measured slow take 110–123 ns more than on a fast one
// at 1–16 blocks, the gap closing as blocks crowd one word (2 ns at 132);
// with the term the slow page's records are within −2…+6 % up to 66
// blocks, without it −31…−33 %.
func TestAtomicsOnSlowPages(t *testing.T) {
	v, recs := runFile(t, "../testdata/h200x1-arsim/poll_pages.jsonl")
	type key struct {
		req             string
		spacing, blocks int
	}
	byPage := map[string]map[key]float64{"fast": {}, "slow": {}}
	for _, r := range recs {
		if r.Kind == trace.KindPoll && r.AtomicPage != "" {
			byPage[r.AtomicPage][key{r.Request, r.SpacingBytes, r.Blocks}] = r.NsPerOp
		}
	}
	require.Len(t, byPage["slow"], 40)
	for k, slow := range byPage["slow"] {
		gap := slow - byPage["fast"][k]
		if k.blocks <= 16 {
			assert.InDelta(t, 117, gap, 8, "%+v", k)
		}
		if k.blocks == 132 {
			assert.Less(t, gap, 20.0, "%+v", k)
		}
	}
	n := 0
	for i, c := range v.Records {
		r := recs[c.Line-1]
		if r.Kind != trace.KindPoll || r.AtomicPage != "slow" || r.Blocks > 66 {
			continue
		}
		n++
		assert.InDelta(t, 2, c.ErrorPct, 5, "record %d (%+v)", i, r)
	}
	assert.Equal(t, 38, n)
}
