package hw

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
)

// The simulated twins of the per-block measurements of one GPU
// (tools/capture perblock: record kinds poll, block_pingpong and loop).
// Each twin builds its GPU's situation from the machine's own primitives —
// the poll loops of WaitFlag, the loop rates of LoopRate, reads and writes
// as flows — on GPU 0 of a topology and its host memory, and returns the
// record's value: ns per request, one-way ns, or ns per loop iteration of
// one block.

// PerBlock is what a twin needs of a per-block record.
type PerBlock struct {
	Kind    string // poll, block_pingpong, loop
	Target  string // poll, block_pingpong: host or local
	Request string // poll: load_volatile, load_acquire, load_relaxed, atomic_add, atomic_cas
	Spacing int    // poll, block_pingpong: bytes between the blocks' words (0: one shared word)
	Mode    string // block_pingpong: volatile, release_acquire, volatile_fence; loop group_barrier: volatile, release_acquire, fence_volatile, fence_release_acquire (barrierFences)
	Pairs   int    // block_pingpong
	Loop    string // loop: ll, copy, simple_step, fence, pull
	LLOp    string // loop ll: recv, send, recv_send, recv_reduce_send, recv_reduce_copy_send
	Recv    string // loop ll: host, local, none
	Dst     string // loop ll, copy, simple_step, fence: host, local, none
	Src     string // loop copy: host, local
	Unroll  int    // loop copy
	Sources int    // loop copy
	Bound   string // loop pull: runtime or unrolled
	World   int    // loop pull
	Slice   int64  // loop simple_step: bytes per step
	Fence   string // loop simple_step, fence: none, acq_rel, sc
	Stores  int    // loop fence: stores per thread before the fence
	// loop fence: the kernel's loop adds capture.fence_loop_code to each
	// iteration (tools/capture's pb_fence_blocks); false: the one-warp
	// fence kernels beside neighbours (pb_fence_polls and its kin,
	// pb_fence_beside), whose loop adds nothing measurable
	LoopCode bool
	Layout   string // loop group_barrier: "packed" (a rank's slots in one sector, ranks' sectors 32 B apart; packed_64 … packed_4k: 64 B–4 KiB apart), "line_per_slot", or rank-major "vllm", "vllm_line", "vllm_off64" (rankMajor)
	Groups   int    // loop group_barrier: groups of World blocks barriering at once
	Blocks   int
	Threads  int
	Iters    int // loop: iterations per block
	// SrcInL2 (loop copy, simple_step): the source is the same region
	// every launch, in the L2 after the warm-up (trace src_residency l2).
	SrcInL2 bool
	// Hunks (loop copy, simple_step): the loop is in NCCL's reduceCopy
	// shape (trace code nccl_hunks; Kernel.Hunks).
	Hunks bool
	// HunkRotate (simple_step with Hunks): the copy renumbers its warps
	// before the left-over packs as NCCL does (trace code nccl_hunks_rot;
	// Kernel.HunkRotate).
	HunkRotate bool
	// LoadWaits (loop copy, pull): the round trips a thread of the
	// compiled loop waits for its loads each iteration (Kernel.LoadWaits;
	// a pull's batches of host loads); 0: one.
	LoadWaits int
	// SpillLoads, SpillStores (loop copy): the bytes a thread of the
	// compiled loop moves to and from local memory each iteration
	// (Kernel.SpillLoads; register spills read from its SASS).
	SpillLoads, SpillStores float64
	// Evicted (loop ll, ll128w): the lines were written, then pushed out
	// of the caches by other writes.
	Evicted bool
	// RuntimeOp (loop ll): the record is tools/capture's pb_ll, which tests
	// its operation each iteration (hw.Kernel.RuntimeOp).
	RuntimeOp bool
	// Fresh (loop ll, ll128w, pull): another agent wrote the lines just before the
	// loop reads them (producer before, live or stale).
	Fresh bool
	// Live (loop ll, ll128w): as many other blocks of the GPU as the loop
	// has store its lines while it reads them (producer live): their
	// stores share the way to the lines' memory with the loop's loads.
	Live bool
	// ItersPerStep (loop ll_steps): iterations per NCCL step, each step
	// paying the step's bookkeeping; 0: no steps.
	ItersPerStep int
	// Neighbours (block_pingpong): blocks beside the pair, half on each
	// side, that poll, store to ("store") or ping-pong through
	// NeighbourOp words at NeighbourPlace (trace.Record.NeighbourPlace).
	Neighbours                  int
	NeighbourOp, NeighbourPlace string
	// NeighbourThreads (loop fence): the threads of each polling
	// neighbour that poll, each its own sector (0: one); of each pulling
	// neighbour (NeighbourOp "pull", or "read_stream": a copy that stores
	// what it loads to GPU memory), its threads, each keeping
	// NeighbourLoads loads of host memory in flight.
	NeighbourThreads, NeighbourLoads int
	// NeighbourSpacing (loop fence): bytes from one polling thread's
	// word to the next (0: 32, a sector each).
	NeighbourSpacing int
	// EightBitTags: the GPU that ran it had 10-bit PCIe tags not enabled
	// as a requester (its capture's registers), so its requests
	// outstanding are gpu.host_requests_outstanding_8bit's.
	EightBitTags bool
	// PollSleep: a group barrier's pause after each poll that does not
	// see its flag, in ns (trace.Record.PollSleepNs).
	PollSleep int
	// Dests: a copy loop's destination buffers, each element stored to
	// every one (trace.Record.Dests); 0: 1.
	Dests int
	// Bytes, Phases, BlocksPerRank (loop host_shot): the allreduce's
	// bytes, the parts each iteration runs (1 staging, 2 the barriers, 4
	// the pull) and each rank's blocks (trace.Record's fields). On a copy
	// or pull (host_shot's parts), Bytes > 0 is what the launch moves (to
	// each destination, from each host buffer) when that is less than its
	// blocks × threads × 16 B × iterations: the last iteration partial,
	// the threads past the data idle.
	Bytes         int64
	Phases        int
	BlocksPerRank int
	// PullApart (loop host_shot): the pull reads a region nothing stages
	// to (trace.Record.PullSrc "apart"), so its lines were not written
	// just before.
	PullApart bool
	// SelfSlot (loop group_barrier): each block stores to and polls its
	// own rank's slot as well, as vLLM's barrier and tools/capture's flag
	// kernels do (threads t < world, the rank's own t included): World
	// slots to a sector, each written, instead of World − 1.
	SelfSlot bool
	// FlagOffset (loop group_barrier, rank-major layouts): bytes into
	// each rank's array where its first sector lies, beyond the layout's
	// own offset.
	FlagOffset int
	// StrideBytes (loop group_barrier, layout rank_stride): bytes from
	// one rank's array to the next.
	StrideBytes int
	// GroupStrideBytes (loop group_barrier, layout rank_stride): bytes
	// from one group's sector to the next (0: 32).
	GroupStrideBytes int
	// RankOffsets (loop group_barrier, layout rank_offsets): each rank's
	// sector's byte offset into a page-aligned buffer, comma separated.
	RankOffsets string

	// AtomicPage (poll, atomics in GPU memory): "slow" when the polled
	// words lie on a page whose atomics wait gpu.atomic_slow_page_extra
	// more (trace.Record.AtomicPage); "fast" or "": they do not. Ping-pong
	// and barrier records in GPU memory may name their flags' page too;
	// their twins take none of it: on one H100 a slow page adds 0–50 ns
	// to a flag's handoff, by kernel and layout, not the atomics' 94
	// (testdata/h100x1-arsim/flag_pages*.jsonl).
	AtomicPage string
	// CrossHalf (block_pingpong, loop group_barrier, flags in GPU memory):
	// how much of a handoff across the halves of the chip's SMs the
	// record's value carries (package validate places the record's SMs):
	// 1 where the flag passes between SMs in different halves, for the
	// record's median block (a record's value is the median over its
	// blocks: its one pair or group, or more than half of its pairs or
	// groups), 0.5 where exactly half of them do, 0 where fewer do or
	// the SMs are not known. A crossing waits gpu.atomic_slow_page_extra
	// more a handoff (crossHalfHandoff).
	CrossHalf float64
}

