package hw

import (
	"fmt"

	"github.com/arsim/arsim/sim"
)

// fenceNeighbourWait is what the fence twin's fence waits for its
// neighbour blocks' loads of host memory (FenceBesidePolls, counted per
// load in flight): each polling thread keeps one; each pulling thread
// NeighbourLoads. Where the pullers keep more bytes in flight than the
// link returns in a round trip, the loads queued in the GPU beyond those
// drain at the pullers' rate first (their bytes in flight over their rate,
// less the round trip): measured on one H200 (fence_pulls.jsonl), a fence
// beside 1–131 pulling blocks of 32–512 threads waits 0.71–1.14 host
// round trips while they leave the link short of full, as the pollers'
// form counted per load gives, and then what their loads take to drain
// (2.2 µs beside 2 blocks of 512 threads with 8 loads each in flight,
// 187 µs beside 131); the drain's form was chosen after that run. Pullers
// that poll nothing hold it alike (fence_stream.jsonl), and so do copies
// of what they load (NeighbourOp "read_stream"), counted by the loads
// their machine code keeps in flight: pb_fence_beside's copy loop, which
// spills what it loads and keeps two a thread, holds the fence 2.1 µs
// beside 8 such blocks and 46 beside 131 (fence_beside_2.jsonl).
func (m *Machine) fenceNeighbourWait(rec PerBlock) (sim.Duration, error) {
	at := mem(rec.NeighbourPlace)
	if !rec.pulls() {
		pollers := pollingNeighbours(rec) * max(rec.NeighbourThreads, 1)
		w, err := m.FenceBesidePolls(0, at, pollers)
		if err != nil || !at.Host {
			return w, err
		}
		d, err := m.PollDrain(0, at, pollers, rec.NeighbourSpacing, rec.EightBitTags)
		return max(w, d), err
	}
	loads := rec.Neighbours * max(rec.NeighbourThreads, 1) * max(rec.NeighbourLoads, 1)
	w, err := m.FenceBesidePolls(0, at, loads)
	if err != nil {
		return 0, err
	}
	k := Kernel{Blocks: rec.Neighbours, Threads: max(rec.NeighbourThreads, 1), LoadsInFlight: float64(max(rec.NeighbourLoads, 1))}
	rtt, err := m.RoundTrip(0, at)
	if err != nil {
		return 0, err
	}
	// the pullers' own round trip: what their window turns over in
	if p, err := m.path(at, GPUMem(0)); err == nil {
		rtt += m.vectorLoadExtra(0, at, k, p)
	}
	rate, err := m.pullRate(at, k)
	if err != nil {
		return 0, err
	}
	inFlight := float64(loads) * 16
	return w + max(0, sim.Duration(inFlight/float64(rate)*float64(sim.Second))-rtt), nil
}

// pullRate is the rate at which kernel k's blocks load memory at on GPU 0
// of a machine like m, alone: a long read simulated on a fresh machine.
func (m *Machine) pullRate(at Mem, k Kernel) (sim.Rate, error) {
	alone, err := New(m.Top)
	if err != nil {
		return 0, err
	}
	perPs, err := alone.readAlone(0, at, k)
	return sim.Rate(perPs * float64(sim.Second)), err
}

// readAlone simulates a long read of at by kernel k on rank r of m, which
// nothing else runs on, and returns its rate in bytes a picosecond.
func (m *Machine) readAlone(r int, at Mem, k Kernel) (float64, error) {
	const bytes = 64 << 20
	start := m.Eng.Now()
	if err := m.Read(r, at, bytes, k, "alone", func() {}); err != nil {
		return 0, err
	}
	if err := m.Eng.Run(); err != nil {
		return 0, err
	}
	return float64(bytes) / float64(m.Eng.Now()-start), nil
}

// fenceTwin: a system-scope fence after a store by each thread.
func (m *Machine) fenceTwin(rec PerBlock) (float64, error) {
	if err := rec.Modelled(); err != nil {
		return 0, fmt.Errorf("hw: %w", err)
	}
	at := mem(rec.Dst)
	// The capture's loop code (capture.fence_loop_code, where its kernel
	// has it) beside a fence after local stores: an iteration is at least
	// that long.
	floor := m.Phys.FenceLocal
	if rec.LoopCode {
		floor += m.Phys.FenceLoopCode
	}
	if rec.Blocks <= 1 {
		f, err := m.FenceCost(0, at)
		if err != nil {
			return 0, err
		}
		w, err := m.fenceNeighbourWait(rec)
		return nsOf(max(f, floor) + w), err
	}
	// Blocks at once: each iteration's stores of every block share the
	// way to the memory, and each block's fence follows its stores'
	// landing (as a schedule's fence after its writes does).
	after, err := m.FenceAfterLanding(0, at)
	if err != nil {
		return 0, err
	}
	per := sim.Bytes(int64(rec.Blocks) * int64(rec.Threads) * int64(max(rec.Stores, 1)) * 16)
	k := Kernel{Blocks: rec.Blocks, Threads: rec.Threads}
	iters := max(rec.Iters, 1)
	var stepErr error
	var step func(i int) func()
	step = func(i int) func() {
		return func() {
			if i == iters || stepErr != nil {
				return
			}
			m.Eng.After(after, func() { stepErr = m.Write(0, at, per, k, "fence stores", step(i+1)) })
		}
	}
	v, err := m.perIter(iters, func(done func()) error {
		return m.Write(0, at, per, k, "fence stores", step(1))
	})
	if err == nil {
		err = stepErr
	}
	return max(v, nsOf(floor)), err
}
