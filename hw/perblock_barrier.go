package hw

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/arsim/arsim/sim"
)

// packedApart is how far apart a packed barrier layout puts the ranks'
// sectors, in bytes.
var packedApart = map[string]int{"packed": 32, "packed_64": 64, "packed_128": 128, "packed_256": 256, "packed_512": 512,
	"packed_1k": 1024, "packed_2k": 2048, "packed_4k": 4096}

// FlagLayout names, as the loop group_barrier records do (PerBlock.Layout),
// the layout of a schedule's flag: "line_per_slot" when the flag has a line
// of its own (no sector group), "vllm" when the blocks' copies of its
// sector lie 32 B apart (vLLM's Signal), "packed" … "packed_4k" when its
// rank's sector lies apart bytes from the next rank's (0: a line apart,
// the default); "" for a layout no capture ran.
func FlagLayout(sector bool, apart, blockStride int) string {
	switch {
	case !sector:
		return "line_per_slot"
	case blockStride == 32:
		return "vllm"
	case blockStride > 0:
		return ""
	}
	if apart == 0 {
		apart = 128
	}
	for _, name := range slices.Sorted(maps.Keys(packedApart)) {
		if packedApart[name] == apart {
			return name
		}
	}
	return ""
}

// IsFlagLayout reports whether FlagLayout can return name.
func IsFlagLayout(name string) bool {
	_, packed := packedApart[name]
	return packed || name == "line_per_slot" || name == "vllm"
}

// rankMajor are the rank-major barrier layouts (tools/capture's
// pb_group_barrier_rm and pb_group_barrier_rmc): each rank's sectors in an
// array of its own, rankStride bytes after the previous rank's, group g's
// sector at offset + g × groupStride bytes into it (offset from the start
// of a line), or with chunk, four groups' sectors to a chunk and the
// chunks chunk bytes apart.
var rankMajor = map[string]rankLayout{
	"vllm":          {rankStride: 16 << 10, groupStride: 32},
	"vllm_line":     {rankStride: 16 << 10, groupStride: 128},
	"vllm_off64":    {rankStride: 16 << 10, groupStride: 32, offset: 64},
	"vllm_chunk256": {rankStride: 16 << 10, groupStride: 32, chunk: 256},
	"vllm_chunk384": {rankStride: 16 << 10, groupStride: 32, chunk: 384},
	"vllm_chunk512": {rankStride: 16 << 10, groupStride: 32, chunk: 512},
	"vllm_chunk768": {rankStride: 16 << 10, groupStride: 32, chunk: 768},
	"vllm_chunk1k":  {rankStride: 16 << 10, groupStride: 32, chunk: 1 << 10},
	"vllm_chunk2k":  {rankStride: 16 << 10, groupStride: 32, chunk: 2 << 10},
	"vllm_chunk4k":  {rankStride: 16 << 10, groupStride: 32, chunk: 4 << 10},
}

type rankLayout struct{ rankStride, groupStride, offset, chunk int }

// rankLayoutOf is a record's rank-major layout: a named one (rankMajor),
// or rank_stride, the ranks' arrays StrideBytes apart and the groups'
// sectors GroupStrideBytes apart (adjacent when 0).
func rankLayoutOf(rec PerBlock) (rankLayout, bool) {
	if rec.Layout == "rank_stride" {
		gs := rec.GroupStrideBytes
		if gs == 0 {
			gs = 32
		}
		return rankLayout{rankStride: rec.StrideBytes, groupStride: gs}, rec.StrideBytes > 0
	}
	l, ok := rankMajor[rec.Layout]
	return l, ok
}

// at is where group g's sector lies in a rank's array, bytes.
func (l rankLayout) at(g int) int {
	if l.chunk > 0 {
		return l.offset + g/4*l.chunk + g%4*l.groupStride
	}
	return l.offset + g*l.groupStride
}

// medianLineSectors is how many sectors, of any group and any of world
// ranks, share the line of the median block's sector (the capture reports
// the median block): the groups' sectors of one rank where the ranks'
// arrays lie a line apart or more, as layout packed counts them where
// they do not (rank_stride at 32 or 64 B).
func (l rankLayout) medianLineSectors(groups, world int) int {
	offs := make([]int, groups*world)
	for i := range offs {
		offs[i] = i%world*l.rankStride + l.at(i/world)
	}
	return offsetLineSectors(offs)
}

