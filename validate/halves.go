package validate

import (
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
// The map is those chips': it held on fourteen more GPUs (read_pairs_2.jsonl
// to _4 and read_groups_2.jsonl to _7 whole pair scans among them) and
// failed on two (read_octets.jsonl, read_groups.jsonl), so which SMs form a
// half varies by chip. What does not vary: each half is four of the H200's
// GPCs. The GPCs (tools/capture sm_groups: the SMs a thread-block
// cluster's blocks share, system/sm_groups*.json, eight chips, SM for SM
// alike) are eight groups of 8–18 SMs and SMs 124–131, in no cluster (and
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
// pinned to an SM (chase_sm) beside a writer kernel whose SMs were probed.
// The zero value (not known) for several readers, a reader beside a
// storing block on its SM, another GPU, or SMs not listed.
func storesHalf(r trace.Record) hw.StoreHalves {
	list := r.WriteSMs
	if list == "" || r.Blocks > 1 || r.ReaderSM == "with_storer" || (r.SMHalves == nil && !strings.HasPrefix(r.System, "h200")) {
		return hw.StoreHalves{}
	}
	halfOf := h200Half
	if r.SMHalves != nil {
		// the capture's own chip, read off its pair scan
		halfOf = func(sm int) int {
			if sm < 0 || sm >= len(r.SMHalves) {
				return -1
			}
			return int(r.SMHalves[sm])
		}
	}
	reader := r.ReadSM
	switch {
	case r.Placement == "by_sm":
	case r.Placement == "" && r.Kind == trace.KindPointerChase && r.ReadBlocks == 0:
		// chase_grid records its chase's SM whenever it probes the writers'
		reader = r.ChaseSM
	default:
		return hw.StoreHalves{}
	}
	own := halfOf(reader)
	if own < 0 {
		return hw.StoreHalves{}
	}
	same, other := 0, 0
	for _, f := range strings.Split(list, ",") {
		sm, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || halfOf(sm) < 0 {
			return hw.StoreHalves{}
		}
		if halfOf(sm) == own {
			same++
		} else {
			other++
		}
	}
	return hw.StoresInHalves(same, other)
}