// ErrNotModelled marks a per-block record the model does not cover.
var ErrNotModelled = errors.New("not modelled")

func mem(where string) Mem {
	switch where {
	case "host":
		return HostMem(0)
	case "peer":
		return GPUMem(1)
	}
	return GPUMem(0)
}

// pulls reports whether rec's neighbours load memory with loads of their
// own in flight (pulls, or copies of what they load into GPU memory)
// rather than poll it.
func (rec PerBlock) pulls() bool {
	return rec.NeighbourOp == "pull" || rec.NeighbourOp == "read_stream"
}

// Modelled says whether the model covers the record: nil, or an error
// wrapping ErrNotModelled that says why not.
func (rec PerBlock) Modelled() error {
	switch {
	case rec.Kind == "loop" && rec.Loop == "ll128":
		return fmt.Errorf("an LL128-like loop whose thread layout is not NCCL's: %w", ErrNotModelled)
	case rec.Kind == "loop" && rec.Loop == "fence_burst":
		return fmt.Errorf("a block's burst of stores, then a fence of some of its threads (measured only: the loop around them is the capture's; the fence costs after the burst what it costs after one store, which is the model's): %w", ErrNotModelled)
	case rec.Kind == "loop" && rec.Loop == "fence_after_pull":
		return fmt.Errorf("a fence after each block's even share of a pull, beside the other blocks ending theirs (measured only): %w", ErrNotModelled)
	case rec.Kind == "loop" && rec.Loop == "host_readback":
		return fmt.Errorf("reading back host lines the GPU or the CPU just wrote (whose lines the GPU's L2 holds): %w", ErrNotModelled)
	case rec.Kind == "block_pingpong" && rec.Mode == "volatile_fence":
		return fmt.Errorf("ping-pong with a fence after the store (it overlaps the partner's reply): %w", ErrNotModelled)
	case rec.Kind == "loop" && rec.Dests > 1 && (rec.Loop != "copy" || rec.Src != "local" || !(rec.Dst == "local" || rec.Dst == "host" && rec.Sources <= 1)):
		return fmt.Errorf("a %s loop from %s to %d %s buffers (only copies from GPU memory to several in GPU memory, or of one source to several in host memory, are): %w",
			rec.Loop, rec.Src, rec.Dests, rec.Dst, ErrNotModelled)
	case rec.Kind == "loop" && rec.Loop == "simple_step" && rec.Blocks > 1 && rec.Fence == "none" && rec.Dst == "host" && rec.Slice > 0:
		return fmt.Errorf("Simple steps of several blocks to host memory without a fence (a block goes on before its stores land, which the twin's flows do not say): %w", ErrNotModelled)
	case rec.Kind == "loop" && rec.Loop == "group_barrier" && !isBarrierMode(rec.Mode):
		return fmt.Errorf("a barrier of mode %s: %w", rec.Mode, ErrNotModelled)
	case rec.Kind == "loop" && rec.Loop == "group_barrier" && rec.PollSleep > 0:
		return fmt.Errorf("a barrier whose polls pause %d ns: %w", rec.PollSleep, ErrNotModelled)
	case rec.Kind == "loop" && rec.Loop == "fence" && rec.Neighbours > 0 && rec.NeighbourOp != "poll" && !(rec.pulls() && rec.NeighbourPlace == "host"):
		// A system fence waits for the whole GPU's stores still on their
		// way (fence_beside.jsonl), which the fence's twin does not take;
		// the loads of host memory its neighbours keep in flight
		// (polls, pulls and copies: fence_polls, fence_pulls,
		// fence_reads.jsonl) it does.
		what := "streaming stores to"
		if rec.NeighbourOp == "read_stream" {
			what = "streaming loads from"
		}
		return fmt.Errorf("a fence beside %d blocks %s %s memory: %w", rec.Neighbours, what, rec.NeighbourPlace, ErrNotModelled)
	case rec.Kind == "loop" && rec.Loop == "fence" && (rec.Fence == "none" || rec.Stores != 1 || rec.Threads > 32):
		return fmt.Errorf("a fence after %d stores by %d threads (fence %s; the stores' issue is not simulated): %w",
			rec.Stores, rec.Threads, rec.Fence, ErrNotModelled)
	case rec.Kind != "poll" && rec.Kind != "block_pingpong" && rec.Kind != "loop":
		return fmt.Errorf("per-block kind %q: %w", rec.Kind, ErrNotModelled)
	}
	return nil
}