// groupBarrierTwin: a barrier of World blocks through flags in one memory,
// laid out as vLLM's (a rank's slots for its peers in one sector, the
// ranks' sectors 32 B to 4 KiB apart: packedApart) or a line per slot.
// Each block's threads store the epoch into the peers' slots and poll
// their own World − 1 slots: packed, one warp-wide load of the block's
// sector, hostmem.slot_service per slot and hostmem.sector_collision for
// each of the barrier's other sectors that collides with the polled one
// (hostmem.collision_mask: the median rank's count)
// (hw.Machine.WaitFlag); a line per slot, a load of each slot's line in
// parallel, hostmem.slot_service per slot as well (measured: 1.7–1.9,
// 2.0–2.2, 2.3–2.6 µs at W = 2, 4, 8, about twice that slope). Each store
// landing at another sector of the polled sector's line adds
// hostmem.line_contention to its service (slotsPeriod); the block then
// meets at __syncthreads (gpu.barrier_meet, by its warps; one GPU, so no
// gpu.barrier_sync). In local memory each flag after the first waits
// gpu.spin_store_service where the polls spin (slotPolls), whatever the
// layout. The groups' sectors follow each
// other, so a line holds the sectors of several groups when a group has
// fewer ranks than a line has sectors. In host memory the round's flag
// stores, every group's, leave the GPU one after another (roundStores),
// and every block's polls slow every other's (pollLoad); each system fence
// of a round waits for the other groups' polls of host memory
// (FenceBesidePolls); and the other groups' stores landing on lines that
// collide with a block's own cost it (foreignStores, foreignCollision), as
// do other barriers' sectors on crowded lines near it (crowdedLines), the
// two under one cap (otherBarriers).
func (m *Machine) groupBarrierTwin(rec PerBlock) (float64, error) {
	at := mem(rec.Target)
	land, err := m.StoreLanding(0, at)
	if err != nil {
		return 0, err
	}
	slots, inLine := rec.World-1, 1 // a line per slot: each slot polled on its own line
	if rec.SelfSlot {
		slots = rec.World
	}
	if rec.Layout == "rank_stride" && rec.StrideBytes <= 0 {
		return 0, fmt.Errorf("hw: layout rank_stride needs stride_bytes (bytes from one rank's array to the next)")
	}
	groups := max(rec.Groups, 1)
	collide := 0          // only host memory's sectors collide
	var secs []flagSector // every group's sectors, for the other barriers' colliding lines
	layout := func(sector func(g, r int) int) {
		for g := range groups {
			for r := range rec.World {
				secs = append(secs, flagSector{at: sector(g, r), group: g, stores: slots})
			}
		}
	}
	if apart, ok := packedApart[rec.Layout]; ok {
		if at.Host {
			collide = m.barrierCollisions(slots, apart, 0)
			layout(func(g, r int) int { return (g*rec.World + r) * apart })
		}
		inLine = min(max(128/apart, 1), groups*rec.World, sectorsPerLine) // sectors of one line in use, a warp polling each
	} else if rm, ok := rankLayoutOf(rec); ok {
		rm.offset += rec.FlagOffset
		if at.Host {
			collide = m.barrierCollisions(slots, rm.rankStride, rm.offset)
			layout(func(g, r int) int { return r*rm.rankStride + rm.at(g) })
		}
		inLine = rm.medianLineSectors(groups, rec.World)
	} else if rec.Layout == "rank_offsets" {
		offs, err := rankOffsets(rec)
		if err != nil {
			return 0, err
		}
		if at.Host {
			collide = m.offsetCollisions(offs)
			layout(func(_, r int) int { return offs[r] })
		}
		inLine = offsetLineSectors(offs)
	}
	rtt, err := m.RoundTrip(0, at)
	if err != nil {
		return 0, err
	}
	period := slotsPeriod(rtt, m.pollService(at, false), m.lineContention(at), 1, inLine, slots)
	fences := sim.Duration(0)
	if n := barrierFences[rec.Mode]; n > 0 {
		f, err := m.FenceCost(0, at)
		if err != nil {
			return 0, err
		}
		// the other groups' blocks poll host memory while each fence
		// waits (FenceBesidePolls), and so do the barrier's own ranks but
		// the one whose flag came last (barrierFencePollers)
		w, err := m.FenceBesidePolls(0, at, barrierFencePollers(rec.World, max(rec.Groups, 1)))
		if err != nil {
			return 0, err
		}
		fences = sim.Duration(n) * (f + w)
	}
	return nsOf(land + m.roundStores(at, rec, slots) + period + m.pollLoad(at, max(rec.Groups, 1)*rec.World) +
		m.slotPolls(at, slots, collide) + m.otherBarriers(secs) +
		m.BarrierWaitExtra(false, rec.Threads, false) + fences + m.crossHalfHandoff(rec, at)), nil
}

