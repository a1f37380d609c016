package sim

import "slices"

// queue holds the pending events in order of (time, scheduling order).
//
// Events are kept in groups of one time, each a FIFO in scheduling order,
// and the groups in a 4-ary heap by (time, creation order). A group takes
// new events only while it is the newest group of its time, so the events
// of one time run in the order they were scheduled even when a time's
// group is spent and a new one is made for it. Simulations of symmetric
// machines schedule thousands of events at a few instants; a group is
// found by its time in a small direct-mapped table (recent), so such
// events cost a table probe and an append instead of a heap insertion
// each. Measured in instructions (callgrind, docs/PERFORMANCE.md): a typed
// binary heap of single events takes 22 % more on a 128-rank ring and
// 4–12 % more on 8-GPU verify passes; container/heap, 83 % more on the
// ring.
type queue struct {
	heap    []groupRef
	pending int
	groups  uint64 // groups made so far: orders the groups of one time
	// recent[h] is the newest group of a recent time hashing to h; only
	// the newest group of a time may take more events.
	recent [recentSize]*group
	free   []*group
}

const recentSize = 256

// group holds the pending events of one time, in scheduling order.
type group struct {
	at     Time
	events []event // events[head:] are pending
	head   int
	live   bool // in the heap
}

// groupRef is a heap entry: a group and its key, kept by value so that
// comparisons need not load the group.
type groupRef struct {
	at  Time
	seq uint64 // creation order of the group
	g   *group
}

func recentSlot(t Time) int { return int(uint64(t) * 0x9E3779B97F4A7C15 >> (64 - 8)) }

// push appends ev to the events of time t.
func (q *queue) push(t Time, ev event) {
	q.pending++
	h := &q.recent[recentSlot(t)]
	g := *h
	if g == nil || g.at != t || !g.live {
		g = q.newGroup(t)
		*h = g
	}
	g.events = append(g.events, ev)
}

func (q *queue) newGroup(t Time) *group {
	var g *group
	if k := len(q.free); k > 0 {
		g = q.free[k-1]
		q.free = q.free[:k-1]
	} else {
		g = new(group)
	}
	g.at, g.live = t, true
	q.groups++
	q.up(groupRef{at: t, seq: q.groups, g: g})
	return g
}

// next returns the time of the next event; the queue must not be empty.
func (q *queue) next() Time { return q.heap[0].at }

// pop removes and returns the next event and its time.
func (q *queue) pop() (Time, event) {
	g := q.heap[0].g
	ev := g.events[g.head]
	g.events[g.head] = event{}
	g.head++
	if g.head == len(g.events) {
		// The group is spent: events scheduled for its time from now on
		// go to a new group, after those of any later-made group.
		q.down()
		g.live = false
		g.events = g.events[:0]
		g.head = 0
		q.free = append(q.free, g)
	}
	q.pending--
	return g.at, ev
}

// each calls fn for every pending event, in the order they will run.
func (q *queue) each(fn func(at Time, ev *event)) {
	refs := slices.Clone(q.heap)
	slices.SortFunc(refs, func(a, b groupRef) int {
		if less(&a, &b) {
			return -1
		}
		return 1
	})
	for _, r := range refs {
		for i := r.g.head; i < len(r.g.events); i++ {
			fn(r.g.at, &r.g.events[i])
		}
	}
}

// shift moves every pending event d later. The heap's order is kept; the
// table of recent groups is emptied (a time with a live group then gets a
// new group, which runs after it, as appending to it would).
func (q *queue) shift(d Duration) {
	for i := range q.heap {
		q.heap[i].at = q.heap[i].at.Add(d)
		q.heap[i].g.at = q.heap[i].at
	}
	q.recent = [recentSize]*group{}
}

func less(a, b *groupRef) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

// The groups' heap is 4-ary: shallower than a binary one, its children
// share cache lines.

func (q *queue) up(x groupRef) {
	q.heap = append(q.heap, x)
	h := q.heap
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !less(&x, &h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = x
}

// down removes the heap's first group.
func (q *queue) down() {
	n := len(q.heap) - 1
	x := q.heap[n]
	q.heap[n] = groupRef{}
	h := q.heap[:n]
	q.heap = h
	if n == 0 {
		return
	}
	i := 0
	for {
		c := 4*i + 1
		var m int
		if c+3 < len(h) {
			// Four children (the common case), compared without a loop.
			m = c
			if less(&h[c+1], &h[m]) {
				m = c + 1
			}
			if less(&h[c+2], &h[m]) {
				m = c + 2
			}
			if less(&h[c+3], &h[m]) {
				m = c + 3
			}
		} else if c < len(h) {
			m = c
			for k := c + 1; k < len(h); k++ {
				if less(&h[k], &h[m]) {
					m = k
				}
			}
		} else {
			break
		}
		if !less(&h[m], &x) {
			break
		}
		h[i] = h[m]
		i = m
	}
	h[i] = x
}
