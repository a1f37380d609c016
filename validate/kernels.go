package validate

import (
	"fmt"

	"github.com/arsim/arsim/trace"
)

// captureLoadWaits is, for each of tools/capture's copy and reduction
// kernels, how many round trips one thread of its compiled loop waits for
// its loads each iteration (hw.Kernel.LoadWaits). The compiler decides
// it, not the source: ptxas issues a thread's loads in program order and
// a load whose register it reuses, or which it places after the adds of
// earlier loads, waits for their data first. Read from the kernels' SASS
// (nvcc 13.0 for sm_90, testdata/h200x1-arsim/system/sass_perblock_sm_90.txt.gz;
// TestCaptureLoadWaitsAreTheSASS derives every entry from it): each
// instruction issued in order, each load's data a round trip after its
// issue, an instruction waiting for the data it reads. Spill loads
// (LDL, pb_copy_8_2's) are not round trips to the sources.
//
// The two-source loops are where it matters: the same 16 loads of two
// sources compile to one wait at 2 packs a source (pb_copy_2_2), two in
// NCCL's shape (pb_nccl_copy_8_2) and three in the reduction of
// pb_nccl_reduce_2_1, whose loop differs only in indexing the sources.
var captureLoadWaits = map[string]int{
	"pb_copy_1_1": 1, "pb_copy_2_1": 1, "pb_copy_4_1": 1, "pb_copy_8_1": 1,
	"pb_copy_1_2": 1, "pb_copy_2_2": 1, "pb_copy_4_2": 3, "pb_copy_8_2": 3,
	"pb_copy_lb512_4_2": 2, "pb_copy_lb512_8_2": 3,
	"pb_copy_fenced_1_1": 1, "pb_copy_fenced_8_1": 1,
	"pb_nccl_copy_8_1": 1, "pb_nccl_copy_8_2": 2, "pb_nccl_copy2_8_1": 1, "pb_nccl_copy2_8_2": 3,
	"pb_nccl_reduce_u1_1": 1, "pb_nccl_reduce_u1_2": 1, "pb_nccl_reduce_u1_4": 1, "pb_nccl_reduce_u1_8": 2,
	"pb_nccl_reduce_u2_1": 1, "pb_nccl_reduce_u2_2": 1, "pb_nccl_reduce_u2_4": 2, "pb_nccl_reduce_u2_8": 4,
	"pb_nccl_reduce_u4_1": 1, "pb_nccl_reduce_u4_2": 2, "pb_nccl_reduce_u4_4": 3, "pb_nccl_reduce_u4_8": 7,
	"pb_nccl_reduce_1_1": 1, "pb_nccl_reduce_2_1": 3, "pb_nccl_reduce_3_1": 2, "pb_nccl_reduce_4_1": 3,
	"pb_nccl_reduce_6_1": 7, "pb_nccl_reduce_8_1": 7,
	"pb_nccl_reduce_1_2": 1, "pb_nccl_reduce_2_2": 4, "pb_nccl_reduce_4_2": 3, "pb_nccl_reduce_8_2": 7,
	// 3, 5 and 6 sources (the capture's part load_waits), read before it ran.
	"pb_nccl_reduce_u1_3": 1, "pb_nccl_reduce_u2_3": 1, "pb_nccl_reduce_u4_3": 2, "pb_nccl_reduce_u1_5": 1,
	"pb_nccl_reduce_u2_5": 2, "pb_nccl_reduce_u4_5": 3, "pb_nccl_reduce_5_1": 4, "pb_nccl_reduce_u1_6": 2,
	"pb_nccl_reduce_u2_6": 3, "pb_nccl_reduce_u4_6": 5,
	// The same loop compiled for at most 256 and 1,024 threads a block
	// (the part load_waits_lb), read before it ran: the registers move
	// pb_nccl_reduce_lb256_u8_2 to two waits and, with spills, the 1,024
	// build of eight packs over four and eight sources to 8 and 36.
	"pb_nccl_reduce_lb256_u8_2": 2, "pb_nccl_reduce_lb256_u4_4": 3, "pb_nccl_reduce_lb256_u8_4": 3,
	"pb_nccl_reduce_lb256_u2_8": 4, "pb_nccl_reduce_lb256_u4_8": 7, "pb_nccl_reduce_lb256_u8_8": 7,
	"pb_nccl_reduce_lb1024_u8_2": 3, "pb_nccl_reduce_lb1024_u4_4": 3, "pb_nccl_reduce_lb1024_u8_4": 8,
	"pb_nccl_reduce_lb1024_u2_8": 4, "pb_nccl_reduce_lb1024_u4_8": 7, "pb_nccl_reduce_lb1024_u8_8": 36,
	// A one-shot's pull over W buffers (loop pull, loop_bound unrolled):
	// the capture's build for 1,024 threads (32 registers) issues the
	// eight-buffer pull's loads in two batches; the same reduction in
	// vLLM's shape built for 512 threads (pb_pull_bf16_W) keeps all W in
	// flight, as arsim's rank_loop=unrolled has it, and so does its fp32
	// sum (pb_pull_f32_W, whose body nvcc unrolls over 4 and 2 iterations
	// at W = 2 and 4: one wait an iteration still).
	"pb_pull_unrolled2": 1, "pb_pull_unrolled4": 1, "pb_pull_unrolled8": 2,
	"pb_pull_bf16_2": 1, "pb_pull_bf16_3": 1, "pb_pull_bf16_4": 1, "pb_pull_bf16_5": 1, "pb_pull_bf16_6": 1, "pb_pull_bf16_8": 1,
	"pb_pull_f32_2": 1, "pb_pull_f32_4": 1, "pb_pull_f32_8": 1,
}

