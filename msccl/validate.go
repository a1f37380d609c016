package msccl

import "fmt"

// validate checks the schedule's structure: ids, peers, channels, chunk
// ranges, dependencies and that every send meets a receive. It puts the
// GPUs, and each GPU's thread blocks, in the order of their ids.
func (a *Algo) validate() error {
	if err := a.checkSizes(); err != nil {
		return err
	}
	if err := a.sortGPUs(); err != nil {
		return err
	}
	for gi := range a.GPUs {
		g := &a.GPUs[gi]
		if err := a.sortTBs(g); err != nil {
			return err
		}
		for ti := range g.TBs {
			for si := range g.TBs[ti].Steps {
				if err := a.checkStep(g, &g.TBs[ti], si); err != nil {
					return err
				}
			}
		}
	}
	for gi := range a.GPUs {
		if err := a.matchConnections(&a.GPUs[gi]); err != nil {
			return err
		}
	}
	return nil
}

// errAt is a refusal of the file at line.
func (a *Algo) errAt(line int, format string, args ...any) error {
	return &Error{File: a.File, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// checkSizes checks <algo>'s counts against the limits and the file.
func (a *Algo) checkSizes() error {
	if a.NGPUs < 1 || a.NGPUs > maxGPUs {
		return a.errAt(a.Line, "<algo ngpus=%d>: want 1–%d", a.NGPUs, maxGPUs)
	}
	if a.NChunks < 1 || a.NChunks > maxChunks {
		return a.errAt(a.Line, "<algo nchunksperloop=%d>: want 1–%d", a.NChunks, maxChunks)
	}
	if a.NChannels < 1 || a.NChannels > maxChans {
		return a.errAt(a.Line, "<algo nchannels=%d>: want 1–%d", a.NChannels, maxChans)
	}
	if len(a.GPUs) != a.NGPUs {
		return a.errAt(a.Line, "<algo ngpus=%d> but the file has %d <gpu> elements", a.NGPUs, len(a.GPUs))
	}
	return nil
}

// sortGPUs checks that the GPU ids are 0 to NGPUs−1, each once, and puts
// the GPUs in that order.
func (a *Algo) sortGPUs() error {
	byID := make([]*GPU, a.NGPUs)
	for i := range a.GPUs {
		g := &a.GPUs[i]
		if g.ID < 0 || g.ID >= a.NGPUs {
			return a.errAt(g.Line, "<gpu id=%d>: want 0–%d", g.ID, a.NGPUs-1)
		}
		if byID[g.ID] != nil {
			return a.errAt(g.Line, "<gpu id=%d> appears twice (first on line %d)", g.ID, byID[g.ID].Line)
		}
		byID[g.ID] = g
		if g.SChunks > maxChunks {
			return a.errAt(g.Line, "<gpu s_chunks=%d>: more than %d", g.SChunks, maxChunks)
		}
	}
	gpus := make([]GPU, a.NGPUs)
	for id, g := range byID {
		gpus[id] = *g
	}
	a.GPUs = gpus
	return nil
}

// sortTBs checks GPU g's thread blocks (ids 0 to len−1, each once; peers;
// channels; one sender and one receiver per connection) and puts them in
// the order of their ids.
func (a *Algo) sortTBs(g *GPU) error {
	tbByID := make([]*TB, len(g.TBs))
	sendOn, recvOn := map[[2]int]int{}, map[[2]int]int{}
	for i := range g.TBs {
		tb := &g.TBs[i]
		if tb.ID < 0 || tb.ID >= len(g.TBs) {
			return a.errAt(tb.Line, "<tb id=%d>: GPU %d has %d thread blocks, ids 0–%d", tb.ID, g.ID, len(g.TBs), len(g.TBs)-1)
		}
		if tbByID[tb.ID] != nil {
			return a.errAt(tb.Line, "<tb id=%d> appears twice in GPU %d (first on line %d)", tb.ID, g.ID, tbByID[tb.ID].Line)
		}
		tbByID[tb.ID] = tb
		if err := a.checkPeers(g, tb); err != nil {
			return err
		}
		if tb.Send >= 0 {
			k := [2]int{tb.Send, tb.Chan}
			if l, dup := sendOn[k]; dup {
				return a.errAt(tb.Line, "GPU %d: two thread blocks send to GPU %d on channel %d (the other on line %d); a connection has one sender", g.ID, tb.Send, tb.Chan, l)
			}
			sendOn[k] = tb.Line
		}
		if tb.Recv >= 0 {
			k := [2]int{tb.Recv, tb.Chan}
			if l, dup := recvOn[k]; dup {
				return a.errAt(tb.Line, "GPU %d: two thread blocks receive from GPU %d on channel %d (the other on line %d); a connection has one receiver", g.ID, tb.Recv, tb.Chan, l)
			}
			recvOn[k] = tb.Line
		}
	}
	ts := make([]TB, len(g.TBs))
	for id, tb := range tbByID {
		ts[id] = *tb
	}
	g.TBs = ts
	return nil
}

// checkPeers checks that thread block tb of GPU g sends to and receives
// from another GPU (or none) over one of the algo's channels.
func (a *Algo) checkPeers(g *GPU, tb *TB) error {
	for _, x := range []struct {
		what string
		peer int
	}{{"send", tb.Send}, {"recv", tb.Recv}} {
		if x.peer < -1 || x.peer >= a.NGPUs || x.peer == g.ID {
			return a.errAt(tb.Line, "<tb %s=%d> on GPU %d: want another GPU's id (0–%d) or −1", x.what, x.peer, g.ID, a.NGPUs-1)
		}
	}
	if tb.Chan < 0 || tb.Chan >= a.NChannels {
		return a.errAt(tb.Line, "<tb chan=%d>: the algo has %d channels", tb.Chan, a.NChannels)
	}
	return nil
}

// chunks is the size in chunks of buffer b of GPU g: the input and output
// are the message (nchunksperloop chunks), the scratch s_chunks.
func (a *Algo) chunks(g *GPU, b byte) int {
	if b == 's' {
		return g.SChunks
	}
	return a.NChunks
}

// checkStep checks step si of thread block tb of GPU g: its number, its
// count, that the block has the peers it sends to or receives from, its
// chunk ranges and its dependency.
func (a *Algo) checkStep(g *GPU, tb *TB, si int) error {
	s := &tb.Steps[si]
	kind := stepTypes[s.Type]
	if s.S != si {
		return a.errAt(s.Line, "<step s=%d> is step %d of thread block %d on GPU %d; steps are numbered from 0 in order", s.S, si, tb.ID, g.ID)
	}
	if s.Type != "nop" && s.Cnt < 1 {
		return a.errAt(s.Line, "<step cnt=%d>: want at least one chunk", s.Cnt)
	}
	if kind.send && tb.Send < 0 {
		return a.errAt(s.Line, "<step type=%q> sends, but thread block %d on GPU %d has no send peer", s.Type, tb.ID, g.ID)
	}
	if kind.recv && tb.Recv < 0 {
		return a.errAt(s.Line, "<step type=%q> receives, but thread block %d on GPU %d has no recv peer", s.Type, tb.ID, g.ID)
	}
	if kind.readSrc {
		if c := a.chunks(g, s.SrcBuf); s.SrcOff < 0 || s.SrcOff+s.Cnt > c {
			return a.errAt(s.Line, "<step srcbuf=%q srcoff=%d cnt=%d>: outside the %d chunks of that buffer on GPU %d", string(s.SrcBuf), s.SrcOff, s.Cnt, c, g.ID)
		}
	}
	if kind.writeDst {
		if c := a.chunks(g, s.DstBuf); s.DstOff < 0 || s.DstOff+s.Cnt > c {
			return a.errAt(s.Line, "<step dstbuf=%q dstoff=%d cnt=%d>: outside the %d chunks of that buffer on GPU %d", string(s.DstBuf), s.DstOff, s.Cnt, c, g.ID)
		}
	}
	return a.checkDep(g, tb, si)
}

// checkDep checks the dependency of step si of thread block tb of GPU g:
// depid and deps both set or both −1, naming an existing step that
// publishes its completion (hasdep=1) and, in the same thread block, one
// that runs before it.
func (a *Algo) checkDep(g *GPU, tb *TB, si int) error {
	s := &tb.Steps[si]
	if (s.DepID < 0) != (s.Deps < 0) {
		return a.errAt(s.Line, "<step depid=%d deps=%d>: both −1 or both set", s.DepID, s.Deps)
	}
	if s.DepID < 0 {
		return nil
	}
	if s.DepID >= len(g.TBs) {
		return a.errAt(s.Line, "<step depid=%d>: GPU %d has thread blocks 0–%d", s.DepID, g.ID, len(g.TBs)-1)
	}
	dt := &g.TBs[s.DepID]
	if s.Deps >= len(dt.Steps) {
		return a.errAt(s.Line, "<step deps=%d>: thread block %d on GPU %d has %d steps", s.Deps, s.DepID, g.ID, len(dt.Steps))
	}
	if s.DepID == tb.ID && s.Deps >= si {
		return a.errAt(s.Line, "step %d of thread block %d waits for its own step %d, which runs after it (deadlock)", si, tb.ID, s.Deps)
	}
	if d := dt.Steps[s.Deps]; s.DepID != tb.ID && !d.HasDep {
		return a.errAt(s.Line, "step %d of thread block %d on GPU %d waits for step %d of thread block %d (line %d), which has hasdep=0: the interpreter only publishes the completion of steps marked hasdep=1, so the wait never ends",
			si, tb.ID, g.ID, s.Deps, s.DepID, d.Line)
	}
	return nil
}

// matchConnections checks GPU g's connections: every send of each of its
// thread blocks meets a receive of the same size on the peer, in order,
// and every thread block that receives has a sender.
func (a *Algo) matchConnections(g *GPU) error {
	for ti := range g.TBs {
		if tb := &g.TBs[ti]; tb.Send >= 0 {
			if err := a.matchSends(g, tb); err != nil {
				return err
			}
		}
	}
	for ti := range g.TBs {
		tb := &g.TBs[ti]
		if tb.Recv < 0 {
			continue
		}
		recvs := tb.messages(false)
		found := false
		for _, x := range a.GPUs[tb.Recv].TBs {
			found = found || (x.Send == g.ID && x.Chan == tb.Chan)
		}
		if !found && len(recvs) > 0 {
			return a.errAt(recvs[0].Line, "GPU %d receives from GPU %d on channel %d, but no thread block of GPU %d sends to GPU %d on channel %d", g.ID, tb.Recv, tb.Chan, tb.Recv, g.ID, tb.Chan)
		}
	}
	return nil
}

// matchSends checks that the k-th send of thread block tb of GPU g meets
// the k-th receive of the peer's thread block on that connection, with the
// same count, and that neither side has more.
func (a *Algo) matchSends(g *GPU, tb *TB) error {
	sends := tb.messages(true)
	p := &a.GPUs[tb.Send]
	var rtb *TB
	for j := range p.TBs {
		if p.TBs[j].Recv == g.ID && p.TBs[j].Chan == tb.Chan {
			rtb = &p.TBs[j]
		}
	}
	if rtb == nil {
		if len(sends) > 0 {
			return a.errAt(sends[0].Line, "GPU %d sends to GPU %d on channel %d, but no thread block of GPU %d receives from GPU %d on channel %d", g.ID, tb.Send, tb.Chan, tb.Send, g.ID, tb.Chan)
		}
		return nil
	}
	recvs := rtb.messages(false)
	for k := 0; k < max(len(sends), len(recvs)); k++ {
		switch {
		case k >= len(recvs):
			return a.errAt(sends[k].Line, "send %d of GPU %d to GPU %d on channel %d has no matching receive: GPU %d's thread block (line %d) receives %d times", k+1, g.ID, tb.Send, tb.Chan, tb.Send, rtb.Line, len(recvs))
		case k >= len(sends):
			return a.errAt(recvs[k].Line, "receive %d of GPU %d from GPU %d on channel %d has no matching send: GPU %d's thread block (line %d) sends %d times", k+1, tb.Send, g.ID, tb.Chan, g.ID, tb.Line, len(sends))
		case sends[k].Cnt != recvs[k].Cnt:
			return a.errAt(recvs[k].Line, "receive %d of GPU %d from GPU %d on channel %d takes %d chunks, but the matching send (line %d) sends %d", k+1, tb.Send, g.ID, tb.Chan, recvs[k].Cnt, sends[k].Line, sends[k].Cnt)
		}
	}
	return nil
}

// messages returns the steps of tb that send (or receive), in order.
func (tb *TB) messages(send bool) []Step {
	var out []Step
	for _, s := range tb.Steps {
		k := stepTypes[s.Type]
		if (send && k.send) || (!send && k.recv) {
			out = append(out, s)
		}
	}
	return out
}
