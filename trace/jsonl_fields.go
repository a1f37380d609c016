package trace

// The fields of JSON Lines v1: their types, limits and checks.

import (
	"math"
	"slices"
	"strings"
)

// jtype is the JSON type a field wants.
type jtype int

const (
	jString jtype = iota
	jNumber
	jInt
	jObject // an object of strings
)

func (t jtype) String() string {
	return [...]string{jString: "string", jNumber: "number", jInt: "integer", jObject: "object"}[t]
}

// json is the JSON type of a value of t.
func (t jtype) json() string {
	return [...]string{jString: "string", jNumber: "number", jInt: "number", jObject: "object"}[t]
}

// fieldDef describes one field of JSON Lines v1. Exactly one of str, num,
// i32, i64 and obj is set.
type fieldDef struct {
	name   string
	typ    jtype
	enum   []string // allowed values of a string field; nil: any non-empty string
	zeroOK bool     // a number that may be 0 (and then reads as not given); a string that may be empty
	max    int64    // an integer's largest value (every integer field has one)
	why    string   // what max is
	str    func(*Record) *string
	num    func(*Record) *float64
	i32    func(*Record) *int
	i64    func(*Record) *int64
	obj    func(*Record) *map[string]string
	// value: the field is a measured value (the record's result), not
	// part of the configuration it was measured in (Configuration).
	value bool
}

