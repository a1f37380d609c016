package validate

import (
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/arsim/arsim/trace"
)

// Held out by dimension. A Fit names parameters that were fitted on some
// records of one capture (its fitted side); every other record of the
// kinds it covers is predicted without refitting. Run marks each compared
// record with the fit it belongs to, if any, and the dimensions it is
// predicted along, and the summary reports the error on each side and per
// dimension (Validation.HeldOut). TestFitsComeFromTheirFittedSide
// recomputes every fitted value from its records and fails if a preset
// holds another.

// A Fit is a set of parameters and the records they were fitted on.
type Fit struct {
	// Params are the parameters fitted, e.g. "hostmem.poll_service".
	Params []string
	// Files are the capture files (their last two path elements, e.g.
	// "h200x1-arsim/perblock.jsonl") and Kinds the record kinds it fits
	// on; Covers, when set, narrows the records it speaks for (its fitted
	// and predicted sides) further.
	Files  []string
	Kinds  []trace.Kind
	Covers func(r trace.Record) bool
	// AlsoPredicts are further captures of the same machine whose records
	// of these kinds are all on the predicted side (a repeat run, new
	// configurations). An entry may be a pattern (path.Match,
	// "h200x1-arsim/*"): it places the records the fit covers in the
	// files it matches without citing those files (cited), so that a file
	// no fit names keeps every other record a prediction.
	AlsoPredicts []string
	// On selects the fitted side.
	On func(r trace.Record) bool
	// How says how the values come from those records.
	How string
}

