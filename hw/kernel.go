package hw

import (
	"fmt"

	"github.com/arsim/arsim/sim"
)

// The launch configuration a transfer runs with, and the rate bounds it
// brings (protocol ceilings, per-block loops).

// Kernel describes the launch configuration of the kernel issuing accesses.
type Kernel struct {
	Blocks, Threads int
	// Wire multiplies the wire bytes per payload byte of the accesses:
	// 2 for NCCL's LL protocol (8 B of data per 16-B line), 128/120 for
	// LL128; 0 or 1 for plain data.
	Wire float64
	// Share is the fraction of the kernel's loads in flight and store
	// rate that this transfer gets when the kernel moves data to or from
	// several places at once (1/(n−1) for a pull from n−1 peers); 0 or 1:
	// all of it.
	Share float64
	// LoadsInFlight is the 16-byte loads each thread keeps in flight for
	// this transfer; 0 means the GPU's default (gpu.loads_in_flight,
	// measured for a streaming copy loop). A kernel whose loop loads from
	// n−1 peers independently keeps about one load in flight per peer.
	LoadsInFlight float64
	// RateCap, if > 0, caps each transfer of the kernel (a protocol's own
	// throughput limit, e.g. NCCL's LL per channel).
	RateCap sim.Rate
	// RateCapIter, if > 0, says RateCap is a loop's: a window of
	// RateCap × RateCapIter bytes per iteration of this long, so a
	// transfer takes whole iterations (windowCap); 0: RateCap is a
	// bandwidth.
	RateCapIter sim.Duration
	// CapGroup, if set, makes RateCap a limit on all the kernel's transfers
	// with the same group together (those in flight share it) instead of
	// a limit on each: a protocol loop whose throughput is bounded however
	// many of its steps are in flight at once (NCCL LL on one connection).
	// Every transfer of a group must carry the same RateCap.
	CapGroup string
	// ReduceLoop: the loads feed a load-reduce-store loop, whose every
	// iteration adds gpu.reduce_loop_overhead (gpu.reduce_loop_overhead_pcie
	// over PCIe) to the load round trip: the in-flight bytes turn over once
	// per round trip plus that.
	ReduceLoop bool
	// Volatile: the loads are volatile (ld.volatile, as a host-memory
	// one-shot reads its peers' data), which the compiler neither hoists
	// nor overlaps: each thread keeps one 16-byte load in flight, and each
	// waits a warp-wide vector load's round trip (gpu.vector_load_extra_pcie
	// more over PCIe). Not with ReduceLoop, whose overheads were measured
	// with such loads and include it.
	Volatile bool
	// StoresPerFence, on a write: each thread fences (system scope) after
	// this many of its stores, so its stores do not queue towards the
	// host beyond them (they do not count among the blocks that loads of
	// host memory wait behind, hostqueue.go); 0: no such fences. The
	// fences' cost to the stores themselves is not modelled.
	StoresPerFence int
	// Beside, on a read of host memory: where the kernel's blocks run
	// relative to the GPU's blocks streaming stores to host memory, as
	// validate's twins of tools/capture's probes know it; nil: not known
	// (schedules). A pointer, so that the kernel every op carries stays
	// small and quick to compare.
	Beside *StoresBeside
	// StoreSpan, on a streaming write to host memory: the bytes its
	// stores sweep, again and again, while they stream (a loop that
	// rewrites a buffer of that many bytes); 0: the write's own bytes, each
	// stored once. Loads of host memory wait longer behind stores that
	// sweep more (hostqueue.go).
	StoreSpan sim.Bytes
	// PacedStores, on a write: the loop issues each store after the load
	// that gives its value (a reduce that stores its result as it goes,
	// algos' fused writes), so its stores do not queue towards the host
	// ahead of its loads (they do not count among the blocks that loads of
	// host memory wait behind, hostqueue.go); also a producer's stores of
	// the lines that the GPU's own receivers poll (validate's twins of
	// live LL128 receives).
	PacedStores bool
	// StoresHost: a LoopSimple loop whose loads of host memory (LoopAt)
	// feed stores to host memory in the same loop (a copy from host memory
	// to host memory; NCCL Simple's receive over SHM that sends on over
	// SHM). Each iteration's loads wait pcie.posted_wait_one behind the
	// stores the block queued towards the host just before (measured on
	// one H200, testdata/h200x1-arsim/host_copies.jsonl and
	// host_copies_2.jsonl: such a copy is 7–36 % slower than the same
	// loads storing to GPU memory, 125–730 ns an iteration at one block:
	// about the 168 ns up to 8 KiB an iteration, growing with the bytes
	// beyond, which this one wait does not follow).
	StoresHost bool
	// OwnStoresHost: the bytes a read's own loop stores to host memory per
	// byte it loads from host memory, which the read's flow carries on the
	// PCIe hops towards the host beside its requests (a copy from host
	// memory to host memory: its destinations). Where a loop's stores are
	// a transfer of their own (algos' SHM sends), 0.
	OwnStoresHost float64
	// Loop is the per-thread loop the transfer runs in (see LoopRate):
	// its rate bounds the transfer, and, for a loop with a wire factor,
	// the SM's store rate counts wire bytes.
	Loop LoopKind
	// LoopAt is where the loop's iteration waits: the memory its LL lines
	// live in (the incoming FIFO), or its sources' memory (Simple).
	LoopAt Mem
	// Unroll: 16-byte loads per source each thread keeps in flight
	// (LoopSimple).
	Unroll int
	// Sources: loads per output element (1 copy, 2 reduction; LoopSimple).
	// On a LoopLL128 loop, 1 is a copy of its lines (no user buffer loaded
	// and added), which the loop parameters were fitted on; a reduction (2,
	// or 0) takes gpu.ll128_reduce_extra more per iteration.
	Sources int
	// OutStores: stores of each payload byte to the rank's own memory
	// beyond the transfer's destination (LoopSimple): NCCL's
	// recvReduceCopySend and recvCopySend store each element to the output
	// as well as to the next rank's FIFO. The SM issues them
	// (smIssueSeconds); no link carries them.
	OutStores int
	// StoresOut: the transfer's stores leave the GPU (Write sets it): the
	// SM spends 1/gpu.sm_store_bandwidth on each of their bytes, not
	// 1/gpu.sm_local_store_bandwidth (smIssueSeconds).
	StoresOut bool
	// StoresToHost: the loop's stores go to host memory (Write sets it
	// for a destination in host memory): where its loads are not of host
	// memory, each further 16-B store a thread issues costs each warp
	// gpu.host_store_issue_per_warp more than a store to GPU memory
	// (copyIterTimeFor).
	StoresToHost bool
	// Polled: the loads are the ones a poll loop has just made (NCCL LL
	// lines carry their own flags): the wait before them paid the round
	// trip, and the data streams at the read's rate from the start.
	Polled bool
	// Fresh: the loop's lines were written by another agent just before
	// it reads them (NCCL's SHM FIFO, which the peer fills step by step):
	// an LL or LL128 loop over such lines in host memory waits
	// hostmem.fresh_line_saving less per iteration than over lines that
	// come from DRAM, which the loop parameters were measured on
	// (testdata/h200x1-arsim/ll_live_2.jsonl).
	Fresh bool
	// StepBytes (LoopLL, LoopLL128): the loop runs in NCCL's steps of
	// this many payload bytes, and each step's bookkeeping (block
	// barriers before and after it, the head store: prims_ll.h,
	// prims_ll128.h) stalls the loop for nccl.ll_step_overhead or
	// nccl.ll128_step_overhead; 0: no steps.
	StepBytes int64
	// FromDRAM: the loads a loop's iteration waits on come from device
	// memory, not the L2 (the call's buffers span more than gpu.l2_size,
	// or its lines were pushed out): each iteration waits
	// gpu.dram_src_extra more. Those loads are LL's lines and its
	// reduction's user buffer, LL128's lines (its user buffer's loads are
	// issued before the poll and hide behind it: measured within 4 % on
	// one GPU, testdata/h200x1-arsim/src_residency.jsonl) and a Simple
	// loop's sources.
	FromDRAM bool
	// MemLoads (LoopLL, LoopLL128 over the rank's own memory, FromDRAM):
	// the bytes the loop loads from the GPU's memory per payload byte, its
	// lines and the user buffer a reduction or a send loads (hw.localLoads),
	// the load that lengthens its round trips (hw.Machine.loaded), counted
	// as a copy's loads are (gpu.mem_loaded_latency was fitted on them).
	// 0: the lines it reads alone.
	MemLoads float64
	// SrcInL2 (LoopSimple): the loop's sources sit in the L2 (a copy of
	// the same buffer call after call, an input the kernel before just
	// wrote): each iteration waits gpu.copy_dram_extra less than over
	// fresh data in device memory, which gpu.copy_iter_overhead was
	// measured on (hw.copyIterOverhead), and each further load and wait
	// costs gpu.vector_issue_l2 and gpu.load_wait_l2 (copyIterTimeFor).
	SrcInL2 bool
	// Hunks (LoopSimple): the loop is NCCL's reduceCopy, whose warps take
	// contiguous hunks of packs and skip a pass they have no data for
	// (src/device/common_kernel.h): it waits no loop start (loopStart),
	// which the plain loop does, and over local memory each further load
	// costs gpu.vector_issue alone (copyIterTimeFor). Measured on one
	// H200: testdata/h200x1-arsim/loop_start.jsonl, NCCL-shaped Simple
	// steps of 1–128 KiB at 128–1,024 threads within −14…+8 %.
	Hunks bool
	// HunkRotate (Hunks): the loop is NCCL's own reduceCopy, which
	// before its pass over the packs left after the whole hunks renumbers
	// its warps so the one with least work so far takes the first of
	// them (reduceCopyPacks' rotation); without it (the capture's
	// pb_simple_step_hunks) warp w takes left-over hunk w first
	// (hunkRounds).
	HunkRotate bool
	// SyncWarps (Hunks): warps of the block outside the copy (NCCL
	// Simple's extra warp for the sync, prims_simple.h: nworkers is
	// nthreads less one warp from 96 threads on when the primitive
	// sends); they take no hunks (hunkRounds, workerWarps).
	SyncWarps int
	// LoadWaits (LoopSimple, and a ReduceLoop pull) is how many times a
	// thread of the compiled loop waits a round trip for its loads each
	// iteration: the loads it issues before the first instruction that
	// reads one of them are in flight together, and a later load waits
	// for that first one's data (its register reused, or ordered after
	// the adds). 0 or 1: every load in flight at once. It is the code's,
	// not the machine's: read from the kernel's SASS (package sass,
	// `arsim sass`; validate's captureLoadWaits for tools/capture's
	// kernels). A copy counts it only over the rank's own device memory
	// (copyIterTimeFor); a pull over every source, each wait after the
	// first one more vector load's round trip to it (readSpec, as the
	// pull twin counts its batches: measured on one H200, pull_wide.jsonl,
	// an eight-buffer pull whose SASS waits twice takes two host round
	// trips an iteration).
	LoadWaits int
	// SpillLoads and SpillStores (LoopSimple) are the bytes a thread of the
	// compiled loop loads from and stores to its local memory (register
	// spills: LDL, STL) each iteration, read from its SASS (validate's
	// captureSpills). The SM issues them as it does the copy's own loads
	// and stores, at gpu.sm_load_bandwidth and gpu.sm_local_store_bandwidth
	// (smIssueSeconds); 0: the loop keeps everything in registers.
	SpillLoads, SpillStores float64
	// Reload: an LL128 receive loads its lines again once their flags
	// match (NCCL's prims_ll128.h: the data lanes' first loads may
	// predate the flag lane's), so its iteration waits a second round
	// trip to the lines' memory.
	Reload bool
	// NoPoll (LoopLL): the loop sends what it loads from its source, with
	// no lines to poll (NCCL's send primitive: a chunk's first step, a
	// tree leaf's reduce): each iteration waits
	// gpu.poll_loop_overhead less, the poll loop's own work beyond its
	// load (measured on one GPU: an LL send loop is 34–52 ns faster than
	// the receive loop at 64–256 threads).
	NoPoll bool
	// LoopGroup, if set, makes the loop's rate a limit on all the
	// transfers of the group together (the steps in flight that one
	// block's loop moves, as an NCCL connection's FIFO steps) instead of
	// on each.
	LoopGroup string
	// InOrder, with a LoopGroup: the group's transfers run one after
	// another, each in turn as it becomes ready, the next starting when
	// the one before has sent its last byte (the loop goes on without a
	// pause to the next step it has waiting). NCCL's primitives move a
	// connection's steps one at a time: a block's thread group finishes
	// step k before it starts k+1, so the steps flow down a pipeline of
	// connections instead of all finishing at once.
	InOrder bool
	// NCCLLoop (LoopLL, LoopLL128): the loop is NCCL's own primitive
	// (prims_ll.h, prims_ll128.h) moving a connection's steps, not a loop
	// measured on one GPU: each iteration waits nccl.ll_iter_extra (LL)
	// or nccl.ll128_iter_extra (LL128) more, what NCCL's loop needs beyond
	// the one-GPU loop with its operation fixed at compile time.
	NCCLLoop bool
	// RuntimeOp (LoopLL): the loop tests its operation each iteration, as
	// tools/capture's pb_ll does (NCCL's templated primitives and the
	// capture's later kernels fix it at compile time): each iteration
	// waits capture.ll_runtime_op more.
	RuntimeOp bool
	// LLWarpOps (LoopLL): the memory instructions a warp of the loop
	// issues each iteration, which gpu.ll_iter_per_warp is taken in
	// proportion to (llIterTime; 0: recv_reduce_send's three, on which it
	// was fitted). Set by the per-block twins of tools/capture's LL receive
	// loops; sends and schedules leave it 0.
	LLWarpOps int
	// Ranks and RanksInHost: the buffers a LoopRanks loop visits. For an
	// unrolled pull (ReduceLoop, LoopNone) Ranks is how many buffers an
	// iteration loads a pack from: each beyond two costs its chain
	// gpu.vector_issue, as each further load costs a copy loop (measured
	// on one H200: one block's pull over 2, 4 and 8 buffers takes 1.34–1.37,
	// 1.48–1.52 and 1.58–1.79 µs at 64–512 threads, pull_threads.jsonl);
	// 0: two.
	Ranks       int
	RanksInHost bool
}

