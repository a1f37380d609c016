package validate

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/trace"
)

// h200HalfRuns are the runs of SM numbers, first and last, that make up
// one half of an H200's 132 SMs (the half holding SM 0; the other 66 are
// the other half), read off tools/capture's pair scans
// (testdata/h200x1-arsim/read_pairs.jsonl: a chase from SM 131 beside
// SMs 0 and s storing, every s; read_halves.jsonl: the same from SM 0 and
// from SM 2, on another instance): a chase beside two storing SMs falls in
// one of two bands by whether they lie in one half, and SM pairs 2t, 2t + 1
// (one TPC) always fall together. SM 16 lay between the bands on one of
// the two instances; it is put with SM 17. SM 131, the reader of those
// scans, is placed by read_readers.jsonl (it waits as SMs 0 and 130 do).
// The map is those chips': of 17 chips whose split a capture read off, 11
// split as the map and 6 otherwise (read_groups.jsonl, read_groups_8.jsonl,
// read_span_4.jsonl, read_pairs_5.jsonl, read_halves_3.jsonl,
// read_halves_4.jsonl; read_octets.jsonl's chip too), so which SMs form a
// half varies by chip. What does not vary: each half is four of the H200's
// GPCs. The GPCs (tools/capture sm_groups: the SMs a thread-block
// cluster's blocks share, system/sm_groups*.json, SM for SM alike on every
// chip probed) are eight groups of 8–18 SMs and SMs 124–131, in no cluster (and
// likely of group 0's GPC: read_groups_3.jsonl); these
// runs are the groups of SMs 0, 8, 10 and 12 and SMs 124–131
// (TestH200HalvesAreGPCs), and read_groups.jsonl's chip pairs the groups of
// SMs 0, 2, 10 and 14 and SMs 124–131 instead. A capture whose chip splits
// otherwise says so in a halves file beside it (trace.Record.SMHalves).
var h200HalfRuns = [][2]int{{0, 1}, {8, 13}, {16, 17}, {24, 29}, {32, 33}, {40, 45}, {48, 49}, {56, 61},
	{70, 75}, {84, 89}, {98, 103}, {112, 117}, {120, 121}, {124, 131}}

// h200SMs is an H200's SM count, which the halves above partition.
const h200SMs = 132

// h200Half is 0 for an SM in SM 0's half (h200HalfRuns), 1 for one in
// the other, −1 for an SM number an H200 does not have.
func h200Half(sm int) int {
	if sm < 0 || sm >= h200SMs {
		return -1
	}
	for _, run := range h200HalfRuns {
		if sm >= run[0] && sm <= run[1] {
			return 0
		}
	}
	return 1
}

// storesHalf is where a record's storing SMs (write_sms) lie relative to
// its one loading SM, on an H200: tools/capture's read_placement (one
// launch, one block an SM; the loading SM read_sm), or chase_grid's chase
// pinned to an SM (chase_sm) beside a writer kernel whose SMs were probed,
// or a chase_grid or chase_beside_write chase that recorded none of its
// kernels' SMs, placed where they land (landedChase). The zero value (not
// known) for several readers, a reader beside a storing block on its SM,
// another GPU, or SMs not listed.
func storesHalf(r trace.Record) hw.StoreHalves {
	list, landed := r.WriteSMs, false
	if l, sm, ok := landedChase(r); ok {
		// a chase_grid capture that recorded no SMs: where its kernels land
		list, landed = l, true
		r.ChaseSM = sm
	}
	if list == "" || r.Blocks > 1 || r.ReaderSM == "with_storer" || (r.SMHalves == nil && !strings.HasPrefix(r.System, "h200")) {
		return hw.StoreHalves{}
	}
	halfOf := chipHalves(r)
	reader := r.ReadSM
	switch {
	case r.Placement == "by_sm":
	case r.Placement == "" && r.Kind == trace.KindPointerChase && (r.ReadBlocks == 0 || landed):
		// chase_grid records its chase's SM whenever it probes the writers'
		reader = r.ChaseSM
	default:
		return hw.StoreHalves{}
	}
	return storesHalfAt(r, list, reader, halfOf)
}

