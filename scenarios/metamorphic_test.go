package scenarios

import (
	"fmt"
	"strings"
	"testing"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/topology"
)

// Metamorphic tests: one workload on two machines that must agree, in a
// way stated exactly, on every algorithm × preset × size of everyCase.

// spansOf plans c on top and runs two allreduces, returning every op's
// span by (rank, op, allreduce), the schedule and the run's events.
func spansOf(c runCase, top *topology.Topology) (map[[3]int]algos.Span, *algos.Schedule, uint64, error) {
	s, err := algos.Plan(c.algo, algos.Request{Top: top, Ranks: top.NumGPUs(), Bytes: c.bytes, DType: algos.BF16, Launch: hw.Graph})
	if err != nil {
		return nil, nil, 0, err
	}
	m, err := hw.New(top)
	if err != nil {
		return nil, nil, 0, err
	}
	res, err := algos.Run(m, s, algos.RunOptions{Iterations: 2, Launch: hw.Graph, Spans: true})
	if err != nil {
		return nil, nil, 0, err
	}
	out := make(map[[3]int]algos.Span, len(res.Spans))
	for _, sp := range res.Spans {
		out[[3]int{sp.Rank, sp.Op, sp.Iter}] = sp
	}
	return out, s, res.Events, nil
}

// sameProgram reports whether two plans are the same program: the same
// operations on the same data and flags, in the same order with the same
// dependencies and launch configurations (the planner made the same
// choices on both machines). Times and rates an op carries from the
// parameters (a rate cap, a compute time) may differ.
func sameProgram(a, b *algos.Schedule) bool { return programShape(a, nil) == programShape(b, nil) }

// programShape writes the program of s, host memories renamed by socket
// (nil: as they are).
func programShape(s *algos.Schedule, socket map[int]int) string {
	host := func(m hw.Mem) hw.Mem {
		if to, ok := socket[m.Socket]; ok && m.Host {
			m.Socket = to
		}
		return m
	}
	var sb strings.Builder
	for r, prog := range s.Programs {
		for i, op := range prog {
			op.Src.Buf.At, op.Dst.Buf.At, op.Flag.At = host(op.Src.Buf.At), host(op.Dst.Buf.At), host(op.Flag.At)
			fmt.Fprintf(&sb, "%d.%d %v %q %v %v %v %d %v %v %d×%d\n", r, i, op.Kind, op.Label, op.Src, op.Dst, op.Flag, op.Value, op.After, op.Accumulate, op.Kernel.Blocks, op.Kernel.Threads)
		}
	}
	return sb.String()
}

// slower returns preset p's machine with every time parameter (ns, µs)
// multiplied and every rate divided by 2: the GB/s parameters and the PCIe
// links, whose rate follows from their generation and width, not from a
// parameter.
func slower(t *testing.T, p *topology.Preset) *topology.Topology {
	t.Helper()
	ps := p.DefaultParams()
	for _, x := range ps.All() {
		v := x.Value
		switch x.Unit {
		case "ns", "µs":
			v *= 2
		case "GB/s":
			v /= 2
		default:
			continue
		}
		if err := ps.Set(x.Name, v, ""); err != nil {
			t.Fatal(err)
		}
	}
	top, err := p.BuildWith(ps)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range top.Links() {
		if l.Type == topology.PCIe {
			l.Bandwidth /= 2
		}
	}
	return top
}