// capped applies the kernel's RateCap to a transfer: on the flow itself,
// or, with a CapGroup, as one more hop over a resource of that capacity
// which every transfer of the group crosses (payload bytes, weight 1).
func (m *Machine) capped(route []sim.Hop, capr sim.Rate, k Kernel) ([]sim.Hop, sim.Rate, error) {
	if k.RateCap <= 0 {
		return route, capr, nil
	}
	if k.CapGroup == "" {
		return route, min(capr, k.RateCap), nil
	}
	id, ok := m.capGroups[k.CapGroup]
	if ok {
		if c := m.Net.Resource(id).Capacity; c != k.RateCap {
			return nil, 0, fmt.Errorf("hw: rate cap group %s: a transfer asks for %v, the group was made with %v", k.CapGroup, k.RateCap, c)
		}
	} else {
		var err error
		id, err = m.Net.AddResource("cap:"+k.CapGroup, k.RateCap)
		if err != nil {
			return nil, 0, fmt.Errorf("hw: rate cap group %s: %w", k.CapGroup, err)
		}
		if m.capGroups == nil {
			m.capGroups = map[string]sim.ResourceID{}
		}
		m.capGroups[k.CapGroup] = id
	}
	out := make([]sim.Hop, len(route), len(route)+1)
	copy(out, route)
	return append(out, sim.Hop{Res: id, Weight: 1}), capr, nil
}