// fieldDefs lists the fields of JSON Lines v1 in a fixed order, so that
// validation reports the same error on every run.
var fieldDefs = []fieldDef{
	{name: "system", typ: jString, str: func(r *Record) *string { return &r.System }},
	{name: "kind", typ: jString, enum: kindValues(), str: func(r *Record) *string { return (*string)(&r.Kind) }},
	{name: "clock", typ: jString, enum: []string{"device_events", "host", "sm_clock64"}, str: func(r *Record) *string { return (*string)(&r.Clock) }},
	{name: "launch", typ: jString, enum: names(Launches()), str: func(r *Record) *string { return (*string)(&r.Launch) }},
	{name: "us", value: true, typ: jNumber, num: func(r *Record) *float64 { return &r.Us }},
	{name: "us_min", value: true, typ: jNumber, num: func(r *Record) *float64 { return &r.UsMin }},
	{name: "us_max", value: true, typ: jNumber, num: func(r *Record) *float64 { return &r.UsMax }},
	{name: "impl", typ: jString, enum: names(Impls()), str: func(r *Record) *string { return (*string)(&r.Impl) }},
	{name: "algo", typ: jString, enum: []string{"auto", "one_shot", "ring", "tree", "two_shot"}, str: func(r *Record) *string { return &r.Algo }},
	{name: "proto", typ: jString, enum: []string{"auto", "ll", "ll128", "simple"}, str: func(r *Record) *string { return &r.Proto }},
	{name: "transport", typ: jString, enum: names(Transports()), str: func(r *Record) *string { return (*string)(&r.Transport) }},
	{name: "world", typ: jInt, max: maxGPUs, why: "GPUs in one measurement: more than any NVLink domain (576)", i32: func(r *Record) *int { return &r.World }},
	{name: "dtype", typ: jString, enum: []string{"bf16", "fp16", "fp32", "fp64", "fp8", "int8", "int32", "int64", "uint8", "uint32", "uint64"}, str: func(r *Record) *string { return &r.Dtype }},
	{name: "bytes", typ: jInt, max: maxBytes, why: bytesWhy, i64: func(r *Record) *int64 { return &r.Bytes }},
	{name: "blocks", typ: jInt, max: math.MaxInt32, why: "CUDA's largest grid, 2³¹ − 1 blocks", i32: func(r *Record) *int { return &r.Blocks }},
	{name: "threads", typ: jInt, max: 1024, why: "CUDA's limit of threads per block", i32: func(r *Record) *int { return &r.Threads }},
	{name: "max_channels", typ: jInt, max: 64, why: "NCCL's MAXCHANNELS", i32: func(r *Record) *int { return &r.MaxChannels }},
	{name: "count", typ: jInt, max: 100_000, why: "allreduces in one sequence: a model's pass has a few hundred; each is simulated", i32: func(r *Record) *int { return &r.Count }},
	{name: "tokens", typ: jInt, max: 1 << 20, why: "tokens of one allreduce: a million", i32: func(r *Record) *int { return &r.Tokens }},
	{name: "mid_barrier", typ: jString, enum: []string{"fence_release", "fence_volatile", "release", "volatile"}, str: func(r *Record) *string { return &r.MidBarrier }},
	{name: "ops_per_graph", typ: jInt, max: 1 << 20, why: "operations in one CUDA graph: a million", i32: func(r *Record) *int { return &r.OpsPerGraph }},
	{name: "hidden", typ: jInt, max: 1 << 20, why: "a model's hidden size: a million elements", i32: func(r *Record) *int { return &r.Hidden }},
	{name: "engine", typ: jString, enum: []string{"copy_engine"}, str: func(r *Record) *string { return &r.Engine }},
	{name: "dir", typ: jString, enum: []string{"bidir", "d2h", "h2d", "p2p"}, str: func(r *Record) *string { return &r.Dir }},
	{name: "op", typ: jString, enum: []string{"read", "read_only_loop", "read_reduce", "write"}, str: func(r *Record) *string { return &r.Op }},
	{name: "load", typ: jString, enum: []string{"plain", "volatile"}, str: func(r *Record) *string { return &r.Load }},
	{name: "target", typ: jString, enum: []string{"host", "local", "peer"}, str: func(r *Record) *string { return &r.Target }},
	{name: "bytes_per_access", typ: jInt, max: 64, why: "the widest vector access of any GPU is 32 B", i32: func(r *Record) *int { return &r.BytesPerAccess }},
	{name: "gbps", value: true, typ: jNumber, num: func(r *Record) *float64 { return &r.Gbps }},
	{name: "ns_per_step", value: true, typ: jNumber, num: func(r *Record) *float64 { return &r.NsPerStep }},
	{name: "variant", typ: jString, enum: []string{"16x16B", "16x16B+fence_sys", "st_release_sys", "store", "store+fence_gpu", "store+fence_sys"}, str: func(r *Record) *string { return &r.Variant }},
	{name: "ns_per_iter", value: true, typ: jNumber, num: func(r *Record) *float64 { return &r.NsPerIter }},
	{name: "ns_per_iter_slowest_block", value: true, typ: jNumber, num: func(r *Record) *float64 { return &r.NsPerIterSlowestBlock }},
	{name: "barrier", typ: jString, enum: []string{"cas", "flag"}, str: func(r *Record) *string { return &r.Barrier }},
	{name: "stride_words", typ: jInt, max: 1 << 20, why: "slots 4 MiB apart", i32: func(r *Record) *int { return &r.StrideWords }},
	{name: "barriers_per_launch", typ: jInt, max: 1024, why: "barriers in a row in one kernel: each is simulated, every rank signalling every other", i32: func(r *Record) *int { return &r.BarriersPerLaunch }},
	{name: "via", typ: jString, enum: []string{"host", "peer"}, str: func(r *Record) *string { return &r.Via }},
	{name: "one_way_us", value: true, typ: jNumber, num: func(r *Record) *float64 { return &r.OneWayUs }},
	{name: "one_way_us_min", value: true, typ: jNumber, num: func(r *Record) *float64 { return &r.OneWayUsMin }},
	{name: "note", typ: jString, str: func(r *Record) *string { return &r.Note }},
	{name: "what", typ: jString, enum: []string{"ce_bidir", "ce_d2h", "ce_h2d", "sm_bidir", "sm_ll128_spin", "sm_read", "sm_read_beside_ll128_spin", "sm_read_beside_write", "sm_write"}, str: func(r *Record) *string { return &r.What }},
	{name: "gpus", typ: jInt, max: maxGPUs, why: "GPUs in one measurement: more than any NVLink domain (576)", i32: func(r *Record) *int { return &r.GPUs }},
	{name: "bytes_per_gpu", typ: jInt, max: maxBytes, why: bytesWhy, i64: func(r *Record) *int64 { return &r.BytesPerGPU }},
	{name: "gbps_per_gpu", value: true, typ: jNumber, num: func(r *Record) *float64 { return &r.GbpsPerGPU }},
	{name: "gbps_total", value: true, typ: jNumber, num: func(r *Record) *float64 { return &r.GbpsTotal }},
	{name: "api", typ: jString, enum: []string{"cudaMemcpyAsync", "ncclAllReduce", "torch.copy_"}, str: func(r *Record) *string { return &r.API }},
	{name: "streams", typ: jInt, max: 1024, why: "CUDA streams copying at once", i32: func(r *Record) *int { return &r.Streams }},
	{name: "transfers", typ: jInt, max: 1 << 16, why: "copies at once: each is simulated", i32: func(r *Record) *int { return &r.Transfers }},
	{name: "ping_gpu", typ: jInt, max: maxGPUs, why: "GPUs in one measurement: more than any NVLink domain (576)", zeroOK: true, i32: func(r *Record) *int { return &r.PingGPU }},
	{name: "pong_gpu", typ: jInt, max: maxGPUs, why: "GPUs in one measurement: more than any NVLink domain (576)", i32: func(r *Record) *int { return &r.PongGPU }},
	{name: "round_trips", typ: jInt, max: 1 << 20, why: "round trips timed: each is simulated", i32: func(r *Record) *int { return &r.RoundTrips }},
	{name: "mode", typ: jString, enum: []string{"back_to_back", "fence_release_acquire", "fence_volatile", "graph_replay", "queued", "release_acquire", "single", "volatile", "volatile_fence"}, str: func(r *Record) *string { return &r.Mode }},
	{name: "issuer", typ: jString, enum: []string{"native"}, str: func(r *Record) *string { return &r.Issuer }},
	{name: "state", typ: jString, str: func(r *Record) *string { return &r.State }},
	{name: "src_pages", typ: jString, enum: []string{"touched"}, str: func(r *Record) *string { return &r.SrcPages }},
	{name: "src_loads", typ: jString, enum: []string{"volatile"}, str: func(r *Record) *string { return &r.SrcLoads }},
	{name: "request", typ: jString, enum: []string{"atomic_add", "atomic_cas", "load_acquire", "load_relaxed", "load_volatile"}, str: func(r *Record) *string { return &r.Request }},
	{name: "spacing_bytes", typ: jInt, max: 1 << 20, why: "words 1 MiB apart", zeroOK: true, i32: func(r *Record) *int { return &r.SpacingBytes }},
	{name: "pairs", typ: jInt, max: 1 << 16, why: "pairs of blocks ping-ponging: each is simulated", i32: func(r *Record) *int { return &r.Pairs }},
	{name: "loop", typ: jString, enum: []string{"copy", "fence", "fence_after_pull", "fence_burst", "group_barrier", "host_readback", "ll", "ll128", "ll128w", "ll128_steps", "host_shot", "ll_steps", "pull", "simple_step"}, str: func(r *Record) *string { return &r.Loop }},
	{name: "ll_op", typ: jString, enum: []string{"recv", "recv_copy_send", "recv_reduce_copy", "recv_reduce_copy_send", "recv_reduce_send", "recv_send", "send"}, str: func(r *Record) *string { return &r.LLOp }},
	{name: "recv", typ: jString, enum: []string{"host", "local", "none"}, str: func(r *Record) *string { return &r.Recv }},
	{name: "dst", typ: jString, enum: []string{"host", "local", "none", "peer"}, str: func(r *Record) *string { return &r.Dst }},
	{name: "src", typ: jString, enum: []string{"host", "local", "local+host", "local_streamed"}, str: func(r *Record) *string { return &r.Src }},
	{name: "unroll", typ: jInt, max: 64, why: "loads in flight per source per thread", i32: func(r *Record) *int { return &r.Unroll }},
	{name: "sources", typ: jInt, max: 64, why: "sources a loop reads per element", i32: func(r *Record) *int { return &r.Sources }},
	{name: "loop_bound", typ: jString, enum: []string{"runtime", "unrolled"}, str: func(r *Record) *string { return &r.LoopBound }},
	{name: "slice_bytes", typ: jInt, max: 1 << 30, why: "a Simple step's slice: 1 GiB", zeroOK: true, i32: func(r *Record) *int { return &r.SliceBytes }},
	{name: "fence", typ: jString, enum: []string{"acq_rel", "none", "sc"}, str: func(r *Record) *string { return &r.Fence }},
	{name: "iters_per_step", typ: jInt, max: 1 << 20, why: "loop iterations per NCCL step", zeroOK: true, i32: func(r *Record) *int { return &r.ItersPerStep }},
	{name: "stores_per_thread", typ: jInt, max: 1 << 16, why: "stores before one fence", zeroOK: true, i32: func(r *Record) *int { return &r.StoresPerThread }},
	{name: "iters", typ: jInt, max: 1 << 20, why: "iterations per block: each is simulated", i32: func(r *Record) *int { return &r.Iters }},
	{name: "code", typ: jString, enum: []string{"cg", "fixed_op", "no_poll", "runtime_op", "nccl_hunks", "nccl_hunks_rot", "lb512"}, str: func(r *Record) *string { return &r.Code }},
	{name: "load_src", typ: jString, enum: []string{"host", "local"}, str: func(r *Record) *string { return &r.LoadSrc }},
	{name: "loads_per_thread", typ: jInt, max: 1 << 16, why: "loads before one fence", zeroOK: true, i32: func(r *Record) *int { return &r.LoadsPerThread }},
	{name: "layout", typ: jString, enum: []string{"line_per_slot", "line_per_slot_t", "packed", "packed_128", "packed_1k", "packed_256", "packed_2k", "packed_4k", "packed_512", "packed_64", "rank_offsets", "rank_stride", "vllm", "vllm_chunk1k", "vllm_chunk256", "vllm_chunk2k", "vllm_chunk384", "vllm_chunk4k", "vllm_chunk512", "vllm_chunk768", "vllm_line", "vllm_off64"}, str: func(r *Record) *string { return &r.Layout }},
	{name: "producer", typ: jString, enum: []string{"before", "evicted", "live", "paced", "stale"}, str: func(r *Record) *string { return &r.Producer }},
	{name: "producer_pause_ns", typ: jNumber, num: func(r *Record) *float64 { return &r.ProducerPauseNs }},
	{name: "kernel", typ: jString, str: func(r *Record) *string { return &r.KernelName }},
	{name: "launch_bound", typ: jInt, max: 1024, why: "CUDA's limit of threads per block", zeroOK: true, i32: func(r *Record) *int { return &r.LaunchBound }},
	{name: "pages", typ: jInt, max: 1 << 20, why: "pages touched at once", zeroOK: true, i32: func(r *Record) *int { return &r.Pages }},
	{name: "touch", typ: jString, enum: []string{"fresh", "repeat"}, str: func(r *Record) *string { return &r.Touch }},
	{name: "stride_bytes", typ: jInt, max: 1 << 30, why: "a stride of a gibibyte", zeroOK: true, i32: func(r *Record) *int { return &r.StrideBytes }},
	{name: "phases", typ: jInt, max: 7, why: "a host_shot's phase bits: 1 staging, 2 barriers, 4 pull", i32: func(r *Record) *int { return &r.Phases }},
	{name: "pull_src", typ: jString, enum: []string{"apart", "staged"}, str: func(r *Record) *string { return &r.PullSrc }},
	{name: "blocks_per_rank", typ: jInt, max: 1024, why: "CUDA's limit of co-resident blocks on one GPU", i32: func(r *Record) *int { return &r.BlocksPerRank }},
	{name: "dests", typ: jInt, max: 1024, why: "destination buffers: each store is simulated", zeroOK: true, i32: func(r *Record) *int { return &r.Dests }},
	{name: "poll_sleep_ns", typ: jInt, max: 1 << 20, why: "a pause of a millisecond after each poll", zeroOK: true, i32: func(r *Record) *int { return &r.PollSleepNs }},
	{name: "groups", typ: jInt, max: 1024, why: "groups of blocks: each is simulated", i32: func(r *Record) *int { return &r.Groups }},
	{name: "neighbours", typ: jInt, max: 1024, why: "blocks beside a ping-pong pair: each is simulated", zeroOK: true, i32: func(r *Record) *int { return &r.Neighbours }},
	{name: "neighbour_op", typ: jString, enum: []string{"pingpong", "poll", "pull", "read_stream", "store", "stream"}, str: func(r *Record) *string { return &r.NeighbourOp }},
	{name: "neighbour_loads", typ: jInt, max: 64, why: "loads a thread keeps in flight", i32: func(r *Record) *int { return &r.NeighbourLoads }},
	{name: "neighbour_gbps", typ: jNumber, zeroOK: true, num: func(r *Record) *float64 { return &r.NeighbourGBps }},
	{name: "fencing_threads", typ: jInt, max: 1024, why: "a block's threads", zeroOK: true, i32: func(r *Record) *int { return &r.FencingThreads }},
	{name: "neighbour_place", typ: jString, enum: []string{"1k_on", "64k_on", "64k_on_lines_apart", "host", "lines_apart", "local", "other_half", "other_line", "same_half", "same_sector"}, str: func(r *Record) *string { return &r.NeighbourPlace }},
	{name: "neighbour_lines", typ: jInt, max: 1 << 16, why: "lines a storing neighbour cycles over", zeroOK: true, i32: func(r *Record) *int { return &r.NeighbourLines }},
	{name: "neighbour_threads", typ: jInt, max: 1024, why: "a block's threads", zeroOK: true, i32: func(r *Record) *int { return &r.NeighbourThreads }},
	{name: "neighbour_spacing_bytes", typ: jInt, max: 1 << 16, why: "64 KiB between pollers' words", zeroOK: true, i32: func(r *Record) *int { return &r.NeighbourSpacingBytes }},
	{name: "neighbour_poll_ns", typ: jNumber, zeroOK: true, num: func(r *Record) *float64 { return &r.NeighbourPollNs }},
	{name: "group_stride_bytes", typ: jInt, max: 1 << 20, why: "a mebibyte between groups' sectors", zeroOK: true, i32: func(r *Record) *int { return &r.GroupStrideBytes }},
	{name: "rank_offsets", typ: jString, str: func(r *Record) *string { return &r.RankOffsets }},
	{name: "flag_offset", typ: jInt, max: 1 << 20, why: "a mebibyte into the flags' buffer", zeroOK: true, i32: func(r *Record) *int { return &r.FlagOffset }},
	{name: "self_slot", typ: jInt, max: 1, why: "0 or 1", zeroOK: true, i32: func(r *Record) *int { return &r.SelfSlot }},
	{name: "neighbour_store_bytes", typ: jInt, max: 4096, why: "a warp's 32 lanes of 128 B", zeroOK: true, i32: func(r *Record) *int { return &r.NeighbourStoreBytes }},
	{name: "src_residency", typ: jString, enum: []string{"fresh", "l2"}, str: func(r *Record) *string { return &r.SrcResidency }},
	{name: "neighbour_ns_per_store", typ: jNumber, num: func(r *Record) *float64 { return &r.NeighbourNsPerStore }},
	{name: "neighbour_gap_ns", typ: jInt, max: 1 << 20, why: "a pause of 1 ms", i32: func(r *Record) *int { return &r.NeighbourGapNs }},
	{name: "ns_per_op", value: true, typ: jNumber, num: func(r *Record) *float64 { return &r.NsPerOp }},
	{name: "one_way_ns", value: true, typ: jNumber, num: func(r *Record) *float64 { return &r.OneWayNs }},
	{name: "prefill_us", typ: jNumber, zeroOK: true, num: func(r *Record) *float64 { return &r.PrefillUs }},
	{name: "nccl_op", typ: jString, enum: []string{"allreduce_group", "allreduce_one_rank", "allreduce_one_rank_inplace", "empty_kernel", "memcpy_d2d", "self_sendrecv", "torch_allreduce_one_rank"}, str: func(r *Record) *string { return &r.NCCLOp }},
	{name: "write_blocks", typ: jInt, max: math.MaxInt32, why: "CUDA's largest grid, 2³¹ − 1 blocks", zeroOK: true, i32: func(r *Record) *int { return &r.WriteBlocks }},
	{name: "write_threads", typ: jInt, max: 1024, why: "CUDA's limit of threads per block", i32: func(r *Record) *int { return &r.WriteThreads }},
	{name: "write_pause_ns", typ: jInt, max: 1 << 30, why: "a second", i32: func(r *Record) *int { return &r.WritePauseNs }},
	{name: "read_blocks", typ: jInt, max: math.MaxInt32, why: "CUDA's largest grid, 2³¹ − 1 blocks", i32: func(r *Record) *int { return &r.ReadBlocks }},
	{name: "read_threads", typ: jInt, max: 1024, why: "CUDA's limit of threads per block", i32: func(r *Record) *int { return &r.ReadThreads }},
	{name: "write_mode", typ: jString, enum: []string{"volatile", "volatile_fence4"}, str: func(r *Record) *string { return &r.WriteMode }},
	{name: "write_target", typ: jString, enum: []string{"host", "local"}, str: func(r *Record) *string { return &r.WriteTarget }},
	{name: "placement", typ: jString, enum: []string{"by_sm"}, str: func(r *Record) *string { return &r.Placement }},
	{name: "read_sm", typ: jInt, max: 1 << 10, why: "more SMs than any GPU has", zeroOK: true, i32: func(r *Record) *int { return &r.ReadSM }},
	{name: "smem_bytes", typ: jInt, max: 1 << 20, why: "a MiB, more shared memory than an SM has", zeroOK: true, i32: func(r *Record) *int { return &r.SmemBytes }},
	{name: "write_span", typ: jString, enum: []string{"own_mib", "wide", "own"}, str: func(r *Record) *string { return &r.WriteSpan }},
	{name: "write_span_bytes", typ: jInt, max: maxBytes, why: bytesWhy, i64: func(r *Record) *int64 { return &r.WriteSpanBytes }},
	{name: "write_sms", typ: jString, zeroOK: true, str: func(r *Record) *string { return &r.WriteSMs }},
	{name: "write_rank_order", typ: jString, enum: []string{"forward", "reverse"}, str: func(r *Record) *string { return &r.WriteRankOrder }},
	{name: "chase_sm", typ: jInt, max: 1 << 10, why: "more SMs than any GPU has", zeroOK: true, i32: func(r *Record) *int { return &r.ChaseSM }},
	{name: "reader_sm", typ: jString, enum: []string{"with_storer", "without_storer"}, str: func(r *Record) *string { return &r.ReaderSM }},
	{name: "atomic_page", typ: jString, enum: []string{"fast", "slow"}, str: func(r *Record) *string { return &r.AtomicPage }},
	{name: "chase_lanes", typ: jInt, max: 32, why: "a warp's lanes", i32: func(r *Record) *int { return &r.ChaseLanes }},
	{name: "loads_in_flight", typ: jInt, max: 64, why: "more 16-B loads than a thread has registers for", i32: func(r *Record) *int { return &r.LoadsInFlight }},
	{name: "group_calls", typ: jInt, max: 1024, why: "NCCL calls between one ncclGroupStart and ncclGroupEnd: more than any process issues", i32: func(r *Record) *int { return &r.GroupCalls }},
	{name: "host_clock_ghz", typ: jNumber, num: func(r *Record) *float64 { return &r.HostClockGHz }},
	{name: "busy_threads", typ: jInt, max: 1 << 12, why: "more host threads than any host has cores", zeroOK: true, i32: func(r *Record) *int { return &r.BusyThreads }},
	{name: "nccl_env", typ: jObject, obj: func(r *Record) *map[string]string { return &r.NCCLEnv }},
}

