package sim

import "slices"

// The due set: flows with a rate, by the instant their last byte leaves.
//
// Flows are kept in groups of one finish instant, the groups in a 4-ary
// heap by instant, a group found by its instant through a small
// direct-mapped table (dueRecent), as the event queue keeps events.
// Symmetric collectives finish thousands of flows at one instant: each
// then costs an append when its rate is set and an append when it is
// taken (measured on a 128-rank ring: a heap of single flows, with a walk
// from its root for many due at once, took ~220 instructions per flow;
// groups take ~90). Within a group flows are in no order; the flows due
// are handed over in ID order (appendByID). A flow knows its group and its
// place in it (Flow.dueG, Flow.dueI), so that a flow whose finish changes
// moves in constant time.

// dueGroup holds the flows finishing at one instant.
type dueGroup struct {
	at    Time
	flows []*Flow
	hidx  int32 // position in Network.dueHeap, −1 when not there
}

const dueRecentSize = 256

func dueSlot(t Time) int { return int(uint64(t) * 0x9E3779B97F4A7C15 >> (64 - 8)) }

// fixDue puts f into the due set, or moves it after its finish changed.
func (n *Network) fixDue(f *Flow) {
	if g := f.dueG; g != nil {
		if g.at == f.finish {
			return
		}
		n.unDue(f)
	}
	h := &n.dueRecent[dueSlot(f.finish)]
	g := *h
	if g == nil || g.at != f.finish || g.hidx < 0 {
		g = n.newDueGroup(f.finish)
		*h = g
	}
	f.dueG, f.dueI = g, int32(len(g.flows))
	g.flows = append(g.flows, f)
}

// unDue takes f out of its group; a group left empty leaves the heap.
func (n *Network) unDue(f *Flow) {
	g := f.dueG
	last := len(g.flows) - 1
	if i := f.dueI; int(i) != last {
		moved := g.flows[last]
		g.flows[i] = moved
		moved.dueI = i
	}
	g.flows[last] = nil
	g.flows = g.flows[:last]
	f.dueG, f.dueI = nil, -1
	if last == 0 {
		n.dueRemove(int(g.hidx))
		n.freeDueGroup(g)
	}
}

func (n *Network) newDueGroup(t Time) *dueGroup {
	var g *dueGroup
	if k := len(n.dueFree); k > 0 {
		g = n.dueFree[k-1]
		n.dueFree[k-1] = nil
		n.dueFree = n.dueFree[:k-1]
	} else {
		g = new(dueGroup)
	}
	g.at = t
	g.hidx = int32(len(n.dueHeap))
	n.dueHeap = append(n.dueHeap, g)
	n.dueUp(int(g.hidx))
	return g
}

// freeDueGroup keeps an emptied group, out of the heap, for reuse.
func (n *Network) freeDueGroup(g *dueGroup) {
	g.flows = g.flows[:0] // not cleared, as the settle's scratch (see reshare)
	g.hidx = -1
	n.dueFree = append(n.dueFree, g)
}

// dueNext returns the earliest finish; the due set must not be empty.
func (n *Network) dueNext() Time { return n.dueHeap[0].at }

// takeDue appends to done the flows due by now, in ID order, taken out of
// the due set.
func (n *Network) takeDue(now Time, done []*Flow) []*Flow {
	if len(n.dueHeap) == 0 || n.dueHeap[0].at > now {
		return done
	}
	taken := n.dueTaken[:0]
	for len(n.dueHeap) > 0 && n.dueHeap[0].at <= now {
		g := n.dueHeap[0]
		n.dueRemove(0)
		for _, f := range g.flows {
			f.dueG, f.dueI = nil, -1
		}
		taken = append(taken, g.flows...)
		n.freeDueGroup(g)
	}
	done = n.appendByID(done, taken)
	n.dueTaken = taken[:0] // not cleared, as the settle's scratch (see reshare)
	return done
}

// appendByID appends the flows of taken to done in ID order. Flows that
// finish together mostly started together, with IDs in a narrow range:
// those are placed by ID directly, others sorted.
func (n *Network) appendByID(done, taken []*Flow) []*Flow {
	lo, hi := taken[0].ID, taken[0].ID
	for _, f := range taken {
		lo, hi = min(lo, f.ID), max(hi, f.ID)
	}
	if span := hi - lo + 1; span <= FlowID(4*len(taken)) {
		if cap(n.byIDScratch) < int(span) {
			n.byIDScratch = make([]*Flow, span)
		}
		slots := n.byIDScratch[:span] // all nil: cleared after each use
		for _, f := range taken {
			slots[f.ID-lo] = f
		}
		for _, f := range slots {
			if f != nil {
				done = append(done, f)
			}
		}
		clear(slots)
		n.byIDScratch = slots[:0]
		return done
	}
	k := len(done)
	done = append(done, taken...)
	slices.SortFunc(done[k:], byID)
	return done
}

// The groups' heap is 4-ary, ordered by instant; groups of one instant
// (two can live at once when the recent table lost the first) are taken
// together, so their order does not matter.

// dueRemove takes the group at heap position i out of the heap.
func (n *Network) dueRemove(i int) {
	h := n.dueHeap
	last := len(h) - 1
	h[i].hidx = -1
	if i != last {
		h[i] = h[last]
		h[i].hidx = int32(i)
	}
	h[last] = nil
	n.dueHeap = h[:last]
	if i != last {
		x := n.dueHeap[i]
		n.dueUp(i)
		n.dueDown(int(x.hidx))
	}
}

func (n *Network) dueUp(i int) {
	h := n.dueHeap
	x := h[i]
	for i > 0 {
		p := (i - 1) / 4
		if x.at >= h[p].at {
			break
		}
		h[i] = h[p]
		h[i].hidx = int32(i)
		i = p
	}
	h[i] = x
	x.hidx = int32(i)
}

func (n *Network) dueDown(i int) {
	h := n.dueHeap
	x := h[i]
	for {
		c := 4*i + 1
		if c >= len(h) {
			break
		}
		m := c
		for j := c + 1; j < c+4 && j < len(h); j++ {
			if h[j].at < h[m].at {
				m = j
			}
		}
		if h[m].at >= x.at {
			break
		}
		h[i] = h[m]
		h[i].hidx = int32(i)
		i = m
	}
	h[i] = x
	x.hidx = int32(i)
}

// shiftDue moves every finish in the due set d later (Advance). The
// heap's order is kept; the table of recent groups is emptied.
func (n *Network) shiftDue(d Duration) {
	for _, g := range n.dueHeap {
		g.at = g.at.Add(d)
	}
	n.dueRecent = [dueRecentSize]*dueGroup{}
}
