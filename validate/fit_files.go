package validate

// readBesideWrite are tools/capture's read_beside_write and
// chase_beside_write captures.
var readBesideWrite = []string{"h200x1-arsim/read_beside_write.jsonl", "h200x1-arsim/read_beside_write_2.jsonl", "h200x1-arsim/read_beside_write_3.jsonl",
	"h200x1-arsim/read_beside_write_4.jsonl", "h200x1-arsim/read_beside_write_5.jsonl", "h200x1-arsim/read_beside_write_6.jsonl",
	"h200x1-arsim/read_beside_write_7.jsonl", "h200x1-arsim/read_beside_write_8.jsonl", "h200x1-arsim/read_beside_write_9.jsonl", "h200x1-arsim/read_beside_write_10.jsonl",
	"h200x1-arsim/read_beside_write_11.jsonl", "h200x1-arsim/read_beside_write_12.jsonl", "h200x1-arsim/read_beside_write_13.jsonl", "h200x1-arsim/read_beside_write_14.jsonl", "h200x1-arsim/read_beside_write_15.jsonl", "h200x1-arsim/read_beside_write_16.jsonl", "h200x1-arsim/read_beside_write_17.jsonl", "h200x1-arsim/read_beside_write_18.jsonl", "h200x1-arsim/read_beside_write_19.jsonl", "h200x1-arsim/read_beside_write_20.jsonl", "h200x1-arsim/read_beside_write_21.jsonl",
	"h200x1-arsim/chase_local.jsonl", "h200x1-arsim/chase_local_2.jsonl", "h200x1-arsim/chase_kernels.jsonl", "h200x1-arsim/chase_landing.jsonl",
	"h200x1-arsim/writer_on_sm.jsonl", "h200x1-arsim/chase_pinned.jsonl"}

// readDepthOthers are read_placement's captures other than
// read_depth_2.jsonl, on which the host queue's parameters are fitted.
var readDepthOthers = []string{"h200x1-arsim/read_depth.jsonl", "h200x1-arsim/read_depth_3.jsonl", "h200x1-arsim/read_depth_4.jsonl",
	"h200x1-arsim/read_depth_5.jsonl", "h200x1-arsim/read_depth_6.jsonl", "h200x1-arsim/read_placement.jsonl", "h200x1-arsim/chase_forms.jsonl",
	"h200x1-arsim/read_span_2.jsonl", "h200x1-arsim/read_span_3.jsonl", "h200x1-arsim/read_span_4.jsonl", "h200x1-arsim/read_crowd.jsonl", "h200x1-arsim/read_cores.jsonl",
	"h200x1-arsim/read_cores_2.jsonl", "h200x1-arsim/read_cores_3.jsonl", "h200x1-arsim/read_stride.jsonl",
	"h200x1-arsim/read_pairs.jsonl", "h200x1-arsim/read_halves.jsonl", "h200x1-arsim/read_readers.jsonl",
	"h200x1-arsim/read_halves_2.jsonl", "h200x1-arsim/chase_halves.jsonl", "h200x1-arsim/read_gpc.jsonl",
	"h200x1-arsim/read_octets.jsonl", "h200x1-arsim/read_pairs_2.jsonl", "h200x1-arsim/read_pairs_3.jsonl",
	"h200x1-arsim/read_halves_span.jsonl", "h200x1-arsim/read_groups.jsonl", "h200x1-arsim/read_groups_2.jsonl", "h200x1-arsim/read_groups_3.jsonl", "h200x1-arsim/read_groups_4.jsonl", "h200x1-arsim/read_groups_5.jsonl", "h200x1-arsim/read_pairs_4.jsonl", "h200x1-arsim/read_groups_6.jsonl", "h200x1-arsim/read_groups_7.jsonl", "h200x1-arsim/read_groups_8.jsonl", "h200x1-arsim/read_groups_9.jsonl",
	"h200x1-arsim/read_halves_3.jsonl", "h200x1-arsim/read_halves_4.jsonl", "h200x1-arsim/read_pairs_5.jsonl", "h200x1-arsim/read_pairs_6.jsonl", "h200x1-arsim/read_groups_10.jsonl", "h200x1-arsim/read_halves_5.jsonl", "h200x1-arsim/read_span_5.jsonl", "h200x1-arsim/read_span_6.jsonl", "h200x1-arsim/read_gpc_2.jsonl",
	"h200x1-arsim/read_gpcs.jsonl", "h200x1-arsim/read_count.jsonl", "h200x1-arsim/read_count_2.jsonl", "h200x1-arsim/read_gpcs_2.jsonl", "h200x1-arsim/read_count_3.jsonl"}

// perBlockRepeats are whole runs of the per-block suite on further H200
// instances, and a run of the parts first captured on the H100
// (h100_parts.jsonl; testdata/h200x1-arsim/README.md): nothing is fitted
// on them, so every record a per-block fit covers is on its predicted
// side.
var perBlockRepeats = []string{"h200x1-arsim/perblock_3.jsonl", "h200x1-arsim/perblock_3b.jsonl", "h200x1-arsim/perblock_4.jsonl", "h200x1-arsim/perblock_5.jsonl", "h200x1-arsim/perblock_6.jsonl", "h200x1-arsim/h100_parts.jsonl"}

