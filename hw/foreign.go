package hw

import (
	"slices"

	"github.com/arsim/arsim/sim"
)

// Lines of other barriers that collide with a polled one.
//
// A barrier's own colliding sectors cost hostmem.sector_collision each
// (sectorsCollide). Another barrier's line that collides with the polled
// one costs by the stores landing on it each round (measured on one H200,
// barrier_groups_apart.jsonl: such a line written once a round costs a
// two-rank barrier little, +16 ns; written three times a round, 350–400
// ns at four ranks; barrier_chunks_2.jsonl: four groups' sectors on it,
// 12 stores a round, 1.6–1.9 µs; 28 a round, 2.8 µs). The model: each
// store beyond the first that lands in a round on a sector of a line
// colliding with the polled one (not the polled line, nor a line of the
// block's own barrier) adds hostmem.foreign_store_collision to the poll,
// up to hostmem.foreign_collision_cap in all. Counted per sector, not per
// line: a line's stores from different sectors' writers count less
// (host_shot.jsonl's barriers; docs/PER_BLOCK.md says how that was chosen).

// flagSector is one sector of a layout of barriers in host memory: its
// byte offset in a page-aligned allocation, the barrier (group) it
// belongs to, and the stores that land on it each round.
type flagSector struct {
	at, group, stores int
}

// foreignStores is, for the median sector of secs (a block polls each),
// the stores beyond the first on each sector of the lines that collide
// with its own, summed, leaving out its own line and its own barrier's
// lines. The median of an even count is the mean of the middle two.
func (m *Machine) foreignStores(secs []flagSector) float64 {
	if len(secs) == 0 {
		return 0
	}
	ownLines := map[[2]int]bool{} // (group, line)
	for _, s := range secs {
		ownLines[[2]int{s.group, s.at / 128}] = true
	}
	per := make([]int, len(secs))
	for b, s := range secs {
		own := s.at / 128
		for _, t := range secs {
			l := t.at / 128
			if l == own || ownLines[[2]int{s.group, l}] || !m.sectorsCollide(own*128, l*128) {
				continue
			}
			per[b] += max(t.stores-1, 0)
		}
	}
	slices.Sort(per)
	n := len(per)
	return float64(per[(n-1)/2]+per[n/2]) / 2
}

// foreignCollision is what foreign stores on colliding lines add to a
// poll: hostmem.foreign_store_collision each, up to
// hostmem.foreign_collision_cap.
func (m *Machine) foreignCollision(stores float64) sim.Duration {
	return min(sim.Duration(stores*float64(m.Phys.HostForeignStoreCollision)), m.Phys.HostForeignCollisionCap)
}

// blockForeignCollision is what a wait on a flag of a sector group of host
// memory pays for the other blocks' copies of the sector (blockStride
// bytes apart, each block polling its own, slots stores landing on each a
// round) on lines that collide with its own (foreignStores; the blocks'
// copies being those of other barriers, as the groups of one capture's
// barrier loop are). Nothing when the blocks' copies each lie on a line
// of their own at no stated place (blockStride 0), or one block polls.
func (m *Machine) blockForeignCollision(at Mem, blocks, blockStride, slots int) sim.Duration {
	if !at.Host || blocks < 2 || blockStride <= 0 || slots <= 0 {
		return 0
	}
	k := [3]int{blocks, blockStride, slots}
	if d, ok := m.foreignMemo[k]; ok {
		return d
	}
	secs := make([]flagSector, blocks)
	for b := range secs {
		secs[b] = flagSector{at: b * blockStride, group: b, stores: slots}
	}
	d := m.foreignCollision(m.foreignStores(secs))
	if m.foreignMemo == nil {
		m.foreignMemo = map[[3]int]sim.Duration{}
	}
	m.foreignMemo[k] = d
	return d
}

// crowdedLines is what other barriers' sectors on crowded lines add to the
// poll of the median sector of secs (a block polls each): where the
// sector's own barrier has another sector on its line or a line colliding
// with it (sectorsCollide), each other barrier with a sector on a line of
// that set that holds sectors of two barriers or more adds
// hostmem.crowded_line_collision, up to hostmem.crowded_line_cap.
// Measured on one H100 (barrier_line_groups*.jsonl, two ranks): lines
// each holding one rank's sectors of two or four barriers take 4.2 and
// 6.7 µs a barrier when the other rank's line collides with them, 1.8–2.2
// when it lies 16 KiB away; both ranks of two barriers on one line as
// much as on two colliding lines; both ranks of one barrier a line, the
// lines colliding, 2.4–2.9 (the form chosen after that file; the values
// fitted on the H200's layout packed).
func (m *Machine) crowdedLines(secs []flagSector) sim.Duration {
	if len(secs) == 0 {
		return 0
	}
	near := func(a, b int) bool { return a/128 == b/128 || m.sectorsCollide(a, b) }
	crowded := make([]bool, len(secs)) // a sector's line holds sectors of two barriers or more
	for i, s := range secs {
		crowded[i] = slices.ContainsFunc(secs, func(t flagSector) bool { return t.at/128 == s.at/128 && t.group != s.group })
	}
	per := make([]int, len(secs))
	for i, s := range secs {
		if !slices.ContainsFunc(secs, func(t flagSector) bool { return t.group == s.group && t.at != s.at && near(s.at, t.at) }) {
			continue // its barrier's sectors do not meet near it
		}
		var others []int
		for j, t := range secs {
			if t.group != s.group && crowded[j] && near(s.at, t.at) && !slices.Contains(others, t.group) {
				others = append(others, t.group)
			}
		}
		per[i] = len(others)
	}
	slices.Sort(per)
	n := float64(per[(len(per)-1)/2]+per[len(per)/2]) / 2
	return min(sim.Duration(n*float64(m.Phys.HostCrowdedLineCollision)), m.Phys.HostCrowdedLineCap)
}

// otherBarriers is what the other barriers of a layout add to the poll of
// the median sector of secs: their stores on lines colliding with its own
// (foreignCollision) and their sectors on crowded lines near it
// (crowdedLines), together at most the larger of the two caps
// (hostmem.foreign_collision_cap, hostmem.crowded_line_cap). Each cap was
// fitted where only its own term charged (barrier_chunks_2.jsonl,
// barrier_lines*.jsonl); summed, six-rank barriers of the layout packed in
// 4 and 16 groups, where both charge, were +37…+47 % on one H200 and one
// H100, under one cap −5…+9 % (the form chosen after seeing them).
func (m *Machine) otherBarriers(secs []flagSector) sim.Duration {
	return min(m.foreignCollision(m.foreignStores(secs))+m.crowdedLines(secs), max(m.Phys.HostForeignCollisionCap, m.Phys.HostCrowdedLineCap))
}
