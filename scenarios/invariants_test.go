package scenarios

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/internal/crash"
	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
)

// What every run of every algorithm on every machine must keep, whatever
// its timing: checked on real schedules by an observer of the network.

// invariantSizes are the message sizes of the invariant and metamorphic
// tests: one 16-byte pack per rank of 8 and more, the verify pass's
// 43008 B, and sizes where the NCCL programs slice and pipeline.
var invariantSizes = []int64{256, 43008, 1 << 20, 8 << 20}

// flowLedger is an Observer that keeps, per flow, the payload bytes its
// rates moved, and per resource the wire bytes it carried, and checks
// capacities as it goes.
type flowLedger struct {
	net    *sim.Network
	active map[sim.FlowID]*flowEntry
	// started and finished count flows; asked sums the payload bytes
	// flows were started with, moved what their rates moved.
	started, finished int
	asked             int64
	moved             float64
	// wireAsked is, per resource, the wire bytes the flows crossing it
	// ask of it (payload × hop weight); wireBusy what its busy intervals
	// carried.
	wireAsked, wireBusy map[sim.ResourceID]float64
	// slack is, per resource, the most its busy intervals may differ from
	// what was asked: finish times are whole picoseconds, rounded up, so
	// each interval may run up to 1 ps long at its load.
	slack    map[sim.ResourceID]float64
	problems []string
}

type flowEntry struct {
	label   string
	bytes   float64
	rate    float64 // payload bytes/s
	since   sim.Time
	moved   float64
	changes int
	maxRate float64
	route   []sim.Hop
}

func newFlowLedger(net *sim.Network) *flowLedger {
	return &flowLedger{net: net, active: map[sim.FlowID]*flowEntry{},
		wireAsked: map[sim.ResourceID]float64{}, wireBusy: map[sim.ResourceID]float64{}, slack: map[sim.ResourceID]float64{}}
}

func (l *flowLedger) problem(format string, a ...any) {
	if len(l.problems) < 10 {
		l.problems = append(l.problems, fmt.Sprintf(format, a...))
	}
}

func (l *flowLedger) FlowStarted(t sim.Time, f *sim.Flow) {
	if _, dup := l.active[f.ID]; dup {
		l.problem("flow #%d %q started twice", f.ID, f.Spec.Label)
	}
	l.started++
	l.asked += int64(f.Spec.Bytes)
	l.active[f.ID] = &flowEntry{label: f.Spec.Label, bytes: float64(f.Spec.Bytes), rate: float64(f.Rate()), since: t,
		maxRate: float64(f.Rate()), route: append([]sim.Hop(nil), f.Spec.Route...)}
}

func (l *flowLedger) advance(e *flowEntry, t sim.Time) {
	e.moved += e.rate * t.Sub(e.since).Seconds()
	e.since = t
}

func (l *flowLedger) FlowRateChanged(t sim.Time, f *sim.Flow) {
	e, ok := l.active[f.ID]
	if !ok {
		l.problem("flow #%d %q changed rate but never started", f.ID, f.Spec.Label)
		return
	}
	l.advance(e, t)
	e.rate = float64(f.Rate())
	e.maxRate = max(e.maxRate, e.rate)
	e.changes++
}

func (l *flowLedger) FlowFinished(t sim.Time, f *sim.Flow) {
	e, ok := l.active[f.ID]
	if !ok {
		l.problem("flow #%d %q finished but never started", f.ID, f.Spec.Label)
		return
	}
	l.advance(e, t)
	delete(l.active, f.ID)
	l.finished++
	l.moved += e.moved
	// The last byte leaves at a whole picosecond, rounded up from the
	// exact instant: a flow moves its bytes and at most 1 ps of its rate
	// more per rate it had.
	tol := 1e-9*e.bytes + float64(e.changes+1)*e.maxRate*1e-12 + 1e-6
	if e.moved < e.bytes*(1-1e-9)-1e-6 || e.moved > e.bytes+tol {
		l.problem("flow %q moved %.6f B of %.0f B", e.label, e.moved, e.bytes)
	}
	for _, h := range e.route {
		w := h.Weight
		if w == 0 {
			w = 1
		}
		l.wireAsked[h.Res] += e.bytes * w
		l.slack[h.Res] += float64(e.changes+1) * e.maxRate * w * 1e-12
	}
}

