package validate

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/trace"
)

// A record carries the handoff across the chip's halves (h200HalfRuns:
// SMs 124–131 and 0 in one half, 2–7 in the other) where its median
// block's flags cross: flag_sms's two SMs; a ping-pong's pairs (blocks k
// and k + pairs) or a barrier's groups by block_sms, all when more than
// half cross, half when exactly half do; a launch of at most four blocks
// that names no SMs where such a launch lands (SMs 124, 126, 128, 130),
// of five to eight blocks on the TPCs' second SMs too (124–131).
// SMs not recorded, or host memory, carry none.
func TestCrossHalfShare(t *testing.T) {
	rec := func(kind trace.Kind, target string, pairs, world, groups int, extra map[string]any) trace.Record {
		r := trace.Record{Kind: kind, Target: target, Pairs: pairs, Loop: "group_barrier", World: world, Groups: groups,
			Blocks: max(2*pairs, world*max(groups, 1)), Extra: map[string]json.RawMessage{}}
		if kind == trace.KindBlockPingpong {
			r.Loop, r.World, r.Groups = "", 0, 0
		}
		for k, v := range extra {
			b, err := json.Marshal(v)
			assert.NoError(t, err)
			r.Extra[k] = b
		}
		return r
	}
	pp, gb := trace.KindBlockPingpong, trace.KindLoop
	assert.Equal(t, 0, h200Half(128))
	assert.Equal(t, 1, h200Half(2))
	sm := func(a, b int) map[string]any { return map[string]any{"sm_a": a, "sm_b": b} }
	at := func(sms ...int) map[string]any { return map[string]any{"block_sms": sms} }
	assert.Equal(t, 1.0, crossHalfShare(rec(pp, "local", 1, 0, 0, sm(128, 2))))
	assert.Equal(t, 0.0, crossHalfShare(rec(pp, "local", 1, 0, 0, sm(128, 0))))
	assert.Equal(t, 0.0, crossHalfShare(rec(pp, "host", 1, 0, 0, sm(128, 2))), "host flags")
	assert.Equal(t, 0.0, crossHalfShare(rec(pp, "local", 1, 0, 0, sm(128, 999))), "an SM the chip lacks")
	assert.Equal(t, 1.0, crossHalfShare(rec(pp, "local", 1, 0, 0, at(124, 4))))
	assert.Equal(t, 0.0, crossHalfShare(rec(pp, "local", 1, 0, 0, at(124, 126))))
	// pairs (124, 2) and (126, 128): one of two crosses
	assert.Equal(t, 0.5, crossHalfShare(rec(pp, "local", 2, 0, 0, at(124, 126, 2, 128))))
	// pairs (124, 2), (126, 3), (128, 130): two of three cross
	assert.Equal(t, 1.0, crossHalfShare(rec(pp, "local", 3, 0, 0, at(124, 126, 128, 2, 3, 130))))
	assert.Equal(t, 0.0, crossHalfShare(rec(pp, "local", 2, 0, 0, at(124, 126, 2))), "fewer SMs than blocks")
	assert.Equal(t, 1.0, crossHalfShare(rec(gb, "local", 0, 3, 1, at(124, 126, 5))))
	assert.Equal(t, 0.0, crossHalfShare(rec(gb, "local", 0, 3, 1, at(124, 126, 128))))
	assert.Equal(t, 0.0, crossHalfShare(rec(gb, "local", 0, 3, 1, at(124, 5))), "fewer SMs than ranks")
	// groups (124, 126), (2, 3), (128, 4), (130, 5): two of four span
	assert.Equal(t, 0.5, crossHalfShare(rec(gb, "local", 0, 2, 4, at(124, 126, 2, 3, 128, 4, 130, 5))))
	// no SMs recorded: a launch of at most four blocks lands on 124, 126, 128, 130, all in one half of this map
	assert.Equal(t, 0.0, crossHalfShare(rec(pp, "local", 1, 0, 0, nil)))
	split := rec(pp, "local", 1, 0, 0, nil)
	split.SMHalves = make([]int8, h200SMs)
	split.SMHalves[126] = 1 // a chip whose SM 126 lies in the other half
	assert.Equal(t, 1.0, crossHalfShare(split), "landed on 124 and 126, across")
	split.Blocks = 9
	assert.Equal(t, 0.0, crossHalfShare(split), "where nine blocks land is not taken")
	eight := rec(gb, "local", 0, 8, 1, nil) // lands on SMs 124–131: spans 126
	eight.SMHalves = split.SMHalves
	assert.Equal(t, 1.0, crossHalfShare(eight))
	two := rec(gb, "local", 0, 2, 4, nil) // groups (124, 125), (126, 127), (128, 129), (130, 131): none spans
	two.SMHalves = split.SMHalves
	assert.Equal(t, 0.0, crossHalfShare(two))
}