// captureLoadWaitsVolatile is, for the copies whose loop waits fewer
// times on the side that reads both sources with ld.volatile.global (trace
// src_loads volatile), that side's count; captureLoadWaits holds the plain
// side's. tools/capture's pb_copy_U_S picks each source's load by an
// argument (vol_a, vol_b), and the compiler keeps both loads in the loop
// under a predicate each; on the volatile side it issues all of a source's
// loads before the plain side's order would wait (sass.Kernel.MainLoopOn;
// TestCaptureLoadWaitsAreTheSASS derives both tables). A copy from host
// memory reads its first source volatile and its second plain, which waits
// as the plain side does.
var captureLoadWaitsVolatile = map[string]int{"pb_copy_4_2": 2, "pb_copy_8_2": 2}

// captureSpills is, for each of tools/capture's copy and reduction
// kernels whose compiled loop spills registers, the bytes one thread loads
// from and stores to its local memory each iteration (LDL, STL; an
// iteration is U × D of the loop's 16-byte global stores), read from the
// same SASS as captureLoadWaits (TestCaptureSpillsAreTheSASS derives every
// entry; a kernel not listed spills nothing in its loop).
var captureSpills = map[string][2]float64{
	"pb_copy_8_2":                {64, 64},
	"pb_nccl_reduce_5_1":         {28, 24},
	"pb_nccl_reduce_6_1":         {16, 12},
	"pb_nccl_reduce_8_1":         {16, 12},
	"pb_nccl_reduce_8_2":         {20, 20},
	"pb_nccl_reduce_lb1024_u8_4": {148, 144},
	"pb_nccl_reduce_lb1024_u8_8": {1268, 1240},
}

// copyKernel is the tools/capture kernel a loop copy record ran: its
// kernel field, else the one its fields name (the capture's copy_runner:
// pb_copy_U_S, pb_copy_lbB_U_S, pb_copy_fenced_U_S; NCCL's shape with
// fewer than 8 packs a source: pb_nccl_reduce_uU_S; with 8 and other than
// one or two sources: pb_nccl_reduce_S_D). "" when the fields name no
// kernel of the table (a push's) or two that wait differently (NCCL's
// shape over two sources is pb_nccl_copy_8_2 or pb_nccl_reduce_2_1).
func copyKernel(r trace.Record) string {
	if r.KernelName != "" {
		return r.KernelName
	}
	u, s, d := max(r.Unroll, 1), max(r.Sources, 1), max(r.Dests, 1)
	switch {
	case r.Code == "nccl_hunks" && u < 8 && d == 1:
		return fmt.Sprintf("pb_nccl_reduce_u%d_%d", u, s)
	case r.Code == "nccl_hunks" && u == 8 && s != 2:
		if s == 1 && d == 1 {
			return "pb_nccl_copy_8_1" // pb_nccl_reduce_1_1 compiles to the same one wait
		}
		return fmt.Sprintf("pb_nccl_reduce_%d_%d", s, d)
	case r.Code == "nccl_hunks" || d > 1:
		return ""
	case r.Fence == "sc":
		return fmt.Sprintf("pb_copy_fenced_%d_%d", u, s)
	case r.LaunchBound != 0 && r.LaunchBound != 1024:
		return fmt.Sprintf("pb_copy_lb%d_%d_%d", r.LaunchBound, u, s)
	}
	return fmt.Sprintf("pb_copy_%d_%d", u, s)
}

// loadWaits is the round trips a loop copy or unrolled pull record's
// thread waits for its loads each iteration (captureLoadWaits; a pull's
// kernel is pb_pull_unrolledW unless its kernel field says), 0 (every load
// in flight at once) for a kernel not in the table, and an error for a
// record whose fields name two kernels that wait differently and no kernel
// field.
func loadWaits(r trace.Record) (int, error) {
	if r.Kind == trace.KindLoop && r.Loop == "pull" && r.LoopBound != "runtime" {
		k := r.KernelName
		if k == "" {
			k = fmt.Sprintf("pb_pull_unrolled%d", r.World)
		}
		return captureLoadWaits[k], nil
	}
	if r.Kind != trace.KindLoop || r.Loop != "copy" {
		return 0, nil
	}
	k := copyKernel(r)
	if k == "" {
		if r.Code == "nccl_hunks" && max(r.Sources, 1) == 2 && max(r.Unroll, 1) == 8 {
			return 0, badRecord("a copy in NCCL's shape over two sources without its kernel field (pb_nccl_copy_8_2 and pb_nccl_reduce_2_1 wait 2 and 3 round trips an iteration)")
		}
		return 0, nil
	}
	if r.SrcLoads == "volatile" {
		if w, ok := captureLoadWaitsVolatile[k]; ok {
			return w, nil
		}
	}
	return captureLoadWaits[k], nil
}