// Fits are the fitted sides of the project's own captures.
var Fits = slices.Concat([]Fit{
	{Params: []string{"hostmem.poll_service"}, Files: []string{"h200x1-arsim/perblock.jsonl"}, Kinds: []trace.Kind{trace.KindPoll, trace.KindBlockPingpong, trace.KindLoop},
		AlsoPredicts: append([]string{"h200x1-arsim/perblock_2.jsonl", "h200x1-arsim/barrier_lines.jsonl", "h200x1-arsim/barrier_lines_2.jsonl",
			"h200x1-arsim/line_probe.jsonl", "h200x1-arsim/line_probe_2.jsonl", "h200x1-arsim/line_probe_3.jsonl",
			"h200x1-arsim/pingpong_sector.jsonl", "h200x1-arsim/pingpong_line.jsonl", "h200x1-arsim/pingpong_spacing.jsonl", "h200x1-arsim/host_load.jsonl", "h200x1-arsim/store_rate.jsonl", "h200x1-arsim/host_queue_2.jsonl", "h200x1-arsim/store_loop.jsonl", "h200x1-arsim/store_lines.jsonl", "h200x1-arsim/store_stream_2.jsonl", "h200x1-arsim/store_width.jsonl", "h200x1-arsim/store_depth.jsonl", "h200x1-arsim/fence_pollers.jsonl"}, perBlockRepeats...),
		On: func(r trace.Record) bool {
			return r.Target == "host" && r.SpacingBytes == 0 && r.Blocks >= 8 && strings.HasPrefix(r.Request, "load")
		}, How: "slope of ns per load over blocks, least squares through 0"},
	{Params: []string{"hostmem.line_contention"}, Files: []string{"h200x1-arsim/perblock.jsonl"}, Kinds: []trace.Kind{trace.KindPoll, trace.KindBlockPingpong},
		AlsoPredicts: append([]string{"h200x1-arsim/perblock_2.jsonl"}, perBlockRepeats...),
		Covers:       func(r trace.Record) bool { return r.Target == "host" && r.SpacingBytes > 0 && r.SpacingBytes < 32 },
		On: func(r trace.Record) bool {
			return r.Kind == trace.KindPoll && r.Target == "host" && r.Request == "load_volatile" && r.SpacingBytes == 4 && (r.Blocks == 16 || r.Blocks == 32)
		}, How: "ns per load beyond 8 × hostmem.poll_service over the loads waiting at the line's other sectors, least squares through 0"},
	{Params: []string{"hostmem.slot_service"}, Files: []string{"h200x1-arsim/barrier_spacing.jsonl"}, Kinds: []trace.Kind{trace.KindLoop},
		Covers: hostBarrier, AlsoPredicts: hostBarrierCaptures("h200x1-arsim/barrier_spacing.jsonl"),
		On: slotServiceSide, How: "least squares through 0 of ns per barrier beyond a line per slot's over the W − 1 slots"},
	// gpu.host_store_service: blocks storing to host memory beside a
	// ping-pong pair, timing their own stores (store_loop.jsonl): the
	// queue fills where the blocks' stores come faster than it serves
	// them. Barriers of every file (their flag stores queue) and the
	// streams of store_lines.jsonl are its predicted side.
	{Params: []string{"gpu.host_store_service"}, Files: []string{"h200x1-arsim/store_loop.jsonl"}, Kinds: []trace.Kind{trace.KindBlockPingpong},
		Covers:       func(r trace.Record) bool { return r.NeighbourOp == "store" && r.NeighbourNsPerStore > 0 },
		AlsoPredicts: []string{"h200x1-arsim/store_lines.jsonl", "h200x1-arsim/store_stream_2.jsonl", "h200x1-arsim/store_width.jsonl", "h200x1-arsim/store_depth.jsonl"},
		On:           func(r trace.Record) bool { return r.NeighbourOp == "store" },
		How:          "mean over the two streams of ns per store over the block count midway between the last that leaves the pair's round trip below twice its value beside 4 and the first that does not"},
	// gpu.host_poll_load: a ping-pong pair beside 4–128 blocks polling
	// words of their own on other lines (host_load.jsonl); polls of every
	// file at 2–132 blocks, every barrier's pollers and the second
	// instance's are its predicted side.
	{Params: []string{"gpu.host_poll_load"}, Files: []string{"h200x1-arsim/host_load.jsonl"}, Kinds: []trace.Kind{trace.KindBlockPingpong},
		Covers:       func(r trace.Record) bool { return r.NeighbourOp == "poll" },
		AlsoPredicts: []string{"h200x1-arsim/host_queue_2.jsonl", "h200x1-arsim/fence_pollers.jsonl"},
		On:           func(r trace.Record) bool { return r.NeighbourOp == "poll" && r.NeighbourPlace == "64k_on_lines_apart" },
		How:          "least-squares slope of the pair's one-way ns over the polling blocks"},
	// hostmem.sector_collision and hostmem.collision_mask: two-rank
	// barriers with the ranks' lines within a kibibyte (barrier_pairs.jsonl):
	// which pairs of lines are slow (the address bits in which they
	// differ), and by how much; every other host barrier is their
	// predicted side.
	{Params: []string{"hostmem.sector_collision", "hostmem.collision_mask"}, Files: []string{"h200x1-arsim/barrier_pairs.jsonl"}, Kinds: []trace.Kind{trace.KindLoop},
		Covers: hostBarrier, AlsoPredicts: hostBarrierCaptures("h200x1-arsim/barrier_pairs.jsonl"),
		On: sectorCollisionSide, How: "the mask: the address bits in which the lines of the slow pairs differ; the collision: least squares through 0 of ns per barrier beyond the same with it at 0, over the other sectors that collide with the polled one"},
	// hostmem.foreign_store_collision: four-rank barriers beside other
	// groups a line apart (barrier_groups_apart.jsonl); its two-rank ones,
	// the other instance's (address_2.jsonl) and every other host barrier
	// are its predicted side.
	{Params: []string{"hostmem.foreign_store_collision"}, Files: []string{"h200x1-arsim/barrier_groups_apart.jsonl"}, Kinds: []trace.Kind{trace.KindLoop},
		Covers: hostBarrier, AlsoPredicts: hostBarrierCaptures("h200x1-arsim/barrier_groups_apart.jsonl"),
		On:  func(r trace.Record) bool { return hostBarrier(r) && r.World == 4 },
		How: "least squares through 0 of ns per barrier beyond the same with this at 0, over the stores beyond the first landing each round on other groups' colliding lines"},
	// hostmem.foreign_collision_cap: eight-rank vLLM-layout barriers whose
	// chunks of groups collide (barrier_chunks_2.jsonl); its four-rank ones
	// and every other host barrier are its predicted side.
	{Params: []string{"hostmem.foreign_collision_cap"}, Files: []string{"h200x1-arsim/barrier_chunks_2.jsonl"}, Kinds: []trace.Kind{trace.KindLoop},
		Covers: hostBarrier, AlsoPredicts: hostBarrierCaptures("h200x1-arsim/barrier_chunks_2.jsonl"),
		On:  func(r trace.Record) bool { return hostBarrier(r) && r.World == 8 },
		How: "the median of ns per barrier beyond the same with this at 0, over the records with stores on colliding lines"},
	// hostmem.crowded_line_collision and hostmem.crowded_line_cap:
	// two-rank barriers of layout packed, 2 and 4–32 groups
	// (barrier_lines.jsonl, barrier_lines_2.jsonl); every other host
	// barrier, the H100's barrier_line_groups*.jsonl among them, is their
	// predicted side.
	{Params: []string{"hostmem.crowded_line_collision", "hostmem.crowded_line_cap"}, Files: []string{"h200x1-arsim/barrier_lines.jsonl", "h200x1-arsim/barrier_lines_2.jsonl"},
		Kinds: []trace.Kind{trace.KindLoop}, Covers: hostBarrier,
		AlsoPredicts: slices.DeleteFunc(hostBarrierCaptures(""), func(f string) bool { return strings.HasPrefix(f, "h200x1-arsim/barrier_lines") }),
		On: func(r trace.Record) bool {
			return hostBarrier(r) && r.Layout == "packed" && r.World == 2 && r.Groups >= 2
		},
		How: "the median of ns per barrier beyond the same with these at 0: at 2 groups (one other barrier on the crowded line) the first, at 4–32 the cap"},
	// pcie.first_burst_held: one-iteration launches of stores to host
	// memory that the link holds back (store_burst.jsonl, 4.3–8.7 MB);
	// its smaller launches, fence_land.jsonl's and every other
	// one-iteration copy to host memory are its predicted side.
	{Params: []string{"pcie.first_burst_held"}, Files: []string{"h200x1-arsim/store_burst.jsonl"}, Kinds: []trace.Kind{trace.KindLoop},
		Covers:       func(r trace.Record) bool { return r.Loop == "copy" && r.Dst == "host" && r.Iters == 1 && r.Fence == "" },
		AlsoPredicts: []string{"h200x1-arsim/fence_land.jsonl", "h200x1-arsim/write_buffer.jsonl", "h200x1-arsim/push_wide.jsonl", "h200x1-arsim/wide_2.jsonl"},
		On: func(r trace.Record) bool {
			return r.Loop == "copy" && r.Dst == "host" && r.Iters == 1 && int64(r.Blocks)*int64(r.Threads)*16*int64(max(r.Unroll, 1)) > 4e6
		}, How: "the value that makes their median error 0 (bisection)"},
	{Params: []string{"hostmem.atomic_service"}, Files: []string{"h200x1-arsim/perblock.jsonl"}, Kinds: []trace.Kind{trace.KindPoll},
		AlsoPredicts: perBlockRepeats,
		On: func(r trace.Record) bool {
			return r.Target == "host" && r.SpacingBytes == 0 && r.Blocks >= 8 && strings.HasPrefix(r.Request, "atomic")
		}, How: "slope of ns per atomic over blocks, least squares through 0"},
	{Params: []string{"hostmem.atomic_service_lines"}, Files: []string{"h200x1-arsim/perblock.jsonl"}, Kinds: []trace.Kind{trace.KindPoll},
		AlsoPredicts: perBlockRepeats,
		On:           atomicLinesSide,
		How:          "least squares through 0 of ns per atomic over the words on a line, the words spanning more than one line"},
	{Params: []string{"gpu.poll_loop_overhead"}, Files: []string{"h200x1-arsim/perblock.jsonl"}, Kinds: []trace.Kind{trace.KindPoll},
		AlsoPredicts: append([]string{"h200x1-arsim/poll_pages.jsonl"}, perBlockRepeats...),
		On: func(r trace.Record) bool {
			return r.Target == "local" && r.SpacingBytes == 0 && r.Blocks == 1 && r.Request == "load_volatile"
		}, How: "ns per load minus pointer_chase local"},
	{Params: []string{"gpu.poll_relaxed_saving"}, Files: []string{"h200x1-arsim/perblock.jsonl"}, Kinds: []trace.Kind{trace.KindPoll},
		AlsoPredicts: append([]string{"h200x1-arsim/perblock_2.jsonl"}, perBlockRepeats...),
		Covers:       func(r trace.Record) bool { return r.Request == "load_relaxed" },
		On: func(r trace.Record) bool {
			return r.Request == "load_relaxed" && r.Target == "local" && r.SpacingBytes == 0 && r.Blocks == 1
		}, How: "ns per volatile load minus ns per relaxed load, one block, a local word"},
	{Params: []string{"gpu.ll_iter_overhead", "gpu.ll_iter_per_warp"}, Files: []string{"h200x1-arsim/perblock.jsonl"}, Kinds: []trace.Kind{trace.KindLoop},
		AlsoPredicts: append([]string{"h200x2-arsim/perblock_peer.jsonl", "h200x1-arsim/ll_ops.jsonl", "h200x1-arsim/ll_ops_2.jsonl", "h200x1-arsim/ll128_host.jsonl"}, perBlockRepeats...),
		On: func(r trace.Record) bool {
			return r.Loop == "ll" && r.LLOp == "recv_reduce_send" && r.Recv == "local" && r.Dst == "local" && r.Blocks == 1
		}, How: "least-squares line of ns per iteration over warps; the intercept minus pointer_chase local"},
	{Params: []string{"gpu.ll128_iter_overhead", "gpu.ll128_iter_per_warp"}, Files: []string{"h200x1-arsim/perblock_2.jsonl"}, Kinds: []trace.Kind{trace.KindLoop},
		Covers:       func(r trace.Record) bool { return r.Loop == "ll128w" },
		AlsoPredicts: append([]string{"h200x2-arsim/perblock_peer.jsonl", "h200x1-arsim/ll128_live.jsonl", "h200x1-arsim/ll128_host.jsonl", "h200x1-arsim/ll128_pairs.jsonl"}, perBlockRepeats...),
		On: func(r trace.Record) bool {
			return r.LLOp == "recv_send" && r.Recv == "local" && r.Dst == "local" && r.Blocks == 1 && r.Iters == 64 && r.Threads <= 256
		}, How: "least-squares line of ns per iteration over warps where the chain sets the iteration (64–256 threads); the intercept minus pointer_chase local of the same run"},
	{Params: []string{"gpu.ll128_reduce_extra"}, Files: []string{"h200x1-arsim/perblock_2.jsonl"}, Kinds: []trace.Kind{trace.KindLoop},
		Covers:       func(r trace.Record) bool { return r.Loop == "ll128w" },
		AlsoPredicts: append([]string{"h200x2-arsim/perblock_peer.jsonl", "h200x1-arsim/ll128_live.jsonl", "h200x1-arsim/ll128_host.jsonl", "h200x1-arsim/ll128_pairs.jsonl"}, perBlockRepeats...),
		On: func(r trace.Record) bool {
			return (r.LLOp == "recv_send" || r.LLOp == "recv_reduce_send") && r.Recv == "local" && r.Dst == "local" && r.Blocks == 1 && r.Threads == 640 && r.Iters == 64
		}, How: "ns per iteration of recv_reduce_send minus recv_send, the same configuration (640 threads, where both load their lines at the SM's rate)"},
	{Params: []string{"gpu.vector_load_extra_pcie"}, Files: []string{"h200x1-arsim/perblock.jsonl"}, Kinds: []trace.Kind{trace.KindSMAccess},
		AlsoPredicts: micro2Repeats,
		Covers:       func(r trace.Record) bool { return r.Op == "read_only_loop" && r.Load == "volatile" },
		On: func(r trace.Record) bool {
			return r.Target == "host" && r.Blocks == 1 && r.Threads == 32
		}, How: "block 0's ns per iteration minus pointer_chase host, the same run"},
	{Params: []string{"gpu.copy_iter_overhead"}, Files: []string{"h200x1-arsim/perblock.jsonl"}, Kinds: []trace.Kind{trace.KindLoop},
		AlsoPredicts: append([]string{"h200x2-arsim/perblock_peer.jsonl"}, perBlockRepeats...),
		On: func(r trace.Record) bool {
			return r.Loop == "copy" && r.Unroll == 1 && r.Sources == 1 && r.Src == "local" && r.Dst == "local" && r.Blocks == 1 && r.Threads == 128
		}, How: "ns per iteration minus pointer_chase local"},
	// gpu.load_wait_host: one block's two-source copies from host memory
	// that wait three times an iteration (pb_copy_4_2, pb_copy_8_2); the
	// same copies in the other runs and on the H100, and every other copy
	// from host memory whose SASS waits more than once, are predicted.
	{Params: []string{"gpu.load_wait_host"}, Files: []string{"h200x1-arsim/perblock.jsonl"}, Kinds: []trace.Kind{trace.KindLoop},
		AlsoPredicts: append([]string{"h200x1-arsim/copy_registers.jsonl", "h200x1-arsim/host_copies.jsonl", "h200x1-arsim/host_copies_2.jsonl", "h200x1-arsim/host_copies_3.jsonl", "h200x1-arsim/host_copies_4.jsonl"}, perBlockRepeats...),
		On:           loadWaitHostSide, How: "mean over the four of (ns per iteration − the model's without it) / (waits − 1)"},
	// gpu.copy_dram_extra: one block of 128 threads copying to host memory
	// with its source fresh every launch and the same every launch (in
	// the L2); the other block, thread and iteration counts of both, the
	// copies from host memory and host_shot's staging are predicted.
	{Params: []string{"gpu.copy_dram_extra"}, Files: []string{"h200x1-arsim/store_width.jsonl", "h200x1-arsim/store_depth.jsonl"}, Kinds: []trace.Kind{trace.KindLoop},
		Covers: func(r trace.Record) bool {
			return (r.Loop == "copy" && (r.SrcResidency != "" || r.Src == "host")) || (r.Loop == "host_shot" && r.Phases&1 != 0)
		},
		AlsoPredicts: append([]string{"h200x1-arsim/perblock_2.jsonl", "h200x1-arsim/copy_registers.jsonl", "h200x1-arsim/host_shot.jsonl", "h200x1-arsim/host_shot_overlap.jsonl", "h200x1-arsim/host_shot_sizes.jsonl", "h200x1-arsim/host_queue_2.jsonl", "h200x1-arsim/store_depth.jsonl", "h200x1-arsim/copy_unroll.jsonl", "h200x1-arsim/nccl_copy.jsonl", "h200x1-arsim/loop_start.jsonl", "h200x1-arsim/loop_start_2.jsonl", "h200x1-arsim/nccl_dests.jsonl", "h200x1-arsim/store_burst.jsonl", "h200x1-arsim/host_copies.jsonl", "h200x1-arsim/host_copies_2.jsonl", "h200x1-arsim/host_copies_3.jsonl", "h200x1-arsim/host_copies_4.jsonl"}, perBlockRepeats...),
		On: func(r trace.Record) bool {
			return r.Loop == "copy" && r.SrcResidency != "" && r.Blocks == 1 && r.Threads == 128 && r.Iters == 64
		}, How: "ns per iteration with the source fresh every launch minus the same with it in the L2"},
	// gpu.loop_start and gpu.loop_start_per_load: one block's one-load
	// copies from the L2 to local and host memory at 64–1,024 threads, 1,
	// 2 and 4 iterations against 64 (loop_start.jsonl); the copies of
	// other captures, NCCL Simple's steps in the plain and NCCL's shape
	// (simple_step) and host_shot's staging are predicted.
	{Params: []string{"gpu.loop_start", "gpu.loop_start_per_load"}, Files: []string{"h200x1-arsim/loop_start.jsonl"}, Kinds: []trace.Kind{trace.KindLoop},
		Covers: func(r trace.Record) bool {
			return r.Loop == "copy" || r.Loop == "simple_step" || (r.Loop == "host_shot" && r.Phases&1 != 0)
		},
		AlsoPredicts: append([]string{"h200x1-arsim/perblock_2.jsonl", "h200x1-arsim/copy_registers.jsonl", "h200x1-arsim/host_shot.jsonl", "h200x1-arsim/host_shot_overlap.jsonl", "h200x1-arsim/host_shot_sizes.jsonl", "h200x1-arsim/host_queue_2.jsonl",
			"h200x1-arsim/copy_unroll.jsonl", "h200x1-arsim/nccl_copy.jsonl", "h200x1-arsim/simple_fresh.jsonl", "h200x1-arsim/push_wide.jsonl", "h200x1-arsim/wide_2.jsonl",
			"h200x1-arsim/write_buffer.jsonl", "h200x1-arsim/fence_beside.jsonl", "h200x1-arsim/store_rate.jsonl", "h200x1-arsim/store_loop.jsonl", "h200x1-arsim/store_lines.jsonl",
			"h200x1-arsim/store_stream_2.jsonl", "h200x1-arsim/store_width.jsonl", "h200x1-arsim/store_depth.jsonl", "h200x1-arsim/fence_land.jsonl", "h200x1-arsim/loop_start_2.jsonl", "h200x1-arsim/nccl_dests.jsonl", "h200x1-arsim/host_copies.jsonl", "h200x1-arsim/host_copies_2.jsonl", "h200x1-arsim/host_copies_3.jsonl", "h200x1-arsim/host_copies_4.jsonl"}, perBlockRepeats...),
		On: func(r trace.Record) bool {
			return r.Loop == "copy" && r.Src == "local" && r.SrcResidency == "l2" && r.Blocks == 1 && r.Unroll == 1 && r.Sources == 1
		}, How: "iterations × (ns per iteration − the same copy's at 64 iterations), least squares over warps × loads a thread issues"},
	{Params: []string{"gpu.mem_efficiency"}, Files: []string{"h200x1-arsim/perblock.jsonl"}, Kinds: []trace.Kind{trace.KindLoop},
		AlsoPredicts: perBlockRepeats,
		On: func(r trace.Record) bool {
			return r.Loop == "copy" && r.Unroll == 8 && r.Sources == 1 && r.Src == "local" && r.Dst == "local" && r.Blocks == 132 && r.Threads == 512
		}, How: "132 blocks × 512 threads × 8 × 16 B read and written per iteration of the slowest block (the kernel's end), over gpu.mem_bandwidth"},
	{Params: []string{"gpu.mem_loaded_latency"}, Files: []string{"h200x1-arsim/perblock.jsonl"}, Kinds: []trace.Kind{trace.KindLoop},
		AlsoPredicts: append([]string{"h200x1-arsim/perblock_2.jsonl", "h200x1-arsim/heldout_2.jsonl", "h200x1-arsim/copy_registers.jsonl",
			"h200x1-arsim/pull_wide.jsonl", "h200x1-arsim/push_wide.jsonl", "h200x1-arsim/heldout_3.jsonl", "h200x1-arsim/wide_2.jsonl",
			"h200x1-arsim/store_width.jsonl", "h200x1-arsim/store_depth.jsonl", "h200x1-arsim/pull_bf16.jsonl", "h200x1-arsim/pull_short.jsonl", "h200x1-arsim/pull_threads.jsonl", "h200x1-arsim/pull_w.jsonl", "h200x1-arsim/pull_f32.jsonl"},
			perBlockRepeats...),
		On: func(r trace.Record) bool {
			return r.Loop == "copy" && r.Unroll == 1 && r.Sources == 1 && r.Src == "local" && r.Dst == "local" && r.Blocks == 32 && r.Threads == 512
		}, How: "(ns per iteration − the model's unloaded iteration) × ns per iteration × memory rate / bytes loaded an iteration"},
	// gpu.store_issue: one thread's burst of 16 stores to local memory
	// (micro2's fence variant 16x16B); a warp's bursts, to host memory,
	// ending with a fence, and every other instance's are predicted.
	{Params: []string{"gpu.store_issue"}, Files: []string{"h200x1-arsim/perblock.jsonl"}, Kinds: []trace.Kind{trace.KindFence},
		Covers: func(r trace.Record) bool { return strings.HasPrefix(r.Variant, "16x16B") }, AlsoPredicts: micro2Repeats,
		On:  func(r trace.Record) bool { return r.Variant == "16x16B" && r.Threads == 1 && r.Target == "local" },
		How: "ns per burst over its 16 stores"},
	// gpu.sm_load_bandwidth and gpu.sm_local_store_bandwidth: what one
	// block's SM spends on each byte it loads and each it stores, from a
	// copy and a two-source reduction in NCCL's loop shape whose sources
	// sit in the L2 (nccl_copy.jsonl); every other copy, the copies to two
	// destinations (nccl_dests.jsonl), the reductions over 3–8 sources
	// (reduce_sources.jsonl) and the LL loops' stores are predicted.
	{Params: []string{"gpu.sm_load_bandwidth", "gpu.sm_local_store_bandwidth"}, Files: []string{"h200x1-arsim/nccl_copy.jsonl"}, Kinds: []trace.Kind{trace.KindLoop},
		AlsoPredicts: []string{"h200x1-arsim/nccl_dests.jsonl", "h200x1-arsim/reduce_sources.jsonl", "h200x1-arsim/reduce_blocks.jsonl", "h200x1-arsim/reduce_2.jsonl", "h200x1-arsim/reduce_depth.jsonl", "h200x1-arsim/load_waits.jsonl", "h200x1-arsim/load_waits_lb.jsonl"},
		Covers:       func(r trace.Record) bool { return r.Loop == "copy" },
		On:           smIssueSide, How: "the copy's and the reduction's ns per 64-KiB iteration solved for the time per byte loaded and per byte stored"},
	{Params: []string{"gpu.vector_issue", "gpu.vector_issue_per_warp"}, Files: []string{"h200x1-arsim/perblock.jsonl"}, Kinds: []trace.Kind{trace.KindLoop},
		AlsoPredicts: perBlockRepeats,
		On:           vectorIssueSide, How: "least-squares line over warps of (ns per iteration − the one-load iteration) / (loads − 1)"},
	// gpu.vector_issue_l2 and gpu.load_wait_l2: NCCL's reduceCopy built
	// for 256 and 1,024 threads (load_waits_lb.jsonl), one block of 128
	// threads, 2–8 sources in the L2, 16–32 loads and 2–7 waits an
	// iteration, the builds that keep their registers; the other builds
	// (load_waits.jsonl and the other captures' copies from the L2), the
	// other thread counts and the H100's are predicted.
	{Params: []string{"gpu.vector_issue_l2", "gpu.load_wait_l2"}, Files: []string{"h200x1-arsim/load_waits_lb.jsonl"}, Kinds: []trace.Kind{trace.KindLoop},
		Covers: func(r trace.Record) bool { return r.Loop == "copy" && r.SrcResidency == "l2" },
		On:     l2WaitSide, How: "least squares through 0 of ns per iteration − the model's with both at 0 over (loads a thread − 1, waits − 1)"},
	// hostmem.changing_flag_wait: ping-pong pairs through flags 4 B apart
	// in host memory, volatile, 1–4 pairs (one sector); the pairs that
	// fill further sectors, the other spacings (8–16 B), release/acquire
	// flags, the per-block suite's repeats and the H100's are predicted.
	{Params: []string{"hostmem.changing_flag_wait"}, Files: []string{"h200x1-arsim/pingpong_sector.jsonl"}, Kinds: []trace.Kind{trace.KindBlockPingpong},
		Covers: changingFlags,
		On:     func(r trace.Record) bool { return r.Mode == "volatile" && r.SpacingBytes == 4 && r.Pairs <= 4 },
		How:    "least squares through 0 of ns one way less the model's without it over the line's further pollers"},
	// hostmem.changing_flag_cap: the same pairs filling one and two lines
	// (16–32 pairs, volatile); fewer pairs and release/acquire flags are
	// predicted.
	{Params: []string{"hostmem.changing_flag_cap"}, Files: []string{"h200x1-arsim/pingpong_line.jsonl"}, Kinds: []trace.Kind{trace.KindBlockPingpong},
		Covers: changingFlags,
		On:     func(r trace.Record) bool { return r.Mode == "volatile" && r.SpacingBytes == 4 && r.Pairs >= 16 },
		How:    "median of ns one way less the model's without it"},
	// gpu.spill_reload_wait: the capture's copy that spills registers
	// (pb_copy_8_2), plain sources in GPU memory, to GPU memory, one block of
	// 128 threads (perblock.jsonl); its 512-thread block, its copies to
	// host memory, the repeats of the per-block suite, the other captures
	// and the H100's are predicted.
	{Params: []string{"gpu.spill_reload_wait"}, Files: []string{"h200x1-arsim/perblock.jsonl"}, Kinds: []trace.Kind{trace.KindLoop},
		Covers:       func(r trace.Record) bool { return r.Loop == "copy" && captureSpills[copyKernel(r)] != [2]float64{} },
		AlsoPredicts: append([]string{"h200x1-arsim/copy_registers.jsonl", "h200x1-arsim/host_copies.jsonl"}, perBlockRepeats...),
		On:           spillReloadSide, How: "the value at which the model's iteration equals the measured one (bisection)"},
	// gpu.host_store_issue_per_warp: one block's copies from GPU memory to
	// host memory against the same copies to GPU memory, the loops that
	// keep their registers (perblock.jsonl); the repeats of the per-block
	// suite, the other copies to host memory (NCCL's shape, other builds
	// and thread counts, the spilling copy, many blocks) and the H100's
	// are predicted (TestHostStoreIssueOnItsPredictedSide).
	{Params: []string{"gpu.host_store_issue_per_warp"}, Files: []string{"h200x1-arsim/perblock.jsonl"}, Kinds: []trace.Kind{trace.KindLoop},
		Covers: func(r trace.Record) bool { return r.Loop == "copy" && r.Dst == "host" && r.Src != "host" },
		AlsoPredicts: append([]string{"h200x1-arsim/copy_registers.jsonl", "h200x1-arsim/host_copies.jsonl", "h200x1-arsim/nccl_copy.jsonl",
			"h200x1-arsim/copy_unroll.jsonl", "h200x1-arsim/store_burst.jsonl", "h200x1-arsim/fence_land.jsonl"}, perBlockRepeats...),
		On: hostStoreIssueSide, How: "least-squares slope through 0 of ns per iteration to host memory less to GPU memory, the same loop, over (stores a thread an iteration − 1) × warps"},
	// nccl.graph_mixing_per_call: NCCL's calls over NVLink in one CUDA graph
	// of 20 and of 122 (sequences_len.jsonl); its 61-call graphs, the
	// calls through host memory, the other captures' sequences and the
	// 10–244-call graphs of another pair of GPUs are predicted.
	{Params: []string{"nccl.graph_mixing_per_call"}, Files: []string{"h200x2-arsim/sequences_len.jsonl"}, Kinds: []trace.Kind{trace.KindAllreduceSequence},
		Covers: func(r trace.Record) bool {
			return r.Impl == trace.ImplNCCL && r.Launch == trace.LaunchCUDAGraph && r.NCCLEnv["NCCL_GRAPH_MIXING_SUPPORT"] != "0"
		},
		AlsoPredicts: []string{"h200x2-arsim/sequences_len_2.jsonl", "h200x2-arsim/sequences_v2.jsonl", "h200x2-arsim/measurements.jsonl"},
		On: func(r trace.Record) bool {
			return r.Transport == trace.TransportP2P && (r.Count == 20 || r.Count == 122)
		}, How: "the mean over the two sizes of (µs a call at 122 − µs a call at 20) / 102"},
	// nccl.call_extra.<algo>.<proto>: one fit per algorithm and protocol
	// (callExtraFits).
	// host.nccl_group_call_issue: one-rank allreduces in groups of 1–8
	// issued from C++ on an H200's host; the same calls on an H100's host
	// (native_issue_clock.jsonl, plain and beside 14 busy threads) are
	// predicted, and so is nccl-tests' eager pacing on other hosts (the
	// published tables, at each host's core clock: host.core_clock).
	{Params: []string{"host.nccl_group_call_issue"}, Files: []string{"h200x1-arsim/native_issue_2.jsonl"}, Kinds: []trace.Kind{trace.KindNCCLKernel},
		Covers: func(r trace.Record) bool { return r.Issuer == "native" && r.NCCLOp == "allreduce_group" },
		On:     func(r trace.Record) bool { return r.Issuer == "native" && r.NCCLOp == "allreduce_group" },
		How:    "the median of the grouped calls' host cost a call"},
	{Params: []string{"nccl.kernel_fixed"}, Files: []string{"h200x1-arsim/nccl_self.jsonl"}, Kinds: []trace.Kind{trace.KindNCCLKernel},
		AlsoPredicts: []string{"h200x1-arsim/nccl_self_2.jsonl", "h200x1-arsim/nccl_self_3.jsonl"},
		Covers:       func(r trace.Record) bool { return r.NCCLOp == "self_sendrecv" },
		On: func(r trace.Record) bool {
			return r.NCCLOp == "self_sendrecv" && r.Launch == trace.LaunchCUDAGraph && r.Bytes == 8
		}, How: "8 B per call minus the empty kernel node of the same run"},
	// NCCL's LL and LL128 with capped channels on two GPUs rest on the
	// loop parameters fitted on one GPU's local loops (above): every such
	// record is on their predicted side.
	{Params: []string{"gpu.ll_iter_overhead", "gpu.ll_iter_per_warp", "gpu.ll128_iter_overhead", "gpu.ll128_iter_per_warp"},
		Kinds:        []trace.Kind{trace.KindAllreduce},
		Covers:       func(r trace.Record) bool { return r.Impl == trace.ImplNCCL && (r.Proto == "ll" || r.Proto == "ll128") },
		AlsoPredicts: []string{"h200x2-arsim/nccl_channels.jsonl"},
		On:           func(trace.Record) bool { return false }, How: "fitted on one GPU's loops (the loop fits above); none of these records"},
	// NCCL's LL128 on two GPUs beyond the loop measured on one: fitted on
	// the ring over NVLink at one channel and the largest sizes, where one
	// block's loop is the time; 2, 4 and 8 channels and NCCL's default,
	// the tree, SHM, eager launches and smaller sizes are its predicted
	// side.
	{Params: []string{"nccl.ll128_iter_extra"}, Files: []string{"h200x2-arsim/nccl_channels.jsonl"}, Kinds: []trace.Kind{trace.KindAllreduce},
		Covers:       func(r trace.Record) bool { return r.Impl == trace.ImplNCCL && r.Proto == "ll128" },
		AlsoPredicts: []string{"h200x2-arsim/measurements.jsonl"},
		On:           ll128IterExtraSide, How: "the value that makes the median error of its records 0"},
	// nccl.ll_iter_extra: the same for NCCL's LL loop beyond the one-GPU
	// loop compiled for one operation, fitted on ring and tree over NVLink
	// and SHM at one channel (the ring alone would give 112 ns, the tree
	// alone about 70).
	{Params: []string{"nccl.ll_iter_extra"}, Files: []string{"h200x2-arsim/nccl_channels.jsonl"}, Kinds: []trace.Kind{trace.KindAllreduce},
		Covers:       func(r trace.Record) bool { return r.Impl == trace.ImplNCCL && r.Proto == "ll" },
		AlsoPredicts: []string{"h200x2-arsim/measurements.jsonl"},
		On:           llIterExtraSide, How: "the value that makes the median error of its records 0"},
	// capture.ll_runtime_op: pb_ll against the same loop compiled for one
	// operation, lines in local memory; its host-memory pairs and every
	// other LL loop record are predicted.
	{Params: []string{"capture.ll_runtime_op"}, Files: []string{"h200x1-arsim/ll_code.jsonl"}, Kinds: []trace.Kind{trace.KindLoop},
		Covers: func(r trace.Record) bool { return r.Loop == "ll" },
		On:     func(r trace.Record) bool { return r.Loop == "ll" && r.Recv == "local" },
		How:    "median over recv and recv_reduce_send at 64–1024 threads of pb_ll's ns per iteration (mean of its two runs) minus pb_ll_fixed's"},
	// gpu.barrier_meet, gpu.barrier_meet_per_warp: 2-rank barriers in local
	// memory at 32–1024 threads a block, less two local round trips; the
	// same at 4 and 8 ranks, in host memory, and every other group barrier
	// are predicted.
	{Params: []string{"gpu.barrier_meet", "gpu.barrier_meet_per_warp"}, Files: []string{"h200x1-arsim/barrier_threads.jsonl"}, Kinds: []trace.Kind{trace.KindLoop},
		Covers:       func(r trace.Record) bool { return r.Loop == "group_barrier" },
		AlsoPredicts: []string{"h200x1-arsim/fence_beside.jsonl"},
		On:           func(r trace.Record) bool { return r.Loop == "group_barrier" && r.Target == "local" && r.World == 2 },
		How:          "least-squares line over warps of ns per barrier minus two local round trips (pointer_chase, same run)"},
	// gpu.spin_store_service: 2-, 4- and 8-rank barriers in local memory
	// whose polls spin, one instance; every other local barrier (other
	// instances, layouts, groups and threads) and every multi-GPU barrier
	// are predicted.
	{Params: []string{"gpu.spin_store_service"}, Files: []string{"h200x1-arsim/fence_beside.jsonl"}, Kinds: []trace.Kind{trace.KindLoop},
		Covers:       func(r trace.Record) bool { return r.Loop == "group_barrier" && r.Target == "local" },
		AlsoPredicts: []string{"h200x1-arsim/barrier_modes.jsonl", "h200x1-arsim/barrier_modes_w.jsonl", "h200x1-arsim/fence_groups.jsonl"},
		On:           func(r trace.Record) bool { return r.PollSleepNs == 0 },
		How:          "least-squares slope of ns per barrier over W − 2 (W = 2, 4, 8; packed_4k, one group, 32 threads)"},
	// pcie.posted_write_buffer: copies to host memory from 4 blocks, 4–128
	// iterations, plain against ending with a system fence; the same at 2,
	// 8, 16 and 32 blocks, the fenced copies and the fences of 1–132 blocks
	// are predicted.
	{Params: []string{"pcie.posted_write_buffer"}, Files: []string{"h200x1-arsim/write_buffer.jsonl"}, Kinds: []trace.Kind{trace.KindLoop},
		Covers:       func(r trace.Record) bool { return r.Loop == "copy" || r.Loop == "fence" },
		AlsoPredicts: []string{"h200x1-arsim/fence_beside.jsonl", "h200x1-arsim/fence_land.jsonl", "h200x1-arsim/store_burst.jsonl"},
		On:           func(r trace.Record) bool { return r.Loop == "copy" && r.Blocks == 4 && r.Fence == "" },
		How:          "median over the launches of (slowest block with a closing fence.sc.sys − without) × bytes / (the fenced time)"},
	// capture.fence_loop_code: the fence loop's kernel against the same
	// store and fence alone, after a local store, 1 block, one instance;
	// every other fence loop (host memory, 1–132 blocks, acq_rel, the
	// per-block files' pb_fence on four more instances) is predicted.
	{Params: []string{"capture.fence_loop_code"}, Files: []string{"h200x1-arsim/write_buffer.jsonl", "h200x1-arsim/fence_beside.jsonl"}, Kinds: []trace.Kind{trace.KindLoop},
		AlsoPredicts: []string{"h200x1-arsim/fence_polls.jsonl", "h200x1-arsim/fence_kinds.jsonl", "h200x1-arsim/fence_threads.jsonl", "h200x1-arsim/h100_parts.jsonl"},
		Covers:       func(r trace.Record) bool { return r.Loop == "fence" },
		On: func(r trace.Record) bool {
			return r.Loop == "fence" && r.Dst == "local" && r.Fence == "sc" && r.Blocks == 1 && r.Threads == 32 && r.Neighbours == 0
		}, How: "pb_fence_blocks' ns per iteration minus pb_fence_beside's alone, one local store and fence.sc.sys, 1 block, same instance"},
	// gpu.fence_poll_wait_growth: a fence beside 1–128 blocks polling host
	// memory (fence_polls.jsonl); the fences beside pollers of local memory,
	// the release/acquire ping-pongs of several pairs and the fenced
	// barriers of several groups in host memory are predicted.
	{Params: []string{"gpu.fence_poll_wait_growth"}, Files: []string{"h200x1-arsim/fence_polls.jsonl"}, Kinds: []trace.Kind{trace.KindLoop},
		Covers: func(r trace.Record) bool { return r.Loop == "fence" }, AlsoPredicts: []string{"h200x1-arsim/fence_kinds.jsonl", "h200x1-arsim/fence_threads.jsonl", "h200x1-arsim/fence_pulls.jsonl", "h200x1-arsim/fence_pulls_2.jsonl", "h200x1-arsim/fence_stream.jsonl", "h200x1-arsim/fence_stream_2.jsonl", "h200x1-arsim/fence_reads.jsonl", "h200x1-arsim/fence_beside_2.jsonl", "h200x1-arsim/fence_spill.jsonl", "h200x1-arsim/h100_parts.jsonl"},
		On: func(r trace.Record) bool {
			return r.Loop == "fence" && r.NeighbourOp == "poll" && r.NeighbourPlace == "host"
		}, How: "least squares through 0 over log2(pollers) of (ns − the same fence alone) / the host round trip − 1/2"},
	// pcie.store_share_bytes: the writer's rate while reader kernels run
	// beside a writer kernel of one block (read_beside_write_20.jsonl);
	// the same at 2 and 8 writer blocks, and every reader, predicted.
	{Params: []string{"pcie.store_share_bytes"}, Files: []string{"h200x1-arsim/read_beside_write_20.jsonl"}, Kinds: []trace.Kind{trace.KindHostLinkConcurrency},
		On: func(r trace.Record) bool {
			return r.What == "sm_read_beside_write" && r.WriteBlocks == 1
		}, How: "least squares of the relative errors of the writer's rate while the readers run, from its time alone beside each record"},
	{Params: []string{"pcie.sm_host_bandwidth"}, Files: []string{"h200x1-arsim/host_link.jsonl"}, Kinds: []trace.Kind{trace.KindHostLinkConcurrency},
		Covers:       func(r trace.Record) bool { return r.What == "sm_bidir" || r.What == "sm_read_beside_write" },
		AlsoPredicts: slices.Concat([]string{"h200x1-arsim/host_link_2.jsonl", "h200x1-arsim/read_depth_2.jsonl", "h200x1-arsim/read_span.jsonl"}, readDepthOthers, readBesideWrite),
		On: func(r trace.Record) bool {
			return r.What == "sm_bidir" && r.GPUs == 1 && (r.Blocks == 0 || r.Blocks == 132)
		}, How: "GB/s of SM loads and stores of host memory at once, together, 132 blocks each way"},
}, hostQueueFits, pcieFits, []Fit{
	{Params: []string{"hostmem.fresh_line_saving"}, Files: []string{"h200x1-arsim/ll_live_2.jsonl"}, Kinds: []trace.Kind{trace.KindLoop},
		Covers:       func(r trace.Record) bool { return r.Loop == "ll" && r.Recv == "host" && r.Producer != "" },
		AlsoPredicts: append([]string{"h200x1-arsim/ll_live.jsonl", "h200x1-arsim/ll128_live.jsonl", "h200x1-arsim/ll128_pairs.jsonl"}, perBlockRepeats...),
		On: func(r trace.Record) bool {
			return r.Producer == "before" || r.Producer == "evicted"
		}, How: "median over threads of ns per iteration with the lines evicted minus with the lines written just before"},
	{Params: []string{"nccl.ll_step_overhead"}, Files: []string{"h200x1-arsim/ll_steps.jsonl"}, Kinds: []trace.Kind{trace.KindLoop},
		Covers:       func(r trace.Record) bool { return r.Loop == "ll_steps" },
		AlsoPredicts: append([]string{"h200x1-arsim/ll128_steps.jsonl", "h200x1-arsim/steps_3.jsonl"}, perBlockRepeats...),
		On:           func(r trace.Record) bool { return r.Loop == "ll_steps" && r.Threads == 512 },
		How:          "(ns per iteration with the step bookkeeping − without) × iterations per step, 512 threads"},
	{Params: []string{"nccl.ll128_step_overhead"}, Files: []string{"h200x1-arsim/ll128_steps.jsonl"}, Kinds: []trace.Kind{trace.KindLoop},
		Covers:       func(r trace.Record) bool { return r.Loop == "ll128_steps" },
		AlsoPredicts: append([]string{"h200x1-arsim/steps_3.jsonl"}, perBlockRepeats...),
		On:           func(r trace.Record) bool { return r.Loop == "ll128_steps" && r.Threads == 640 },
		How:          "(ns per iteration with the step bookkeeping − without) × iterations per step, 640 threads"},
	{Params: []string{"gpu.dram_src_extra"}, Files: []string{"h200x1-arsim/src_residency.jsonl"}, Kinds: []trace.Kind{trace.KindLoop},
		AlsoPredicts: perBlockRepeats,
		On:           func(r trace.Record) bool { return r.Loop == "ll" && r.Threads == 512 },
		How:          "ns per iteration with the user buffer streamed from HBM minus in the L2, 512 threads"},
	{Params: []string{"nccl.simple_step_overhead"}, Files: []string{"h200x1-arsim/perblock.jsonl"}, Kinds: []trace.Kind{trace.KindLoop},
		AlsoPredicts: append([]string{"h200x1-arsim/simple_fresh.jsonl", "h200x1-arsim/loop_start.jsonl", "h200x1-arsim/loop_start_2.jsonl", "h200x1-arsim/simple_blocks.jsonl", "h200x1-arsim/simple_tail.jsonl", "h200x1-arsim/simple_whole.jsonl"}, perBlockRepeats...),
		On: func(r trace.Record) bool {
			return r.Loop == "simple_step" && r.Dst == "local" && r.SliceBytes == 0 && r.Fence == "none" && r.Threads == 512
		}, How: "ns per step"},
	// nccl.graph_mixing_extra: NCCL's one-rank send/receive at 8 B in CUDA
	// graphs of 20, with NCCL's default and with NCCL_GRAPH_MIXING_SUPPORT=0;
	// the graphs of 61, 122 and 244 are its predicted side, as are the
	// empty kernel nodes of the same runs (the graph gap in a process that
	// runs NCCL).
	{Params: []string{"nccl.graph_mixing_extra"}, Files: []string{"h200x1-arsim/nccl_graph_size.jsonl"}, Kinds: []trace.Kind{trace.KindNCCLKernel},
		Covers: func(r trace.Record) bool { return r.NCCLOp == "self_sendrecv" || r.NCCLOp == "empty_kernel" },
		On: func(r trace.Record) bool {
			return r.NCCLOp == "self_sendrecv" && r.Bytes == 8 && r.OpsPerGraph == 20
		}, How: "µs per call with NCCL's default less with NCCL_GRAPH_MIXING_SUPPORT=0"},
	// gpu.launch_graph_settled: the graph gap per empty kernel node of
	// graph_gap_state.jsonl's 15 processes at their last measurement, when
	// every one had stepped. Every other graph gap of the one-H200
	// captures is a prediction, by this or, in a process that has not
	// stepped, by gpu.launch_graph (two H200s' micro2): the other records
	// of graph_gap_state.jsonl and the micro2 part of every capture (those
	// of the two-H200 captures no fit cites are predictions already:
	// naming them would take that from their other records).
	{Params: []string{"gpu.launch_graph_settled"}, Files: []string{"h200x1-arsim/graph_gap_state.jsonl"},
		Kinds: []trace.Kind{trace.KindNCCLKernel, trace.KindEmptyKernel}, Covers: graphGapRecord,
		AlsoPredicts: []string{"h200x1-arsim/*"},
		On:           func(r trace.Record) bool { return r.State == "three long kernels run" }, How: "median µs per node"},
	// gpu.kernel_prologue: one record of the project's flag kernels on two
	// H200s, the one-shot over NVLink at 1 KiB, 1 block × 512 threads, in
	// CUDA graphs (measurements.jsonl line 39), less every other modelled
	// part; every other flag-kernel record (one- and two-shot, over NVLink
	// and through host memory, 1–132 blocks, 128 and 512 threads, 1 KiB to
	// 4 MiB) is its predicted side.
	{Params: []string{"gpu.kernel_prologue"}, Files: []string{"h200x2-arsim/measurements.jsonl"}, Kinds: []trace.Kind{trace.KindAllreduce},
		Covers: flagKernel, On: kernelPrologueSide, How: "the record less every other modelled part (the value that makes it come out within 0.5 %)"},
}, callExtraFits())