// PerBlockValue simulates one per-block record on GPU 0 of top.
func PerBlockValue(top *topology.Topology, rec PerBlock) (float64, error) {
	m, err := New(top)
	if err != nil {
		return 0, err
	}
	return m.perBlock(rec)
}

// sharedBusy is the share of its time that a streaming loop must keep a
// shared resource busy for its blocks to end together (PerBlockEnds).
const sharedBusy = 0.9

// PerBlockEnds says whether the twin of rec is bound by a resource its
// blocks share: a streaming loop (copy, ll, ll128w, pull) of two blocks or
// more that keeps a link, host memory or, all local, the GPU's memory at
// least 90 % busy. The model shares such a resource fairly, so all its
// blocks end together and its value is the kernel's end, the slowest
// block's time; the hardware serves them unevenly, and the median block
// ends earlier. Otherwise the value is any one block's. A one-shot
// (host_shot) is the kernel's end whatever it is bound by: blocks without
// data finish at once and would be the median.
func PerBlockEnds(top *topology.Topology, rec PerBlock) (bool, error) {
	if rec.Kind != "loop" || rec.Blocks < 2 {
		return false, nil
	}
	if rec.Loop == "host_shot" {
		return true, nil // an allreduce ends with its last block; the twin is the kernel's time
	}
	switch rec.Loop {
	case "copy", "ll", "ll128w", "pull":
	default:
		return false, nil
	}
	m, err := New(top)
	if err != nil {
		return false, err
	}
	if _, err := m.perBlock(rec); err != nil {
		return false, err
	}
	elapsed := float64(m.Eng.Now())
	if float64(m.twinMemBusy) >= sharedBusy*elapsed {
		return true, nil
	}
	for _, r := range m.Net.Resources() {
		if strings.HasPrefix(r.Name, "loop:") || strings.HasPrefix(r.Name, "cap:") {
			continue // a kernel's own loop or rate cap, not hardware
		}
		capacity := float64(r.Capacity)
		if r.Collapse != nil {
			capacity = min(capacity, float64(r.Collapse.Capacity))
		}
		if r.Carried() >= sharedBusy*capacity*elapsed/float64(sim.Second) {
			return true, nil
		}
	}
	return false, nil
}

