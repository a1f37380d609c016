package scenarios

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
)

// Slice is one interval on a timeline track (viz writes them as a
// Perfetto trace or draws them).
type Slice struct {
	Group string // a process in the viewer: "rank 0", "links"
	Track string // a thread inside it: "ops", "gpu0→hb0"
	Name  string
	Start float64 // µs
	Dur   float64 // µs, ≥ 0
	Args  map[string]any
	// FlowOut are the flows this slice starts (a signal: one per wait it
	// satisfies), FlowIn those it ends (a wait: the signal that released
	// it); ids are unique in one timeline.
	FlowOut, FlowIn []int
}

// linkLog collects each resource's busy intervals.
type linkLog struct{ slices []Slice }

func (l *linkLog) FlowStarted(sim.Time, *sim.Flow)     {}
func (l *linkLog) FlowRateChanged(sim.Time, *sim.Flow) {}
func (l *linkLog) FlowFinished(sim.Time, *sim.Flow)    {}
func (l *linkLog) ResourceBusy(r *sim.Resource, from, to sim.Time, load sim.Rate) {
	dur := to.Sub(from)
	group, track := "links", r.Name
	switch {
	case strings.HasPrefix(r.Name, "loop:"):
		// hw's shared loop-rate resources: "loop:RANK:GROUP@RATE".
		group, track = "per-block loops", r.Name[len("loop:"):]
		if i := strings.LastIndex(track, "@"); i > 0 {
			track = track[:i]
		}
		if rank, rest, ok := strings.Cut(track, ":"); ok {
			track = "rank " + rank + " " + rest
		}
	case strings.HasPrefix(r.Name, "cap:"):
		group, track = "protocol ceilings", r.Name[len("cap:"):]
	}
	l.slices = append(l.slices, Slice{
		Group: group, Track: track, Name: fmt.Sprintf("%.1f GB/s", load.GB()),
		Start: sim.Duration(from).Micros(), Dur: dur.Micros(),
		Args: map[string]any{"wire_bytes": int64(float64(load) * dur.Seconds()), "gbps": load.GB(), "utilisation": float64(load) / float64(r.Capacity)},
	})
}

// Timeline runs iters allreduces of bytes with algo and returns the
// timeline: one track per rank (its operations) and one per link direction
// (busy intervals with bytes and GB/s), plus the result.
func Timeline(top *topology.Topology, ranks int, algo string, bytes int64, launch hw.LaunchMode, opts map[string]string, iters int) ([]Slice, *algos.Result, error) {
	return timeline(top, ranks, algo, bytes, launch, opts, iters, false)
}

// TimelineByBlock is Timeline with each rank's operations on one track per
// thread block: an NCCL channel is one block, and the tree's blocks split
// their threads between the reduce going up and the broadcast going down
// (a track each); a custom kernel's blocks run alike, so one track stands
// for them all. Every operation whose rate a per-block loop bounds says so
// in its arguments (the loop, blocks × threads, the most it moves).
func TimelineByBlock(top *topology.Topology, ranks int, algo string, bytes int64, launch hw.LaunchMode, opts map[string]string, iters int) ([]Slice, *algos.Result, error) {
	return timeline(top, ranks, algo, bytes, launch, opts, iters, true)
}