// loopBound applies the kernel's loop rate (LoopRate) to a transfer: on the
// flow itself, or, with a LoopGroup, as one more hop over the group's
// resource, which every transfer of the group crosses. The resource is the
// block's loop time: its capacity is the rate of the group's first
// transfer and a transfer whose loop moves rate bytes per second weighs
// capacity/rate per byte, so transfers of different loops (a copy and a
// reduction, a send and the last receive) share the block's time, each
// alone getting its own loop's rate.
func (m *Machine) loopBound(r int, route []sim.Hop, capr sim.Rate, k Kernel) ([]sim.Hop, sim.Rate, error) {
	if k.Loop == LoopNone {
		return route, capr, nil
	}
	loop, err := m.LoopRate(r, k)
	if err != nil || loop <= 0 {
		return route, capr, err
	}
	if k.LoopGroup == "" {
		return route, min(capr, loop), nil
	}
	g, err := m.loopGroup(r, k.LoopGroup, loop)
	if err != nil {
		return nil, 0, err
	}
	out := make([]sim.Hop, len(route), len(route)+1)
	copy(out, route)
	return append(out, sim.Hop{Res: g.id, Weight: float64(g.rate) / float64(loop)}), capr, nil
}

// loopGroup returns rank r's resource of group name, made at rate when it
// is the group's first transfer.
func (m *Machine) loopGroup(r int, name string, rate sim.Rate) (loopGroup, error) {
	key := loopGroupKey{rank: r, group: name}
	if g, ok := m.loopGroups[key]; ok {
		return g, nil
	}
	id, err := m.Net.AddResource(fmt.Sprintf("loop:%d:%s", r, name), rate)
	if err != nil {
		return loopGroup{}, fmt.Errorf("hw: loop group %s: %w", name, err)
	}
	if m.loopGroups == nil {
		m.loopGroups = map[loopGroupKey]loopGroup{}
	}
	g := loopGroup{id: id, rate: rate}
	m.loopGroups[key] = g
	return g, nil
}