// perBlock runs the twin of rec on m.
func (m *Machine) perBlock(rec PerBlock) (float64, error) {
	switch rec.Kind {
	case "poll":
		return m.pollTwin(rec)
	case "block_pingpong":
		return m.pingpongTwin(rec)
	case "loop":
		switch rec.Loop {
		case "ll", "ll_steps":
			return m.llTwin(rec)
		case "ll128w", "ll128_steps":
			return m.ll128Twin(rec)
		case "copy":
			return m.copyTwin(rec)
		case "pull":
			return m.pullTwin(rec)
		case "simple_step":
			return m.simpleStepTwin(rec)
		case "fence":
			return m.fenceTwin(rec)
		case "group_barrier":
			return m.groupBarrierTwin(rec)
		case "host_shot":
			return m.hostShotTwin(rec)
		}
		return 0, fmt.Errorf("hw: loop %q: %w", rec.Loop, ErrNotModelled)
	}
	return 0, fmt.Errorf("hw: per-block kind %q: %w", rec.Kind, ErrNotModelled)
}

func nsOf(d sim.Duration) float64 { return float64(d) / float64(sim.Nanosecond) }

// sharers is how many of n blocks, spacing bytes apart from a unit's
// start (0: all on one word), fall on the busiest unit of unit bytes: a
// spacing that does not divide the unit puts ⌈unit/spacing⌉ words on some
// units (24 B apart: 0 and 24 share a 32-byte sector).
func sharers(n, spacing, unit int) int {
	if spacing <= 0 {
		return n
	}
	return max(1, min(n, (unit+spacing-1)/spacing))
}

