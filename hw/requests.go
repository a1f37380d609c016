package hw

import (
	"fmt"
	"math"
	"slices"

	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
)

// Polls are requests. A thread spinning on a flag issues one load after
// another to the flag's memory; each is a request that the memory serves.
// Pinned host memory serves the loads to one 32-byte sector one after
// another, each taking about a round trip (hostmem.poll_service), and
// system-scope atomics one after another per 128-byte line
// (hostmem.atomic_service); requests to distinct sectors pipeline (measured
// on H200: no queuing from 1 to 132 blocks, each on its own sector), but
// not wholly within one 128-byte line: each load waiting at another sector
// of the line adds hostmem.line_contention to the sector's service. So a
// poll loop's period is not one round trip but
//
//	max(round trip, pollers of the sector × service time
//	                + loads waiting at the line's other sectors × line contention)
//
// and a wait ends one period after the flag lands. GPU memory serves polls
// and atomics from 1 to 132 blocks, on one word or apart, without queuing
// (measured), so flags in GPU memory keep the plain round trip.
//
// The pollers of a sector are counted as the poll loops are: the waits of
// one rank on the flags of one sector are one loop, standing for one
// poller per thread block, each block on its own sector (the slot layout
// of vLLM's, PyTorch's and arsim's barriers: a block's slots sit together,
// blocks apart), so the blocks do not queue behind each other. Flags
// declared in the same sector group (NewFlag) are the slots of one sector
// (a barrier's flags packed as vLLM's), which a block polls with one
// warp-wide load: hostmem.slot_service per slot. What costs more is where
// the barrier's sectors lie: each of its other ranks' sectors that
// collides with the polled one — on a line of the page that differs from
// its own only in address bits 7 and 9
// (hostmem.collision_mask, sectorsCollide) — adds hostmem.sector_collision
// (measured on H200, barriers of W ranks, each rank's slots in a sector:
// with the sectors 128 B apart 2.1, 2.5–3.6 and 4.2–4.7 µs at W = 2, 4, 8;
// 1–4 KiB apart 1.7–2.0, 2.0–2.2 and 2.2–2.5 µs; W − 1 pollers of
// hostmem.poll_service each would take 1.9, 3.8 and 8.0; two ranks'
// sectors 128 to 896 B apart 2.24–2.35 µs where their lines collide,
// 1.85–1.98 where not, barrier_pairs.jsonl). The other
// barriers running at once cost nothing unless their sectors share the
// polled one's line, nor do stores beside a polled word (line_probe.jsonl);
// stores landing at the other sectors of a polled sector's line, each
// written by the barrier's other ranks, add to its service (slotsPeriod). arsim's barriers keep
// a rank's slots in a sector and the ranks' sectors apart bytes apart (by
// default next to each other, a line each), so a wait on a slot of a
// sector of k slots is seen k × hostmem.slot_service + (colliding
// sectors) × hostmem.sector_collision after its flag lands, on top of the
// poll period; a flag of no group (NCCL's FIFO tails) pays nothing more.

// flagPoll is where one flag is polled: the sector group it lies in (its
// index in Machine.sectorPolls, for the memory at).
type flagPoll struct {
	at     Mem
	sector int32
}

// sectorPolls is one sector group of host memory: the poll loops on it
// now (ranks with a wait pending on one of its flags), each rank's
// pending waits on it, and its slots (the flags made in it).
type sectorPolls struct {
	pollers int
	waits   []int32 // by rank
	slots   int
	apart   int // bytes to the barrier's next sector; 0: 128
	// blockStride: bytes from one thread block's copy of the sector to
	// the next block's (vLLM's Signal layout: 32, a block's slots in a
	// sector, the blocks' sectors adjacent); 0: each block's on a line of
	// its own.
	blockStride int
	// collisions: barrierCollisions(collSlots, collApart, 0), kept for the
	// next wait while slots and apart stay the same (collKept)
	collisions, collSlots, collApart int
	collKept                         bool
}

