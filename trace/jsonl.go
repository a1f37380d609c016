package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

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
)

// Kinds returns every kind of JSON Lines v1, in the order FORMAT.md lists them.
func Kinds() []Kind {
	return []Kind{KindAllreduce, KindAllreduceSequence, KindMemcpy, KindSMAccess,
		KindPointerChase, KindFlagPingpong, KindEmptyKernel, KindHostLinkConcurrency, KindFence, KindBarrier,
		KindPoll, KindBlockPingpong, KindLoop}
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

	// Engine is the memcpy engine ("copy_engine").
	Engine string
	// Dir is the memcpy direction: "h2d", "d2h", "p2p", or "bidir" (an
	// h2d and a d2h copy at once; tools/capture).
	Dir string
	// API says how copies were issued: "cudaMemcpyAsync" (tools/capture)
	// or "torch.copy_"; "" is taken as PyTorch's tensor.copy_.
	API string
	// Streams is how many streams a memcpy record ran copies on at once;
	// Transfers how many copies it ran in all (a bidir record: half each
	// way). 0: not given.
	Streams, Transfers int

	// Op is the sm_access operation: "read" or "write".
	Op string
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
	// a row) or "graph_replay"; "" is taken as single.
	Mode string
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
	// group_barrier's slot layout ("packed": a rank's slots in one sector;
	// "line_per_slot") and its groups of World blocks barriering at once;
	// NsPerOp and OneWayNs the values (NsPerIter for loops).
	Request, Loop, LLOp, Recv, Dst, Src, LoopBound, Fence, Layout                    string
	SpacingBytes, Pairs, Unroll, Sources, SliceBytes, StoresPerThread, Iters, Groups int
	NsPerOp, OneWayNs                                                                float64

	// NCCLEnv are the NCCL environment variables the capture set beyond
	// NCCL_ALGO and NCCL_PROTO (tools/capture --env); nil: none.
	NCCLEnv map[string]string

	// Extra holds the fields this package does not know, undecoded; nil
	// when there are none.
	Extra map[string]json.RawMessage
}

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
	zeroOK bool     // a number that may be 0 (and then reads as not given)
	max    int64    // an integer's largest value (every integer field has one)
	why    string   // what max is
	str    func(*Record) *string
	num    func(*Record) *float64
	i32    func(*Record) *int
	i64    func(*Record) *int64
	obj    func(*Record) *map[string]string
}