func (m *Machine) pollTwin(rec PerBlock) (float64, error) {
	atomic := rec.Request == "atomic_add" || rec.Request == "atomic_cas"
	unit := 32
	if atomic {
		unit = 128
	}
	// The capture's poll loop computes its next address from the value it
	// loaded and picks the request kind in the loop: gpu.poll_loop_overhead
	// per iteration beyond the round trip (a barrier's bare spin on a
	// compare does without it).
	at := mem(rec.Target)
	rtt, err := m.RoundTrip(0, at)
	if err != nil {
		return 0, err
	}
	// A relaxed load issues in fewer cycles than a volatile one
	// (gpu.poll_relaxed_saving); an acquire load takes what a volatile one
	// does to within 3 %.
	loop := m.Phys.PollLoopOverhead
	if rec.Request == "load_relaxed" {
		loop = max(0, loop-m.Phys.PollRelaxedSaving)
	}
	if atomic && !at.Host && rec.AtomicPage == "slow" {
		rtt += m.Phys.AtomicSlowPageExtra // the page's atomics wait more in the GPU's memory system
	}
	pollers := sharers(rec.Blocks, rec.Spacing, unit)
	svc := m.pollService(at, atomic)
	if atomic && at.Host && rec.Spacing > 0 && rec.Blocks*rec.Spacing > unit {
		// the words span several lines: each line's atomics are served
		// longer than one line's alone (hostmem.atomic_service_lines)
		svc = m.Phys.HostAtomicServiceLines
	}
	d := linePollPeriod(rtt+loop, pollers, lineWaiting(rec.Blocks, rec.Spacing, atomic), svc, m.lineContention(at))
	if !atomic {
		d += m.pollLoad(at, rec.Blocks) // atomics do not slow each other's round trips (pollLoad)
	}
	return nsOf(d), nil
}