// The limits of integer fields: what a measurement of one machine can be,
// and what the simulator takes.
const (
	maxGPUs  = 4096
	maxBytes = 1 << 40
	bytesWhy = "1 TiB, more than any GPU's memory"
	// MaxLineBytes is the longest line ReadJSONL reads: a record is a few
	// hundred bytes, so a longer line is not one (a binary file, /dev/zero).
	MaxLineBytes = 1 << 20
	// MaxTraceBytes and MaxTraceLines bound what ReadJSONL reads of one
	// input: 256 MiB and 2²⁰ lines, about a thousand times the largest
	// capture, and what the records take in memory stays near a gigabyte.
	MaxTraceBytes = 256 << 20
	MaxTraceLines = 1 << 20
)

// fieldIndex maps a field name to its definition.
var fieldIndex = func() map[string]*fieldDef {
	m := make(map[string]*fieldDef, len(fieldDefs))
	for i := range fieldDefs {
		m[fieldDefs[i].name] = &fieldDefs[i]
	}
	return m
}()

func kindValues() []string {
	var v []string
	for _, k := range Kinds() {
		v = append(v, string(k))
	}
	slices.Sort(v)
	return v
}

// required lists, per kind, the fields a record must carry beyond system,
// kind and clock.
var required = map[Kind][]string{
	KindAllreduce:           {"impl", "algo", "transport", "launch", "world", "dtype", "bytes", "us"},
	KindAllreduceSequence:   {"impl", "algo", "transport", "launch", "world", "dtype", "count", "tokens", "hidden", "bytes", "us"},
	KindMemcpy:              {"dir", "bytes", "us"},
	KindSMAccess:            {"op", "target", "blocks", "threads", "bytes", "us"},
	KindPointerChase:        {"target", "ns_per_step"},
	KindFlagPingpong:        {"via", "one_way_us"},
	KindEmptyKernel:         {"us"},
	KindHostLinkConcurrency: {"what", "gpus", "gbps_per_gpu", "gbps_total"},
	KindFence:               {"target", "variant", "threads", "ns_per_iter"},
	KindBarrier:             {"world", "barrier", "stride_words", "blocks", "threads", "barriers_per_launch", "us"},
	KindPoll:                {"target", "request", "blocks", "ns_per_op"},
	KindBlockPingpong:       {"target", "mode", "pairs", "one_way_ns"},
	KindLoop:                {"loop", "blocks", "threads", "ns_per_iter"},
	KindNCCLKernel:          {"nccl_op", "launch", "us"},
}