func timeline(top *topology.Topology, ranks int, algo string, bytes int64, launch hw.LaunchMode, opts map[string]string, iters int, byBlock bool) ([]Slice, *algos.Result, error) {
	if ranks == 0 {
		ranks = top.NumGPUs()
	}
	s, err := algos.Plan(algo, algos.Request{Top: top, Ranks: ranks, Bytes: bytes, DType: algos.BF16, Launch: launch, Opts: optsFor(algo, opts)})
	if err != nil {
		return nil, nil, err
	}
	m, err := hw.New(top)
	if err != nil {
		return nil, nil, err
	}
	log := &linkLog{}
	m.Net.SetObserver(log)
	res, err := algos.Run(m, s, algos.RunOptions{Iterations: iters, Launch: launch, Spans: true})
	if err != nil {
		return nil, nil, err
	}
	var out []Slice
	for _, sp := range res.Spans {
		op := s.Programs[sp.Rank][sp.Op]
		name := op.Kind.String()
		if op.Label != "" {
			name += ": " + op.Label
		}
		sl := Slice{
			Group: fmt.Sprintf("rank %d", sp.Rank), Track: "ops", Name: name,
			Start: sim.Duration(sp.Start).Micros(), Dur: sp.End.Sub(sp.Start).Micros(),
			Args: map[string]any{"op": sp.Op, "allreduce": sp.Iter + 1, "detail": op.String()},
		}
		if byBlock {
			sl.Track = blockTrack(op)
			if err := loopArgs(m, sp.Rank, op, sl.Args); err != nil {
				return nil, nil, err
			}
		}
		out = append(out, sl)
	}
	linkFlows(s, res.Spans, out)
	return append(out, log.slices...), res, nil
}

var channelRE = regexp.MustCompile(`(?:^|[ .])ch(\d+)(?:$|[ .])`)

// blockTrack names the thread block an operation runs in: an NCCL channel
// (the channel named in its label), the tree's up or down thread group of
// it, every block for a launch or a kernel-wide step, or a custom
// kernel's blocks, which run alike.
func blockTrack(op algos.Op) string {
	if m := channelRE.FindStringSubmatch(op.Label); m != nil {
		switch {
		case strings.HasPrefix(op.Label, "up "):
			return "block " + m[1] + ": reduce up"
		case strings.HasPrefix(op.Label, "down "):
			return "block " + m[1] + ": broadcast down"
		}
		return "block " + m[1] + " (channel " + m[1] + ")"
	}
	if k := op.Kernel; k.Blocks > 1 {
		return fmt.Sprintf("blocks 0–%d (alike)", k.Blocks-1)
	}
	if k := op.Kernel; k.Blocks == 1 {
		return "block 0"
	}
	return "all blocks"
}

// loopArgs adds what bounds an operation per block: its kernel's blocks ×
// threads and, when a loop bounds it, the loop and the most it moves.
func loopArgs(m *hw.Machine, r int, op algos.Op, args map[string]any) error {
	k := op.Kernel
	if k.Blocks == 0 {
		return nil
	}
	args["blocks × threads"] = fmt.Sprintf("%d × %d", k.Blocks, k.Threads)
	if k.Loop == hw.LoopNone || (op.Kind != algos.Read && op.Kind != algos.Write && op.Kind != algos.Reduce) {
		return nil
	}
	rate, err := m.LoopRate(r, k)
	if err != nil {
		return err
	}
	args["loop"] = k.Loop.String() + " on " + k.LoopAt.String()
	args["loop limit GB/s"] = float64(rate) / 1e9
	return nil
}

// linkFlows joins each wait to the signal that released it: the Signal
// of the same flag and value in the same allreduce (every (flag, value)
// is set by one op per allreduce). slices[i] is the slice of spans[i].
func linkFlows(s *algos.Schedule, spans []algos.Span, slices []Slice) {
	type key struct {
		flag  algos.Flag
		value int64
		iter  int
	}
	signal := map[key]int{}
	for i, sp := range spans {
		if op := &s.Programs[sp.Rank][sp.Op]; op.Kind == algos.Signal {
			signal[key{op.Flag, op.Value, sp.Iter}] = i
		}
	}
	id := 0
	for i, sp := range spans {
		op := &s.Programs[sp.Rank][sp.Op]
		if op.Kind != algos.Wait {
			continue
		}
		j, ok := signal[key{op.Flag, op.Value, sp.Iter}]
		if !ok {
			continue
		}
		id++
		slices[j].FlowOut = append(slices[j].FlowOut, id)
		slices[i].FlowIn = append(slices[i].FlowIn, id)
	}
}