// settledGraphGap: a graph-gap record (an empty kernel node of a replayed
// CUDA graph) measured in a process past the step of its gap
// (settledProcess).
func settledGraphGap(r trace.Record) bool {
	return graphGapRecord(r) && settledProcess(r)
}

// graphGapRecord: a graph-gap record, an empty kernel node of a replayed CUDA
// graph.
func graphGapRecord(r trace.Record) bool {
	return r.Launch == trace.LaunchCUDAGraph && (r.Kind == trace.KindEmptyKernel || r.NCCLOp == "empty_kernel")
}

// flagKernel: the project's own flag kernels (tools/capture flagar.py).
func flagKernel(r trace.Record) bool {
	return r.Impl == trace.ImplFlagOneShot || r.Impl == trace.ImplFlagTwoShot
}

// kernelPrologueSide: the flag one-shot over NVLink, 1 KiB, one block of
// 512 threads, bf16, in CUDA graphs.
func kernelPrologueSide(r trace.Record) bool {
	return r.Impl == trace.ImplFlagOneShot && r.Transport == trace.TransportP2P && r.Bytes == 1024 && r.Blocks == 1 &&
		r.Threads == 512 && r.Dtype == "bf16" && r.Launch == trace.LaunchCUDAGraph
}

// callExtraFits are the fits of nccl.call_extra.<algo>.<proto>, ring and
// tree × LL, LL128 and Simple, each on its own records of the two-GPU
// captures; the channel captures are their predicted side.
func callExtraFits() []Fit {
	var fs []Fit
	for _, algo := range []string{"ring", "tree"} {
		for _, proto := range []string{"ll", "ll128", "simple"} {
			files := []string{"h200x2-arsim/measurements.jsonl"}
			if proto == "simple" {
				files = append(files, "h200x2-arsim/nccl_simple_threads.jsonl")
			}
			fs = append(fs, Fit{Params: []string{"nccl.call_extra." + algo + "." + proto}, Files: files,
				Kinds:        []trace.Kind{trace.KindAllreduce, trace.KindAllreduceSequence},
				AlsoPredicts: []string{"h200x2-arsim/nccl_channels.jsonl", "h200x2-arsim/sequences_len.jsonl", "h200x2-arsim/sequences_len_nomix.jsonl"},
				// NCCL's own choice (algo or protocol auto) runs one of
				// the six; its records are every fit's predicted side
				Covers: func(r trace.Record) bool {
					return r.Impl == trace.ImplNCCL && (r.Algo == algo && r.Proto == proto || r.Algo == "auto" || r.Proto == "auto")
				},
				On: func(r trace.Record) bool {
					return r.Kind == trace.KindAllreduce && r.Algo == algo && r.Proto == proto && callExtraSide(r)
				}, How: "median of measured − simulated with the parameter at 0"})
		}
	}
	return fs
}

