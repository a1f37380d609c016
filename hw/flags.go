package hw

import (
	"math"

	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
)

// Flags, fences and launches: what synchronisation costs a kernel.

// SignalFlag writes value into flag f, which lives in memory at, from rank
// r: the write lands one route latency plus a memory access later. A flag
// of a sector group (a barrier's slot, NewFlag) is stored by each of the
// kernel's blocks, each into its own copy; to host memory a GPU's small
// stores leave one after another, gpu.host_store_service each (measured on
// one H200: blocks storing without pause, about 50 ns a store by their own
// clocks, fill the queue from about 42 blocks, and a flag's round trip
// beside them jumps from 1.8 to 5–13 µs; store_loop.jsonl), so the flag
// lands after the stores queued before it and its own blocks'. A flag of
// no group (NCCL's FIFO heads and tails: one store a step, behind its
// step's data) does not queue: the nanosecond it would wait is below what
// the model resolves, and in NCCL's
// pipelines over SHM a change that small moves the result by chance
// (docs/VALIDATION.md, "What the model misses").
func (m *Machine) SignalFlag(r int, at Mem, f *sim.FlagVar, value int64, blocks int) error {
	d, err := m.StoreLanding(r, at)
	if err != nil {
		return err
	}
	if at.Host && m.Phys.HostStoreService > 0 && m.flagGroups[f] != "" {
		d += m.hostStoreQueue(r, max(blocks, 1))
	}
	m.setAfter(d, f, value)
	return nil
}

// hostStoreQueue queues n small stores of rank r to host memory behind
// those it has queued before, and returns how long the last of them waits
// and is served.
func (m *Machine) hostStoreQueue(r, n int) sim.Duration {
	for len(m.storeFree) <= r {
		m.storeFree = append(m.storeFree, 0)
	}
	now := m.Eng.Now()
	m.storeFree[r] = max(now, m.storeFree[r]).Add(sim.Duration(n) * m.Phys.HostStoreService)
	return m.storeFree[r].Sub(now)
}

// HostStoresIdle reports whether no GPU has small stores to host memory
// waiting or in service (hostStoreQueue): their queue is state a snapshot
// does not see.
func (m *Machine) HostStoresIdle() bool {
	now := m.Eng.Now()
	for _, t := range m.storeFree {
		if t > now {
			return false
		}
	}
	return true
}

// StoreLanding is how long a small store from rank r takes to land in
// memory at: one route latency plus a memory access.
func (m *Machine) StoreLanding(r int, at Mem) (sim.Duration, error) {
	if !at.Host && at.Rank == r {
		return m.Phys.GPUMemLatency, nil
	}
	if p := m.tablePath(r, at); p != nil {
		return p.land, nil
	}
	p, err := m.path(GPUMem(r), at)
	if err != nil {
		return 0, err
	}
	return p.land, nil
}

// BarrierWaitExtra is what a wait that ends a barrier of thread blocks of
// threads threads adds to seeing the flag: the block's threads meet at
// __syncthreads (gpu.barrier_meet + gpu.barrier_meet_per_warp × warps,
// measured on one GPU: barrier_threads.jsonl), a barrier between GPUs
// more (gpu.barrier_sync, fitted on two: barrier.jsonl, a flag barrier of
// 512-thread blocks 779 ns), and a compare-and-swap poll, which consumes
// the token, is slower than a load (gpu.atomic_poll_extra; the same
// capture's compare-and-swap barrier, 1225 ns).
func (m *Machine) BarrierWaitExtra(atomic bool, threads int, acrossGPUs bool) sim.Duration {
	d := m.Phys.BarrierMeet + sim.Duration((max(threads, 1)+31)/32)*m.Phys.BarrierMeetPerWarp
	if acrossGPUs {
		d += m.Phys.BarrierSync
	}
	if atomic {
		d += m.Phys.AtomicPollExtra
	}
	return d
}