// perblock_10.jsonl's and perblock_11.jsonl's halves files (and _12's and
// _13's, _14's and _15's, _18's and _19's, sm_halves_5's and _6's: four
// other chips) are each read off the other process's flag scan
// (tools/capture/halves.py --flags): every SM's median handoff from block
// 0's SM, split at the largest gap that leaves a quarter of the SMs on
// each side, block 0's SM with the fast band. The two processes split
// alike, so each file's halves are also its own scan's. The first chip
// puts SMs 126 and 127 apart from 124 and 125, the third SMs 128 and 129;
// the second, fourth and fifth split as the map (the last two's files by
// GPC, which per SM gives the same).
func TestFlagScanHalvesFiles(t *testing.T) {
	split := func(recs []trace.Record) []int8 {
		times := map[int][]float64{}
		lead := -1
		for _, r := range recs {
			if r.Kind != trace.KindBlockPingpong || extraNumber(r, "launched_blocks") != h200SMs || extraNumber(r, "lead_block") != 0 || r.Extra["sm_a"] == nil {
				continue
			}
			lead = int(extraNumber(r, "sm_a"))
			b := int(extraNumber(r, "sm_b"))
			times[b] = append(times[b], r.OneWayNs)
		}
		require.Len(t, times, h200SMs-1, "every SM but block 0's a partner")
		type smT struct {
			sm int
			ns float64
		}
		var med []smT
		for sm, v := range times {
			slices.Sort(v)
			m := v[len(v)/2]
			if len(v)%2 == 0 {
				m = (v[len(v)/2-1] + v[len(v)/2]) / 2
			}
			med = append(med, smT{sm, m})
		}
		slices.SortFunc(med, func(a, b smT) int { return cmp.Compare(a.ns, b.ns) })
		least := h200SMs / 4 // at least a quarter of the SMs each side
		k := least - 1
		for i := least - 1; i < len(med)-least; i++ {
			if med[i+1].ns-med[i].ns > med[k+1].ns-med[k].ns {
				k = i
			}
		}
		assert.Greater(t, med[k+1].ns-med[k].ns, 40.0, "two bands")
		half := make([]int8, h200SMs)
		for _, m := range med[k+1:] {
			half[m.sm] = 1
		}
		half[lead] = 0
		if half[0] == 1 { // SM 0's half is half 0
			for i := range half {
				half[i] = 1 - half[i]
			}
		}
		return half
	}
	for _, pair := range [][2]string{{"perblock_10.jsonl", "perblock_11.jsonl"}, {"perblock_12.jsonl", "perblock_13.jsonl"}, {"perblock_14.jsonl", "perblock_15.jsonl"}, {"perblock_18.jsonl", "perblock_19.jsonl"}, {"sm_halves_5.jsonl", "sm_halves_6.jsonl"}, {"perblock_20.jsonl", "perblock_21.jsonl"}, {"perblock_22.jsonl", "perblock_23.jsonl"}, {"perblock_24.jsonl", "perblock_25.jsonl"}} {
		a := readCaptures(t, "h100x1-arsim", pair[0])
		b := readCaptures(t, "h100x1-arsim", pair[1])
		require.NotNil(t, a[0].SMHalves, pair[0])
		assert.Equal(t, split(b), a[0].SMHalves, "%s's halves from %s's scan", pair[0], pair[1])
		assert.Equal(t, split(a), b[0].SMHalves, "%s's halves from %s's scan", pair[1], pair[0])
		assert.Equal(t, a[0].SMHalves, b[0].SMHalves)
		assert.Equal(t, a[0].SMHalves[126], a[0].SMHalves[127], "one TPC")
		// instance 37 puts SMs 126 and 127 apart from 124, instance 39 SMs 128
		// and 129; instances 38, 41, 42, 43, 45 and 46 split as the map
		assert.Equal(t, pair[0] == "perblock_10.jsonl", a[0].SMHalves[124] != a[0].SMHalves[126], pair[0])
		assert.Equal(t, pair[0] == "perblock_14.jsonl", a[0].SMHalves[124] != a[0].SMHalves[128], pair[0])
		if pair[0] == "perblock_12.jsonl" || pair[0] == "perblock_18.jsonl" || pair[0] == "sm_halves_5.jsonl" || pair[0] == "perblock_20.jsonl" || pair[0] == "perblock_22.jsonl" || pair[0] == "perblock_24.jsonl" {
			for sm := range h200SMs {
				assert.Equal(t, h200Half(sm), int(a[0].SMHalves[sm]), "SM %d", sm)
			}
		}
	}
}

