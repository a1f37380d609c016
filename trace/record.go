package trace

import "encoding/json"

// Kind is what a JSON Lines record measured (its "kind" field).
type Kind string

// The kinds of JSON Lines v1 records.
const (
	KindAllreduce           Kind = "allreduce"
	KindAllreduceSequence   Kind = "allreduce_sequence"
	KindMemcpy              Kind = "memcpy"
	KindSMAccess            Kind = "sm_access"
	KindPointerChase        Kind = "pointer_chase"
	KindFlagPingpong        Kind = "flag_pingpong"
	KindEmptyKernel         Kind = "empty_kernel"
	KindHostLinkConcurrency Kind = "host_link_concurrency"
	// KindFence is the cost of a memory fence after stores (tools/capture
	// micro2): ns_per_iter of a loop of store(s) + fence to target memory.
	KindFence Kind = "fence"
	// KindBarrier is a kernel whose thread blocks meet their peers in
	// barriers_per_launch barriers in a row (tools/capture barrier): us per
	// launch inside a CUDA graph; `barrier` is "cas" (PyTorch's
	// compare-and-swap tokens) or "flag" (vLLM's epoch flags).
	KindBarrier Kind = "barrier"
	// KindPoll is what one GPU's polls and atomics cost (tools/capture
	// perblock): ns_per_op of `request`s by thread 0 of each of `blocks`
	// blocks to words spacing_bytes apart (0: one shared word).
	KindPoll Kind = "poll"
	// KindBlockPingpong is a flag exchange between pairs of thread blocks
	// of one GPU (tools/capture perblock): one_way_ns, `pairs` at once.
	KindBlockPingpong Kind = "block_pingpong"
	// KindLoop is one thread block's loop iteration (tools/capture
	// perblock): ns_per_iter of a `loop` (ll, ll128, copy, simple_step,
	// fence, pull) at `blocks` × `threads`.
	KindLoop Kind = "loop"
	// KindNCCLKernel is NCCL's own kernel on one GPU with no peer
	// (tools/capture nccl-self): us per `nccl_op` (self_sendrecv: a
	// one-rank communicator sending to and receiving from itself;
	// allreduce_one_rank, memcpy_d2d and empty_kernel beside it, as
	// references of the same run) of `bytes`, in a CUDA graph or eager.
	KindNCCLKernel Kind = "nccl_kernel"
)

// Kinds returns every kind of JSON Lines v1, in the order FORMAT.md lists them.
func Kinds() []Kind {
	return []Kind{KindAllreduce, KindAllreduceSequence, KindMemcpy, KindSMAccess,
		KindPointerChase, KindFlagPingpong, KindEmptyKernel, KindHostLinkConcurrency, KindFence, KindBarrier,
		KindPoll, KindBlockPingpong, KindLoop, KindNCCLKernel}
}

// Clock is how a record's time was taken (its "clock" field).
type Clock string

// The clocks of JSON Lines v1.
const (
	// ClockDeviceEvents: CUDA events around the work.
	ClockDeviceEvents Clock = "device_events"
	// ClockHost: host wall clock after a device synchronisation.
	ClockHost Clock = "host"
	// ClockSMClock64: cycles read inside a kernel with clock64().
	ClockSMClock64 Clock = "sm_clock64"
)