// pingpongTwin: one way is a flag store landing, then the poll loop's
// period; in GPU memory gpu.spin_store_service for each other pair whose
// flags share the line (its stores land where the loads spin); in host
// memory hostmem.sector_collision when the partner's flag lies in another
// sector that collides with it (hostmem.collision_mask),
// hostmem.line_contention for each other flag of its line in a sector of
// its own, and, where flags share a sector, hostmem.changing_flag_wait
// for the line's further pollers (changingFlagPollers); a release
// store fences first (st.release.sys waits as a system fence does), and in
// host memory waits for the other pairs' polls (FenceBesidePolls). The
// pairs' flags sit spacing bytes apart, two per pair, so
// 32/spacing pollers share a sector. A fence after the store overlaps the
// partner's reply; that is not modelled.
func (m *Machine) pingpongTwin(rec PerBlock) (float64, error) {
	if err := rec.Modelled(); err != nil {
		return 0, fmt.Errorf("hw: %w", err)
	}
	at := mem(rec.Target)
	land, err := m.StoreLanding(0, at)
	if err != nil {
		return 0, err
	}
	pollers, waiting := sharers(2*rec.Pairs, rec.Spacing, 32), lineWaiting(2*rec.Pairs, rec.Spacing, false)
	var changing sim.Duration
	if at.Host && rec.Spacing > 0 && rec.Spacing < 32 {
		// Flags in host memory that share a sector, each changing while
		// it is polled: the one way waits hostmem.changing_flag_wait for
		// each poller beyond the first on every sector of the flag's line,
		// up to hostmem.changing_flag_cap (changingFlagPollers), in place
		// of the queue of pure polls (hostmem.poll_service a poller of
		// the sector, hostmem.line_contention a poll waiting at the line's
		// other sectors), which holds for words that do not change.
		// Measured on one H200 (pingpong_sector.jsonl, pingpong_line.jsonl):
		// pairs 4 B apart take 1.35 µs more one way for each further
		// poller of their sector, and stop growing at 25–35 µs once the
		// line is full.
		changing = min(m.Phys.HostChangingFlagCap, sim.Duration(changingFlagPollers(2*rec.Pairs, rec.Spacing)*float64(m.Phys.HostChangingFlagWait)))
		pollers, waiting = 1, 0
	}
	p, w := neighbourLoads(rec)
	period, err := m.PollPeriod(0, at, pollers+p, waiting+w, false)
	if err != nil {
		return 0, err
	}
	d := land + period + m.pollLoad(at, 2*rec.Pairs+pollingNeighbours(rec)) + changing
	if rec.Spacing >= 32 && at.Host {
		// the partner's flag, in a sector of its own nearby, is the
		// exchange's other sector: hostmem.sector_collision where the
		// two collide (hostmem.collision_mask), as for a 2-rank barrier
		d += sim.Duration(m.barrierCollisions(1, rec.Spacing, 0)) * m.Phys.HostSectorCollision
		if rec.Spacing < 128 {
			// and each other flag of its line takes a store each way:
			// hostmem.line_contention for each, as a barrier's sector
			// waits for the stores landing at its line's other sectors
			// (slotsPeriod)
			d += sim.Duration(otherFlagsOnLine(2*rec.Pairs, rec.Spacing) * float64(m.Phys.HostLineContention))
		}
	}
	if !at.Host && rec.Spacing > 0 {
		// in GPU memory the other pairs whose flags share the line store
		// there while its loads spin: gpu.spin_store_service each, as a
		// barrier's further flags wait
		onLine := min(rec.Pairs, max(1, 128/(2*rec.Spacing)))
		d += sim.Duration(onLine-1) * m.Phys.SpinStoreService
	}
	d += m.crossHalfHandoff(rec, at)
	if rec.Mode == "release_acquire" {
		f, err := m.FenceCost(0, at)
		if err != nil {
			return 0, err
		}
		// the other pairs (and polling neighbours) keep loads of host
		// memory in flight while it fences; the partner is in step
		w, err := m.FenceBesidePolls(0, at, 2*(rec.Pairs-1)+pollingNeighbours(rec))
		if err != nil {
			return 0, err
		}
		d += f + w
	}
	return nsOf(d), nil
}

// crossHalfHandoff is what a flag handed between SMs in different halves
// of the chip waits more (rec.CrossHalf, GPU memory only): the trip to
// the far half that an atomic on a slow page waits,
// gpu.atomic_slow_page_extra, once a ping-pong's one way and once a
// barrier, times rec.CrossHalf. Chosen after one H100's flag_sms.jsonl
// and another's sm_halves*.jsonl (testdata/h100x1-arsim: a volatile
// ping-pong one way 175–279 ns within a half, 320–369 across), nothing
// fitted on them; the halves are those validate places the host loads'
// chases by, or the chip's own (perblock_10.jsonl: barriers spanning both
// halves 72–191 ns longer than another chip's within one).
func (m *Machine) crossHalfHandoff(rec PerBlock, at Mem) sim.Duration {
	if at.Host || rec.CrossHalf <= 0 {
		return 0
	}
	return sim.Duration(math.Round(min(rec.CrossHalf, 1) * float64(m.Phys.AtomicSlowPageExtra)))
}

// flagsPer counts n flags spacing bytes apart from the start of a 128-B
// line by the unit (32-B sector or line) each lies in.
func flagsPer(n, spacing, unit int) []int {
	counts := make([]int, ((n-1)*spacing)/unit+1)
	for i := range n {
		counts[i*spacing/unit]++
	}
	return counts
}

// changingFlagPollers is, over n flags spacing bytes apart from the start
// of a 128-B line, each polled by a block of its own, the mean over the
// flags of the pollers beyond the first on each 32-B sector of the flag's
// line.
func changingFlagPollers(n, spacing int) float64 {
	const sector, line = 32, 128
	if n < 1 || spacing <= 0 {
		return 0
	}
	onSector := flagsPer(n, spacing, sector)
	var sum int
	for i := range n {
		l := i * spacing / line
		for s := l * line / sector; s < min((l+1)*line/sector, len(onSector)); s++ {
			sum += max(0, onSector[s]-1)
		}
	}
	return float64(sum) / float64(n)
}