// A machine twice as slow in everything — every latency and cost doubled,
// every rate halved — runs every schedule in exactly twice the time, up to
// rounding: every op of every rank starts and ends at twice its time.
//
// The bound, not exactness: the engine's times are whole picoseconds, and
// a duration it derives from a rate (bytes / rate) is rounded up. Halving
// a rate doubles the exact quotient (a power of two scales a float
// exactly), but ceil(2x) may be 2·ceil(x) − 1, so each derived duration
// may come out 1 ps short of twice its counterpart, and an event inherits
// the differences of the events before it. The test allows 1 ps per event
// of the run; the runs here stay within a few hundred picoseconds over
// tens of thousands of events.
//
// NCCL's choices (algorithm, protocol, channels) come from its own tables
// of absolute link speeds as well as from the parameters; the test checks
// that the plan is the same program on both machines before comparing
// times, and says so when it is not (a different schedule is a different
// workload, not a failure of the property).
func TestTwiceAsSlowMachineTakesTwiceAsLong(t *testing.T) {
	cases, _, tops := everyCase(t)
	slow := map[string]*topology.Topology{}
	for name := range tops {
		p, err := topology.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		slow[name] = slower(t, p)
	}
	var worst int64
	compared := 0
	for _, c := range cases {
		base, s1, events, err1 := spansOf(c, tops[c.preset])
		scaled, s2, _, err2 := spansOf(c, slow[c.preset])
		if err1 != nil || err2 != nil {
			if (err1 == nil) != (err2 == nil) {
				t.Errorf("%v: runs on one machine and not on the other: %v; %v", c, err1, err2)
			}
			continue
		}
		if !sameProgram(s1, s2) {
			t.Logf("%v: the planner chose another program on the slower machine; not compared", c)
			continue
		}
		compared++
		var dev int64
		for k, a := range base {
			b, ok := scaled[k]
			if !ok {
				t.Fatalf("%v: op %v ran on one machine only", c, k)
			}
			for _, d := range []int64{int64(b.Start) - 2*int64(a.Start), int64(b.End) - 2*int64(a.End)} {
				dev = max(dev, d, -d)
			}
		}
		worst = max(worst, dev)
		if dev > int64(events) {
			t.Errorf("%v: an op's time is %d ps away from twice its time; the bound is %d (1 ps per event)", c, dev, events)
		}
	}
	if compared < len(cases)/2 {
		t.Errorf("only %d of %d cases compared", compared, len(cases))
	}
	t.Logf("%d cases compared; largest difference from twice the time: %d ps", compared, worst)
}

// A placement of the ranks that an automorphism of the machine gives
// (here: GPUs reversed within each socket, and the sockets swapped when
// there are two) changes nothing but which GPU each rank runs on: every
// op of every rank starts and ends at exactly the same picosecond. The
// placement is checked to be an automorphism first (routes between every
// two GPUs, and to host memory, map link for link onto routes alike).
//
// With the sockets swapped, a rank stages through the other socket's host
// memory: the plan names host memory by socket, so the programs are
// compared with the sockets renamed back. The times then agree because
// every algorithm here uses the host memory of its own rank's socket; a
// schedule that named one socket's memory for all ranks would (rightly)
// fail the test.
func TestRelabellingRanksOfASymmetricMachinePermutesTheResults(t *testing.T) {
	cases, _, tops := everyCase(t)
	placed := map[string]*topology.Topology{}
	socketMap := map[string]map[int]int{} // a placed rank's socket → the socket it had
	for name, top := range tops {
		perm := mirrorSockets(top)
		socketMap[name] = map[int]int{}
		for r, g := range perm {
			socketMap[name][top.GPU(g).Socket] = top.GPU(r).Socket
		}
		if err := automorphism(top, perm); err != nil {
			t.Logf("%s: %v; not compared", name, err)
			continue
		}
		p, err := top.Placed(perm)
		if err != nil {
			t.Fatal(err)
		}
		placed[name] = p
	}
	compared := 0
	for _, c := range cases {
		p, ok := placed[c.preset]
		if !ok {
			continue
		}
		base, s1, _, err1 := spansOf(c, tops[c.preset])
		moved, s2, _, err2 := spansOf(c, p)
		if err1 != nil || err2 != nil {
			if (err1 == nil) != (err2 == nil) {
				t.Errorf("%v: runs with one placement and not the other: %v; %v", c, err1, err2)
			}
			continue
		}
		if programShape(s1, nil) != programShape(s2, socketMap[c.preset]) {
			t.Errorf("%v: the planner chose another program for the same machine with its GPUs relabelled", c)
			continue
		}
		compared++
		for k, a := range base {
			if b := moved[k]; b.Start != a.Start || b.End != a.End {
				t.Errorf("%v: rank %d op %d of allreduce %d ran [%v, %v], placed elsewhere [%v, %v]", c, k[0], k[1], k[2]+1, a.Start, a.End, b.Start, b.End)
				break
			}
		}
	}
	if len(placed) < len(tops) || compared < len(cases)*3/4 {
		t.Errorf("compared %d of %d cases on %d of %d presets", compared, len(cases), len(placed), len(tops))
	}
}