// ll128IterExtraSide: NCCL's ring/LL128 over NVLink with one channel, in
// CUDA graphs, at 8 MiB and more (where the block's loop is the time).
// llIterExtraSide: NCCL's LL at one channel, 8 and 32 MiB, in graphs,
// ring and tree, over NVLink and SHM: where the loop sets the time.
func llIterExtraSide(r trace.Record) bool {
	return r.Proto == "ll" && r.MaxChannels == 1 && r.Launch == trace.LaunchCUDAGraph && r.Bytes >= 8<<20
}

func ll128IterExtraSide(r trace.Record) bool {
	return r.Algo == "ring" && r.Proto == "ll128" && r.Transport == trace.TransportP2P && r.MaxChannels == 1 &&
		r.Launch == trace.LaunchCUDAGraph && r.Bytes >= 8<<20
}

// callExtraSide: NCCL in CUDA graphs, bf16, at most 8 KiB, default
// channels: where the per-call cost is nearly all of the time, so that the
// fit does not take up what the model misses of the data's movement.
func callExtraSide(r trace.Record) bool {
	return r.Launch == trace.LaunchCUDAGraph && r.Dtype == "bf16" && r.Bytes <= 8<<10
}

// hostBarrier: W-rank barriers among one GPU's blocks through host memory,
// and the two-rank one-shot of such barriers (host_shot).
func hostBarrier(r trace.Record) bool {
	return r.Loop == "group_barrier" && r.Target == "host" || r.Loop == "host_shot"
}

