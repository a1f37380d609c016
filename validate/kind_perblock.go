package validate

import (
	"errors"
	"fmt"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// poll, block_pingpong and loop: what one thread block does on one GPU
// (tools/capture perblock). Each record is simulated by its twin in
// package hw (hw.PerBlockValue) on GPU 0 and its host memory; the
// parameters those twins use are fitted on a few of these records and the
// others are predicted (see Dimensions).
func init() {
	for _, k := range []trace.Kind{trace.KindPoll, trace.KindBlockPingpong, trace.KindLoop} {
		Register(k, perBlockTwin)
	}
}

// PerBlockOf is the per-block description of a record.
func PerBlockOf(r trace.Record) hw.PerBlock {
	return hw.PerBlock{Kind: string(r.Kind), Target: r.Target, Request: r.Request, AtomicPage: r.AtomicPage, Spacing: r.SpacingBytes,
		Mode: r.Mode, Pairs: r.Pairs, Loop: r.Loop, LLOp: r.LLOp, Recv: r.Recv, Dst: r.Dst, Src: r.Src,
		Unroll: r.Unroll, Sources: r.Sources, Bound: r.LoopBound, World: r.World, Slice: int64(r.SliceBytes),
		Fence: r.Fence, Stores: r.StoresPerThread, LoopCode: fenceLoopCode(r), Blocks: r.Blocks, Threads: r.Threads, Iters: r.Iters,
		Layout: r.Layout, Groups: r.Groups, Fresh: (r.Loop == "ll" || r.Loop == "ll128w") && (r.Producer == "before" || r.Producer == "live" || r.Producer == "stale"),
		Evicted: (r.Loop == "ll" || r.Loop == "ll128w") && r.Producer == "evicted", Live: (r.Loop == "ll" || r.Loop == "ll128w") && r.Producer == "live", ItersPerStep: r.ItersPerStep,
		RuntimeOp:  r.Loop == "ll" && r.Producer == "" && r.Code != "fixed_op", // pb_ll; pb_ll_live names its producer
		Neighbours: r.Neighbours, NeighbourOp: r.NeighbourOp, NeighbourPlace: r.NeighbourPlace, NeighbourThreads: neighbourThreads(r), NeighbourLoads: neighbourLoads(r), NeighbourSpacing: r.NeighbourSpacingBytes, EightBitTags: r.PCIeTags == trace.TagsEightBit, PollSleep: r.PollSleepNs,
		Dests: r.Dests, Bytes: hostShotBytes(r), Phases: r.Phases, BlocksPerRank: r.BlocksPerRank, PullApart: r.PullSrc == "apart",
		SrcInL2: srcInL2(r), Hunks: r.Code == "nccl_hunks" || r.Code == "nccl_hunks_rot", HunkRotate: r.Code == "nccl_hunks_rot", SelfSlot: r.Loop == "group_barrier" && r.SelfSlot == 1,
		FlagOffset: r.FlagOffset, StrideBytes: r.StrideBytes, GroupStrideBytes: r.GroupStrideBytes, RankOffsets: r.RankOffsets,
		CrossHalf: crossHalfShare(r)}
}

// fenceBesideCopy* describe the copy loop of tools/capture's
// pb_fence_beside, the neighbours of a fence record with neighbour_op
// read_stream and no neighbour_threads (fence_reads.jsonl,
// fence_beside_2.jsonl): blocks of 512 threads, each thread loading eight
// 16-B words of pinned host memory and storing them to GPU memory. Its
// machine code (testdata/h200x1-arsim/system/sass_fence_loops_sm_90.txt,
// nvcc's build under __launch_bounds__(1024)) spills the loaded words to
// local memory: it issues the loads in pairs, each pair followed by a
// spill store of the first one's result, which waits for it, so a thread
// keeps at most two loads in flight, not its source's eight (one block
// alone loads 8.2 GB/s there, where the pull loop with one load a thread
// in flight loads 6.2 and with eight 38.6: fence_pulls.jsonl). The
// storing pull loop (pb_fence_copies_L, whose records name their threads
// and loads) keeps its eight loads in flight before its stores.
const (
	fenceBesideCopyThreads  = 512
	fenceBesideCopyInFlight = 2
)

// neighbourThreads and neighbourLoads are a record's neighbours' threads
// and loads a thread in flight, as their machine code keeps them.
func neighbourThreads(r trace.Record) int {
	if r.NeighbourOp == "read_stream" && r.NeighbourThreads == 0 {
		return fenceBesideCopyThreads
	}
	return r.NeighbourThreads
}

func neighbourLoads(r trace.Record) int {
	switch {
	case r.NeighbourOp == "read_stream" && r.NeighbourThreads == 0:
		return fenceBesideCopyInFlight
	case r.Loop == "fence" && r.Code == "no_poll" && r.NeighbourOp == "pull" && r.NeighbourLoads == 1:
		return fenceStreamOneInFlight
	}
	return r.NeighbourLoads
}

// fenceStreamOneInFlight: the pullers of fence_stream's one-load loop
// (pb_fence_stream_1, records code no_poll) keep four 16-B elements a
// thread in flight, by their machine code
// (testdata/h200x1-arsim/system/sass_fence_loops_1_sm_90.txt: the loop
// unrolled four times, each element's two words loaded before the first
// is used); the eight-load loop keeps its eight (sass_fence_loops_sm_90.txt)
// and the pull loop with a poll (pb_fence_pulls_1) one.
const fenceStreamOneInFlight = 4

// hostShotBytes is a loop record's bytes where the format defines them (a
// host_shot's bytes per rank); on other loops hw.PerBlock.Bytes would cap
// what a copy or pull moves, which only the host_shot twin's parts set.
func hostShotBytes(r trace.Record) int64 {
	if r.Kind == trace.KindLoop && r.Loop == "host_shot" {
		return r.Bytes
	}
	return 0
}

func perBlockTwin(r trace.Record) (*Twin, error) {
	pb := PerBlockOf(r)
	if err := pb.Modelled(); err != nil {
		return nil, &SkipError{Why: ErrNotModelled, Reason: trimNotModelled(err), Cause: err}
	}
	if r.Producer == "paced" {
		// The receiver keeps up with a producer that pauses after each
		// store: its time is the producer's, not the loop's.
		return nil, notModelled("an LL receive behind a paced producer (%.0f ns a store) measures the producer", r.ProducerPauseNs)
	}
	if r.Kind == trace.KindLoop && r.Iters == 0 && (r.Loop == "ll" || r.Loop == "copy" || r.Loop == "pull") {
		return nil, badRecord("a %s loop record without iters", r.Loop)
	}
	waits, err := loadWaits(r)
	if err != nil {
		return nil, err
	}
	pb.LoadWaits = waits
	if r.Kind == trace.KindLoop && r.Loop == "copy" {
		sp := captureSpills[copyKernel(r)]
		pb.SpillLoads, pb.SpillStores = sp[0], sp[1]
	}
	t := &Twin{Group: perBlockGroup(r)}
	t.Sim = device(func(top *topology.Topology) (float64, error) { return hw.PerBlockValue(top, pb) })
	if r.NsPerIterSlowestBlock > 0 {
		t.Ends = func(top *topology.Topology) (bool, error) { return hw.PerBlockEnds(top, pb) }
		t.EndValue = r.NsPerIterSlowestBlock
	}
	return t, nil
}

// trimNotModelled is the reason of a not-modelled per-block record without
// the sentinel's own words.
func trimNotModelled(err error) string {
	msg := err.Error()
	if s := ": " + hw.ErrNotModelled.Error(); len(msg) > len(s) && msg[len(msg)-len(s):] == s && errors.Is(err, hw.ErrNotModelled) {
		return msg[:len(msg)-len(s)] + " is not modelled"
	}
	return msg
}

func perBlockGroup(r trace.Record) string {
	switch r.Kind {
	case trace.KindPoll:
		return fmt.Sprintf("poll %s %s", r.Request, r.Target)
	case trace.KindBlockPingpong:
		return fmt.Sprintf("block_pingpong %s %s", r.Mode, r.Target)
	}
	switch r.Loop {
	case "ll":
		if r.Producer != "" {
			return fmt.Sprintf("loop ll %s recv %s, lines by %s producer", r.LLOp, r.Recv, r.Producer)
		}
		return fmt.Sprintf("loop ll %s recv %s", r.LLOp, r.Recv)
	case "copy":
		return fmt.Sprintf("loop copy %s→%s", r.Src, r.Dst)
	}
	return "loop " + r.Loop
}

// srcInL2 says whether a copy's or a Simple step's source sits in
// the L2: a copy's when the record says src_residency l2; a Simple step's
// unless it says fresh, as tools/capture's simple_steps reads the same
// 200 slices (12.8 MB at most) every launch (simple_fresh.jsonl: those
// runs repeat the records without the field within 1 %).
func srcInL2(r trace.Record) bool {
	switch r.Loop {
	case "copy":
		return r.SrcResidency == "l2"
	case "simple_step":
		return r.SrcResidency != "fresh"
	}
	return false
}

// fenceLoopCode reports whether a fence loop record ran tools/capture's
// pb_fence_blocks (the perblock part's fence, write_buffer), whose loop
// adds capture.fence_loop_code: it times every fencing block and writes
// ns_per_iter_slowest_block; the one-warp fence kernels beside
// neighbours (pb_fence_polls, _ar, _t, pb_fence_pulls_*,
// pb_fence_stream_*, pb_fence_copies_*, pb_fence_beside) time their one
// fencing block and write no such field.
func fenceLoopCode(r trace.Record) bool {
	return r.Loop == "fence" && r.NsPerIterSlowestBlock > 0
}