func (l *flowLedger) ResourceBusy(r *sim.Resource, from, to sim.Time, load sim.Rate) {
	if float64(load) > float64(r.Capacity)*(1+1e-9) {
		l.problem("%s carried %v B/s, above its capacity %v B/s, during [%v, %v)", r.Name, float64(load), float64(r.Capacity), from, to)
	}
	if load < 0 || to < from {
		l.problem("%s: busy interval [%v, %v) at %v B/s", r.Name, from, to, float64(load))
	}
	l.wireBusy[r.ID] += float64(load) * to.Sub(from).Seconds()
}

// check adds what the whole run must satisfy: every flow that started
// finished, the network agrees, every resource carried the wire bytes its
// flows asked of it, and the flows are the schedule's data operations.
func (l *flowLedger) check(s *algos.Schedule, iters int) []string {
	for _, e := range l.active {
		l.problem("flow %q started and never finished (%.0f of %.0f B moved)", e.label, e.moved, e.bytes)
	}
	started, finished := l.net.Counts()
	if int(started) != l.started || int(finished) != l.finished || started != finished {
		l.problem("network counts %d flows started and %d finished; the observer saw %d and %d", started, finished, l.started, l.finished)
	}
	if d := math.Abs(l.moved - float64(l.asked)); d > 1e-9*float64(l.asked)+float64(l.started) {
		l.problem("flows moved %.3f B in all, asked %d B", l.moved, l.asked)
	}
	for id, want := range l.wireAsked {
		got := l.wireBusy[id]
		if math.Abs(got-want) > 1e-9*want+l.slack[id]+1e-6 {
			l.problem("%s carried %.3f wire bytes, its flows asked %.3f", l.net.Resource(id).Name, got, want)
		}
	}
	for id, got := range l.wireBusy {
		if _, ok := l.wireAsked[id]; !ok && got > 1e-6 {
			l.problem("%s carried %.3f wire bytes of no flow", l.net.Resource(id).Name, got)
		}
	}
	flows, bytes := dataOps(s)
	if l.started != flows*iters || l.asked != bytes*int64(iters) {
		l.problem("%d flows of %d B in all; the schedule's data operations ask %d × %d of %d B", l.started, l.asked, flows, iters, bytes*int64(iters))
	}
	return l.problems
}

// dataOps counts the operations of s that move data between memories
// (reads, writes and copies whose source or destination is not the rank's
// own GPU), and the local passes of a block's loop group (hw.LocalPass),
// and their bytes: each is one flow per allreduce.
func dataOps(s *algos.Schedule) (n int, bytes int64) {
	for r, prog := range s.Programs {
		for _, op := range prog {
			switch op.Kind {
			case algos.Read, algos.Write, algos.Copy, algos.Reduce:
			default:
				continue
			}
			own := func(m hw.Mem) bool { return !m.Host && m.Rank == r }
			local := own(op.Src.Buf.At) && own(op.Dst.Buf.At)
			if op.Src.Len == 0 || op.Kind == algos.Copy && local || local && op.Kernel.LoopGroup == "" || !local && op.Kind == algos.Reduce {
				continue
			}
			n++
			bytes += op.Src.Len
		}
	}
	return n, bytes
}

// runCase is one algorithm at one size on one machine.
type runCase struct {
	preset, algo string
	bytes        int64
}

func (c runCase) String() string { return fmt.Sprintf("%s on %s, %d B", c.algo, c.preset, c.bytes) }