// hostBarrierCaptures are the captures with host-memory barriers but file,
// whose every such record a barrier fit predicts.
func hostBarrierCaptures(file string) []string {
	all := append([]string{"h200x1-arsim/perblock_2.jsonl", "h200x1-arsim/barrier_lines.jsonl", "h200x1-arsim/barrier_lines_2.jsonl",
		"h200x1-arsim/line_probe_2.jsonl", "h200x1-arsim/line_probe_3.jsonl", "h200x1-arsim/barrier_spacing.jsonl",
		"h200x1-arsim/barrier_spacing_2.jsonl", "h200x1-arsim/barrier_spacing_3.jsonl", "h200x1-arsim/barrier_layout.jsonl",
		"h200x1-arsim/barrier_layout_2.jsonl", "h200x1-arsim/host_shot.jsonl", "h200x1-arsim/host_shot_overlap.jsonl", "h200x1-arsim/host_shot_sizes.jsonl", "h200x1-arsim/store_rate.jsonl", "h200x1-arsim/host_queue_2.jsonl",
		"h200x1-arsim/barrier_modes.jsonl", "h200x1-arsim/barrier_modes_w.jsonl", "h200x1-arsim/fence_groups.jsonl",
		"h200x1-arsim/barrier_chunks.jsonl", "h200x1-arsim/barrier_chunks_2.jsonl", "h200x1-arsim/barrier_pairs.jsonl",
		"h200x1-arsim/barrier_groups_apart.jsonl", "h200x1-arsim/barrier_class.jsonl", "h200x1-arsim/address_2.jsonl",
		"h200x1-arsim/barrier_sleep_host.jsonl"}, perBlockRepeats...)
	return slices.DeleteFunc(all, func(f string) bool { return f == file })
}

