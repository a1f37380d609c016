package hw

import "fmt"

// hostShotTwin: tools/capture's pb_host_shot, a two-rank one-shot through
// pinned host memory (its one_shot_host at world 2) with both ranks on
// GPU 0, rank r's block b meeting the other rank's block b. With the
// barriers, its time per iteration is the sum of the loops it runs one
// after another, each simulated by the twin of the loop records that
// measure it alone (a part alone repeats as a stream, below):
//
//   - staging (phases bit 1): both ranks' blocks copy their input from
//     local to host memory with one 16-B load per thread in flight, then
//     fence at system scope (copyTwin, fence "sc"); the input is the same
//     every iteration, so it comes from the L2 (PerBlock.SrcInL2);
//   - the barriers (bit 2), two per iteration: two ranks, one group per
//     rank's block, vLLM's layout with every block storing to and polling
//     its own slot too (groupBarrierTwin, layout vllm, SelfSlot);
//   - the pull (bit 4): world 2, the loop over ranks bounded at run time,
//     the own input from local memory and the peer's from host memory
//     (pullTwin, bound runtime); after the staging (bits 1 and 4) the
//     peer's lines were written just before, so they are read
//     hostmem.fresh_line_saving sooner (PerBlock.Fresh; the saving is
//     fitted on LL loops, ll_live_2.jsonl, not here).
//
// A phase's data is the allreduce's bytes per rank; only the threads that
// hold data take part: its blocks are those with at least one 16-B
// element, its iterations ⌈elements / (blocks × threads)⌉.
func (m *Machine) hostShotTwin(rec PerBlock) (float64, error) {
	if rec.World != 2 || rec.BlocksPerRank < 1 || rec.Threads < 1 || rec.Phases < 1 || rec.Phases > 7 {
		return 0, fmt.Errorf("hw: loop host_shot: world %d, %d blocks per rank, %d threads, phases %d (want world 2, blocks, threads and phases 1-7)",
			rec.World, rec.BlocksPerRank, rec.Threads, rec.Phases)
	}
	packs := rec.Bytes / 16
	if rec.Phases&(1|4) != 0 && packs < 1 {
		return 0, fmt.Errorf("hw: loop host_shot: %d bytes: no 16-B element to stage or pull", rec.Bytes)
	}
	blocks := int(min(int64(rec.BlocksPerRank), (packs+int64(rec.Threads)-1)/int64(rec.Threads)))
	iters := 0
	if blocks > 0 {
		iters = int((packs + int64(blocks*rec.Threads) - 1) / int64(blocks*rec.Threads))
	}
	// Without the barriers (phases 1 or 4 alone) nothing holds the blocks
	// together from one iteration to the next: each block runs its own
	// part again as soon as it is done, so the iterations overlap and one
	// takes the longer of a block's own part (its blocks alone) and the
	// part's bytes at the rate all blocks share (repeats iterations run as
	// one stream); with the barriers, the parts follow each other.
	alone := rec.Phases&2 == 0
	const repeats = 8
	var sum float64
	part := func(sub PerBlock, times int) error {
		if !alone {
			v, err := PerBlockValue(m.Top, sub) // each part on a machine of its own: its time is its engine's clock
			sum += v * float64(times)
			return err
		}
		one := sub
		one.Blocks = 1
		chain, err := PerBlockValue(m.Top, one)
		if err != nil {
			return err
		}
		long := sub
		long.Iters = sub.Iters * repeats // its fence, if any, once: the stream's bytes land before it
		stream, err := PerBlockValue(m.Top, long)
		sum += max(chain, stream) * float64(times)
		return err
	}
	if rec.Phases&1 != 0 {
		if err := part(PerBlock{Kind: "loop", Loop: "copy", Src: "local", Dst: "host", Unroll: 1, Sources: 1, Fence: "sc", SrcInL2: true,
			Blocks: 2 * blocks, Threads: rec.Threads, Iters: iters}, iters); err != nil {
			return 0, err
		}
	}
	if rec.Phases&2 != 0 {
		if err := part(PerBlock{Kind: "loop", Loop: "group_barrier", Target: "host", Layout: "vllm", World: 2, SelfSlot: true,
			Groups: rec.BlocksPerRank, Blocks: 2 * rec.BlocksPerRank, Threads: rec.Threads}, 2); err != nil {
			return 0, err
		}
	}
	if rec.Phases&4 != 0 {
		if err := part(PerBlock{Kind: "loop", Loop: "pull", Bound: "runtime", World: 2, Fresh: rec.Phases&1 != 0,
			Blocks: 2 * blocks, Threads: rec.Threads, Iters: iters}, iters); err != nil {
			return 0, err
		}
	}
	return sum, nil
}
