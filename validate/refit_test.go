package validate

import (
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

func refitOn(t *testing.T, preset, file string) ([]Refitted, *topology.Params) {
	t.Helper()
	recs, bad, err := trace.ReadJSONLFile("../testdata/"+file, trace.ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, bad)
	p, err := topology.Lookup(preset)
	require.NoError(t, err)
	ps := p.DefaultParams()
	out, err := RefitPerBlock(recs, readPerBlock(t), p, ps, "testdata/"+file)
	require.NoError(t, err)
	return out, ps
}

// h100Captures are the H100's runs of the perblock part's fitted kernels,
// each on its own instance (perblock_refit.jsonl run for the refit, its
// readings written down before it: tools/capture/README.md; perblock_5.jsonl
// the suite with the polls' atomic_page).
var h100Captures = []string{"h100x1-arsim/perblock.jsonl", "h100x1-arsim/perblock_2.jsonl", "h100x1-arsim/perblock_3.jsonl",
	"h100x1-arsim/perblock_4.jsonl", "h100x1-arsim/perblock_b.jsonl", "h100x1-arsim/perblock_refit.jsonl", "h100x1-arsim/perblock_5.jsonl"}

// The H100 refitted by the H200's rules. The GPU's own costs (gpu.*,
// nccl.*) are recomputed from the H100's captures of the perblock part,
// each alone and as the median over them; the host's (hostmem.*,
// pcie.*) stay the table's, as the H100 sits in the same kind of host and
// later fits (the barriers') were made on top of them. Every other H100
// file is predicted with each and with the H200's table as it is.
func TestRefitH100(t *testing.T) {
	p, err := topology.Lookup("h100x1")
	require.NoError(t, err)
	files, err := filepath.Glob("../testdata/h100x1-arsim/*.jsonl")
	require.NoError(t, err)
	var others [][]trace.Record
	var names []string
	for _, file := range files {
		if slices.Contains(h100Captures, "h100x1-arsim/"+filepath.Base(file)) {
			continue
		}
		recs, _, err := trace.ReadJSONLFile(file, trace.ReadOptions{SkipBad: true})
		require.NoError(t, err)
		others, names = append(others, recs), append(names, file)
	}
	predict := func(ps *topology.Params) (ErrorStats, int) {
		var abs []float64
		for i, recs := range others {
			v, err := Run(recs, Options{File: names[i], Params: map[string]*topology.Params{"h100x1": ps}})
			require.NoError(t, err, names[i])
			for _, c := range v.Records {
				if len(c.Dimensions) > 0 {
					abs = append(abs, math.Abs(c.ErrorPct))
				}
			}
		}
		return statsOf(abs), beyond(abs, 20)
	}
	table, tableBeyond := predict(p.DefaultParams())
	t.Logf("the other %d H100 records, the H200's table: median %.2f%%, p95 %.2f%%, %d beyond 20%%", table.Count, table.MedianAbsPct, table.P95AbsPct, tableBeyond)
	require.Greater(t, table.Count, 15000)

	ref, err := RefitReference()
	require.NoError(t, err)
	var caps []Capture
	for _, f := range h100Captures {
		out, _ := refitOn(t, "h100x1", f)
		alone := p.DefaultParams()
		for _, r := range out {
			if !r.Kept && RefitChip(r.Name) {
				require.NoError(t, alone.Set(r.Name, r.New, "refitted on "+f))
			}
		}
		s, b := predict(alone)
		t.Logf("refitted on %s alone: median %.2f%%, p95 %.2f%%, %d beyond", f, s.MedianAbsPct, s.P95AbsPct, b)
		// each lowers the tail; the count beyond 20 % falls for four of the
		// seven and rises by under 3 % for the other three (instance 45's
		// two files, perblock_22 and _23, and instance 46's, perblock_24
		// to _26 and its suite, miss more with a refit than with the
		// table: perblock_refit's alone 4,561 against 4,459)
		assert.Less(t, s.P95AbsPct, table.P95AbsPct, f)
		assert.Less(t, float64(b), 1.03*float64(tableBeyond), f)
		recs, _, err := trace.ReadJSONLFile("../testdata/"+f, trace.ReadOptions{})
		require.NoError(t, err)
		caps = append(caps, Capture{Recs: recs, File: f})
	}
	med := p.DefaultParams()
	out, err := RefitPerBlockMedian(caps, ref, p, med)
	require.NoError(t, err)
	refit := p.DefaultParams()
	for _, r := range out {
		if !r.Kept && RefitChip(r.Name) {
			t.Logf("%-28s H200 %9.4g  H100 median %9.4g  (%d captures)", r.Name, r.Old, r.New, r.Captures)
			require.NoError(t, refit.Set(r.Name, r.New, "median of the H100's perblock captures"))
		}
	}
	assert.Greater(t, refit.Get("gpu.fence_sys_local")/p.DefaultParams().Get("gpu.fence_sys_local"), 1.2, "the H100's own fence is slower than the H200's")
	s, b := predict(refit)
	t.Logf("refitted on the median of them: median %.2f%%, p95 %.2f%%, %d beyond", s.MedianAbsPct, s.P95AbsPct, b)
	assert.Less(t, b, tableBeyond)
	assert.LessOrEqual(t, s.P95AbsPct, table.P95AbsPct)
	assert.LessOrEqual(t, s.MedianAbsPct, table.MedianAbsPct)
}

var updateRefit = flag.Bool("update-refit", false, "rewrite validate/refit_reference.jsonl from testdata/h200x1-arsim/perblock.jsonl")

// The embedded reference is the capture's records that the rules read,
// line for line.
func TestRefitReferenceIsCurrent(t *testing.T) {
	raw, err := os.ReadFile(perBlockFile)
	require.NoError(t, err)
	var want strings.Builder
	for i, line := range strings.Split(strings.TrimRight(string(raw), "\n"), "\n") {
		recs, bad, err := trace.ReadJSONL(strings.NewReader(line), perBlockFile, trace.ReadOptions{})
		require.NoError(t, err, "line %d", i+1)
		require.Empty(t, bad, "line %d", i+1)
		if len(refitSides(recs)) == 1 {
			want.WriteString(line + "\n")
		}
	}
	if *updateRefit {
		require.NoError(t, os.WriteFile("refit_reference.jsonl", []byte(want.String()), 0o644))
	}
	got, err := os.ReadFile("refit_reference.jsonl")
	require.NoError(t, err)
	assert.Equal(t, want.String(), string(got), "run go test ./validate -run RefitReference -update-refit")
	ref, err := RefitReference()
	require.NoError(t, err)
	all := readPerBlock(t)
	a, err := RefitPerBlock(all, all, mustPreset(t, "h200x1"), mustPreset(t, "h200x1").DefaultParams(), "a")
	require.NoError(t, err)
	b, err := RefitPerBlock(ref, ref, mustPreset(t, "h200x1"), mustPreset(t, "h200x1").DefaultParams(), "a")
	require.NoError(t, err)
	assert.Equal(t, a, b, "the reference alone gives what the whole capture gives")
}

func mustPreset(t *testing.T, name string) *topology.Preset {
	t.Helper()
	p, err := topology.Lookup(name)
	require.NoError(t, err)
	return p
}

// Refitted on a capture, predicting the same capture's other records
// (the same instance): every record whose configuration the reference
// has is left out, the fitted and the micro ones (docs/VALIDATION.md, "A
// chip nobody fitted").
func TestRefitH100SameCapture(t *testing.T) {
	sa, sb, nt, nr := refitSameCapture(t, "h100x1", h100Captures)
	// As they are: the median and the misses improve, the p95 does not
	// (the local atomics of perblock_b's slow page go from −31 to −36 %).
	assert.Less(t, sb.MedianAbsPct, sa.MedianAbsPct)
	assert.Less(t, nr, nt)
	assert.LessOrEqual(t, sb.P95AbsPct, 33.0)
}

// The same on the H200's other instances, their whole runs of the suite:
// the median improves, the p95 and the misses do not (as they are: 249 →
// 283 beyond 20 % over five runs; the fifth instance's, perblock_5.jsonl,
// had its local atomics' word on a slow page, which the record does not
// say: 50 of its 64 at −28 %).
func TestRefitH200SameCapture(t *testing.T) {
	sa, sb, nt, nr := refitSameCapture(t, "h200x1", []string{"h200x1-arsim/perblock_3.jsonl", "h200x1-arsim/perblock_3b.jsonl", "h200x1-arsim/perblock_4.jsonl", "h200x1-arsim/perblock_5.jsonl", "h200x1-arsim/perblock_6.jsonl"})
	assert.Less(t, sb.MedianAbsPct, sa.MedianAbsPct)
	assert.LessOrEqual(t, sb.P95AbsPct, 25.5)
	assert.LessOrEqual(t, nr, nt+35)
}

// refitSameCapture refits the GPU's costs on each capture and predicts
// its records whose configuration the rules do not read, with the table
// and with the refit; it returns both sides' statistics and misses.
func refitSameCapture(t *testing.T, preset string, captures []string) (table, refitted ErrorStats, tableBeyond, refitBeyond int) {
	p := mustPreset(t, preset)
	ref, err := RefitReference()
	require.NoError(t, err)
	inRef := map[string]bool{}
	for _, r := range ref {
		inRef[configurationAside(r)] = true
	}
	var ta, rb []float64
	for _, f := range captures {
		recs, bad, err := trace.ReadJSONLFile("../testdata/"+f, trace.ReadOptions{})
		require.NoError(t, err)
		require.Empty(t, bad)
		ps := p.DefaultParams()
		out, err := RefitPerBlock(recs, ref, p, ps.Clone(), f)
		require.NoError(t, err)
		for _, r := range out {
			if !r.Kept && RefitChip(r.Name) {
				require.NoError(t, ps.Set(r.Name, r.New, "refitted on "+f))
			}
		}
		var a, b []float64
		for i, params := range []*topology.Params{p.DefaultParams(), ps} {
			v, err := Run(recs, Options{File: "../testdata/" + f, Params: map[string]*topology.Params{preset: params}})
			require.NoError(t, err)
			for _, c := range v.Records {
				if len(c.Dimensions) == 0 || inRef[configurationAside(recs[c.Line-1])] {
					continue
				}
				if i == 0 {
					a = append(a, math.Abs(c.ErrorPct))
				} else {
					b = append(b, math.Abs(c.ErrorPct))
				}
			}
		}
		sa, sb := statsOf(a), statsOf(b)
		t.Logf("%s, its other %d records: the table median %.2f%%, p95 %.2f%%, %d beyond; refitted on itself %.2f%%, %.2f%%, %d beyond",
			f, sa.Count, sa.MedianAbsPct, sa.P95AbsPct, beyond(a, 20), sb.MedianAbsPct, sb.P95AbsPct, beyond(b, 20))
		ta, rb = append(ta, a...), append(rb, b...)
	}
	table, refitted = statsOf(ta), statsOf(rb)
	t.Logf("all %d captures, %d records: the table %.2f%%, %.2f%%, %d beyond; refitted %.2f%%, %.2f%%, %d beyond",
		len(captures), table.Count, table.MedianAbsPct, table.P95AbsPct, beyond(ta, 20), refitted.MedianAbsPct, refitted.P95AbsPct, beyond(rb, 20))
	require.Greater(t, table.Count, 1000)
	return table, refitted, beyond(ta, 20), beyond(rb, 20)
}