// slotServiceSide: barriers in host memory whose ranks' sectors lie 4 KiB
// apart (layout packed_4k), one group, 2, 4 and 8 ranks: what the slots
// cost where the sectors do not collide.
func slotServiceSide(r trace.Record) bool {
	return hostBarrier(r) && r.Layout == "packed_4k" && r.Groups == 1
}

// sectorCollisionSide: barriers in host memory whose ranks' sectors lie
// 128 B apart, each in a line of its own (layout packed_128), 2 and 4
// ranks, every group count: 8 ranks, the sectors 256 B to 2 KiB apart,
// the layouts whose lines several sectors share and the other instances
// are its predicted side.
func sectorCollisionSide(r trace.Record) bool {
	return hostBarrier(r) && r.Layout == "rank_stride" && r.FlagOffset%1024+r.StrideBytes < 1024
}

// loadWaitHostSide: perblock.jsonl's one-block copies of two sources from
// host memory to local memory at 4 and 8 packs a source (three waits an
// iteration), 128 and 512 threads.
// l2WaitSide is the fitted side of gpu.vector_issue_l2 and
// gpu.load_wait_l2: one block of 128 threads of a loop copy whose sources
// sit in the L2 and whose compiled loop keeps its registers.
func l2WaitSide(r trace.Record) bool {
	return r.Loop == "copy" && r.SrcResidency == "l2" && r.Blocks == 1 && r.Threads == 128 && captureSpills[copyKernel(r)] == [2]float64{}
}

