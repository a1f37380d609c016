#!/bin/bash
# One GPU, a new chip or instance: the per-block suite (with its held-out part), micro2, the flag one-shot through
# host memory, NCCL's own kernel on one rank, and readers beside one storing block, each into its own folder under
# a work folder (run_on_device.sh's four files each), packed at the end into $OUT/suite.tar.gz (the device tool
# brings back a few files only). Run by the device tool from the repository root:
#   bash tools/capture/run_chip_suite.sh [SYSTEM_ID]
# SYSTEM_ID defaults to h100x1-vm on an H100 and h200x1-vm on an H200. About 9 minutes at most.
set -u
FINAL=${OUT:-./out}
OUT=/tmp/arsim_suite; rm -rf "$OUT"
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$GPU" in *H100*) S=h100x1-vm ;; *H200*) S=h200x1-vm ;; *) S=gpu1-vm ;; esac
S=${1:-$S}
mkdir -p "$OUT"
nvidia-smi -q > "$OUT/nvidia_smi_q.txt" 2>&1
echo "gpu: $GPU; system id: $S" | tee "$OUT/suite.log"
part() { # part DIR LIMIT_S capture args…
	local d=$1 t=$2; shift 2
	mkdir -p "$OUT/$d"
	local t0=$SECONDS
	OUT="$OUT/$d" CAPTURE_TIMEOUT_S=$t bash tools/capture/run_on_device.sh --system-id "$S" "$@" > "$OUT/$d/stdout.txt" 2>&1
	echo "$d: $((SECONDS - t0)) s, $(wc -l < "$OUT/$d/measurements.jsonl" 2>/dev/null || echo 0) records" | tee -a "$OUT/suite.log"
}
PERBLOCK_PARTS=fences,simple_steps,pulls,ll,ll128,ll128w,group_barriers,copies,pingpong,polls,ll_live,ll128_live,ll_steps,ll128_steps,src_residency,heldout \
	part perblock 170 --phases system,perblock,micro2 all
PERBLOCK_PARTS=host_shot,host_load,store_rate,nccl_copy part host_shot 150 --phases perblock all
part nccl_self 90 nccl-self
MICRO_PARTS=sm_groups,read_count,read_gpcs,chase_beside_write part readers 120 --phases sm all
PERBLOCK_PARTS=barrier_modes,barrier_spacing,barrier_lines,barrier_layout,barrier_threads,fence_polls,fence_kinds,pull_wide,push_wide,reduce_sources,reduce_blocks,ll_ops,ll128_host_blocks,host_copies,heldout_2,heldout_3 \
	part perblock_more 200 --phases perblock all
part memcpy 60 --phases system,memcpy all
if [ "${SUITE_REST:-0}" = 1 ]; then # the per-block suite's other parts, and readers placed by SM, beside stores
	PERBLOCK_PARTS=line_probe,ll_code,write_buffer,fence_blocks,fence_beside,barrier_sleep,copy_registers,page_touch,pingpong_sector,store_loop,store_lines,store_width,pull_iters,copy_l2,store_depth,barrier_modes_w,fence_reads,host_readback,simple_fresh,copy_unroll_l2,loop_start,fence_land,nccl_dests,store_burst,reduce_depth,load_waits,load_waits_lb,pull_bf16,pull_short,pull_threads,pull_w,pull_f32,fence_groups,fence_pollers,barrier_chunks,fence_threads,barrier_chunks_2,barrier_pairs,barrier_groups_apart,barrier_class,barrier_sleep_host,host_shot_overlap,host_shot_phases,host_shot_sizes,pingpong_line,pingpong_spacing,host_shot_phases_2,poll_pages,ll128_live_pairs,ll128_spin,fence_pulls,fence_burst,fence_loads,fence_stream,fence_after_pull,host_copies_2 \
		part perblock_rest 240 --phases perblock all
	MICRO_PARTS=read_beside_write,landing,line_latency,sm_groups,read_cores,read_placement part readers_rest 200 --phases sm all
fi
mkdir -p "$FINAL"; tar czf "$FINAL/suite.tar.gz" -C "$OUT" . && cp "$OUT/suite.log" "$FINAL/"
