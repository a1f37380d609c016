// Package trace is the formats of measured traces of real GPU hosts: it
// reads them into typed values, so that the simulator's predictions can be
// checked against them (package validate), and writes JSON Lines back.
// It knows the formats only: nothing here simulates or draws.
//
// It reads three formats. Every reader takes the input, a name used in
// error messages (usually the file's path) and ReadOptions; each has a
// ...File variant that opens a path. Malformed input gives a *ParseError,
// whose message names the file, the line and the field:
//
//	trace: h200x2.jsonl line 12: field "us": want number, got string
//
// With ReadOptions.SkipBad a reader skips malformed lines instead and
// returns them as []BadLine. Nothing here prints, reads the clock or
// depends on map order: the same input gives the same result.
//
// # JSON Lines v1 (ReadJSONL)
//
// The project's own measurement format (docs/TRACE_FORMAT.md): one JSON
// object per line, blank lines ignored, each decoded into a Record. Times
// are µs; "us" is the median of 3–5 trials, "us_min"/"us_max" the fastest
// and slowest. Every record has "system" (string), "kind" and "clock"
// ("device_events", "host", "sm_clock64"). Per kind (required fields
// first, optional after "|"; fields not listed here are kept in
// Record.Extra):
//
//	kind                   fields                                              Primary()
//	allreduce              impl algo transport launch world dtype bytes us      us, "us"
//	                       proto (required for impl nccl) | us_min us_max
//	                       blocks threads max_channels nccl_env
//	allreduce_sequence     impl algo transport launch world dtype count tokens  us, "us" (whole sequence)
//	                       hidden bytes us proto (nccl) | us_min us_max nccl_env
//	memcpy                 dir bytes us | engine launch api streams transfers   us, "us"
//	                       us_min us_max
//	sm_access              op target blocks threads bytes us                    us, "us"
//	                       | bytes_per_access gbps us_min us_max
//	pointer_chase          target ns_per_step                                   ns_per_step, "ns"
//	flag_pingpong          via one_way_us | one_way_us_min round_trips note     one_way_us, "us"
//	empty_kernel           us | launch mode prefill_us us_min us_max            us, "us"
//	host_link_concurrency  what gpus gbps_per_gpu gbps_total | bytes_per_gpu    gbps_total, "GB/s"
//	fence (arsim)          target variant threads ns_per_iter                   ns_per_iter, "ns"
//	barrier (arsim)        world barrier stride_words blocks threads            us, "us" (per launch)
//	                       barriers_per_launch us | launch us_min us_max
//	nccl_kernel (arsim)    nccl_op launch us | bytes us_min us_max              us, "us"
//
// The per-block kinds (poll, block_pingpong, loop) are in docs/TRACE_FORMAT.md.
//
// Enumerations: impl ([Impl]) nccl, torch_symm_mem, host_staged_one_shot,
// arsim_flag_one_shot, arsim_flag_two_shot; algo ring, tree, auto,
// one_shot, two_shot; proto ll, ll128, simple, auto; transport
// ([Transport]) p2p, shm, host_memory; launch ([Launch]) cudagraph, eager;
// dtype bf16, fp16, fp32, fp64, fp8, int8, uint8, int32, uint32, int64,
// uint64; engine copy_engine; dir h2d, d2h, p2p, bidir; api cudaMemcpyAsync,
// torch.copy_; op read, read_only_loop, read_reduce, write; target host,
// local, peer; via host, peer; what ce_h2d, ce_d2h, ce_bidir, sm_read,
// sm_write; barrier cas, flag; mode single, back_to_back, queued, graph_replay;
// issuer native;
// nccl_op self_sendrecv, allreduce_one_rank, allreduce_one_rank_inplace,
// torch_allreduce_one_rank, memcpy_d2d, empty_kernel.
// nccl_env is an object of strings (NCCL variables by name). Sizes, counts,
// times and bandwidths must be positive (prefill_us may be 0), and us_min ≤
// us ≤ us_max. [WriteJSONL] writes records back in this format.
//
// Every integer field has a limit, so that no record asks the simulator
// for unbounded work: threads ≤ 1024 (CUDA), max_channels ≤ 64 (NCCL),
// bytes and bytes_per_gpu ≤ 1 TiB, world and gpus ≤ 4096, count ≤ 100000,
// barriers_per_launch ≤ 1024, transfers ≤ 65536, round_trips ≤ 2²⁰ (the
// rest in fieldDefs); a value beyond is a malformed line naming the field,
// the value and the limit. A line is at most [MaxLineBytes], an input at
// most [MaxTraceBytes] and [MaxTraceLines]; a UTF-8 byte-order mark before
// the first line is skipped.
//
// # nccl-tests text output (ReadNCCLTests)
//
// The table printed by all_reduce_perf and its siblings (all_gather_perf,
// reduce_scatter_perf, broadcast_perf, reduce_perf, alltoall_perf, ...):
// '#' header lines ("# nThread 1 nGpus 8 minBytes ...", one "#  Rank ..."
// line per rank, the column headers, "# Out of bounds values : 0 OK",
// "# Avg bus bandwidth : 12.3") around result rows of
//
//	size count type redop [root] time algbw busbw #wrong time algbw busbw #wrong
//
// with the out-of-place half first. Old builds print no root column, or an
// "error" column instead of "#wrong"; "#wrong" is N/A when validation is
// off. The result is an NCCLTestsRun.
//
// # PyTorch profiler / Kineto Chrome trace (ReadKineto)
//
// {"traceEvents": [...]} as torch.profiler exports it. Each NCCL kernel
// (ph "X", cat "kernel", named ncclDevKernel_AllReduce_Sum_bf16_RING_LL(...)
// or, before NCCL 2.19, ncclKernel_AllReduce_RING_LL_Sum_float(...))
// becomes a KinetoCollective; its size comes from the record_param_comms
// CPU op that launched it ("Collective name", "In msg nelems", "Out msg
// nelems", "dtype", "Group size", "Process Group Name"), found through the
// launch's correlation id and External id, or else by order. Kernels whose
// size cannot be found keep Bytes 0 and are listed in KinetoTrace.Warnings.
package trace