// changingFlags covers the ping-pongs through flags in host memory that
// share a sector (hw: hostmem.changing_flag_wait).
func changingFlags(r trace.Record) bool {
	return r.Target == "host" && r.SpacingBytes > 0 && r.SpacingBytes < 32
}

// spillReloadSide is the fitted side of gpu.spill_reload_wait: the plain
// copy that spills registers (pb_copy_8_2) from GPU memory to GPU memory,
// fresh data, one block of 128 threads.
func spillReloadSide(r trace.Record) bool {
	return r.Loop == "copy" && copyKernel(r) == "pb_copy_8_2" && r.Src == "local" && r.Dst == "local" && r.Blocks == 1 &&
		r.Threads == 128 && r.SrcLoads == "" && r.SrcResidency != "l2"
}

func loadWaitHostSide(r trace.Record) bool {
	return r.Loop == "copy" && r.Sources == 2 && r.Src == "host" && r.Dst == "local" && r.Blocks == 1 &&
		(r.Unroll == 4 || r.Unroll == 8) && r.KernelName == "" && r.LaunchBound == 0
}

// hostStoreIssueSide is the fitted side of gpu.host_store_issue_per_warp:
// one block's plain copies from GPU memory, 2–8 loads a source in flight,
// to host memory and to GPU memory, 32 iterations or more, but the
// two-source copy of 8 (pb_copy_8_2, which spills registers).
func hostStoreIssueSide(r trace.Record) bool {
	return r.Loop == "copy" && r.Src == "local" && (r.Dst == "host" || r.Dst == "local") && r.Blocks == 1 && r.Unroll > 1 &&
		r.Iters >= 32 && r.Code == "" && r.Fence == "" && r.LaunchBound == 0 && r.KernelName == "" && r.SrcResidency != "l2" &&
		!(r.Unroll == 8 && r.Sources == 2)
}

