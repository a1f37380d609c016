package hw

import (
	"fmt"

	"github.com/arsim/arsim/sim"
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
// one rank on one flag are one loop, standing for one poller per thread
// block, each block on its own sector (the slot
// layout of vLLM's, PyTorch's and arsim's barriers: a block's slots sit
// together, blocks apart), so the blocks do not queue behind each other;
// waits on flags declared in the same sector group (NewFlag) share their
// block's sector, so the W−1 slots a block polls in one barrier queue.

// flagPoll is what the poll loops on one flag share: the sector group it
// lies in (its index in Machine.pollers, for the memory at) and, per
// rank, the waits pending in that rank's poll loop on it.
type flagPoll struct {
	at     Mem
	sector int32
	waits  []int32
}

// sectorKey names one sector group of one memory.
type sectorKey struct {
	at    Mem
	group string
	own   *sim.FlagVar // a flag of no group: a sector of its own
}

// NewFlag makes a flag that lives in memory at. Flags with the same
// non-empty group in the same memory share one sector per block (a
// barrier's slots that one block polls); an empty group gives the flag a
// sector of its own.
func (m *Machine) NewFlag(name string, at Mem, group string) *sim.FlagVar {
	f := sim.NewFlag(m.Eng, name)
	if group != "" {
		if m.flagGroups == nil {
			m.flagGroups = map[*sim.FlagVar]string{}
		}
		m.flagGroups[f] = group
	}
	return f
}

// Poll describes the poll loop of a wait.
type Poll struct {
	// Atomic: the poll is a compare-and-swap (PyTorch's wait_signal),
	// served per 128-byte line (hostmem.atomic_service).
	Atomic bool
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
		f.Wait(value, rtt+extra, who, fn)
		return nil
	}
	fp := m.flagPollOf(f, at)
	sec := fp.sector
	for len(fp.waits) <= r {
		fp.waits = append(fp.waits, 0)
	}
	// Waits of one rank on one flag are one poll loop (NCCL's step waits
	// on a FIFO's tail are pending together but polled by one thread).
	if fp.waits[r]++; fp.waits[r] == 1 {
		m.pollers[sec]++
	}
	i := m.newPoll(pollWait{fp: fp, r: r, sec: sec, rtt: rtt, svc: svc, extra: extra, fn: fn})
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
	if m.sectors == nil {
		m.sectors = map[sectorKey]int32{}
	}
	sec, ok := m.sectors[sk]
	if !ok {
		sec = int32(len(m.pollers))
		m.sectors[sk] = sec
		m.pollers = append(m.pollers, 0)
	}
	if fp == nil {
		fp = &flagPoll{}
		m.flagPolls[i] = fp
	}
	fp.at, fp.sector = at, sec
	return fp
}