// fieldDefs lists the fields of JSON Lines v1 in a fixed order, so that
// validation reports the same error on every run.
var fieldDefs = []fieldDef{
	{name: "system", typ: jString, str: func(r *Record) *string { return &r.System }},
	{name: "kind", typ: jString, enum: kindValues(), str: func(r *Record) *string { return (*string)(&r.Kind) }},
	{name: "clock", typ: jString, enum: []string{"device_events", "host", "sm_clock64"}, str: func(r *Record) *string { return (*string)(&r.Clock) }},
	{name: "launch", typ: jString, enum: names(Launches()), str: func(r *Record) *string { return (*string)(&r.Launch) }},
	{name: "us", typ: jNumber, num: func(r *Record) *float64 { return &r.Us }},
	{name: "us_min", typ: jNumber, num: func(r *Record) *float64 { return &r.UsMin }},
	{name: "us_max", typ: jNumber, num: func(r *Record) *float64 { return &r.UsMax }},
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
	{name: "hidden", typ: jInt, max: 1 << 20, why: "a model's hidden size: a million elements", i32: func(r *Record) *int { return &r.Hidden }},
	{name: "engine", typ: jString, enum: []string{"copy_engine"}, str: func(r *Record) *string { return &r.Engine }},
	{name: "dir", typ: jString, enum: []string{"bidir", "d2h", "h2d", "p2p"}, str: func(r *Record) *string { return &r.Dir }},
	{name: "op", typ: jString, enum: []string{"read", "read_only_loop", "read_reduce", "write"}, str: func(r *Record) *string { return &r.Op }},
	{name: "target", typ: jString, enum: []string{"host", "local", "peer"}, str: func(r *Record) *string { return &r.Target }},
	{name: "bytes_per_access", typ: jInt, max: 64, why: "the widest vector access of any GPU is 32 B", i32: func(r *Record) *int { return &r.BytesPerAccess }},
	{name: "gbps", typ: jNumber, num: func(r *Record) *float64 { return &r.Gbps }},
	{name: "ns_per_step", typ: jNumber, num: func(r *Record) *float64 { return &r.NsPerStep }},
	{name: "variant", typ: jString, enum: []string{"16x16B", "16x16B+fence_sys", "st_release_sys", "store", "store+fence_gpu", "store+fence_sys"}, str: func(r *Record) *string { return &r.Variant }},
	{name: "ns_per_iter", typ: jNumber, num: func(r *Record) *float64 { return &r.NsPerIter }},
	{name: "barrier", typ: jString, enum: []string{"cas", "flag"}, str: func(r *Record) *string { return &r.Barrier }},
	{name: "stride_words", typ: jInt, max: 1 << 20, why: "slots 4 MiB apart", i32: func(r *Record) *int { return &r.StrideWords }},
	{name: "barriers_per_launch", typ: jInt, max: 1024, why: "barriers in a row in one kernel: each is simulated, every rank signalling every other", i32: func(r *Record) *int { return &r.BarriersPerLaunch }},
	{name: "via", typ: jString, enum: []string{"host", "peer"}, str: func(r *Record) *string { return &r.Via }},
	{name: "one_way_us", typ: jNumber, num: func(r *Record) *float64 { return &r.OneWayUs }},
	{name: "one_way_us_min", typ: jNumber, num: func(r *Record) *float64 { return &r.OneWayUsMin }},
	{name: "note", typ: jString, str: func(r *Record) *string { return &r.Note }},
	{name: "what", typ: jString, enum: []string{"ce_bidir", "ce_d2h", "ce_h2d", "sm_read", "sm_write"}, str: func(r *Record) *string { return &r.What }},
	{name: "gpus", typ: jInt, max: maxGPUs, why: "GPUs in one measurement: more than any NVLink domain (576)", i32: func(r *Record) *int { return &r.GPUs }},
	{name: "bytes_per_gpu", typ: jInt, max: maxBytes, why: bytesWhy, i64: func(r *Record) *int64 { return &r.BytesPerGPU }},
	{name: "gbps_per_gpu", typ: jNumber, num: func(r *Record) *float64 { return &r.GbpsPerGPU }},
	{name: "gbps_total", typ: jNumber, num: func(r *Record) *float64 { return &r.GbpsTotal }},
	{name: "api", typ: jString, enum: []string{"cudaMemcpyAsync", "torch.copy_"}, str: func(r *Record) *string { return &r.API }},
	{name: "streams", typ: jInt, max: 1024, why: "CUDA streams copying at once", i32: func(r *Record) *int { return &r.Streams }},
	{name: "transfers", typ: jInt, max: 1 << 16, why: "copies at once: each is simulated", i32: func(r *Record) *int { return &r.Transfers }},
	{name: "round_trips", typ: jInt, max: 1 << 20, why: "round trips timed: each is simulated", i32: func(r *Record) *int { return &r.RoundTrips }},
	{name: "mode", typ: jString, enum: []string{"back_to_back", "graph_replay", "release_acquire", "single", "volatile", "volatile_fence"}, str: func(r *Record) *string { return &r.Mode }},
	{name: "request", typ: jString, enum: []string{"atomic_add", "atomic_cas", "load_acquire", "load_relaxed", "load_volatile"}, str: func(r *Record) *string { return &r.Request }},
	{name: "spacing_bytes", typ: jInt, max: 1 << 20, why: "words 1 MiB apart", zeroOK: true, i32: func(r *Record) *int { return &r.SpacingBytes }},
	{name: "pairs", typ: jInt, max: 1 << 16, why: "pairs of blocks ping-ponging: each is simulated", i32: func(r *Record) *int { return &r.Pairs }},
	{name: "loop", typ: jString, enum: []string{"copy", "fence", "group_barrier", "ll", "ll128", "ll128w", "pull", "simple_step"}, str: func(r *Record) *string { return &r.Loop }},
	{name: "ll_op", typ: jString, enum: []string{"recv", "recv_reduce_copy_send", "recv_reduce_send", "recv_send", "send"}, str: func(r *Record) *string { return &r.LLOp }},
	{name: "recv", typ: jString, enum: []string{"host", "local", "none"}, str: func(r *Record) *string { return &r.Recv }},
	{name: "dst", typ: jString, enum: []string{"host", "local", "none"}, str: func(r *Record) *string { return &r.Dst }},
	{name: "src", typ: jString, enum: []string{"host", "local", "local+host"}, str: func(r *Record) *string { return &r.Src }},
	{name: "unroll", typ: jInt, max: 64, why: "loads in flight per source per thread", i32: func(r *Record) *int { return &r.Unroll }},
	{name: "sources", typ: jInt, max: 64, why: "sources a loop reads per element", i32: func(r *Record) *int { return &r.Sources }},
	{name: "loop_bound", typ: jString, enum: []string{"runtime", "unrolled"}, str: func(r *Record) *string { return &r.LoopBound }},
	{name: "slice_bytes", typ: jInt, max: 1 << 30, why: "a Simple step's slice: 1 GiB", zeroOK: true, i32: func(r *Record) *int { return &r.SliceBytes }},
	{name: "fence", typ: jString, enum: []string{"acq_rel", "none", "sc"}, str: func(r *Record) *string { return &r.Fence }},
	{name: "stores_per_thread", typ: jInt, max: 1 << 16, why: "stores before one fence", zeroOK: true, i32: func(r *Record) *int { return &r.StoresPerThread }},
	{name: "iters", typ: jInt, max: 1 << 20, why: "iterations per block: each is simulated", i32: func(r *Record) *int { return &r.Iters }},
	{name: "layout", typ: jString, enum: []string{"line_per_slot", "packed"}, str: func(r *Record) *string { return &r.Layout }},
	{name: "groups", typ: jInt, max: 1024, why: "groups of blocks: each is simulated", i32: func(r *Record) *int { return &r.Groups }},
	{name: "ns_per_op", typ: jNumber, num: func(r *Record) *float64 { return &r.NsPerOp }},
	{name: "one_way_ns", typ: jNumber, num: func(r *Record) *float64 { return &r.OneWayNs }},
	{name: "prefill_us", typ: jNumber, zeroOK: true, num: func(r *Record) *float64 { return &r.PrefillUs }},
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

// Validate checks r against JSON Lines v1: known kind and clock, the
// fields its kind requires, known enum values, positive sizes and times,
// and min ≤ median ≤ max. Records returned by ReadJSONL always pass.
func (r Record) Validate() error {
	if err := r.validate(); err != nil {
		return at("record", r.Line, err)
	}
	return nil
}

func (r *Record) validate() error {
	for _, name := range []string{"system", "kind", "clock"} {
		if fieldIndex[name].isZero(r) {
			return fieldErrf(name, "missing")
		}
	}
	for i := range fieldDefs {
		d := &fieldDefs[i]
		if d.isZero(r) {
			continue
		}
		if err := d.checkValue(r); err != nil {
			return err
		}
	}
	for _, name := range required[r.Kind] {
		if fieldIndex[name].isZero(r) {
			return fieldErrf(name, "missing (required for kind %q)", r.Kind)
		}
	}
	if (r.Kind == KindAllreduce || r.Kind == KindAllreduceSequence) && r.Impl == "nccl" && r.Proto == "" {
		return fieldErrf("proto", "missing (required for impl \"nccl\")")
	}
	if r.UsMin != 0 && r.Us != 0 && r.UsMin > r.Us {
		return fieldErrf("us_min", "%v is above us %v", r.UsMin, r.Us)
	}
	if r.UsMax != 0 && r.Us != 0 && r.UsMax < r.Us {
		return fieldErrf("us_max", "%v is below us %v", r.UsMax, r.Us)
	}
	if r.OneWayUsMin != 0 && r.OneWayUs != 0 && r.OneWayUsMin > r.OneWayUs {
		return fieldErrf("one_way_us_min", "%v is above one_way_us %v", r.OneWayUsMin, r.OneWayUs)
	}
	return nil
}

// Primary returns the record's primary measured value and its unit:
//
//   - allreduce, memcpy, sm_access, empty_kernel: Us, "us";
//   - allreduce_sequence: Us, the time of the whole sequence, "us";
//   - pointer_chase: NsPerStep, "ns";
//   - flag_pingpong: OneWayUs, "us";
//   - host_link_concurrency: GbpsTotal, "GB/s" (FORMAT.md names the
//     bandwidth of this kind only loosely; the total over all GPUs is the
//     figure that shows a shared host-side limit, so it is the primary one;
//     GbpsPerGPU is the other).
//
// It fails when the kind is unknown or the value is missing.
func (r Record) Primary() (value float64, unit string, err error) {
	var field string
	switch r.Kind {
	case KindAllreduce, KindAllreduceSequence, KindMemcpy, KindSMAccess, KindEmptyKernel, KindBarrier:
		value, unit, field = r.Us, "us", "us"
	case KindPointerChase:
		value, unit, field = r.NsPerStep, "ns", "ns_per_step"
	case KindFence, KindLoop:
		value, unit, field = r.NsPerIter, "ns", "ns_per_iter"
	case KindPoll:
		value, unit, field = r.NsPerOp, "ns", "ns_per_op"
	case KindBlockPingpong:
		value, unit, field = r.OneWayNs, "ns", "one_way_ns"
	case KindFlagPingpong:
		value, unit, field = r.OneWayUs, "us", "one_way_us"
	case KindHostLinkConcurrency:
		value, unit, field = r.GbpsTotal, "GB/s", "gbps_total"
	default:
		return 0, "", at("record", r.Line, fieldErrf("kind", "unknown value %q; allowed: %s", r.Kind, strings.Join(kindValues(), ", ")))
	}
	if value == 0 {
		return 0, "", at("record", r.Line, fieldErrf(field, "missing"))
	}
	return value, unit, nil
}

// jsonTypeOf names the JSON type of a raw value, for error messages.
func jsonTypeOf(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	default:
		return "number"
	}
}