// loopGroupKey names a rank's Kernel.LoopGroup.
type loopGroupKey struct {
	rank  int
	group string
}

// loopGroup is a loop group's resource and its capacity.
type loopGroup struct {
	id   sim.ResourceID
	rate sim.Rate
}

func (k Kernel) share() float64 {
	if k.Share <= 0 || k.Share > 1 {
		return 1
	}
	return k.Share
}

// workerWarps is the warps of the block that take hunks of a Hunks loop:
// its threads (times Share) less Kernel.SyncWarps, at least one.
func (k Kernel) workerWarps() int {
	return max(1, int(float64(k.Threads)*k.share())/32-k.SyncWarps)
}

func (k Kernel) wire() float64 {
	if k.Wire <= 0 {
		return 1
	}
	return k.Wire
}

func scale(h []sim.Hop, w float64) []sim.Hop {
	if w != 1 {
		for i := range h {
			h[i].Weight *= w
		}
	}
	return h
}

func (k Kernel) check(op, label string) error {
	if k.Blocks <= 0 || k.Threads <= 0 {
		return fmt.Errorf("hw: %s %s: blocks and threads must be > 0, got %d × %d", op, label, k.Blocks, k.Threads)
	}
	if k.LoadWaits < 0 {
		return fmt.Errorf("hw: %s %s: load waits must be ≥ 0, got %d", op, label, k.LoadWaits)
	}
	if k.StoresPerFence < 0 {
		return fmt.Errorf("hw: %s %s: stores per fence must be ≥ 0, got %d", op, label, k.StoresPerFence)
	}
	if k.Volatile && k.ReduceLoop {
		return fmt.Errorf("hw: %s %s: a volatile load loop and a reduce loop at once (the reduce loop's overheads include its volatile loads)", op, label)
	}
	return nil
}