// otherFlagsOnLine is, over n flags spacing bytes apart from the start of
// a 128-B line, the mean over the flags of the others on the flag's line.
func otherFlagsOnLine(n, spacing int) float64 {
	const line = 128
	if n < 1 || spacing <= 0 {
		return 0
	}
	onLine := flagsPer(n, spacing, line)
	var sum int
	for i := range n {
		sum += onLine[i*spacing/line] - 1
	}
	return float64(sum) / float64(n)
}

// pollingNeighbours is how many of a ping-pong's or a fence's neighbour
// blocks poll (those that poll or ping-pong; storing ones do not).
func pollingNeighbours(rec PerBlock) int {
	if rec.NeighbourOp != "poll" && rec.NeighbourOp != "pingpong" {
		return 0
	}
	return rec.Neighbours
}

// neighbourLoads is what a ping-pong's neighbour blocks add to the loads
// at the sector each of the pair polls: pollers of that sector, and loads
// waiting at the other sectors of its line. A neighbour that polls or
// ping-pongs keeps one load in flight (half of them on each side); one
// that stores adds nothing (stores are posted: they occupy no request
// slot), nor does one on another line.
func neighbourLoads(rec PerBlock) (pollers, waiting int) {
	if rec.NeighbourOp != "poll" && rec.NeighbourOp != "pingpong" {
		return 0, 0
	}
	k := rec.Neighbours / 2
	switch rec.NeighbourPlace {
	case "same_sector":
		return k, 0
	case "same_half", "other_half":
		return 0, k
	}
	return 0, 0
}

// perIter runs transfers started by start on the machine's engine and
// returns the time per loop iteration.
func (m *Machine) perIter(iters int, start func(done func()) error) (float64, error) {
	if err := start(func() {}); err != nil {
		return 0, err
	}
	if err := m.Eng.Run(); err != nil {
		return 0, err
	}
	return nsOf(sim.Duration(m.Eng.Now())) / float64(iters), nil
}

// copyTwin: an unrolled copy loop from the source memory to the
// destination, or to Dests buffers in host memory (a push: each loaded
// byte crosses the link once per destination).
func (m *Machine) copyTwin(rec PerBlock) (float64, error) {
	k, data := copyKernel(rec)
	if rec.Dst == "host" && rec.Src != "host" {
		return m.storeLoopTwin(rec.Iters, data, k, rec.Fence, "copy")
	}
	return m.perIter(rec.Iters, func(done func()) error {
		switch {
		case rec.Src == "host":
			return m.Read(0, HostMem(0), data, k, "copy", done)
		case rec.Dst == "host" || rec.Dst == "peer":
			return m.Write(0, mem(rec.Dst), data, k, "copy", done)
		}
		// The memory moves every source and destination once (LocalTime
		// counts inputs + 1 buffers): a copy to several local buffers
		// passes its further destinations as inputs.
		inputs := rec.Sources + max(rec.Dests, 1) - 1
		d, err := m.LocalTime(0, inputs, data, k)
		if err != nil {
			return err
		}
		m.twinMemBusy += m.ReduceTime(inputs, data)
		m.Eng.After(d, done)
		return nil
	})
}

// copyKernel is a copy loop record's kernel and the bytes its launch
// copies. A launch copies fresh data from device memory, which
// gpu.copy_iter_overhead (fitted on such a copy) already holds, unless
// the record says its source stays in the L2 (Kernel.SrcInL2).
func copyKernel(rec PerBlock) (Kernel, sim.Bytes) {
	k := Kernel{Blocks: rec.Blocks, Threads: rec.Threads, Loop: LoopSimple, LoopAt: mem(rec.Src),
		Unroll: rec.Unroll, Sources: rec.Sources, LoadsInFlight: float64(max(rec.Unroll, 1) * max(rec.Sources, 1)),
		Wire: float64(max(rec.Dests, 1)), SrcInL2: rec.SrcInL2, Hunks: rec.Hunks, LoadWaits: rec.LoadWaits, // a push stores each loaded byte to every destination
		StoresHost: rec.Src == "host" && rec.Dst == "host", SpillLoads: rec.SpillLoads, SpillStores: rec.SpillStores}
	if k.StoresHost {
		// the capture's further sources are in GPU memory: each byte
		// loaded from host memory is stored once per destination
		k.OwnStoresHost = float64(max(rec.Dests, 1))
	}
	return k, launchBytes(rec, int64(rec.Blocks)*int64(rec.Threads)*16*int64(max(rec.Unroll, 1))*int64(rec.Iters))
}