// storesHalfAt is storesHalf for storing SMs list (comma separated)
// beside a load from SM reader, halfOf placing SMs in their halves.
func storesHalfAt(r trace.Record, list string, reader int, halfOf func(int) int) hw.StoreHalves {
	own := halfOf(reader)
	if own < 0 {
		return hw.StoreHalves{}
	}
	same, other := 0, 0
	var sms []int
	ownTPCs := map[int]bool{} // an H200's TPC t is SMs 2t and 2t + 1
	for _, f := range strings.Split(list, ",") {
		sm, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || halfOf(sm) < 0 {
			return hw.StoreHalves{}
		}
		sms = append(sms, sm)
		if halfOf(sm) == own {
			same++
			ownTPCs[sm/2] = true
		} else {
			other++
		}
	}
	h := hw.StoresInHalves(same, other)
	h.OwnTPCs = len(ownTPCs)
	h.Wide = stridesTogether(r)
	if (h.AllOwn() || h.AllOther()) && h.Wide {
		h.StrideLevels, h.Uneven = strideRuleBeside(sms, reader)
		if h.StrideLevels {
			h.StrideTPCs = len(sms) / 2 // whole TPCs
		}
	}
	return h
}

// stridesTogether reports whether a record's storing blocks stride
// together over one buffer: read_placement's wide writers, or a writer
// kernel's grid-stride loop (sm_write16, chase_grid's writers unless they
// each rewrite their own MiB; writerSpan).
func stridesTogether(r trace.Record) bool {
	if r.Placement == "by_sm" {
		return r.WriteSpan == "wide"
	}
	return r.WriteSpan == "" && r.WritePauseNs == 0
}

// strideRuleBeside is the stride rule (unevenStride) for storing SMs sms
// beside a load from SM reader on an H200: whether it speaks, for whole
// TPCs of one GPC (sets of several GPCs measured were found both ways:
// read_groups_3.jsonl, read_readers.jsonl), not of the reader's own part
// of its GPC (there the sets measured fall either way,
// read_groups_3.jsonl and read_groups_7.jsonl; the part: SMs 124–131,
// which no cluster uses, or the rest, h200Cluster), and whether it calls
// them uneven. SMs 124–131 behind a load from SM 0 wait at the uneven
// level, as behind a load from the other GPCs (read_gpc.jsonl: 8.9 µs from
// SM 0 against 12.0–13.9 behind parts of them; chase_halves.jsonl,
// chase_forms.jsonl, chase_kernels.jsonl: 9.0–10.3 µs beside a writer
// kernel of 8 blocks, which lands there).
func strideRuleBeside(sms []int, reader int) (speaks, uneven bool) {
	rg, _, ok := h200TPCPlace(reader)
	if !ok {
		return false, false
	}
	gpc := -1
	for _, sm := range sms {
		g, _, ok := h200TPCPlace(sm)
		if !ok || (g == rg && h200Cluster(sm) == h200Cluster(reader)) || (gpc >= 0 && g != gpc) {
			return false, false
		}
		gpc = g
	}
	uneven, ok = unevenStride(sms)
	return ok, ok && uneven
}

// h200GPCs are an H200's GPCs by their SMs, as tools/capture's sm_groups
// finds them (the SMs a thread-block cluster's blocks share;
// testdata/h200x1-arsim/system/sm_groups*.json, the same on every chip probed),
// with SMs 124–131, which no cluster uses, put after group 0's SMs as one
// GPC of eight TPCs (read_groups_3.jsonl: group 0's four TPCs with them
// wait as four TPCs of one GPC do). A TPC is SMs 2t and 2t + 1; its place
// in its GPC is its rank there by its SMs (1 the least).
var h200GPCs = [][]int{
	{0, 1, 16, 17, 32, 33, 48, 49, 124, 125, 126, 127, 128, 129, 130, 131},
	{2, 3, 18, 19, 34, 35, 50, 51, 64, 65, 78, 79, 92, 93, 106, 107},
	{4, 5, 20, 21, 36, 37, 52, 53, 66, 67, 80, 81, 94, 95, 108, 109},
	{6, 7, 22, 23, 38, 39, 54, 55, 68, 69, 82, 83, 96, 97, 110, 111},
	{8, 9, 24, 25, 40, 41, 56, 57, 70, 71, 84, 85, 98, 99, 112, 113},
	{10, 11, 26, 27, 42, 43, 58, 59, 72, 73, 86, 87, 100, 101, 114, 115},
	{12, 13, 28, 29, 44, 45, 60, 61, 74, 75, 88, 89, 102, 103, 116, 117, 120, 121},
	{14, 15, 30, 31, 46, 47, 62, 63, 76, 77, 90, 91, 104, 105, 118, 119, 122, 123},
}