// collisionsOf is barrierCollisions(sp.slots, apart, 0), worked out again
// only when the sector's slots or apart changed since the last wait.
func (m *Machine) collisionsOf(sp *sectorPolls, apart int) int {
	if !sp.collKept || sp.collSlots != sp.slots || sp.collApart != apart {
		sp.collisions, sp.collSlots, sp.collApart, sp.collKept = m.barrierCollisions(sp.slots, apart, 0), sp.slots, apart, true
	}
	return sp.collisions
}

// sectorsPerLine is how many 32-byte sectors a 128-byte line of host
// memory holds.
const sectorsPerLine = 4

// sectorKey names one sector group of one memory.
type sectorKey struct {
	at    Mem
	group string
	own   *sim.FlagVar // a flag of no group: a sector of its own
}

// NewFlag makes a flag that lives in memory at. Flags with the same
// non-empty group in the same memory share one sector per block (a
// barrier's slots that one block polls), the barrier's sectors apart bytes
// apart (0: next to each other, 128 B), the blocks' copies of the sector
// blockStride bytes apart (0: a line each); an empty group gives the flag
// a sector of its own.
func (m *Machine) NewFlag(name string, at Mem, group string, apart, blockStride int) *sim.FlagVar {
	f := sim.NewFlag(m.Eng, name)
	if group != "" {
		if m.flagGroups == nil {
			m.flagGroups = map[*sim.FlagVar]string{}
		}
		m.flagGroups[f] = group
		sp := &m.sectorPolls[m.sectorOf(sectorKey{at: at, group: group})]
		sp.slots++
		if apart > 0 {
			sp.apart = apart
		}
		if blockStride > 0 {
			sp.blockStride = blockStride
		}
	}
	return f
}

// sectorOf returns the index of sector group sk, making it the first time.
func (m *Machine) sectorOf(sk sectorKey) int32 {
	if m.sectors == nil {
		m.sectors = map[sectorKey]int32{}
	}
	sec, ok := m.sectors[sk]
	if !ok {
		sec = int32(len(m.sectorPolls))
		m.sectors[sk] = sec
		m.sectorPolls = append(m.sectorPolls, sectorPolls{})
	}
	return sec
}

// slotPolls is what a warp's poll of slots slots of one sector of memory
// at adds when collide of the barrier's other sectors collide with it
// (sectorsCollide): hostmem.slot_service per slot and
// hostmem.sector_collision per such sector. GPU memory serves the polls
// without queuing, but each store after the first that lands while they
// spin waits gpu.spin_store_service (measured: a barrier in local memory
// grows with its ranks while its polls spin, not once they pause 300 ns
// or more; fence_beside.jsonl).
func (m *Machine) slotPolls(at Mem, slots, collide int) sim.Duration {
	if !at.Host {
		return sim.Duration(max(slots-1, 0)) * m.Phys.SpinStoreService
	}
	return sim.Duration(slots)*m.Phys.HostSlotService + sim.Duration(collide)*m.Phys.HostSectorCollision
}

// barrierCollisions is how many lines of a barrier's other sectors collide
// with the median rank's (offsetCollisions) when its slots + 1 ranks' sectors
// lie apart bytes apart, one after another, the first offset bytes into a
// page, and the sector's slots are the other ranks'.
func (m *Machine) barrierCollisions(slots, apart, offset int) int {
	if apart <= 0 || slots <= 0 {
		return 0
	}
	var buf [64]int
	offs := buf[:0]
	if slots+1 > len(buf) {
		offs = make([]int, 0, slots+1)
	}
	for r := 0; r <= slots; r++ {
		offs = append(offs, offset+r*apart)
	}
	return m.offsetCollisions(offs)
}

// offsetCollisions is how many lines holding other ranks' sectors collide
// with the median rank's (sectorsCollide), the ranks' sectors at offs: a
// colliding line counts once however many of the barrier's sectors it
// holds. hostmem.sector_collision was measured with a sector a line
// (barrier_pairs.jsonl); counted per sector, the layout packed at 6 and 8
// ranks (two lines of four sectors, colliding) was +35…+47 % on one H200
// and one H100, per line −5…+22 % (the form chosen after seeing them).
func (m *Machine) offsetCollisions(offs []int) int {
	var buf, lines [64]int
	per := buf[:0]
	if len(offs) > len(buf) {
		per = make([]int, 0, len(offs))
	}
	for r, a := range offs {
		seen := lines[:0]
		for q, b := range offs {
			if q != r && m.sectorsCollide(a, b) && !slices.Contains(seen, b/128) {
				seen = append(seen, b/128)
			}
		}
		per = append(per, len(seen))
	}
	slices.Sort(per)
	return per[(len(per)-1)/2]
}