// Record is one measurement of a JSON Lines v1 trace.
//
// Which fields are set depends on Kind (see the package documentation for
// the table). A numeric field that the record does not carry is zero, and a
// string field is "": every measured number of the format is positive, so a
// zero never stands for a measured value. Fields the format does not define
// are kept, undecoded, in Extra.
type Record struct {
	// Line is the 1-based line number of the record in its file.
	Line int
	// SMHalves is not a field of the record: it is the half of the SMs
	// (0: SM 0's, 1: the other) that each SM of the GPU that ran it lies in,
	// indexed by SM, when its capture says (ReadJSONLFile reads it from
	// system/<trace>.halves.json beside the trace, ReadSMHalves); nil
	// where it does not, and a GPU class's own map applies.
	SMHalves []int8
	// NCCLRelease is not a field of the record either: the NCCL release
	// its capture ran ("2.28.9"), from system/versions.json or
	// system/versions.txt beside the trace (ReadJSONLFile,
	// ParseNCCLVersions); "" where the capture does not say.
	NCCLRelease string
	// PCIeTags is not a field of the record either: whether the GPU that
	// ran it had 10-bit PCIe tags enabled as a requester, from
	// system/<trace>.pcie_tags.txt beside the trace (ReadJSONLFile,
	// ReadTags); TagsUnknown where the capture does not say.
	PCIeTags Tags
	// RunPhases is not a field of the record either: the phases of the
	// tools/capture run that made its trace, in the order they started in
	// one process, from the run log beside the trace (ReadJSONLFile,
	// ReadRunPhases: system/run_<trace>.log); nil where there is none.
	// A record does not say which phase wrote it; a kind only one phase
	// writes (micro2's graph gaps without a state) is placed by it.
	RunPhases []string
	// System is the id of the measured machine, e.g. "h200x2-vm".
	System string
	// Kind is what was measured.
	Kind Kind
	// Clock is how the time was taken.
	Clock Clock
	// Launch is how kernels were launched: in a CUDA graph or eagerly.
	Launch Launch

	// Us is the median time in µs (the whole sequence for
	// allreduce_sequence); UsMin and UsMax are the fastest and slowest trial.
	Us, UsMin, UsMax float64

	// Impl is the allreduce implementation measured.
	Impl Impl
	// Algo is "ring", "tree", "auto", "one_shot" or "two_shot".
	Algo string
	// Proto is the NCCL protocol "ll", "ll128", "simple" or "auto"; "" for
	// kernels that are not NCCL's.
	Proto string
	// Transport is how the allreduce's data moved between GPUs.
	Transport Transport
	// World is the number of GPUs taking part.
	World int
	// Dtype is the element type, e.g. "bf16".
	Dtype string
	// Bytes is the size of one operation (one allreduce, one copy, the
	// buffer an sm_access kernel walks).
	Bytes int64
	// Blocks and Threads are a kernel's launch configuration (sm_access,
	// and allreduce kernels that are ours to describe).
	Blocks, Threads int
	// MaxChannels is the NCCL channel limit, when one was set.
	MaxChannels int

	// Count, Tokens and Hidden describe an allreduce_sequence: Count
	// allreduces of a [Tokens, Hidden] tensor.
	Count, Tokens, Hidden int
	// MidBarrier, on the project's two-shot flag kernel over GPU memory:
	// how its mid barrier publishes the first half, fence_release (a
	// system fence and a release store, acquire polls; what a record
	// without the field ran), release (a release store and acquire polls,
	// vLLM's), fence_volatile (a system fence, then volatile flags) or
	// volatile (volatile flags, no fence).
	MidBarrier string
	// OpsPerGraph is how many operations one CUDA graph of the
	// measurement held (a replay's time over it is the value); 0: not
	// said.
	OpsPerGraph int

	// Engine is the memcpy engine ("copy_engine").
	Engine string
	// Dir is the memcpy direction: "h2d", "d2h", "p2p", or "bidir" (an
	// h2d and a d2h copy at once; tools/capture).
	Dir string
	// API says how copies were issued: "cudaMemcpyAsync" (tools/capture)
	// or "torch.copy_"; "" is taken as PyTorch's tensor.copy_. On an
	// allreduce, "ncclAllReduce": NCCL called from C by a program such as
	// nccl-tests (nccl-tests output reads as such records), each eager
	// call costing the host a kernel launch for each GPU its thread drives
	// (GPUs, one where not given), not PyTorch's call.
	API string
	// Streams is how many streams a memcpy record ran copies on at once;
	// Transfers how many copies it ran in all (a bidir record: half each
	// way). 0: not given.
	Streams, Transfers int

	// Op is the sm_access operation: "read" or "write", or the loops
	// "read_reduce" and "read_only_loop"; Load their remote loads:
	// "plain" or "volatile" (ld.volatile); "": plain.
	Op, Load string
	// Target is the memory accessed by sm_access and pointer_chase:
	// "host", "local" or "peer".
	Target string
	// BytesPerAccess is the width of one sm_access access.
	BytesPerAccess int
	// Gbps is the sm_access bandwidth, bytes / time, in GB/s.
	Gbps float64

	// NsPerStep is the pointer_chase latency of one dependent load, in ns.
	NsPerStep float64
	// Variant is the fence record's loop body: "store", "store+fence_sys",
	// "16x16B+fence_sys", "store+fence_gpu", "st_release_sys", "16x16B".
	Variant string
	// NsPerIter is the fence record's time per loop iteration, in ns.
	NsPerIter float64
	// NsPerIterSlowestBlock is a loop record's time per iteration of its
	// slowest block (the median over trials), in ns: the kernel's end,
	// where NsPerIter is the median block's.
	NsPerIterSlowestBlock float64
	// LaunchBound is a copy loop record's __launch_bounds__ (threads a
	// block at most) when not the capture's usual 1024; 0: 1024.
	LaunchBound int
	// KernelName is the compiled kernel a loop record ran (trace field
	// kernel: tools/capture's name, such as pb_nccl_reduce_2_1), where
	// the record's other fields do not tell it; "": not given.
	KernelName string
	// Pages, Touch, StrideBytes: a pointer_chase record of page touches
	// (tools/capture page_touch): each of Pages threads loads one word of
	// its own page, the pages StrideBytes apart, the same pages in every
	// launch (Touch "repeat") or pages no launch has touched ("fresh");
	// 0, "": a chase.
	Pages       int
	Touch       string
	StrideBytes int
	// Dests is how many destination buffers a copy loop stores each
	// element it loads to (a one-shot's push into every peer's buffer);
	// 0: 1.
	Dests int
	// Phases, on a host_shot loop: which parts of a two-rank one-shot
	// through host memory each iteration runs (1 staging and its fence, 2
	// the two barriers, 4 the pull; tools/capture's pb_host_shot).
	Phases int
	// PullSrc, on a host_shot loop: "apart" when the pull reads a region
	// nothing stages to (tools/capture's pb_host_shot_apart: the same
	// traffic, the loads never on lines being staged); empty: the staged
	// copy, as the one-shot reads it.
	PullSrc string
	// NeighbourNsPerStore, on a block_pingpong with storing neighbours
	// (tools/capture's store_loop): the median neighbour's ns per store,
	// timed by itself; 0: not measured.
	NeighbourNsPerStore float64
	// NeighbourLines: the lines of its own a storing neighbour cycles its
	// stores over (store_lines); 0: one word.
	NeighbourLines int
	// NeighbourThreads: the threads of each polling neighbour block that
	// poll, each a word of its own in a sector of its own (0: one); of a
	// pulling neighbour block, its threads.
	NeighbourThreads int
	// NeighbourSpacingBytes, on a fence loop beside polling neighbours
	// (tools/capture's fence_queue): bytes from one polling thread's word
	// to the next (0: 32, a sector each); NeighbourPollNs, the median
	// polling block's time over its polls (ns, measured).
	NeighbourSpacingBytes int
	NeighbourPollNs       float64
	// NeighbourLoads, on a fence loop beside pulling neighbours
	// (neighbour_op "pull", tools/capture's fence_pulls): the loads each
	// of their threads keeps in flight; NeighbourGBps what they pulled
	// while the fence ran (GB/s, measured).
	NeighbourLoads int
	NeighbourGBps  float64
	// FencingThreads, on a fence_burst loop: the block's threads that run
	// the fence after the block's burst of stores (0: none, the loop
	// without a fence); LoadsPerThread and LoadSrc, the 16-B loads each
	// thread made of that memory before its store (tools/capture's
	// fence_loads; code "cg" when they skip the L1).
	FencingThreads, LoadsPerThread int
	LoadSrc                        string
	// FlagOffset, on a group_barrier loop with a rank-major layout: how
	// far into each rank's array (bytes) its first sector lies, beyond
	// the layout's own offset (tools/capture's barrier_chunks_2).
	FlagOffset int
	// GroupStrideBytes, on a group_barrier loop with layout rank_stride:
	// bytes from one group's sector to the next in a rank's array (0: 32,
	// the groups' sectors adjacent).
	GroupStrideBytes int
	// RankOffsets, on a group_barrier loop with layout rank_offsets: each
	// rank's sector's byte offset into a page-aligned buffer, comma
	// separated, one per rank (tools/capture's barrier_class).
	RankOffsets string
	// SelfSlot, on a group_barrier loop: 1 when every block also stores to
	// and polls its own slot (the flag kernels' and vLLM's barriers).
	SelfSlot int
	// NeighbourStoreBytes: the contiguous bytes a storing neighbour's warp
	// stores at once (store_width: 4, 32, 128 or 512); 0: one 4-byte word.
	NeighbourStoreBytes int
	// SrcResidency, on a copy loop: "l2" when its source is the same
	// region every launch (in the L2 after the warm-up), "fresh" when each
	// launch reads a new one (from device memory); "": fresh.
	SrcResidency string
	// BlocksPerRank, on a host_shot loop: each rank's thread blocks (the
	// record's blocks are both ranks').
	BlocksPerRank int
	// PollSleepNs is a group_barrier record's pause after each poll that
	// does not yet see its flag (__nanosleep), in ns; 0: none.
	PollSleepNs int

	// Barrier is the barrier record's kind of barrier: "cas" or "flag".
	Barrier string
	// StrideWords is the barrier record's distance between signal slots,
	// in 4-byte words (1: slots share cache lines; 32: a line each).
	StrideWords int
	// BarriersPerLaunch is how many barriers one launch of the barrier
	// record's kernel runs.
	BarriersPerLaunch int

	// Via is where the flag_pingpong flags live: "host" or "peer".
	Via string
	// OneWayUs is the flag_pingpong one-way time (round trip / 2), median;
	// OneWayUsMin the fastest trial.
	OneWayUs, OneWayUsMin float64
	// RoundTrips is how many round trips a flag_pingpong record timed; 0:
	// not given.
	RoundTrips int
	// PingGPU and PongGPU are a flag_pingpong record's two GPUs, the one
	// that writes first and the one that answers; neither given: GPUs 0
	// and 1 (PongGPU 0 is "not given").
	PingGPU, PongGPU int
	// Note is free text.
	Note string

	// What is the host_link_concurrency transfer: "ce_h2d", "ce_d2h",
	// "ce_bidir", "sm_read" or "sm_write".
	What string
	// GPUs is the number of GPUs moving data at once.
	GPUs int
	// BytesPerGPU is the size each GPU moves.
	BytesPerGPU int64
	// GbpsPerGPU and GbpsTotal are the host_link_concurrency bandwidths in GB/s.
	GbpsPerGPU, GbpsTotal float64

	// Mode is how an empty_kernel record launched its kernels: "single"
	// (one launch between two events), "back_to_back" (eager launches in
	// a row), "queued" (eager launches issued behind a device-side spin,
	// timed on the host clock: the host's issue cost alone) or
	// "graph_replay"; "" is taken as single. An eager nccl_kernel record
	// may say back_to_back or queued too.
	Mode string
	// Issuer is what issued an eager record's launches or calls: "native"
	// (C++ against the CUDA runtime and NCCL directly); "" is the
	// capture's Python layer (CuPy, ctypes, PyTorch).
	Issuer string
	// State is where in its process a graph-gap record (an empty_kernel
	// in CUDA graphs, an nccl_kernel empty_kernel) was measured, as the
	// capture names it: "flag kernels: end", "nccl p2p: end", "three long
	// kernels run", …; "": not said. A process's gap per kernel node steps
	// up once it has made a few graphs (validate's settled state).
	State string
	// SrcPages says whether a copy loop's pages of pinned host memory had
	// been touched by the GPU before it ran ("touched": a launch had
	// copied the whole buffer first); "": not said (the capture's copies
	// take fresh data every launch, pages it may not have touched).
	SrcPages string
	// SrcLoads is how a copy loop read its sources when not as its source
	// memory has it: "volatile" (ld.volatile.global, not cached in the
	// L1) where local sources are otherwise read plain. The model tells
	// them apart by the compiled loop: a capture kernel that picks its
	// loads by a flag waits as its SASS's volatile side does
	// (validate's captureLoadWaitsVolatile).
	SrcLoads string
	// PrefillUs is the device-side spin, in µs, queued before the timed
	// launches of an empty_kernel record; 0: none.
	PrefillUs float64

	// The per-block records (poll, block_pingpong, loop; tools/capture
	// perblock): Request is a poll's request ("load_volatile",
	// "load_acquire", "load_relaxed", "atomic_add", "atomic_cas"),
	// SpacingBytes the distance between the blocks' words (0: one shared
	// word), Pairs the ping-pong's pairs of blocks, Loop the loop measured,
	// LLOp an LL loop's operation, Recv / Dst / Src the memories its lines,
	// destination and sources live in ("host", "local", "none",
	// "local+host"), Unroll and Sources a copy loop's loads in flight per
	// source and its sources, LoopBound a pull loop's "runtime" or
	// "unrolled" loop over ranks, SliceBytes a Simple step's slice, Fence
	// the fence ("none", "acq_rel", "sc"), StoresPerThread the stores before
	// a fence, Iters the iterations per block, Layout and Groups a
	// group_barrier's slot layout ("packed": a rank's slots in one sector,
	// the ranks' sectors 32 B apart, "packed_64" … "packed_4k" 64 B to
	// 4 KiB apart; "line_per_slot", and "line_per_slot_t" with rank r's
	// slot for peer p at line p·W + r; "vllm", "vllm_line", "vllm_off64":
	// rank-major, each rank's sectors in an array of its own, the groups'
	// sectors 32 B apart, 128 B apart, or 32 B apart from 64 B into a
	// line) and its groups of World blocks barriering at once;
	// Producer who wrote an LL receive loop's lines ("stale": one launch
	// before every trial; "before": the launch just before; "evicted":
	// the launch just before, then 128 MiB of other writes; "live":
	// another block of the GPU at the same time, storing ahead of the
	// receiver; "paced": that block pausing ProducerPauseNs after each of
	// its stores); NsPerOp and OneWayNs the values (NsPerIter for loops).
	// Code (loop ll): "runtime_op", the capture's pb_ll testing its
	// operation each iteration (the default for its records), or
	// "fixed_op", the same loop compiled for one operation; (loop copy)
	// "nccl_hunks", the capture's copy in NCCL Simple's shape (warp hunks,
	// volatile loads: pb_nccl_copy); (loop simple_step) "nccl_hunks" or
	// "nccl_hunks_rot", the step's copy in that shape, the second with
	// NCCL's renumbering of the warps before the left-over packs.
	Request, Loop, LLOp, Recv, Dst, Src, LoopBound, Fence, Layout, Producer, Code    string
	SpacingBytes, Pairs, Unroll, Sources, SliceBytes, StoresPerThread, Iters, Groups int
	// ItersPerStep (loop ll_steps): the loop runs in steps of this many
	// iterations, each paying NCCL's per-step bookkeeping; 0: no steps.
	ItersPerStep int
	// Neighbours (block_pingpong): blocks beside the pair, half on each of
	// its two lines' side, doing NeighbourOp ("poll", "store" every
	// NeighbourGapNs, "pingpong" in pairs) at NeighbourPlace: "same_sector"
	// (the words after the pair's in its sector), "same_half" (another
	// sector of its 64-B half), "other_half" (the line's other half),
	// "other_line" (the next line), "lines_apart" (a line each from the
	// next on), "1k_on", "64k_on" (one sector that far on),
	// "64k_on_lines_apart".
	Neighbours, NeighbourGapNs         int
	NeighbourOp, NeighbourPlace        string
	NsPerOp, OneWayNs, ProducerPauseNs float64

	// NCCLOp is what an nccl_kernel record ran: "self_sendrecv",
	// "allreduce_one_rank", "memcpy_d2d", "empty_kernel" or
	// "allreduce_group" (GroupCalls one-rank allreduces between one
	// ncclGroupStart and ncclGroupEnd, each on a communicator and a
	// stream of its own, as nccl-tests -g issues an iteration).
	NCCLOp     string
	GroupCalls int
	// HostClockGHz is the issuing host core's clock when an eager native
	// record was taken (a chain of dependent adds timed just before it),
	// and BusyThreads the other host threads kept spinning meanwhile.
	HostClockGHz float64
	BusyThreads  int

	// WriteBlocks, WriteThreads, WriteTarget: a host_link_concurrency
	// sm_read_beside_write record's writer, WriteBlocks × WriteThreads
	// (0: 512) storing to WriteTarget ("host", the default: the pinned
	// host memory the reader of Blocks × Threads loads BytesPerGPU from;
	// "local": the GPU's own memory) at once; WriteBlocks 0: no writer.
	// WritePauseNs: each writer thread pauses this long after each 16-B
	// store (0: none). WriteMode: "" plain stores, "volatile"
	// (st.volatile), "volatile_fence4" (and a system fence after every
	// four of a thread's).
	WriteBlocks, WriteThreads, WritePauseNs int
	WriteTarget, WriteMode                  string
	// ReadBlocks, ReadThreads: a pointer_chase ran beside a reader of
	// ReadBlocks × ReadThreads (0: 512) loading host memory.
	ReadBlocks, ReadThreads int
	// Placement "by_sm": a host_link_concurrency sm_read_beside_write or
	// pointer_chase record of tools/capture's read_placement, one block of
	// one launch on each SM, its role set by its SM: ReadSM is the SM of
	// the reading block (the first of them when Blocks > 1), WriteBlocks
	// the SMs storing to host memory (WriteSMs lists them, comma
	// separated; write_set and read_sms are carried in Extra), SmemBytes the dynamic
	// shared memory each block holds (0: none, or not given), WriteSpan
	// where the writers store ("own_mib": each its own MiB again and
	// again; "wide": together across 128 MiB; "own": each its own
	// WriteSpanBytes again and again; "": own_mib), WriteSpanBytes the
	// span when given (a writer's own region, or the writers' together
	// for "wide"; 0: the form's first size, 1 MiB or 128 MiB).
	// LoadsInFlight: the independent 16-B loads each reading thread keeps
	// in flight (0: the loop's own, one for read_placement's plain loop).
	// ChaseLanes: a pointer_chase whose every step is a warp's load, each
	// of its ChaseLanes lanes loading 8 B at 16-B steps from the step's
	// word (32: 512 B, as a streaming warp's load); 0: thread 0 alone.
	Placement, WriteSpan, WriteSMs string
	// WriteRankOrder: read_placement's striding writers take their places
	// in the stride by SM, "reverse" from the last (carried, not modelled).
	WriteRankOrder                               string
	ReadSM, SmemBytes, LoadsInFlight, ChaseLanes int
	// ChaseSM: the SM a chase_grid chase ran on (tools/capture's chase_at
	// and chase_on; with WriteSMs, the writer kernel's SMs as probed).
	ChaseSM        int
	WriteSpanBytes int64
	// ReaderSM (placement by_sm, tools/capture's read_cores: two blocks
	// an SM): "with_storer" when each reading block shares its SM with a
	// storing block, "without_storer" when it runs on an SM that stores
	// nothing; "": one block an SM.
	ReaderSM string
	// AtomicPage (poll records of GPU-memory atomics, tools/capture's
	// poll_pages; block_pingpong and group_barrier records in GPU memory,
	// flag_pages and the suite where every flag lies on one page): "fast"
	// or "slow", the class of the 4 KiB page the words lie on, measured
	// before the run by one block's atomics there
	// (testdata/h200x1-arsim/system/atomic_pages.json.gz); "": not
	// measured.
	AtomicPage string

	// NCCLEnv are the NCCL environment variables the capture set beyond
	// NCCL_ALGO and NCCL_PROTO (tools/capture --env); nil: none.
	NCCLEnv map[string]string

	// Extra holds the fields this package does not know, undecoded; nil
	// when there are none.
	Extra map[string]json.RawMessage
}