// h200Cluster is 1 for SMs 124–131, which no thread-block cluster uses
// (tools/capture sm_groups), and 0 for the rest: the parts of group 0's
// GPC that the stride rule tells apart.
func h200Cluster(sm int) int {
	if sm >= 124 && sm < h200SMs {
		return 1
	}
	return 0
}

// h200TPCPlace is SM sm's GPC (index into h200GPCs) and its TPC's place
// in it (1 the first); false for an SM no GPC lists.
func h200TPCPlace(sm int) (gpc, place int, ok bool) {
	for g, sms := range h200GPCs {
		for i, s := range sms {
			if s == sm {
				return g, i/2 + 1, true
			}
		}
	}
	return 0, 0, false
}

// unevenStride is the stride rule: whether SMs sms (whole TPCs, striding
// together over one buffer, in the stride's order by SM number) fall in
// round-robin share groups that do not interleave evenly. Each storing
// TPC's share of the stores' path is 1 over the storing GPCs, over the
// storing CPCs of its GPC (a TPC's CPC is its place less one, modulo 3),
// over the storing TPCs of its CPC; the TPCs of one share, at positions S
// of the m storing TPCs in order, interleave evenly when |S| divides m and
// S is closed under adding m/|S| modulo m. Found on an H200
// (testdata/h200x1-arsim/read_groups_7.jsonl: every set of three and of
// four of a GPC's first eight TPCs; behind the uneven sets a chase waits
// 0.6 of what it waits behind the even ones; the rule, one of 8,385 forms
// searched, puts the 70 sets of four as measured, and the 56 sets of three
// as measured without seeing them). ok is false where the rule does not
// speak: an SM no GPC lists, or a TPC with one SM storing.
func unevenStride(sms []int) (uneven, ok bool) {
	type tpc struct{ gpc, place int }
	var order []tpc // in the stride's order, by least SM
	seen := map[tpc]int{}
	for _, sm := range slices.Sorted(slices.Values(sms)) {
		g, p, found := h200TPCPlace(sm)
		if !found {
			return false, false
		}
		t := tpc{g, p}
		if seen[t] == 0 {
			order = append(order, t)
		}
		seen[t]++
	}
	cpcs := map[[2]int]int{} // storing TPCs by GPC and CPC
	for _, t := range order {
		if seen[t] != 2 {
			return false, false
		}
		cpcs[[2]int{t.gpc, (t.place - 1) % 3}]++
	}
	gpcs := map[int]int{} // storing CPCs by GPC
	for k := range cpcs {
		gpcs[k[0]]++
	}
	groups := map[int][]int{} // positions by the share's denominator
	for i, t := range order {
		d := len(gpcs) * gpcs[t.gpc] * cpcs[[2]int{t.gpc, (t.place - 1) % 3}]
		groups[d] = append(groups[d], i)
	}
	m := len(order)
	for _, pos := range groups {
		if m%len(pos) != 0 {
			return true, true
		}
		step := m / len(pos)
		for _, i := range pos {
			if !slices.Contains(pos, (i+step)%m) {
				return true, true
			}
		}
	}
	return false, true
}

// chipHalves places an H200's SMs in their halves (h200Half), or by the
// capture's own chip where its pair scan was read off (SMHalves).
func chipHalves(r trace.Record) func(int) int {
	if r.SMHalves == nil {
		return h200Half
	}
	return func(sm int) int {
		if sm < 0 || sm >= len(r.SMHalves) {
			return -1
		}
		return int(r.SMHalves[sm])
	}
}