// offsetLineSectors is how many of a barrier's sectors (at byte offsets
// offs) share the median one's 128-byte line, its own included, at most a
// line's four: rank_offsets' ranks and, through medianLineSectors, the
// other layouts' blocks, so that one set of offsets costs the same under
// every layout name.
func offsetLineSectors(offs []int) int {
	per := make([]int, len(offs))
	for i, a := range offs {
		for _, b := range offs {
			if a/128 == b/128 {
				per[i]++
			}
		}
	}
	slices.Sort(per)
	return min(per[(len(per)-1)/2], sectorsPerLine)
}

// barrierFencePollers is how many blocks a fence of a W-rank barrier
// finds polling while groups such barriers run at once: every block of the
// other groups, and of its own the W − 2 ranks other than the fencing one
// and the one whose flag it saw last. Measured on one H200
// (fence_groups.jsonl, the alternative written down before the run): at
// one group of 3 and 6 ranks the fenced barriers are −12…+4 % and −22…+3 %
// with the W − 2 counted, −23…−37 % without; at two ranks (none counted)
// they take what a fence alone adds (barrier_modes.jsonl). A reading: the
// last rank to store was polling for this block's flag too, and its polls
// were answered as this block's were, while the others still poll.
func barrierFencePollers(world, groups int) int {
	return (groups-1)*world + max(world-2, 0)
}

// barrierFences is how many system-scope fences a barrier's flag store
// waits in each mode of tools/capture's pb_group_barrier_mode (trace
// field mode): a volatile store none; __threadfence_system one; a
// st.release.sys store one of its own, fence or no fence before it
// (measured on one H200, barrier_modes.jsonl: release/acquire flags 598
// ns above volatile ones in local memory, a fence 530, both 1,117); the
// acquire polls nothing more. A mode it does not list is not a barrier's.
var barrierFences = map[string]int{"": 0, "volatile": 0, "fence_volatile": 1, "release_acquire": 1, "fence_release_acquire": 2}

// isBarrierMode reports whether mode is one of a barrier's (barrierFences).
func isBarrierMode(mode string) bool {
	_, ok := barrierFences[mode]
	return ok
}

// roundStores is how long the median block of a group barrier's round
// waits for the GPU's small stores to host memory to leave before its
// last slot's: the round's Groups × World × slots stores leave one after
// another (gpu.host_store_service each, SignalFlag), in no set order, so
// the last of a block's slots stores lies slots/(slots+1) of the way
// through them. Flags in GPU memory: none.
func (m *Machine) roundStores(at Mem, rec PerBlock, slots int) sim.Duration {
	if !at.Host || slots < 1 {
		return 0
	}
	n := max(rec.Groups, 1) * rec.World * slots
	return sim.Duration(float64(n) * float64(slots) / float64(slots+1) * float64(m.Phys.HostStoreService))
}

// rankOffsets reads a rank_offsets barrier's sectors: one byte offset per
// rank, each a multiple of 32 (a sector) and below a gibibyte.
func rankOffsets(rec PerBlock) ([]int, error) {
	if rec.RankOffsets == "" {
		return nil, fmt.Errorf("hw: layout rank_offsets needs the field rank_offsets (each rank's byte offset, comma separated)")
	}
	parts := strings.Split(rec.RankOffsets, ",")
	if len(parts) != rec.World {
		return nil, fmt.Errorf("hw: rank_offsets %q: %d offsets for %d ranks", rec.RankOffsets, len(parts), rec.World)
	}
	offs := make([]int, len(parts))
	for i, p := range parts {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || v < 0 || v >= 1<<30 || v%32 != 0 {
			return nil, fmt.Errorf("hw: rank_offsets %q: rank %d's offset %q is not a multiple of 32 bytes below 1 GiB", rec.RankOffsets, i, p)
		}
		offs[i] = v
	}
	return offs, nil
}