// least says what a number must be: "> 0", or "≥ 0" where 0 is allowed.
func (d *fieldDef) least() string {
	if d.zeroOK {
		return "≥ 0"
	}
	return "> 0"
}

// set decodes raw into the field of r that d describes.
func (d *fieldDef) set(r *Record, raw json.RawMessage) error {
	if got := jsonTypeOf(raw); got != d.typ.json() {
		return fieldErrf(d.name, "want %s, got %s", d.typ, got)
	}
	switch d.typ {
	case jString:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return fieldErrf(d.name, "want string: %v", err)
		}
		if s == "" {
			return fieldErrf(d.name, "must not be empty")
		}
		*d.str(r) = s
	case jNumber:
		v, err := strconv.ParseFloat(string(bytes.TrimSpace(raw)), 64)
		if err != nil || math.IsInf(v, 0) {
			return fieldErrf(d.name, "want finite number, got %s", raw)
		}
		if v < 0 || (v == 0 && !d.zeroOK) {
			return fieldErrf(d.name, "must be %s, got %v", d.least(), v)
		}
		*d.num(r) = v
	case jInt:
		txt := string(bytes.TrimSpace(raw))
		v, err := strconv.ParseInt(txt, 10, 64)
		if err != nil {
			f, ferr := strconv.ParseFloat(txt, 64)
			if ferr != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
				return fieldErrf(d.name, "want integer, got %s", txt)
			}
			v = int64(f)
		}
		if err := d.checkInt(v); err != nil {
			return err
		}
		if d.i32 != nil {
			*d.i32(r) = int(v)
		} else {
			*d.i64(r) = v
		}
	case jObject:
		var m map[string]string
		if err := json.Unmarshal(raw, &m); err != nil {
			return fieldErrf(d.name, "want an object of strings: %v", err)
		}
		if len(m) > 0 {
			*d.obj(r) = m
		}
	}
	return nil
}

