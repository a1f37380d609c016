package hw

import "github.com/arsim/arsim/sim"

// NCCL's reduceCopy (Kernel.Hunks): how its warps share the packs of a
// copy, and what an uneven share waits beyond the loop's rate.

// hunkBytes is one warp's hunk in NCCL's reduceCopy at unroll u: u packs
// of 16 bytes for each of its 32 lanes (common_kernel.h, reduceCopyPacks:
// BytePerHunk).
func hunkBytes(u int) int64 { return int64(max(u, 1)) * 32 * 16 }

// hunkRounds is how many passes the busiest warp of NCCL's reduceCopy
// makes over bytes with warps warps at unroll u (common_kernel.h): whole
// hunks first (u loads a lane in flight), warp w taking hunks w, w +
// warps, …; then the packs left over in hunks of one pack a lane
// (Unroll 1), in turn again, from warp 0 or, where rotate (NCCL's own
// code), from the warp that took fewest whole hunks. Each pass waits its
// loads' round trip before the next issues its own, so a warp's passes
// add up; whole is the busiest warp's whole-hunk passes, tail its passes
// over the rest.
func hunkRounds(bytes int64, warps, u int, rotate bool) (whole, tail int64) {
	warps = max(warps, 1)
	w64 := int64(warps)
	hb := hunkBytes(u)
	full := bytes / hb
	left := (bytes - full*hb + 511) / 512 // Unroll-1 hunks, the last maybe partial
	for w := int64(0); w < w64; w++ {
		f := full / w64
		if w < full%w64 {
			f++
		}
		id := w // the warp's place in the tail pass
		if rotate {
			id = ((w-full)%w64 + w64) % w64
		}
		t := left / w64
		if id < left%w64 {
			t++
		}
		if f+t > whole+tail || (f+t == whole+tail && f > whole) {
			whole, tail = f, t
		}
	}
	return whole, tail
}

// hunkTail is what NCCL's reduceCopy (Kernel.Hunks) over bytes, split
// over the kernel's blocks, waits beyond what the model's loop charges
// it: its busiest warp's passes (hunkRounds), whole hunks of Unroll loads
// a thread (iterU, copyIterTimeFor) and then the packs left over, each
// pass of one load a thread (iter1), against the whole-hunk passes its
// bytes fill spread evenly over the warps (at least one), which the
// loop's rate charges. A copy of whole hunks the warps share alike waits
// none; a warp with a whole hunk more than the others waits its pass; a
// left-over pass is waited for where it falls on a warp that took a
// whole hunk (NCCL renumbers its warps so that those with fewest take
// the left-over packs first: Kernel.HunkRotate); a copy with no whole
// hunk (noWhole) makes only passes of one load a thread, the first of
// them its first iteration. firstIteration adds it to a copy's first
// iteration; a read by such a loop (a receive's loads) and a pass its
// loop group paces (the last receive's copy) wait it before their bytes.
// Zero for other loops. Measured on one H200:
// testdata/h200x1-arsim/simple_tail.jsonl, simple_whole.jsonl.
func (m *Machine) hunkTail(r int, k Kernel, bytes sim.Bytes) (tail, iter1 sim.Duration, noWhole bool, err error) {
	if k.Loop != LoopSimple || !k.Hunks || bytes <= 0 {
		return 0, 0, false, nil
	}
	blocks := int64(max(k.Blocks, 1))
	per := (int64(bytes) + blocks - 1) / blocks
	warps := k.workerWarps()
	whole, left := hunkRounds(per, warps, k.Unroll, k.HunkRotate)
	fill := max(1, float64(per)/float64(int64(warps)*hunkBytes(k.Unroll)))
	if left == 0 && float64(whole) <= fill {
		return 0, 0, false, nil
	}
	one := k
	one.Unroll = 1
	if iter1, err = m.copyIterTimeFor(r, one, 0); err != nil {
		return 0, 0, false, err
	}
	if whole == 0 {
		return sim.Duration(left-1) * iter1, iter1, true, nil
	}
	iterU, err := m.copyIterTimeFor(r, k, 0)
	if err != nil {
		return 0, 0, false, err
	}
	t := (float64(whole)-fill)*float64(iterU) + float64(left)*float64(iter1)
	return sim.Duration(max(0, t)), iter1, false, nil
}