// launchBytes is what a copy or pull launch moves: full, its blocks ×
// threads × the bytes a thread moves an iteration × iterations, or
// rec.Bytes when that is less (a partial last iteration).
func launchBytes(rec PerBlock, full int64) sim.Bytes {
	if rec.Bytes > 0 && rec.Bytes < full {
		return sim.Bytes(rec.Bytes)
	}
	return sim.Bytes(full)
}

// simpleStepTwin: NCCL Simple's bookkeeping per step, the slice copied by
// the block's unrolled loop (8 loads in flight per thread; its source in
// the L2 when the record says so) and the fence.
func (m *Machine) simpleStepTwin(rec PerBlock) (float64, error) {
	if rec.Blocks > 1 && rec.Dst == "host" && rec.Slice > 0 {
		return m.simpleStepBlocksTwin(rec)
	}
	d := sim.Nanos(m.Top.Params.Get("nccl.simple_step_overhead"))
	if rec.Slice > 0 {
		// The slice's copy: at least one iteration, else the loop's rate.
		k := Kernel{Blocks: 1, Threads: rec.Threads, Loop: LoopSimple, LoopAt: GPUMem(0), Unroll: 8, Sources: 1, SrcInL2: rec.SrcInL2, Hunks: rec.Hunks, HunkRotate: rec.HunkRotate}
		rate, err := m.LoopRate(0, k)
		if err != nil {
			return 0, err
		}
		first, err := m.firstIteration(0, k, sim.Bytes(rec.Slice))
		if err != nil {
			return 0, err
		}
		c, err := sim.FromSeconds(float64(rec.Slice) / float64(rate))
		if err != nil {
			return 0, err
		}
		d += first + c
	}
	if rec.Fence != "none" {
		f, err := m.FenceCost(0, mem(rec.Dst))
		if err != nil {
			return 0, err
		}
		d += f
	}
	return nsOf(d), nil
}

// simpleStepBlocksTwin: simpleStepTwin's steps from rec.Blocks blocks at
// once, each a channel of its own (tools/capture's pb_simple_step_blocks:
// its own destination region and flag line), storing to host memory: the
// blocks' slices share the GPU's link as flows on the network, each block
// going on to its next step once its slice's stores and fence are done
// (a record without a fence is not modelled: Modelled). Returns the time
// per step of the last block to end.
func (m *Machine) simpleStepBlocksTwin(rec PerBlock) (float64, error) {
	const steps = 40 // the capture's 200 repeat one step: 40 hold its steady state and its first
	over := sim.Nanos(m.Top.Params.Get("nccl.simple_step_overhead"))
	k := Kernel{Blocks: 1, Threads: rec.Threads, Loop: LoopSimple, LoopAt: GPUMem(0), Unroll: 8, Sources: 1, SrcInL2: rec.SrcInL2, Hunks: rec.Hunks, HunkRotate: rec.HunkRotate}
	write := m.Write
	if rec.Fence != "none" {
		write = m.WriteFenced
	}
	var err error // the first write refused, once the engine has run
	v, runErr := m.perIter(steps, func(func()) error {
		for b := 0; b < rec.Blocks; b++ {
			var step func(s int)
			step = func(s int) {
				if s == steps || err != nil {
					return
				}
				m.Eng.After(over, func() {
					if e := write(0, HostMem(0), sim.Bytes(rec.Slice), k, fmt.Sprintf("block %d step %d", b, s), func() { step(s + 1) }); e != nil && err == nil {
						err = e
					}
				})
			}
			step(0)
		}
		return nil
	})
	if runErr != nil {
		return 0, runErr
	}
	return v, err
}