// decodeRecord parses and validates one non-blank line.
func decodeRecord(line []byte, lineNo int) (Record, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(line, &obj); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return Record{}, fieldErrf("", "want a JSON object, got %s", ute.Value)
		}
		return Record{}, fieldErrf("", "bad JSON: %v", err)
	}
	if obj == nil {
		return Record{}, fieldErrf("", "want a JSON object, got null")
	}
	r := Record{Line: lineNo}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		d, ok := fieldIndex[k]
		if !ok {
			if r.Extra == nil {
				r.Extra = make(map[string]json.RawMessage)
			}
			r.Extra[k] = obj[k]
			continue
		}
		if err := d.set(&r, obj[k]); err != nil {
			return Record{}, err
		}
	}
	if err := r.validate(); err != nil {
		return Record{}, err
	}
	return r, nil
}

// ReadJSONL reads a JSON Lines v1 trace (one record per line, format in
// the package documentation). name is used in error messages only. A UTF-8
// byte-order mark before the first line is skipped.
//
// Blank lines are ignored. By default the first malformed line ends the
// read with a *ParseError naming name, the line number and the field; with
// opts.SkipBad malformed lines are skipped and returned as BadLines, and
// the error is non-nil only when r fails. A line longer than MaxLineBytes
// is malformed; an input beyond MaxTraceBytes or MaxTraceLines is refused
// with an error whatever opts say (the work and memory of a read are
// bounded, even for an endless input).
func ReadJSONL(r io.Reader, name string, opts ReadOptions) ([]Record, []BadLine, error) {
	lr := &io.LimitedReader{R: r, N: MaxTraceBytes + 1}
	br := bufio.NewReader(lr)
	var (
		recs []Record
		bad  []BadLine
	)
	for lineNo := 1; ; lineNo++ {
		if lineNo > MaxTraceLines {
			return nil, nil, fmt.Errorf("trace: %s: more than %d lines; a trace is at most that long (MaxTraceLines)", name, MaxTraceLines)
		}
		line, long, err := readLine(br, MaxLineBytes, opts.SkipBad)
		if lr.N <= 0 {
			return nil, nil, fmt.Errorf("trace: %s: larger than %d MiB; a trace is at most that large (MaxTraceBytes)", name, MaxTraceBytes>>20)
		}
		if lineNo == 1 {
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
		}
		if long {
			pe := at(name, lineNo, fieldErrf("", "line longer than %d bytes: not a record (a JSON Lines record is one short line)", MaxLineBytes))
			if !opts.SkipBad {
				return nil, nil, pe
			}
			bad = append(bad, BadLine{Line: lineNo, Err: pe})
		} else if len(line) > 0 {
			if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
				rec, derr := decodeRecord(trimmed, lineNo)
				if derr != nil {
					pe := at(name, lineNo, derr)
					if !opts.SkipBad {
						return nil, nil, pe
					}
					bad = append(bad, BadLine{Line: lineNo, Err: pe})
				} else {
					recs = append(recs, rec)
				}
			}
		}
		if err == io.EOF {
			return recs, bad, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("trace: %s line %d: %w", name, lineNo, err)
		}
	}
}

// readLine reads one line (with its '\n', if any) of at most limit bytes.
// A longer line gives long true: read to its end and dropped when drain
// (the read goes on after it), else left at once.
func readLine(br *bufio.Reader, limit int, drain bool) (line []byte, long bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !long {
			if len(line)+len(chunk) > limit {
				long, line = true, nil
				if !drain {
					return nil, true, nil
				}
			} else {
				line = append(line, chunk...)
			}
		}
		if err != bufio.ErrBufferFull {
			return line, long, err
		}
	}
}

// ReadJSONLFile reads the JSON Lines v1 trace at path; see ReadJSONL.
func ReadJSONLFile(path string, opts ReadOptions) ([]Record, []BadLine, error) {
	f, err := openFile(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	return ReadJSONL(f, path, opts)
}
