package algos

import "sort"

// ScheduleStats summarises a schedule's shape for explanations.
type ScheduleStats struct {
	// ChainWaits is the largest number of flag waits one after another on
	// any chain of dependencies, within a rank (After) and across ranks
	// (a wait depends on the signal that satisfies it): the rounds of
	// synchronisation an allreduce pays at least.
	ChainWaits int
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
	// stores to memory that is not its own (each costs about a round trip
	// to that memory).
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
	st.ChainWaits = chainWaits(s)
	return st
}

// chainWaits is the longest chain of waits in one allreduce, following
// program dependencies and, for each wait, the signal with the smallest
// value that satisfies it. Ops that sit on a cycle (a broken schedule) are
// left out.
func chainWaits(s *Schedule) int {
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
	depth := map[id]int{}
	state := map[id]uint8{} // 1 visiting, 2 done
	best := 0
	var visit func(n id) int
	visit = func(n id) int {
		switch state[n] {
		case 2:
			return depth[n]
		case 1:
			return 0 // cycle: ignore
		}
		state[n] = 1
		d := 0
		for _, p := range preds(n.r, n.i) {
			d = max(d, visit(p))
		}
		if s.Programs[n.r][n.i].Kind == Wait {
			d++
		}
		state[n], depth[n] = 2, d
		return d
	}
	for r, prog := range s.Programs {
		for i := range prog {
			best = max(best, visit(id{r, i}))
		}
	}
	return best
}
