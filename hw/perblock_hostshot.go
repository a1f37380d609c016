package hw

import (
	"fmt"

	"github.com/arsim/arsim/sim"
)

// hostShotTwin: tools/capture's pb_host_shot, a two-rank one-shot through
// pinned host memory (its one_shot_host at world 2) with both ranks on
// GPU 0, rank r's block b meeting the other rank's block b. With the
// barriers, its time per iteration is the sum of the loops it runs one
// after another, each simulated by the twin of the loop records that
// measure it alone (a part alone repeats as a stream, below), unless
// staging and pull are both bound by what the blocks share, when the
// blocks drift apart and overlap their streams (hostShotDrift):
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
// element, its iterations ⌈elements / (blocks × threads)⌉, the last one
// partial (the parts move the record's bytes: PerBlock.Bytes).
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
	stage := PerBlock{Kind: "loop", Loop: "copy", Src: "local", Dst: "host", Unroll: 1, Sources: 1, Fence: "sc", SrcInL2: true,
		Blocks: 2 * blocks, Threads: rec.Threads, Iters: iters, Bytes: 2 * rec.Bytes}
	barrier := PerBlock{Kind: "loop", Loop: "group_barrier", Target: "host", Layout: "vllm", World: 2, SelfSlot: true,
		Groups: rec.BlocksPerRank, Blocks: 2 * rec.BlocksPerRank, Threads: rec.Threads}
	pull := PerBlock{Kind: "loop", Loop: "pull", Bound: "runtime", World: 2, Fresh: rec.Phases&1 != 0 && !rec.PullApart,
		Blocks: 2 * blocks, Threads: rec.Threads, Iters: iters, Bytes: 2 * rec.Bytes}
	// A part's chain is one block's iterations of it alone; its stream,
	// repeats launches' worth of its bytes at the rate all its blocks share
	// (its fence, if any, once: the stream's bytes land before it), per
	// launch.
	const repeats = 8
	chainOf := func(sub PerBlock) (float64, error) {
		one := sub
		one.Blocks, one.Bytes = 1, 0 // one block's chain of whole iterations
		return PerBlockValue(m.Top, one)
	}
	streamOf := func(sub PerBlock) (float64, error) { return PerBlockValue(m.Top, repeated(sub, repeats)) }
	var data []PerBlock // the parts that move data, in order
	if rec.Phases&1 != 0 {
		data = append(data, stage)
	}
	if rec.Phases&4 != 0 {
		data = append(data, pull)
	}
	chains, streams := make([]float64, len(data)), make([]float64, len(data))
	shared := len(data) == 2
	for i, sub := range data {
		if !shared && rec.Phases&2 != 0 {
			break // one part between barriers: neither chain nor stream is asked for
		}
		var err error
		if chains[i], err = chainOf(sub); err != nil {
			return 0, err
		}
		if streams[i], err = streamOf(sub); err != nil {
			return 0, err
		}
		shared = shared && streams[i] > chains[i]
	}
	var t float64
	switch {
	case shared:
		// Staging and pull, each bound by what its blocks share: the
		// blocks drift apart (hostShotDrift).
		d, err := m.hostShotDrift(stage, pull, iters, repeats, chains[0]+chains[1])
		if err != nil {
			return 0, err
		}
		t = d
	case rec.Phases&2 == 0:
		// Without the barriers (phases 1 or 4 alone, or both when a part
		// is bound by its blocks' own chains) the parts repeat as streams
		// (streamedParts).
		t = streamedParts(data, chains, streams, iters)
		if len(data) == 2 {
			w, err := m.leftFreeFence(blocks, rec.Threads)
			if err != nil {
				return 0, err
			}
			t += w
		}
	default:
		// With the barriers, the parts follow each other, all blocks in
		// each: each part on a machine of its own (its time is its
		// engine's clock).
		for _, sub := range data {
			v, err := PerBlockValue(m.Top, sub)
			if err != nil {
				return 0, err
			}
			t += v * float64(iters)
		}
	}
	if rec.Phases&2 != 0 {
		b, err := PerBlockValue(m.Top, barrier)
		if err != nil {
			return 0, err
		}
		t += 2 * b
	}
	return t, nil
}

