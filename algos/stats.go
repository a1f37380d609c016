package algos

import "sort"

// ScheduleStats summarises a schedule's shape for explanations.
type ScheduleStats struct {
	// ChainWaits is the largest number of flag waits one after another on
	// any chain of dependencies, within a rank (After) and across ranks
	// (a wait depends on the signal that satisfies it): the rounds of
	// synchronisation an allreduce pays at least.
	ChainWaits int
	// DataWaits is how many waits of that chain are data-carried (a poll
	// on the data itself, Op.Src): they cost no flag write of their own.
	DataWaits int
	// MaxRankBytes is the most bytes any rank moves to or from memory that
	// is not its own (reads, writes and copies), both directions.
	MaxRankBytes int64
	// MaxRankIn and MaxRankOut are the most bytes any rank brings in from
	// (or sends out to) memory that is not its own.
	MaxRankIn, MaxRankOut int64
	// Where says how the data travels: "GPU to GPU" or "through host memory".
	Where string
	// Ops is the number of operations in all programs.
	Ops int
	// RemoteFences is the most system-scope fences any rank issues after
	// stores to memory that is not its own (each costs up to a round trip
	// to that memory: hw.Machine.FenceCost).
	RemoteFences int
}

// Stats computes s's ScheduleStats.
func Stats(s *Schedule) ScheduleStats {
	st := ScheduleStats{Where: "GPU to GPU"}
	for r, prog := range s.Programs {
		var moved, in, out int64
		fences := 0
		for _, op := range prog {
			st.Ops++
			switch op.Kind {
			case Fence:
				if at := op.Dst.Buf.At; at.Host || at.Rank != r {
					fences++
				}
			case Read, Write, Copy:
				for _, x := range []Range{op.Src, op.Dst} {
					if x.Buf.At.Host {
						st.Where = "through host memory"
					}
				}
				remote := op.Src.Buf.At.Host || op.Src.Buf.At.Rank != r || op.Dst.Buf.At.Host || op.Dst.Buf.At.Rank != r
				if remote {
					moved += op.Src.Len
					if op.Dst.Buf.At.Host || op.Dst.Buf.At.Rank != r {
						out += op.Src.Len
					} else {
						in += op.Src.Len
					}
				}
			}
		}
		st.RemoteFences = max(st.RemoteFences, fences)
		st.MaxRankBytes = max(st.MaxRankBytes, moved)
		st.MaxRankIn = max(st.MaxRankIn, in)
		st.MaxRankOut = max(st.MaxRankOut, out)
	}
	st.ChainWaits, st.DataWaits = chainWaits(s)
	return st
}

// chainWaits is the longest chain of waits in one allreduce, following
// program dependencies and, for each wait, the signal with the smallest
// value that satisfies it, and how many of that chain's waits are
// data-carried. Ops that sit on a cycle (a broken schedule) are left out.
func chainWaits(s *Schedule) (int, int) {
	type id struct{ r, i int }
	type sig struct {
		v  int64
		at id
	}
	signals := map[Flag][]sig{}
	for r, prog := range s.Programs {
		for i, op := range prog {
			if op.Kind == Signal {
				signals[op.Flag] = append(signals[op.Flag], sig{op.Value, id{r, i}})
			}
		}
	}
	for _, ss := range signals {
		sort.Slice(ss, func(a, b int) bool { return ss[a].v < ss[b].v })
	}
	preds := func(r, i int) []id {
		op := s.Programs[r][i]
		var p []id
		for _, a := range op.After {
			p = append(p, id{r, a})
		}
		if op.Kind == Wait {
			for _, x := range signals[op.Flag] {
				if x.v >= op.Value {
					p = append(p, x.at)
					break
				}
			}
		}
		return p
	}
	type chain struct{ waits, data int }
	longer := func(a, b chain) bool { return a.waits > b.waits || a.waits == b.waits && a.data > b.data }
	depth := map[id]chain{}
	state := map[id]uint8{} // 1 visiting, 2 done
	var best chain
	var visit func(n id) chain
	visit = func(n id) chain {
		switch state[n] {
		case 2:
			return depth[n]
		case 1:
			return chain{} // cycle: ignore
		}
		state[n] = 1
		var d chain
		for _, p := range preds(n.r, n.i) {
			if x := visit(p); longer(x, d) {
				d = x
			}
		}
		if op := s.Programs[n.r][n.i]; op.Kind == Wait {
			d.waits++
			if op.Src.Len > 0 {
				d.data++
			}
		}
		state[n], depth[n] = 2, d
		return d
	}
	for r, prog := range s.Programs {
		for i := range prog {
			if x := visit(id{r, i}); longer(x, best) {
				best = x
			}
		}
	}
	return best.waits, best.data
}