// vectorIssueSide: local one-source copies of 1 block with more than one
// load in flight that the SM's load rate does not bound.
func vectorIssueSide(r trace.Record) bool {
	return r.Loop == "copy" && r.Sources == 1 && r.Src == "local" && r.Dst == "local" && r.Blocks == 1 &&
		r.Unroll > 1 && !(r.Unroll == 8 && r.Threads == 512)
}

// HeldOutChips are the trace systems of chips no parameter is fitted on,
// with the chip's name: their presets change the fitted machines' tables
// only where a spec sheet says the chip differs (topology/params/h100x1.txt),
// so each of their records a fit covers by kind is on the predicted side,
// along the dimension "chip".
var HeldOutChips = map[string]string{"h100x1-vm": "H100 SXM"}

// fitOf returns the fit whose fitted side holds record r of file, and
// whether a fit covers r's kind in that file at all.
func fitOf(file string, r trace.Record) (fit *Fit, covered bool) {
	_, chip := HeldOutChips[r.System]
	for i := range Fits {
		f := &Fits[i]
		if !slices.Contains(f.Kinds, r.Kind) || (f.Covers != nil && !f.Covers(r)) {
			continue
		}
		if chip {
			return nil, true // no parameter is fitted on the chip: every record its kinds cover is predicted
		}
		in := func(w string) bool { return sameCapture(file, w) || matchesCapture(file, w) }
		if slices.ContainsFunc(f.AlsoPredicts, in) {
			covered = true
			continue
		}
		if !slices.ContainsFunc(f.Files, in) {
			continue
		}
		covered = true
		if f.On(r) {
			return f, true
		}
	}
	return nil, covered
}

// atomicLinesSide: atomics of blocks on words 4–32 B apart in host memory
// spanning more than one line (hostmem.atomic_service_lines' fitted side).
func atomicLinesSide(r trace.Record) bool {
	return r.Target == "host" && strings.HasPrefix(r.Request, "atomic") && r.SpacingBytes > 0 && r.SpacingBytes <= 32 && r.Blocks*r.SpacingBytes > 128
}

// matchesCapture reports whether pattern (path.Match) matches file's
// capture name (captureKey).
func matchesCapture(file, pattern string) bool {
	if file == "" || !strings.ContainsAny(pattern, "*?[") {
		return false
	}
	ok, _ := path.Match(pattern, captureKey(file))
	return ok
}

// sameCapture reports whether file is the capture named by want
// (captureKey).
func sameCapture(file, want string) bool {
	return file != "" && captureKey(file) == want
}

// captureKey names a capture file as the fits do: its last two path
// elements ("h200x1-arsim/perblock.jsonl").
func captureKey(file string) string {
	return filepath.ToSlash(filepath.Join(filepath.Base(filepath.Dir(file)), filepath.Base(file)))
}

// smIssueSide is the fitted side of gpu.sm_load_bandwidth and
// gpu.sm_local_store_bandwidth: one block of 512 threads copying and
// reducing two sources in NCCL's loop shape, sources in the L2, local to
// local, one destination.
func smIssueSide(r trace.Record) bool {
	return r.Loop == "copy" && r.Code == "nccl_hunks" && r.SrcResidency == "l2" && r.Src == "local" && r.Dst == "local" &&
		r.Blocks == 1 && r.Threads == 512 && r.Sources <= 2 && r.Dests <= 1
}