// crossHalfShare is how much of a handoff across the chip's halves
// (chipHalves) a record's value carries (hw.PerBlock.CrossHalf), for a
// ping-pong or a barrier with its flags in GPU memory: 1 where its median
// block's flag passes between SMs in different halves, 0.5 where exactly
// half of its pairs or groups cross, 0 where fewer do or the SMs are not
// known. tools/capture takes the median over a launch's blocks, and pair k
// of a ping-pong is blocks k and k + pairs, group g of a barrier blocks
// gW…gW + W − 1. The SMs are the record's own (flag_sms: sm_a, sm_b;
// block_sms, where a launch of its shape lands), else, for a launch of at
// most eight blocks, where such a launch lands on an idle 132-SM chip
// (smallLaunchSMs).
func crossHalfShare(r trace.Record) float64 {
	if r.Target != "local" || (r.Kind != trace.KindBlockPingpong && r.Loop != "group_barrier") {
		return 0
	}
	var sms []int
	if raw, ok := r.Extra["block_sms"]; ok {
		if json.Unmarshal(raw, &sms) != nil {
			return 0
		}
	} else if r.Blocks >= 1 && r.Blocks < len(smallLaunchSMs) && (r.SMHalves == nil || len(r.SMHalves) == h200SMs) {
		sms = smallLaunchSMs[r.Blocks]
	}
	var sets [][]int // the SMs of each pair or group
	switch {
	case r.Kind == trace.KindBlockPingpong && r.Extra["sm_a"] != nil:
		sets = [][]int{{int(extraNumber(r, "sm_a")), int(extraNumber(r, "sm_b"))}}
	case r.Kind == trace.KindBlockPingpong && r.Pairs >= 1 && len(sms) >= 2*r.Pairs:
		for k := range r.Pairs {
			sets = append(sets, []int{sms[k], sms[k+r.Pairs]})
		}
	case r.Kind == trace.KindLoop && r.World >= 2 && len(sms) >= max(r.Groups, 1)*r.World:
		for g := range max(r.Groups, 1) {
			sets = append(sets, sms[g*r.World:(g+1)*r.World])
		}
	default:
		return 0
	}
	halfOf := chipHalves(r)
	crossing := 0
	for _, set := range sets {
		c, ok := spansHalves(set, halfOf)
		if !ok {
			return 0
		}
		if c {
			crossing++
		}
	}
	switch {
	case 2*crossing > len(sets):
		return 1
	case 2*crossing == len(sets):
		return 0.5
	}
	return 0
}

// NamesFlagSMs reports whether any of recs is a ping-pong or barrier in
// GPU memory whose blocks' SMs it records (sm_a and sm_b, or block_sms),
// so that the chip's halves decide its value (crossHalfShare).
func NamesFlagSMs(recs []trace.Record) bool {
	for _, r := range recs {
		if r.Target == "local" && (r.Kind == trace.KindBlockPingpong || r.Loop == "group_barrier") &&
			(r.Extra["sm_a"] != nil || r.Extra["block_sms"] != nil) {
			return true
		}
	}
	return false
}

// spansHalves reports whether SMs lie in both halves (halfOf); false for
// ok where one is not placed.
func spansHalves(sms []int, halfOf func(int) int) (spans, ok bool) {
	first := halfOf(sms[0])
	if first < 0 {
		return false, false
	}
	for _, sm := range sms[1:] {
		h := halfOf(sm)
		if h < 0 {
			return false, false
		}
		spans = spans || h != first
	}
	return spans, true
}

// smallLaunchSMs are the SMs, block by block, that a launch of 1–8 blocks
// lands on on an idle H100 or H200: SMs 124–131, which no thread-block
// cluster uses, one block a TPC up to four blocks, then the TPCs' second
// SMs (tools/capture pb_smid: testdata/h100x1-arsim/sm_halves*.jsonl and
// perblock_10.jsonl to _21, eight chips, 32-thread blocks, launches of 2,
// 3, 4, 6 and 8 blocks; testdata/h200x1-arsim/system/landing.json, one
// chip, 512-thread blocks, 1–8, the same; TestSmallLaunchLanding). From 9 blocks on a launch's later
// blocks land on other GPCs, in an order that differs launch to launch.
var smallLaunchSMs = [][]int{
	1: {124}, 2: {124, 126}, 3: {124, 126, 128}, 4: {124, 126, 128, 130}, 5: {124, 125, 126, 128, 130},
	6: {124, 125, 126, 127, 128, 130}, 7: {124, 125, 126, 127, 128, 129, 130},
	8: {124, 125, 126, 127, 128, 129, 130, 131},
}