// mirrorSockets places rank r on the GPU at the mirror position of its
// socket (first ↔ last), on the other socket when there are two.
func mirrorSockets(top *topology.Topology) []int {
	var sockets []int
	bySocket := map[int][]int{}
	for r := 0; r < top.NumGPUs(); r++ {
		s := top.GPU(r).Socket
		if _, ok := bySocket[s]; !ok {
			sockets = append(sockets, s)
		}
		bySocket[s] = append(bySocket[s], r)
	}
	perm := make([]int, top.NumGPUs())
	for i, s := range sockets {
		to := bySocket[s]
		if len(sockets) == 2 && len(bySocket[sockets[1-i]]) == len(to) {
			to = bySocket[sockets[1-i]]
		}
		for j, r := range bySocket[s] {
			perm[r] = to[len(to)-1-j]
		}
	}
	return perm
}

// automorphism checks that placing rank r on GPU perm[r] maps the machine
// onto itself as far as any schedule can see: the route between any two
// GPUs (over any links, and over PCIe only) and from each GPU to its host
// memory maps onto the route between their images step for step — links
// of the same type, rate and latency, devices of the same kind and
// latency — and each direction of a link always onto the same direction of
// the same link (a bijection: each is a resource), so that sharing is
// preserved too.
func automorphism(top *topology.Topology, perm []int) error {
	type dir struct {
		link    int
		forward bool
	}
	to, from := map[dir]dir{}, map[dir]dir{}
	same := func(a, b topology.Route) error {
		if len(a.Steps) != len(b.Steps) || a.Latency != b.Latency {
			return fmt.Errorf("routes of %d and %d steps, %v and %v", len(a.Steps), len(b.Steps), a.Latency, b.Latency)
		}
		for i, x := range a.Steps {
			y := b.Steps[i]
			lx, ly := x.Link, y.Link
			if lx.Type != ly.Type || lx.Bandwidth != ly.Bandwidth || lx.Latency != ly.Latency || lx.Count != ly.Count {
				return fmt.Errorf("step %d: %s and %s differ", i, top.LinkName(lx), top.LinkName(ly))
			}
			nx, ny := top.Node(x.To), top.Node(y.To)
			if nx.Kind != ny.Kind || nx.Latency != ny.Latency {
				return fmt.Errorf("step %d: devices %s and %s differ", i, nx.Name, ny.Name)
			}
			dx, dy := dir{lx.ID, x.Forward()}, dir{ly.ID, y.Forward()}
			if m, ok := to[dx]; ok && m != dy {
				return fmt.Errorf("a direction of %s maps onto two", top.LinkName(lx))
			}
			if m, ok := from[dy]; ok && m != dx {
				return fmt.Errorf("two link directions map onto one of %s", top.LinkName(ly))
			}
			to[dx], from[dy] = dy, dx
		}
		return nil
	}
	g := top.GPUs()
	for a := range g {
		ra, err := top.HostRoute(g[a])
		if err != nil {
			return err
		}
		rb, err := top.HostRoute(g[perm[a]])
		if err != nil {
			return err
		}
		if err := same(ra, rb); err != nil {
			return fmt.Errorf("GPU%d to host memory: %w", a, err)
		}
		for b := range g {
			for _, mode := range []topology.RouteMode{topology.RouteAny, topology.RoutePCIe} {
				ra, err := top.Route(g[a], g[b], mode)
				if err != nil {
					return err
				}
				rb, err := top.Route(g[perm[a]], g[perm[b]], mode)
				if err != nil {
					return err
				}
				if err := same(ra, rb); err != nil {
					return fmt.Errorf("GPU%d→GPU%d: %w", a, b, err)
				}
			}
		}
	}
	return nil
}