// micro2Repeats are the further captures that hold the micro2 part (the
// per-block runs on H200 instances, and two H200s): their micro2 records
// are predicted.
var micro2Repeats = []string{"h200x1-arsim/perblock_2.jsonl", "h200x1-arsim/perblock_3.jsonl", "h200x1-arsim/perblock_3b.jsonl",
	"h200x1-arsim/perblock_4.jsonl", "h200x1-arsim/perblock_5.jsonl", "h200x1-arsim/perblock_6.jsonl", "h200x1-arsim/barrier_lines.jsonl", "h200x1-arsim/barrier_lines_2.jsonl",
	"h200x1-arsim/barrier_spacing.jsonl", "h200x1-arsim/barrier_spacing_2.jsonl", "h200x1-arsim/barrier_spacing_3.jsonl",
	"h200x1-arsim/line_probe.jsonl", "h200x1-arsim/line_probe_2.jsonl", "h200x1-arsim/line_probe_3.jsonl",
	"h200x1-arsim/ll_live.jsonl", "h200x1-arsim/ll_steps.jsonl", "h200x1-arsim/native_issue.jsonl", "h200x1-arsim/barrier_layout.jsonl",
	"h200x1-arsim/barrier_layout_2.jsonl", "h200x1-arsim/launch_state.jsonl", "h200x1-arsim/barrier_threads.jsonl",
	"h200x1-arsim/write_buffer.jsonl", "h200x1-arsim/fence_beside.jsonl", "h200x1-arsim/heldout_2.jsonl", "h200x1-arsim/copy_registers.jsonl", "h200x1-arsim/pull_wide.jsonl",
	"h200x1-arsim/push_wide.jsonl", "h200x1-arsim/ll_ops.jsonl", "h200x1-arsim/ll_ops_2.jsonl",
	"h200x1-arsim/heldout_3.jsonl", "h200x1-arsim/wide_2.jsonl", "h200x1-arsim/page_touch.jsonl", "h200x1-arsim/pingpong_sector.jsonl", "h200x1-arsim/pingpong_line.jsonl", "h200x1-arsim/pingpong_spacing.jsonl", "h200x1-arsim/poll_pages.jsonl",
	"h200x1-arsim/host_shot.jsonl", "h200x1-arsim/host_shot_overlap.jsonl", "h200x1-arsim/host_shot_sizes.jsonl", "h200x1-arsim/host_load.jsonl", "h200x1-arsim/store_rate.jsonl", "h200x1-arsim/host_queue_2.jsonl", "h200x1-arsim/store_loop.jsonl", "h200x1-arsim/store_lines.jsonl", "h200x1-arsim/store_stream_2.jsonl", "h200x1-arsim/store_width.jsonl", "h200x1-arsim/store_depth.jsonl", "h200x1-arsim/barrier_modes.jsonl", "h200x1-arsim/barrier_modes_w.jsonl", "h200x1-arsim/fence_polls.jsonl", "h200x1-arsim/fence_reads.jsonl", "h200x1-arsim/host_readback.jsonl", "h200x1-arsim/simple_fresh.jsonl", "h200x1-arsim/copy_unroll.jsonl", "h200x1-arsim/nccl_copy.jsonl", "h200x1-arsim/loop_start.jsonl", "h200x1-arsim/fence_land.jsonl", "h200x1-arsim/loop_start_2.jsonl", "h200x1-arsim/nccl_dests.jsonl", "h200x1-arsim/store_burst.jsonl", "h200x1-arsim/reduce_sources.jsonl", "h200x1-arsim/reduce_blocks.jsonl", "h200x1-arsim/reduce_2.jsonl", "h200x1-arsim/reduce_depth.jsonl", "h200x1-arsim/load_waits.jsonl", "h200x1-arsim/load_waits_lb.jsonl", "h200x1-arsim/pull_bf16.jsonl", "h200x1-arsim/pull_short.jsonl", "h200x1-arsim/pull_threads.jsonl", "h200x1-arsim/pull_w.jsonl", "h200x1-arsim/pull_f32.jsonl", "h200x1-arsim/fence_groups.jsonl", "h200x1-arsim/fence_pollers.jsonl", "h200x1-arsim/fence_kinds.jsonl", "h200x1-arsim/barrier_chunks.jsonl", "h200x1-arsim/fence_threads.jsonl", "h200x1-arsim/barrier_chunks_2.jsonl", "h200x1-arsim/barrier_pairs.jsonl", "h200x1-arsim/barrier_groups_apart.jsonl", "h200x1-arsim/barrier_class.jsonl", "h200x1-arsim/address_2.jsonl", "h200x1-arsim/barrier_sleep_host.jsonl", "h200x1-arsim/ll128_host.jsonl", "h200x1-arsim/ll128_pairs.jsonl", "h200x1-arsim/simple_blocks.jsonl", "h200x1-arsim/simple_tail.jsonl", "h200x1-arsim/simple_whole.jsonl", "h200x1-arsim/host_copies_3.jsonl", "h200x1-arsim/host_copies_4.jsonl", "h200x2-arsim/micro2.jsonl"}