// LaunchMode is how a kernel is launched.
type LaunchMode uint8

// Launch modes.
const (
	Graph LaunchMode = iota // a node of a replayed CUDA graph
	Eager                   // launched from the host one by one
)

// String returns graph or eager.
func (l LaunchMode) String() string { return [...]string{"graph", "eager"}[l] }

// LaunchCost is the device-side time a kernel launch adds before the
// kernel does useful work: the gap between kernels on a stream
// (gpu.launch_graph) and the kernel's prologue (gpu.kernel_prologue). In
// eager mode the host's issue rate also paces the kernels; see
// IssueInterval.
func (m *Machine) LaunchCost(LaunchMode) sim.Duration {
	return m.Phys.LaunchGraph + m.Phys.KernelPrologue
}

// FenceCost is the time a system-scope fence takes on rank r after stores
// to memory at: the stores must be acknowledged, about one round trip to
// that memory plus a per-fabric extra, and never less than a fence after
// local stores (gpu.fence_sys_local). Measured on h200x2 (micro2.jsonl):
// local 583 ns, peer over NVLink 919 ns, pinned host memory 1393 ns. Over
// PCIe, whether the fence waits for that round trip is a property of the
// platform (gpu.fence_pcie_round_trip): the single H200 of
// testdata/h200x1-arsim fences stores to host memory in 616 ns, its local
// fence (518 ns) plus gpu.fence_posted_extra, without a round trip.
func (m *Machine) FenceCost(r int, at Mem) (sim.Duration, error) {
	if !at.Host && at.Rank == r {
		return m.Phys.FenceLocal, nil
	}
	p, err := m.path(GPUMem(r), at)
	if err != nil {
		return 0, err
	}
	if !p.nvlink() && !m.Phys.FencePCIeRoundTrip {
		return m.Phys.FenceLocal + m.Phys.FencePostedExtra, nil
	}
	rtt, err := m.RoundTrip(r, at)
	if err != nil {
		return 0, err
	}
	extra := m.Phys.FenceExtraPCIe
	if p.nvlink() {
		extra = m.Phys.FenceExtraNVLink
	}
	return max(m.Phys.FenceLocal, rtt+extra), nil
}

// StoreBurst is how long rank r's block of threads threads takes to issue
// stores back-to-back 16-byte stores per thread to memory at: each store
// instruction of the block gpu.store_issue after the one before (one
// thread's issue), or its bytes at the SM's store rate (into its own GPU's
// memory gpu.sm_local_store_bandwidth, out of it gpu.sm_store_bandwidth),
// whichever is longer. Measured on one H200 (micro2 fence variant 16x16B,
// 16 stores): 104 ns for one thread, fitted; 129 ns for a warp to local
// memory (this gives 130) and 162 to host memory (163).
func (m *Machine) StoreBurst(r int, at Mem, stores, threads int) sim.Duration {
	rate := m.Phys.SMLocalStoreRate
	if at.Host || at.Rank != r {
		rate = m.Phys.SMStoreRate
	}
	each := m.Phys.StoreIssue
	if rate > 0 {
		each = max(each, sim.Duration(float64(max(threads, 1)*16)/float64(rate)*float64(sim.Second)))
	}
	return sim.Duration(max(stores, 0)) * each
}