// isZero reports whether the field is unset in r.
func (d *fieldDef) isZero(r *Record) bool {
	switch {
	case d.str != nil:
		return *d.str(r) == ""
	case d.num != nil:
		return *d.num(r) == 0
	case d.i32 != nil:
		return *d.i32(r) == 0
	case d.i64 != nil:
		return *d.i64(r) == 0
	default:
		return len(*d.obj(r)) == 0
	}
}

// checkValue checks a set field: a known enum value, a positive finite number.
func (d *fieldDef) checkValue(r *Record) error {
	switch {
	case d.str != nil:
		v := *d.str(r)
		if d.enum != nil && !slices.Contains(d.enum, v) {
			return fieldErrf(d.name, "unknown value %q; allowed: %s", v, strings.Join(d.enum, ", "))
		}
	case d.num != nil:
		v := *d.num(r)
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || (v == 0 && !d.zeroOK) {
			return fieldErrf(d.name, "must be %s, got %v", d.least(), v)
		}
	case d.i32 != nil:
		return d.checkInt(int64(*d.i32(r)))
	case d.i64 != nil:
		return d.checkInt(*d.i64(r))
	}
	return nil
}

// checkInt checks an integer field's value: positive (or 0 where
// allowed), within its limit.
func (d *fieldDef) checkInt(v int64) error {
	if v < 0 || (v == 0 && !d.zeroOK) {
		return fieldErrf(d.name, "must be %s, got %d", d.least(), v)
	}
	if v > d.max {
		return fieldErrf(d.name, "%d is above the limit %d (%s)", v, d.max, d.why)
	}
	return nil
}
