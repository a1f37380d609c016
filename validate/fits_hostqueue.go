package validate

import (
	"slices"
	"strings"

	"github.com/arsim/arsim/trace"
)

// hostQueueFits are the fits of an H200's loads of host memory behind the
// stores queued towards the host (hw.Machine.HostLoadWait and its kin):
// the count's form, where the storing SMs lie (the halves, TPCs, the
// stride rule), and the loads beside other loads. Fits holds them in
// this place of its order.
var hostQueueFits = []Fit{
	// pcie.posted_wait_per_doubling, pcie.posted_wait_span_knee and
	// pcie.posted_wait_span_doublings: one block loading host memory
	// beside 2, 4, 32 and 131 SMs storing to it across three spans
	// (read_span.jsonl; both runs, each block against itself alone before
	// it). Beside 8 the first eight SMs wait less than beside the first four
	// at every span and on every instance, which a count of blocks does not
	// have: those stay on the predicted side with the other spans and
	// storing-SM counts, the chases, read_span_2.jsonl's fresh instance and
	// five spans, and every other file and launch.
	{Params: []string{"pcie.posted_wait_per_doubling", "pcie.posted_wait_span_knee", "pcie.posted_wait_span_doublings"}, Files: []string{"h200x1-arsim/read_span.jsonl"},
		Kinds: []trace.Kind{trace.KindHostLinkConcurrency, trace.KindPointerChase},
		Covers: func(r trace.Record) bool {
			return r.What == "sm_read_beside_write" || (r.Kind == trace.KindPointerChase && r.WriteBlocks > 0)
		},
		AlsoPredicts: slices.Concat([]string{"h200x1-arsim/read_depth_2.jsonl"}, readDepthOthers, readBesideWrite),
		On: func(r trace.Record) bool {
			if r.Kind != trace.KindHostLinkConcurrency || r.Placement != "by_sm" || r.LoadsInFlight != 1 {
				return false
			}
			span := r.WriteSpan == "own_mib" || (r.WriteSpan == "wide" && (r.WriteSpanBytes == 0 || r.WriteSpanBytes == 1<<20))
			return span && (r.WriteBlocks == 0 || r.WriteBlocks == 2 || r.WriteBlocks == 4 || r.WriteBlocks == 32 || r.WriteBlocks == 131)
		}, How: "least squares of the one-load block's round trip (8,192 B over its rate) against its round trip alone plus pcie.posted_wait_per_doubling × (1 + log2 n) × the span's share, the knee and doublings on a grid"},
	// pcie.posted_wait_own_sm: one block loading host memory beside a
	// storing block on its SM and one on an SM that stores nothing, beside
	// 2–131 storing SMs at two spans (read_cores_2.jsonl); the chases,
	// sixteen readers, another instance (read_cores_3.jsonl) and a third
	// with up to 64 readers (read_cores.jsonl) are predicted.
	{Params: []string{"pcie.posted_wait_own_sm"}, Files: []string{"h200x1-arsim/read_cores_2.jsonl"},
		Kinds: []trace.Kind{trace.KindHostLinkConcurrency, trace.KindPointerChase},
		Covers: func(r trace.Record) bool {
			return r.ReaderSM != ""
		},
		AlsoPredicts: []string{"h200x1-arsim/read_cores.jsonl", "h200x1-arsim/read_cores_3.jsonl"},
		On: func(r trace.Record) bool {
			return r.Kind == trace.KindHostLinkConcurrency && r.Blocks == 1
		}, How: "least-squares slope through 0, over the storing SMs, of the one-load block's round trip (8,192 B over its rate) beside a storing block on its SM less the same on an SM that stores nothing"},
	// pcie.posted_wait_own_half, pcie.posted_wait_other_half and
	// pcie.posted_wait_lone_load_halves: one block on SM 131 loading host
	// memory, and its thread 0's chase, beside two SMs storing to it that
	// lie in one half of the SMs, SM 0 and another of SM 131's half, or SM
	// 2 and another of the other half (read_halves.jsonl's pair scans);
	// pcie.posted_wait_own_half_per_doubling: its streaming blocks beside
	// the listed sets of 4 to 32 SMs (2 to 16 TPCs) of SM 131's half;
	// pcie.posted_wait_other_half_beside_own: its streaming block beside SM
	// 0 and one SM of the other half (its 129 pairs across the halves); the
	// chases beside them, the other listed sets and the chases beside
	// them, the pair scan on another instance
	// (read_pairs.jsonl), other loading SMs (read_readers.jsonl) and the
	// first two SMs of every earlier read_placement file are predicted.
	{Params: []string{"pcie.posted_wait_own_half", "pcie.posted_wait_other_half", "pcie.posted_wait_lone_load_halves", "pcie.posted_wait_own_half_per_doubling", "pcie.posted_wait_other_half_beside_own"}, Files: []string{"h200x1-arsim/read_halves.jsonl"},
		Kinds: []trace.Kind{trace.KindHostLinkConcurrency, trace.KindPointerChase},
		Covers: func(r trace.Record) bool {
			return r.Placement == "by_sm" && storesHalf(r).Known
		},
		AlsoPredicts: slices.DeleteFunc(slices.Clone(readDepthOthers), func(f string) bool { return f == "h200x1-arsim/read_halves.jsonl" }),
		On: func(r trace.Record) bool {
			h := storesHalf(r)
			list := strings.HasPrefix(extraString(r, "write_set"), "list")
			pair := r.WriteBlocks == 2 && (h.AllOwn() || h.AllOther()) && !list && (r.Kind == trace.KindPointerChase || r.Blocks == 1)
			// pcie.posted_wait_own_half_per_doubling: the listed sets of 4 to
			// 32 SMs of the reader's half, their streaming blocks
			// pcie.posted_wait_other_half_beside_own: the pairs across the
			// halves, their streaming blocks
			mixed := r.WriteBlocks == 2 && h.Both() && !list && r.Kind == trace.KindHostLinkConcurrency && r.Blocks == 1
			return pair || mixed || (list && h.AllOwn() && r.WriteBlocks > 2 && r.Kind == trace.KindHostLinkConcurrency)
		}, How: "the median round trip of the one-load block (8,192 B over its rate) less the model's alone, by half; the median of the chases' ns a step less the model's chase alone over their half's wait; the least-squares slope through 0 of the listed own-half sets' round trips less the model's beside two over log2 of their TPCs over two; the median of the pairs across the halves' round trips less the model's alone and the own half's wait, over the other half's"},
	// pcie.posted_wait_lone_load_halves_per_doubling: thread 0 of SM 131
	// chasing beside read_halves.jsonl's listed sets of 2 to 16 TPCs of its
	// own half; every other chase beside more than two TPCs of the
	// reader's half is predicted.
	{Params: []string{"pcie.posted_wait_lone_load_halves_per_doubling"}, Files: []string{"h200x1-arsim/read_halves.jsonl"},
		Kinds: []trace.Kind{trace.KindPointerChase},
		Covers: func(r trace.Record) bool {
			return r.Placement == "by_sm" && storesHalf(r).OwnTPCs > 0
		},
		AlsoPredicts: slices.DeleteFunc(slices.Clone(readDepthOthers), func(f string) bool { return f == "h200x1-arsim/read_halves.jsonl" }),
		On: func(r trace.Record) bool {
			return strings.HasPrefix(extraString(r, "write_set"), "list") && storesHalf(r).AllOwn() && r.WriteBlocks > 2
		}, How: "least-squares slope through 0 of the lone share less the chases' wait over the model's warp wait, over log2 of their TPCs over two"},
	// pcie.posted_wait_lone_load_halves_span0, pcie.posted_wait_span_part_chase
	// and pcie.posted_wait_span_knee_chase: thread 0 of SM 131 chasing
	// beside two storing SMs (SM 131's half, the other, one of each) at
	// seven spans (read_halves_span.jsonl), and the chases from SMs 131 and
	// 2 beside two SMs striding together across 2 to 64 MiB
	// (read_span_4.jsonl); every other chase beside stores at spans below
	// the knee is predicted (read_groups_5.jsonl's own MiB,
	// read_groups_9.jsonl's 8 and 1 MiB, read_span_3.jsonl, read_span.jsonl,
	// read_depth*.jsonl).
	{Params: []string{"pcie.posted_wait_lone_load_halves_span0", "pcie.posted_wait_span_part_chase", "pcie.posted_wait_span_knee_chase"},
		Files: []string{"h200x1-arsim/read_halves_span.jsonl", "h200x1-arsim/read_span_4.jsonl"},
		Kinds: []trace.Kind{trace.KindPointerChase},
		Covers: func(r trace.Record) bool {
			return r.Placement == "by_sm" && storesHalf(r).Known
		},
		AlsoPredicts: slices.DeleteFunc(slices.Clone(readDepthOthers), func(f string) bool {
			return f == "h200x1-arsim/read_halves_span.jsonl" || f == "h200x1-arsim/read_span_4.jsonl"
		}),
		On: func(r trace.Record) bool {
			return r.Kind == trace.KindPointerChase && r.WriteBlocks == 2
		}, How: "least squares of the chases' relative error, each file's mean square weighted alike, on a grid (span0 in hundredths, the part in MiB, the knee in 4 MiB steps)"},
	// pcie.posted_wait_uneven_stride and _other: the chases from SM 131 and
	// SM 2 beside every set of three and of four of the first eight TPCs of
	// one GPC, striding together across 128 MiB, that the stride rule calls
	// uneven (read_groups_7.jsonl; the GPC in the reader's half for the
	// first, in the other for the second); the same sets on six other chips
	// (read_groups*.jsonl), the first k TPCs of a GPC, the sets of two
	// GPCs and every other capture are predicted.
	{Params: []string{"pcie.posted_wait_uneven_stride", "pcie.posted_wait_uneven_stride_other"}, Files: []string{"h200x1-arsim/read_groups_7.jsonl"},
		Kinds: []trace.Kind{trace.KindPointerChase},
		Covers: func(r trace.Record) bool {
			// the stores across 128 MiB (below the knee the rule is not applied)
			return r.Placement == "by_sm" && storesHalf(r).Uneven && (r.WriteSpanBytes == 0 || r.WriteSpanBytes >= 128<<20)
		},
		AlsoPredicts: slices.DeleteFunc(slices.Clone(readDepthOthers), func(f string) bool { return f == "h200x1-arsim/read_groups_7.jsonl" }),
		On: func(r trace.Record) bool {
			return r.Kind == trace.KindPointerChase
		}, How: "by half, the value that gives the chases a median error of zero (bisection over the model's chases)"},
	// pcie.posted_wait_uneven_stride_warp and _warp_other: the streaming
	// blocks (one 16-B load a thread in flight) on SM 131 and SM 2 beside
	// the sets of four of a GPC's TPCs that the stride rule calls uneven,
	// striding together across 128 MiB (read_groups_4.jsonl, the file that
	// found the two levels; the GPC in the reader's half for the first, in
	// the other for the second); the chases beside them and every other
	// capture's streaming blocks are predicted.
	{Params: []string{"pcie.posted_wait_uneven_stride_warp", "pcie.posted_wait_uneven_stride_warp_other"}, Files: []string{"h200x1-arsim/read_groups_4.jsonl"},
		Kinds: []trace.Kind{trace.KindHostLinkConcurrency},
		Covers: func(r trace.Record) bool {
			return r.Placement == "by_sm" && storesHalf(r).Uneven && (r.WriteSpanBytes == 0 || r.WriteSpanBytes >= 128<<20)
		},
		AlsoPredicts: slices.DeleteFunc(slices.Clone(readDepthOthers), func(f string) bool { return f == "h200x1-arsim/read_groups_4.jsonl" }),
		On: func(r trace.Record) bool {
			return r.Kind == trace.KindHostLinkConcurrency && r.Blocks == 1
		}, How: "by half, the value that gives the streaming blocks a median error of zero (bisection over the model's rates)"},
	// pcie.uneven_stride_large_tpcs: the chases from the reader's half
	// beside the sets of three, four and five of the nine TPCs of a GPC of
	// 18 SMs that the stride rule calls uneven (read_groups_8.jsonl); the
	// other sets of five or more, and every other capture, are predicted
	// (pcie.uneven_stride_large_depth, the midpoint, is no fit's).
	{Params: []string{"pcie.uneven_stride_large_tpcs"}, Files: []string{"h200x1-arsim/read_groups_8.jsonl"},
		Kinds: []trace.Kind{trace.KindPointerChase},
		Covers: func(r trace.Record) bool {
			return r.Placement == "by_sm" && storesHalf(r).Uneven && (r.WriteSpanBytes == 0 || r.WriteSpanBytes >= 128<<20)
		},
		AlsoPredicts: slices.DeleteFunc(slices.Clone(readDepthOthers), func(f string) bool { return f == "h200x1-arsim/read_groups_8.jsonl" }),
		On: func(r trace.Record) bool {
			return storesHalf(r).AllOwn()
		}, How: "the least count of TPCs whose uneven sets' median chase lies nearer the levels' midpoint than the uneven level"},
	// gpu.host_loads_beside_stores: one block loading host memory beside
	// 131 SMs storing to it, keeping one and four loads a thread in flight
	// (read_depth_2.jsonl); every other storing-SM count, the other
	// instances, the other launches are predicted.
	{Params: []string{"gpu.host_loads_beside_stores"}, Files: []string{"h200x1-arsim/read_depth_2.jsonl"},
		Kinds: []trace.Kind{trace.KindHostLinkConcurrency, trace.KindPointerChase},
		Covers: func(r trace.Record) bool {
			return r.What == "sm_read_beside_write" || (r.Kind == trace.KindPointerChase && r.WriteBlocks > 0)
		},
		AlsoPredicts: slices.Concat(readDepthOthers, readBesideWrite, []string{"h200x1-arsim/read_span.jsonl"}),
		On: func(r trace.Record) bool {
			return r.Kind == trace.KindHostLinkConcurrency && r.Placement == "by_sm" && r.WriteBlocks == 131 && (r.LoadsInFlight == 1 || r.LoadsInFlight == 4)
		}, How: "the four-load block's rate times the one-load block's round trip (8,192 B over its rate)"},
	// pcie.posted_wait_one: read_depth_2.jsonl's one-load block beside one
	// storing SM and alone, the same launch sequence; every other file,
	// instance, launch and chase beside one storing block is predicted, and
	// so are the copies from host memory to host memory, whose loads wait
	// it behind their own block's stores (host_copies.jsonl; the form,
	// one wait an iteration, chosen after seeing that file).
	{Params: []string{"pcie.posted_wait_one"}, Files: []string{"h200x1-arsim/read_depth_2.jsonl"},
		Kinds: []trace.Kind{trace.KindHostLinkConcurrency, trace.KindPointerChase, trace.KindLoop},
		Covers: func(r trace.Record) bool {
			return r.What == "sm_read_beside_write" || (r.Kind == trace.KindPointerChase && r.WriteBlocks > 0) ||
				(r.Loop == "copy" && r.Src == "host" && r.Dst == "host")
		},
		AlsoPredicts: slices.Concat(readDepthOthers, readBesideWrite, []string{"h200x1-arsim/read_span.jsonl", "h200x1-arsim/host_copies.jsonl", "h200x1-arsim/host_copies_2.jsonl", "h200x1-arsim/host_copies_3.jsonl", "h200x1-arsim/host_copies_4.jsonl"}),
		On: func(r trace.Record) bool {
			return r.Kind == trace.KindHostLinkConcurrency && r.Placement == "by_sm" && r.WriteBlocks <= 1 && r.LoadsInFlight == 1
		}, How: "the one-load block's 8,192 B in flight over its rate beside one storing SM, less the same over its rate alone, over the span's share at its storing SM's MiB"},
	// pcie.posted_wait_lone_load: read_depth_2.jsonl's chase beside 131
	// storing SMs and alone; every other storing-SM count, instance and
	// launch of a lone thread's chase beside storing blocks is predicted.
	{Params: []string{"pcie.posted_wait_lone_load"}, Files: []string{"h200x1-arsim/read_depth_2.jsonl"},
		Kinds: []trace.Kind{trace.KindPointerChase},
		Covers: func(r trace.Record) bool {
			return r.WriteBlocks > 0 && r.Target == "host" && r.ChaseLanes != 32
		},
		AlsoPredicts: slices.Concat(readDepthOthers, readBesideWrite, []string{"h200x1-arsim/read_span.jsonl"}),
		On: func(r trace.Record) bool {
			return r.Placement == "by_sm" && r.Target == "host" && r.WriteBlocks == 131
		}, How: "the chase's ns a step beside 131 storing SMs less the chase alone in the same file, over the model's wait of a warp's load beside 131 SMs each rewriting its own MiB (hw.Machine.HostLoadWait)"},
	// pcie.posted_wait_writer_on_sm: a chase kernel beside a writer kernel
	// of 132 blocks, one on every SM (chase_forms.jsonl); the chases and
	// readers beside 132 writer blocks of every other file, on other
	// instances, are predicted.
	{Params: []string{"pcie.posted_wait_writer_on_sm"}, Files: []string{"h200x1-arsim/chase_forms.jsonl"},
		Kinds:        []trace.Kind{trace.KindPointerChase, trace.KindHostLinkConcurrency},
		Covers:       writerOnItsSM,
		AlsoPredicts: slices.Concat([]string{"h200x1-arsim/chase_halves.jsonl"}, readBesideWrite),
		On: func(r trace.Record) bool {
			return r.Kind == trace.KindPointerChase && r.WriteBlocks == 132 && r.ReadBlocks == 0
		}, How: "the share of the model's wait behind the stores that gives the chase's measured round trip beside a writer kernel of 132 blocks (its round trip alone plus the share of the wait)"},
	// gpu.host_loads_writer_on_sm_rate: 1 to 132 reader blocks of 512
	// threads beside a writer kernel of 132 blocks, one on every SM
	// (read_beside_write_10.jsonl); the readers beside such writers of
	// every other file, other instances, threads and loops, are predicted.
	{Params: []string{"gpu.host_loads_writer_on_sm_rate"}, Files: []string{"h200x1-arsim/read_beside_write_10.jsonl"},
		Kinds:        []trace.Kind{trace.KindHostLinkConcurrency},
		Covers:       func(r trace.Record) bool { return r.What == "sm_read_beside_write" && writerOnItsSM(r) },
		AlsoPredicts: slices.DeleteFunc(slices.Clone(readBesideWrite), func(f string) bool { return f == "h200x1-arsim/read_beside_write_10.jsonl" }),
		On: func(r trace.Record) bool {
			return r.What == "sm_read_beside_write" && r.WriteBlocks == 132 && r.WritePauseNs == 0 && r.WriteTarget != "local"
		}, How: "the grid minimum (0.1 GB/s) of the readers' squared relative errors"},
	// gpu.host_loads_outstanding: a pointer chase beside 132 blocks of
	// 512 threads loading host memory and no writer
	// (read_beside_write_9.jsonl); the chases beside other reader blocks,
	// other threads a block (read_beside_write_11.jsonl) and beside
	// writers too, on other instances, are predicted.
	{Params: []string{"gpu.host_loads_outstanding"}, Files: []string{"h200x1-arsim/read_beside_write_9.jsonl"},
		Kinds:        []trace.Kind{trace.KindPointerChase},
		Covers:       func(r trace.Record) bool { return r.ReadBlocks > 0 },
		AlsoPredicts: slices.DeleteFunc(slices.Clone(readBesideWrite), func(f string) bool { return f == "h200x1-arsim/read_beside_write_9.jsonl" }),
		On: func(r trace.Record) bool {
			return r.ReadBlocks == 132 && r.WriteBlocks == 0 && r.ReadThreads == 0
		}, How: "the value that makes the model's chase beside 132 reader blocks of 512 threads and no writer the measured round trip (bisection)"},
}