// FenceBesidePolls is what a system-scope fence of rank r waits beyond
// FenceCost while others loads of memory polled are in flight from its
// GPU's other thread blocks, not in step with the fencing one (a polling
// thread keeps one, a block's poll of a sector one: fence_threads.jsonl,
// 1–1,024 loads from 1–32 blocks within −0.15…0.00 µs; at 4,096 and more
// they queue in the GPU and the fence waits 2–13 µs: PollDrain, which the
// fence twin takes where it is longer; callers that do not know how their
// pollers' words lie leave it out). In host memory:
// the GPU's loads of host memory still on their way must be answered first
// (measured on one H200, fence_polls.jsonl: a fence after a store to host
// or local memory took 0.54–0.66 µs more beside one block polling host
// memory, about half a round trip, what is left of one load's on average,
// and 0.96 µs more beside 128; an acquire-release fence alike,
// fence_kinds.jsonl). The pollers' loads run nearly in step, so more of
// them add little: half a host round trip beside one, and
// gpu.fence_poll_wait_growth of a round trip more for each doubling.
// Who counts is the caller's: a ping-pong's other pairs, a barrier's other
// groups and its own ranks but the last (barrierFencePollers), a
// kernel's other blocks (the algorithms' fences to host memory, and
// fences after a kernel's pulls from a peer's memory, algos.FenceLoadsName).
// Loads of the GPU's own memory cost a fence nothing (beside 8 and 128
// blocks polling local memory: 521–524 ns against 520 alone). Loads of a
// peer GPU's memory count as those of host memory do, with the peer's
// round trip: the GPU's loads still on their way out of it are answered
// first. One GPU cannot measure this; the form and
// gpu.fence_poll_wait_growth are host memory's, and its predicted side is
// the two-shot's fenced mid barrier beside its blocks' pulls over NVLink
// (testdata/h200x2-arsim, arsim_flag_two_shot p2p at 2–132 blocks),
// counted per load in flight as pulls of host memory are
// (fence_pulls.jsonl: 0.71–1.14 round trips beside 32–4,192 loads of 1–131
// pulling blocks, while the link is short of full, by the loads whatever
// the blocks).
func (m *Machine) FenceBesidePolls(r int, polled Mem, others int) (sim.Duration, error) {
	if others < 1 || (!polled.Host && polled.Rank == r) {
		return 0, nil
	}
	rtt, err := m.RoundTrip(r, polled)
	if err != nil {
		return 0, err
	}
	return sim.Duration(math.Round(float64(rtt) * (0.5 + m.Phys.FencePollWaitGrowth*math.Log2(float64(others))))), nil
}

// FenceAfterLanding is what a fence adds once the stores it orders have
// landed in memory at: FenceCost counts from the stores' issue (the
// measured loop is store, then fence), and a schedule's Fence that is not
// carried by its stores (algos.Op.Fenced, WriteFenced) follows ops that
// end when their data has landed, so the landing time is already spent
// (StoreLanding). Over NVLink on h200x2:
// 919 − 500 = 419 ns, the acknowledgement's way back plus 70 ns.
func (m *Machine) FenceAfterLanding(r int, at Mem) (sim.Duration, error) {
	d, err := m.FenceCost(r, at)
	if err != nil {
		return 0, err
	}
	land, err := m.StoreLanding(r, at)
	if err != nil {
		return 0, err
	}
	return max(0, d-land), nil
}

// nvlink reports whether the path crosses NVLink.
func (p *path) nvlink() bool {
	for _, t := range p.types {
		if t == topology.NVLink {
			return true
		}
	}
	return false
}

// IssueInterval is the host time to issue one eager kernel launch
// (gpu.launch_eager): back-to-back eager kernels cannot start faster.
func (m *Machine) IssueInterval() sim.Duration { return m.Phys.LaunchEager }

// ReduceTime is the time to reduce: read inputs × bytes and write bytes of
// local memory at the GPU's memory bandwidth.
func (m *Machine) ReduceTime(inputs int, bytes sim.Bytes) sim.Duration {
	return m.MemTime(sim.Bytes(inputs+1) * bytes)
}

// MemTime is how long the GPU's memory takes to move bytes, reads and
// writes together (gpu.mem_bandwidth × gpu.mem_efficiency).
func (m *Machine) MemTime(bytes sim.Bytes) sim.Duration {
	d, err := sim.FromSeconds(float64(bytes) / float64(m.Phys.GPUMemBandwidth))
	if err != nil {
		return sim.Duration(math.MaxInt64 / 4)
	}
	return d
}