// everyCase plans every algorithm at every size on every preset of two
// GPUs or more and returns those that plan, with their schedules; the
// others are refused for what the machine or the size is (counted, and
// at least some must run on every preset).
func everyCase(t *testing.T) ([]runCase, map[runCase]*algos.Schedule, map[string]*topology.Topology) {
	t.Helper()
	var cases []runCase
	plans := map[runCase]*algos.Schedule{}
	tops := map[string]*topology.Topology{}
	for _, name := range topology.Presets() {
		top, err := topology.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		if top.NumGPUs() < 2 {
			continue
		}
		tops[name] = top
		planned := 0
		for _, algo := range algos.Names() {
			for _, b := range invariantSizes {
				c := runCase{name, algo, b}
				s, err := algos.Plan(algo, algos.Request{Top: top, Ranks: top.NumGPUs(), Bytes: b, DType: algos.BF16, Launch: hw.Graph})
				if err != nil {
					continue
				}
				cases = append(cases, c)
				plans[c] = s
				planned++
			}
		}
		if planned < len(algos.Names()) {
			t.Errorf("%s: only %d algorithm × size pairs plan", name, planned)
		}
	}
	return cases, plans, tops
}

// Every algorithm, at every size, on every preset: no resource above its
// capacity, every flow that starts finishes having moved exactly its
// bytes, every resource carries exactly the wire bytes its flows ask of
// it, and the flows are exactly the schedule's data operations, each once
// per allreduce. Two allreduces back to back, so that the second runs on
// what the first left.
func TestRealSchedulesKeepTheNetworkInvariants(t *testing.T) {
	cases, plans, tops := everyCase(t)
	const iters = 2
	ran := 0
	for _, c := range cases {
		m, err := hw.New(tops[c.preset])
		if err != nil {
			t.Fatal(err)
		}
		led := newFlowLedger(m.Net)
		m.Net.SetObserver(led)
		if _, err := algos.Run(m, plans[c], algos.RunOptions{Iterations: iters, Launch: hw.Graph}); err != nil {
			if strings.Contains(err.Error(), "P2P over a") {
				continue // the platform refuses a path the plan takes: cannot run here
			}
			t.Errorf("%v: %v", c, err)
			continue
		}
		ran++
		if p := led.check(plans[c], iters); len(p) > 0 {
			t.Errorf("%v:\n  %s", c, strings.Join(p, "\n  "))
		}
	}
	t.Logf("%d runs of %d planned (algorithm × size × preset)", ran, len(cases))
}

// Every parameter at either end of its range, the others at their
// defaults, still gives a machine that simulates, or a clear refusal: the
// platform forbids a path the algorithm takes, or the machine cannot be
// built (no NVLinks on an NVSwitch machine). No panic, no overflow of the
// clock, no rate the engine cannot use (the ranges are the physical ones,
// all finite).
func TestEveryParameterAtItsBoundsSimulates(t *testing.T) {
	for _, preset := range []string{"rtxpro6000x8-2numa", "h200x8-nvswitch"} {
		pr, err := topology.Lookup(preset)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pr.DefaultParams().All() {
			for _, v := range []float64{p.Min, p.Max} {
				ps := pr.DefaultParams()
				if err := ps.Set(p.Name, v, ""); err != nil {
					t.Fatal(err)
				}
				top, err := pr.BuildWith(ps)
				if err != nil {
					if !strings.Contains(err.Error(), "must be > 0") {
						t.Errorf("%s with %s = %v: %v", preset, p.Name, v, err)
					}
					continue
				}
				for _, a := range []string{"one_stage", "nccl", "host_two_shot"} {
					func() (err error) {
						defer crash.Recover(&err)
						defer func() {
							if err != nil && !strings.Contains(err.Error(), "P2P over a") && !strings.Contains(err.Error(), "does not allow P2P") {
								t.Errorf("%s with %s = %v, %s: %v", preset, p.Name, v, a, err)
							}
						}()
						_, err = Point(top, top.NumGPUs(), a, 1<<20, algos.BF16, hw.Graph, nil, 1)
						return err
					}()
				}
			}
		}
	}
}
