package algos

import (
	"fmt"
	"sort"
	"strings"
)

// windowStall reports a rank whose window is full while the first op
// beyond it has all its deps done: the run stalled because the window was
// too small, not because the schedule deadlocks.
func (x *executor) windowStall() error {
	for r := range x.ranks {
		p := &x.ranks[r]
		if p.next >= p.n || p.next-p.base < p.cap || x.finishedRank(r) {
			continue
		}
		op, _, err := x.src.load(r, p.next)
		if err != nil {
			return err
		}
		ready := true
		for _, d := range op.After {
			if d >= p.base {
				dp := (p.basePos + d - p.base) % p.cap
				ready = ready && x.slot(r, int32(dp)).done()
			}
		}
		if ready {
			return fmt.Errorf("algos: run %s: rank %d op %d (%s) is ready but outside the window of %d ops, which unfinished earlier ops (from op %d) fill: the run stalled; the stream needs a larger window",
				x.algo, r, p.next, op.Label, p.cap, p.base)
		}
	}
	return nil
}

func (x *executor) finishedRank(r int) bool {
	p := &x.ranks[r]
	return p.iter == x.opt.Iterations-1 && p.left == 0
}

// deadlock describes what is still blocked after the engine ran dry.
func (x *executor) deadlock() error {
	var blocked []string
	keys := x.src.flags()
	ids := make([]int, len(keys))
	for i := range ids {
		ids[i] = i
	}
	sort.Slice(ids, func(i, j int) bool { return keys[ids[i]].String() < keys[ids[j]].String() })
	for _, id := range ids {
		blocked = append(blocked, x.flagVars[id].Blocked()...)
	}
	var idle []string
	for r := range x.ranks {
		p := &x.ranks[r]
		for i := p.base; i < p.next && len(idle) < 5; i++ {
			if s := x.slot(r, int32(i%p.cap)); !s.started() {
				idle = append(idle, fmt.Sprintf("rank %d op %d", r, i))
			}
		}
		if p.next < p.n && !x.finishedRank(r) && len(idle) < 5 {
			idle = append(idle, fmt.Sprintf("rank %d ops %d–%d (not yet loaded)", r, p.next, p.n-1))
		}
	}
	if len(blocked) > 8 {
		blocked = append(blocked[:8], fmt.Sprintf("… %d more", len(blocked)-8))
	}
	return fmt.Errorf("algos: run %s: deadlock: the engine ran out of events with %d of %d ranks unfinished; blocked waits: %s; not started: %s",
		x.algo, x.nranks-x.finished, x.nranks, strings.Join(blocked, "; "), strings.Join(idle, ", "))
}