// StoresBeside is where a kernel loading host memory runs relative to
// the GPU's blocks streaming stores to host memory (Kernel.Beside).
type StoresBeside struct {
	// StoresOnItsSMs, on a read of host memory: the kernel's blocks share
	// their SMs with blocks of the same launch streaming stores to host
	// memory, so its loads wait behind their own SM's queued stores as
	// well as the GPU's (Machine.OwnSMStoreWait); false: they run on SMs
	// that store nothing, beside another kernel's storing blocks (a chase
	// kernel on a writer kernel's SM waited no more than elsewhere,
	// testdata/h200x1-arsim/chase_kernels.jsonl), or where they run is not
	// known.
	StoresOnItsSMs bool
	// WriterOnItsSMs, on a read of host memory: each of the kernel's
	// blocks shares its SM with a block of another kernel streaming stores
	// to host memory (a writer kernel with a block on every SM), so that
	// its loads wait pcie.posted_wait_writer_on_sm of the wait behind the
	// stores queued towards the host (Machine.WriterOnSMShare).
	WriterOnItsSMs bool
	// WriterOnSMBlocks, with WriterOnItsSMs: how many of the kernel's
	// blocks share an SM with a writer kernel's block, where only some do
	// (Machine.writerOnSMRoundTrip); 0: all of them.
	WriterOnSMBlocks int
	// StoresHalf, on a read of host memory: where the GPU's blocks
	// streaming stores to host memory run among its SMs' two halves,
	// relative to this kernel's loading blocks (Machine.HostLoadWaitIn);
	// the zero value: not known (the count of storing blocks decides).
	StoresHalf StoreHalves
	// StoresHalfSlowest, on a read of host memory whose blocks lie beside
	// the storing ones in different places (each of them a StoresHalf),
	// each block loading an equal share (a grid-stride loop): the places
	// of its blocks other than StoresHalf's, so that its loads wait the
	// longest of the places' waits (the kernel ends with its slowest
	// block); those not Known: none.
	StoresHalfSlowest [3]StoreHalves
}

// beside is k's Beside, or the zero placement (nothing known) where it
// has none.
func (k Kernel) beside() StoresBeside {
	if k.Beside == nil {
		return StoresBeside{}
	}
	return *k.Beside
}

// memLoads is the bytes a line loop's iteration loads from the GPU's
// memory: lines (the lines it reads) without Kernel.MemLoads, else its
// payload data times MemLoads.
func (k Kernel) memLoads(lines, data float64) float64 {
	if k.MemLoads <= 0 {
		return lines
	}
	return data * k.MemLoads
}