// sectorsCollide says whether two sectors of pinned host memory, at byte
// offsets a and b of one page-aligned allocation, slow each other's polls
// (hostmem.sector_collision): when they lie on two lines of one page whose
// addresses differ only in the bits of hostmem.collision_mask (measured on
// H200's host: 0x280, bits 7 and 9 — lines 0, 1, 4 and 5 of a kibibyte
// collide, 2, 3, 6 and 7 — in every kibibyte of the page;
// barrier_pairs.jsonl). Lines of other pages, and other lines of one
// page, do not, though some do on the machine measured by where they land
// (not modelled). Sectors of one line do not collide: what the stores at
// a polled line's other sectors cost is hostmem.line_contention
// (slotsPeriod), not this.
func (m *Machine) sectorsCollide(a, b int) bool {
	if a < 0 || b < 0 || a/128 == b/128 {
		return false
	}
	return (a^b)&^(m.Phys.HostCollisionMask|127) == 0
}

// Poll describes the poll loop of a wait.
type Poll struct {
	// Atomic: the poll is a compare-and-swap (PyTorch's wait_signal),
	// served per 128-byte line (hostmem.atomic_service).
	Atomic bool
	// Blocks: the thread blocks of the waiting kernel, each polling its
	// own copy of the flag's sector (0: one).
	Blocks int
}

// lineSectors is how many sectors of a barrier's sector group sp share a
// 128-byte line, each polled by its own loop and written by the
// barrier's other ranks: the blocks' copies when they lie blockStride
// apart, else the ranks' sectors when they lie less than a line apart;
// at most a line's four.
func (sp *sectorPolls) lineSectors(blocks int) int {
	if sp.slots == 0 {
		return 1 // a flag of no group: a sector, and a line, of its own
	}
	const line = 32 * sectorsPerLine
	n := 1
	switch {
	case sp.blockStride > 0 && sp.blockStride < line:
		n = min(max(blocks, 1), line/sp.blockStride)
	case sp.apart > 0 && sp.apart < line:
		n = min(sp.slots+1, line/sp.apart)
	}
	return min(n, sectorsPerLine)
}

// slotsPeriod is the period of the poll loops of a barrier's sector when
// pollers loops poll it, each request served in svc, and inLine sectors
// of its line are in use at once (lineSectors), each written by writers
// of the barrier's ranks: every store landing at another sector of the
// line adds line (hostmem.line_contention) to the sector's service.
// Measured on one H200 (barrier_layout.jsonl, each rank's sectors in an
// array of its own, the groups' sectors of an array adjacent): a line
// shared by 2, 3 or 4 groups' sectors adds 0.20–0.22 µs per such store at
// 2 and 8 ranks (0.30 at 4), up to four groups.
func slotsPeriod(rtt, svc, line sim.Duration, pollers, inLine, writers int) sim.Duration {
	return linePollPeriod(rtt, pollers, (inLine-1)*writers, svc, line)
}

// pollLoad is what pollers blocks of a GPU polling memory at add to each
// of their polls' period: gpu.host_poll_load each in host memory (measured
// on one H200: a flag's round trip gains about 1.4 ns for every block that
// spins on a word of its own elsewhere in host memory, host_load.jsonl);
// nothing in GPU memory. Atomics pay none: 1–132 blocks' atomics, each on
// a line of its own, take 1.10–1.18 µs whatever the count on one H200 and
// one H100 (perblock*.jsonl, words 128 B and 4 KiB apart; with this term
// the model was +17…+20 % at 132 blocks; the form chosen after seeing them).
func (m *Machine) pollLoad(at Mem, pollers int) sim.Duration {
	if !at.Host {
		return 0
	}
	return sim.Duration(max(pollers, 1)) * m.Phys.HostPollLoad
}