// On instance 40 (testdata/h100x1-arsim/perblock_16.jsonl, _17,
// sm_halves_3.jsonl, _4) each file's halves file is read off another
// process's flag scan by GPC (halves.py --flags with the chip's
// sm_groups.json: in the processes that ran the host loads' pair scan
// first, single SMs of the fast half took up to 309 ns and no gap between
// SMs was clear), and the host loads' pair scan of perblock_16.jsonl
// splits the SMs the same way, SM for SM: the flags' halves are the host
// loads' halves.
func TestFlagHalvesAreTheHostLoadsHalves(t *testing.T) {
	f, err := os.Open("../testdata/h100x1-arsim/system/instance_40/pair_scan.halves.json")
	require.NoError(t, err)
	defer f.Close()
	pair, err := trace.ReadSMHalves(f, "pair_scan.halves.json")
	require.NoError(t, err)
	for _, file := range []string{"perblock_16.jsonl", "perblock_17.jsonl", "sm_halves_3.jsonl", "sm_halves_4.jsonl"} {
		recs := readCaptures(t, "h100x1-arsim", file)
		assert.Equal(t, pair, recs[0].SMHalves, file)
	}
	for g, sms := range h200GPCs { // whole GPCs (SMs 124–131 by TPC)
		for _, sm := range sms {
			if sm < 124 {
				assert.Equal(t, pair[sms[0]], pair[sm], "GPC %d, SM %d", g, sm)
			} else {
				assert.Equal(t, pair[sm&^1], pair[sm], "TPC of SM %d", sm)
			}
		}
	}
}

// smallLaunchSMs is where launches of 1–8 blocks land: every launch of at
// most eight blocks whose SMs a capture recorded (block_sms in
// testdata/h100x1-arsim, six chips; the H200's landing.json, one chip,
// the launches made on the idle GPU) landed so.
func TestSmallLaunchLanding(t *testing.T) {
	files, err := filepath.Glob("../testdata/h100x1-arsim/*.jsonl")
	require.NoError(t, err)
	seen := map[int]int{}
	for _, f := range files {
		recs, _, err := trace.ReadJSONLFile(f, trace.ReadOptions{})
		require.NoError(t, err, f)
		for _, r := range recs {
			var sms []int
			if raw, ok := r.Extra["block_sms"]; ok && json.Unmarshal(raw, &sms) == nil && len(sms) < len(smallLaunchSMs) {
				assert.Equal(t, smallLaunchSMs[len(sms)], sms, "%s line %d", filepath.Base(f), r.Line)
				seen[len(sms)]++
			}
		}
	}
	assert.GreaterOrEqual(t, len(seen), 5, "launches of 2, 3, 4, 6 and 8 blocks recorded: %v", seen)
	data, err := os.ReadFile("../testdata/h200x1-arsim/system/landing.json")
	require.NoError(t, err)
	var landing struct {
		Runs map[string][]struct {
			Blocks []int `json:"blocks"`
		} `json:"runs"`
	}
	require.NoError(t, json.Unmarshal(data, &landing))
	for w := 1; w < len(smallLaunchSMs); w++ {
		runs := landing.Runs[fmt.Sprintf("%d:wide_first", w)]
		require.NotEmpty(t, runs, "W=%d", w)
		for _, run := range runs {
			assert.Equal(t, smallLaunchSMs[w], run.Blocks, "H200, %d blocks", w)
		}
	}
}