// streamedParts is a one-shot's parts without the barriers: nothing holds
// the blocks together from one iteration to the next, each block runs its
// own part again as soon as it is done, so the iterations overlap and one
// takes the longer of a block's own part (chains: one block's iteration
// alone) and the part's bytes at the rate all blocks share (streams).
//
// A block's part that ends in a system fence (the staging) waits for its
// stores to land, and the other blocks' stores queued on the link ahead of
// its own land first: on average half of one iteration of theirs at the
// rate they share, the part's stream × (blocks − 1) / (2 × blocks), once a
// part. Nothing fitted; measured on one H200 (host_shot.jsonl, staging
// alone at 14 KiB, one iteration a block): 1.15–1.25 µs where a block
// alone takes 0.92–0.95.
func streamedParts(data []PerBlock, chains, streams []float64, iters int) float64 {
	var t float64
	for i, sub := range data {
		own := chains[i] * float64(iters)
		if sub.Fence != "" && sub.Blocks > 1 {
			own += streams[i] * float64(sub.Blocks-1) / float64(2*sub.Blocks)
		}
		t += max(own, streams[i]*float64(iters))
	}
	return t
}

// leftFreeFence is what a one-shot's staging fence waits, once an
// iteration, when staging and pull are left free (no barrier between
// them) and bound by their blocks' own chains: the blocks are not in
// step, so the fence waits for the other blocks' pull loads of host
// memory in flight (FenceBesidePolls, a load a thread of the other
// 2 × blocks − 1 blocks). Chosen on host_shot_free*.jsonl's 14 KiB at 512
// threads (one H100: −45…−38 % without it, −24…−12 % with it); predicted
// before the run at 7–21 KiB, 128–1,024 threads, 1–8 blocks a rank
// (host_shot_small.jsonl): 36 of 36 configurations within 20 %, 7
// without it.
func (m *Machine) leftFreeFence(blocks, threads int) (float64, error) {
	w, err := m.FenceBesidePolls(0, HostMem(0), (2*blocks-1)*threads)
	return nsOf(w), err
}

// hostShotDrift is an iteration of a one-shot that both stages and pulls,
// each part bound by what its blocks share (the link, its directions,
// pcie.sm_host_bandwidth). Its blocks do not keep in step: the link serves
// some blocks before others, so within a launch the blocks drift apart by
// up to an iteration and more, each block pair (a barrier meets only block
// b of each rank) on its own (measured on one H200: host_shot_phases.json,
// every block's phase ends on one clock). A block's staging then runs while
// other blocks pull, so the staging and pull streams run at once on one
// machine (repeats launches of each, per launch), which the engine shares
// between them; and one block's own parts one after the other (chain: its
// stores, its fence, its loads' round trips) come on top of them once an
// iteration, not hidden behind the other blocks' streams. A staging
// fence waits for the GPU's loads in flight (FenceBesidePolls) and a pull's
// loads go up the link behind the stores ahead of them, so the parts of
// one iteration do not hide each other's latency; at least one block's
// chain every iteration. Measured on one H100 (host_shot_free*.jsonl,
// host_shot_apart.jsonl, the form chosen after them; nothing fitted): left
// free from 84 KiB to 512 KiB the parts take 7.7–41.7 µs, on four
// instances a fixed 2.0–3.0 µs (one chain is 2.5) plus their bytes at
// 56–69 GB/s (the engine shares 65.4), and at 42 KiB 5.5–6.1 µs; timed
// block by block on one H200 (host_shot_phases.json), a block's staging
// there takes 3.0–3.4 µs and its pull 2.2–2.5 with the blocks two to three
// iterations apart. A pull that
// reads lines nothing stages takes as long (host_shot_apart.jsonl): the
// delay is the traffic's, not the lines'. Predicted at 256 and 1,024
// threads and sizes not seen (host_shot_free_threads*.jsonl, two
// instances): 38 and 39 of 40 within 20 %. The barriers a block waits come
// on top: the streams do not hide them (host_shot_overlap.jsonl: phases 7
// at 36–66 blocks a rank takes phases 5 and the barriers alone).
func (m *Machine) hostShotDrift(stage, pull PerBlock, iters, repeats int, chain float64) (float64, error) {
	both, err := New(m.Top)
	if err != nil {
		return 0, err
	}
	longStage, longPull := repeated(stage, repeats), repeated(pull, repeats)
	ks, ds := copyKernel(longStage)
	if err := both.Write(0, HostMem(0), ds, ks, "staging", func() {}); err != nil {
		return 0, err
	}
	kp, dp, err := both.pullKernel(longPull)
	if err != nil {
		return 0, err
	}
	if err := both.startPull(longPull, kp, dp, func() {}); err != nil {
		return 0, err
	}
	if err := both.Eng.Run(); err != nil {
		return 0, err
	}
	return max(chain*float64(iters), chain+nsOf(sim.Duration(both.Eng.Now()))/float64(repeats)), nil
}

// repeated is a copy or pull part run repeats launches' worth as one
// stream: repeats times its iterations and bytes.
func repeated(sub PerBlock, repeats int) PerBlock {
	sub.Iters, sub.Bytes = sub.Iters*repeats, sub.Bytes*int64(repeats)
	return sub
}