// pollService returns the time memory at spends per request to one sector
// (line, for atomics), 0 when it serves polls without queuing.
func (m *Machine) pollService(at Mem, atomic bool) sim.Duration {
	if !at.Host {
		return 0
	}
	if atomic {
		return m.Phys.HostAtomicService
	}
	return m.Phys.HostPollService
}

// pollPeriod is the period of a poll loop with a round trip of rtt, one
// of pollers loops on its sector, each request served in svc.
func pollPeriod(rtt sim.Duration, pollers int, svc sim.Duration) sim.Duration {
	return max(rtt, sim.Duration(pollers)*svc)
}

// linePollPeriod is pollPeriod with waiting loads queued at the other
// sectors of the sector's line, each adding line to its service.
func linePollPeriod(rtt sim.Duration, pollers, waiting int, svc, line sim.Duration) sim.Duration {
	return max(rtt, sim.Duration(pollers)*svc+sim.Duration(waiting)*line)
}

// lineWaiting is how many loads wait at the other sectors of one line
// when n pollers' words lie spacing bytes apart (0: one shared word)
// from the line's start: sectors of k pollers each, k−1 of whom wait.
// Atomics queue per line already (their unit is the line): none.
func lineWaiting(n, spacing int, atomic bool) int {
	const sector, line = 32, 128
	if atomic || spacing <= 0 || spacing >= sector {
		return 0
	}
	k := sharers(n, spacing, sector)
	sectors := min(line/sector, (n-1)*spacing/sector+1) // up to the last word's sector
	return (sectors - 1) * (k - 1)
}

// PollPeriod is the period of the poll loops of rank r on memory at when
// pollers loops poll one sector (line, for atomics) of it and waiting
// loads queue at the other sectors of its line (lineWaiting).
func (m *Machine) PollPeriod(r int, at Mem, pollers, waiting int, atomic bool) (sim.Duration, error) {
	rtt, err := m.RoundTrip(r, at)
	if err != nil {
		return 0, err
	}
	return linePollPeriod(rtt, pollers, waiting, m.pollService(at, atomic), m.lineContention(at)), nil
}

// lineContention is what a load waiting at another sector of a line adds
// to a sector's service in memory at (hostmem.line_contention; 0 in GPU
// memory, which serves its pollers without queuing).
func (m *Machine) lineContention(at Mem) sim.Duration {
	if !at.Host {
		return 0
	}
	return m.Phys.HostLineContention
}

// WaitFlag calls fn once flag f (in memory at) holds value, as seen by the
// poll loops of rank r: one poll period after the value lands (see the
// package's note on polls), plus extra (a block-wide barrier's
// synchronisation; see BarrierWaitExtra).
func (m *Machine) WaitFlag(r int, at Mem, f *sim.FlagVar, value int64, who fmt.Stringer, extra sim.Duration, p Poll, fn func()) error {
	rtt, err := m.RoundTrip(r, at)
	if err != nil {
		return err
	}
	svc := m.pollService(at, p.Atomic)
	if svc == 0 {
		if m.flagGroups[f] != "" { // a flag of no group has no slots beside it
			extra += m.slotPolls(at, m.sectorPolls[m.flagPollOf(f, at).sector].slots, 0)
		}
		f.Wait(value, rtt+extra, who, fn)
		return nil
	}
	if !p.Atomic {
		extra += m.pollLoad(at, p.Blocks) // the kernel's blocks poll at once
	}
	sec := m.flagPollOf(f, at).sector
	sp := &m.sectorPolls[sec]
	for len(sp.waits) <= r {
		sp.waits = append(sp.waits, 0)
	}
	// Waits of one rank on the flags of one sector are one poll loop
	// (NCCL's step waits on a FIFO's tail are pending together but polled
	// by one thread; a barrier's slots in one sector by one warp-wide load,
	// served slot by slot).
	if sp.waits[r]++; sp.waits[r] == 1 {
		sp.pollers++
	}
	apart := sp.apart
	if apart == 0 {
		apart = 128
	}
	extra += m.slotPolls(at, sp.slots, m.collisionsOf(sp, apart))
	inLine := 1
	if !p.Atomic {
		inLine = sp.lineSectors(p.Blocks)
		extra += m.blockForeignCollision(at, p.Blocks, sp.blockStride, sp.slots)
	}
	i := m.newPoll(pollWait{r: r, sec: sec, rtt: rtt, svc: svc, line: m.lineContention(at), extra: extra, inLine: int8(inLine), fn: fn})
	f.Wait(value, 0, who, m.pend.pollSeen[i])
	return nil
}

