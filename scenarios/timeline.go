package scenarios

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

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

// MaxTimelineSlices bounds a timeline before it is run: Timeline holds
// every slice in memory (about 2 KB each once written, measured) until
// the trace is written, and trace viewers open about a million events.
// One op of one allreduce is one slice; the links' busy intervals added
// 19–33 % more for every algorithm measured, so an op counts twice.
const MaxTimelineSlices = 800_000

// MaxPictureSlices bounds a timeline drawn as a picture (viz.DrawTimeline:
// about 130 µs per slice, measured, and no more legible beyond a few
// thousand): the same estimate, two slices per op of each allreduce.
const MaxPictureSlices = 50_000

// TimelineSlices estimates, by planning the schedule, the slices a
// timeline of iters allreduces holds: two per op of each allreduce (the
// op and, at most, the links' busy intervals it causes).
func TimelineSlices(top *topology.Topology, ranks int, algo string, bytes int64, launch hw.LaunchMode, opts map[string]string, iters int) (int64, error) {
	s, err := planTimeline(top, ranks, algo, bytes, launch, opts)
	if err != nil {
		return 0, err
	}
	return 2 * int64(opsOf(s)) * int64(iters), nil
}

func planTimeline(top *topology.Topology, ranks int, algo string, bytes int64, launch hw.LaunchMode, opts map[string]string) (*algos.Schedule, error) {
	if ranks == 0 {
		ranks = top.NumGPUs()
	}
	return algos.Plan(algo, algos.Request{Top: top, Ranks: ranks, Bytes: bytes, DType: algos.BF16, Launch: launch, Opts: optsFor(algo, opts)})
}

func opsOf(s *algos.Schedule) int {
	ops := 0
	for _, p := range s.Programs {
		ops += len(p)
	}
	return ops
}

// linkLog collects each resource's busy intervals, at most max of them
// (over says when more came).
type linkLog struct {
	slices []Slice
	max    int
	over   bool
}

func (l *linkLog) FlowStarted(sim.Time, *sim.Flow)     {}
func (l *linkLog) FlowRateChanged(sim.Time, *sim.Flow) {}
func (l *linkLog) FlowFinished(sim.Time, *sim.Flow)    {}
func (l *linkLog) ResourceBusy(r *sim.Resource, from, to sim.Time, load sim.Rate) {
	if len(l.slices) >= l.max {
		l.over = true
		return
	}
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
// (busy intervals with bytes and GB/s), plus the result. A timeline whose
// ops × iters would pass MaxTimelineSlices / 2 is refused before it runs.
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
	s, err := planTimeline(top, ranks, algo, bytes, launch, opts)
	if err != nil {
		return nil, nil, err
	}
	ops := opsOf(s)
	if want := 2 * int64(ops) * int64(iters); want > MaxTimelineSlices {
		return nil, nil, fmt.Errorf("scenarios: timeline of %s: %d ops × %d allreduces, with the links' intervals about %d slices, is above the limit of %d (each is held in memory until the trace is written); %d allreduces or fewer fit",
			algo, ops, iters, want, MaxTimelineSlices, max(1, MaxTimelineSlices/(2*ops)))
	}
	m, err := hw.New(top)
	if err != nil {
		return nil, nil, err
	}
	log := &linkLog{max: MaxTimelineSlices - ops*iters}
	m.Net.SetObserver(log)
	res, err := algos.Run(m, s, algos.RunOptions{Iterations: iters, Launch: launch, Spans: true})
	if err != nil {
		return nil, nil, err
	}
	if log.over {
		return nil, nil, fmt.Errorf("scenarios: timeline of %s: the links' busy intervals pass the limit of %d slices in all (MaxTimelineSlices); run fewer allreduces", algo, MaxTimelineSlices)
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

var channelRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?:^|[ .])ch(\d+)(?:$|[ .])`) })

// blockTrack names the thread block an operation runs in: an NCCL channel
// (the channel named in its label), the tree's up or down thread group of
// it, every block for a launch or a kernel-wide step, or a custom
// kernel's blocks, which run alike.
func blockTrack(op algos.Op) string {
	if m := channelRE().FindStringSubmatch(op.Label); m != nil {
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
