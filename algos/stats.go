package algos

// ScheduleStats summarises a schedule's shape for explanations.
type ScheduleStats struct {
	// ChainWaits is the largest number of flag waits one after another in
	// any rank's program (following After dependencies).
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
}

// Stats computes s's ScheduleStats.
func Stats(s *Schedule) ScheduleStats {
	st := ScheduleStats{Where: "GPU to GPU"}
	for r, prog := range s.Programs {
		depth := make([]int, len(prog))
		var moved, in, out int64
		for i, op := range prog {
			st.Ops++
			d := 0
			for _, a := range op.After {
				d = max(d, depth[a])
			}
			if op.Kind == Wait {
				d++
			}
			depth[i] = d
			st.ChainWaits = max(st.ChainWaits, d)
			switch op.Kind {
			case Read, Write, Copy:
				for _, x := range []Range{op.Src, op.Dst} {
					if x.Buf.At.Host {
						st.Where = "through host memory"
					}
				}
				if op.Src.Buf.At != op.Dst.Buf.At || op.Src.Buf.At.Host {
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
		}
		st.MaxRankBytes = max(st.MaxRankBytes, moved)
		st.MaxRankIn = max(st.MaxRankIn, in)
		st.MaxRankOut = max(st.MaxRankOut, out)
	}
	return st
}