// flagPollOf returns flag f's poll state for a wait on it in memory at,
// finding the sector group of (at, f's group) the first time and whenever
// at differs from the last wait's.
func (m *Machine) flagPollOf(f *sim.FlagVar, at Mem) *flagPoll {
	i := f.Index()
	for len(m.flagPolls) <= i {
		m.flagPolls = append(m.flagPolls, nil)
	}
	fp := m.flagPolls[i]
	if fp != nil && fp.at == at {
		return fp
	}
	sk := sectorKey{at: at, group: m.flagGroups[f]}
	if sk.group == "" {
		sk.own = f
	}
	sec := m.sectorOf(sk)
	if fp == nil {
		fp = &flagPoll{}
		m.flagPolls[i] = fp
	}
	fp.at, fp.sector = at, sec
	return fp
}

// PollDrain is how long the polls of host memory that pollers threads of
// GPU r keep in flight (one each, a word of its own, spacing bytes apart,
// 0: 32) take to be served, and so the period of their poll loops where it
// exceeds a round trip, and what a system fence waits for them. A warp's
// polls of words on one 128-B line go up as one read request for the
// sectors they touch (four at 32 B apart, one at 128 B and more); the link
// returns each request's completion, its sectors and pcie.tlp_overhead, at
// its rate (pcie.link_efficiency), and the GPU keeps at most
// gpu.host_requests_outstanding requests outstanding, each for a round
// trip. The requests in flight are served at the lower of the two rates.
// Measured on one H100 (fence_queue.jsonl; the pollers timed their own
// polls): a sector each, the pollers' period 1.47–1.59 µs up to 2,048
// pollers and then 0.62–0.68 ns a poller (4,096–67,072), the link's rate
// for 128-B completions (0.63 ns: four pollers a request, nothing
// fitted); a line each, 1.5–1.6 ns a poller from 2,048, where the link
// would take 0.23: the requests outstanding. A fence beside them waited
// what the pollers' period was, 0.86–1.4 times it. With eightBit (the
// GPU's 10-bit tags not enabled as a requester) the requests outstanding
// are gpu.host_requests_outstanding_8bit's: on the H100 instance whose
// registers said so, a fence beside 4,096 pollers took 5.1–5.3 µs where
// instances with 10-bit tags took 2.7–2.9. Polls of GPU memory do not
// queue (Polls are requests, above).
func (m *Machine) PollDrain(r int, at Mem, pollers, spacing int, eightBit bool) (sim.Duration, error) {
	if pollers < 1 || !at.Host {
		return 0, nil
	}
	p, err := m.path(GPUMem(r), at)
	if err != nil {
		return 0, err
	}
	const line, sector = 128, 32
	spacing = max(spacing, sector)
	if spacing == sector && pollers < 4 {
		spacing = line // fewer than a line's worth: a request each
	}
	perLine := max(line/spacing, 1)
	requests := float64(pollers) / float64(perLine)
	wire := (float64(perLine*sector) + m.Phys.TLPOverhead) / m.Phys.LinkEfficiency
	var rate float64 // requests a second
	n := len(p.types)
	for i, id := range p.back {
		if p.types[n-1-i] == topology.PCIe {
			c := float64(m.Net.Resource(id).Capacity) / wire
			if rate == 0 || c < rate {
				rate = c
			}
		}
	}
	t := m.Phys.HostRequestsOutstanding
	if eightBit {
		t = m.Phys.HostRequestsOutstanding8bit
	}
	if t > 0 && p.rtt > 0 {
		c := t / (float64(p.rtt) / float64(sim.Second))
		if rate == 0 || c < rate {
			rate = c
		}
	}
	if rate == 0 {
		return 0, nil
	}
	return sim.Duration(math.Round(requests / rate * float64(sim.Second))), nil
}
