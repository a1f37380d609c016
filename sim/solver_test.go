package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What "identical" means
//
// The network solves weighted max-min fairness by progressive filling per
// connected component (flows that share a resource, transitively), and
// solves again only the components whose flows changed. The reference
// below is the straightforward computation of the same definition, written
// plainly with its own arrays: split all active flows into components, and
// run progressive filling on each component alone, with the component's
// flows in canonical order (start time, route, weights, cap, kind, class,
// then ID), its resources in order of first use (flows in that order, hops
// in route order) and the water level starting at zero. The
// tests require every active flow's float64 rate to have exactly the bits
// the reference gives, after every start and finish of random workloads.
//
// Progressive filling over all flows at once (the solver before components)
// gives the same rates mathematically but not bit for bit: its water level
// and residual capacities accumulate the deltas of every component, so
// rounding differs in the last bits. TestGlobalSolveAgreesClosely checks
// that it stays within 1e-9 relative of the per-component answer.

// refRes is a resource as the reference sees it.
type refRes struct {
	capacity Rate
	collapse *Collapse
}

// refFlow is an active flow as the reference sees it.
type refFlow struct {
	id    FlowID
	kind  FlowKind
	class int
	route []Hop // weights normalised (0 → 1)
	cap   Rate
}

// referenceRates returns the rate of every flow of flows (in canonical order), by
// progressive filling per connected component.
func referenceRates(res []refRes, flows []refFlow) []float64 {
	// Union-find over flows by shared resources.
	parent := make([]int, len(flows))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			i = parent[i]
		}
		return i
	}
	owner := map[ResourceID]int{}
	for i, f := range flows {
		for _, h := range f.route {
			if j, ok := owner[h.Res]; ok {
				a, b := find(i), find(j)
				if a != b {
					parent[max(a, b)] = min(a, b)
				}
			} else {
				owner[h.Res] = i
			}
		}
	}
	groups := map[int][]int{}
	var roots []int
	for i := range flows {
		r := find(i)
		if _, ok := groups[r]; !ok {
			roots = append(roots, r)
		}
		groups[r] = append(groups[r], i)
	}
	rates := make([]float64, len(flows))
	for _, r := range roots {
		idx := groups[r]
		sub := make([]refFlow, len(idx))
		for k, i := range idx {
			sub[k] = flows[i]
		}
		for k, v := range progressiveFilling(res, sub) {
			rates[idx[k]] = v
		}
	}
	return rates
}

// progressiveFilling is weighted max-min fairness with caps over flows (in
// canonical order) taken as one group: the level rises until a resource fills or a
// flow reaches its cap; the flows held back freeze at the level.
func progressiveFilling(res []refRes, flows []refFlow) []float64 {
	const eps = 1e-9
	// Resources in order of first use, and the weight of unfrozen flows on each.
	var used []ResourceID
	pos := map[ResourceID]int{}
	var wsum []float64
	for _, f := range flows {
		for _, h := range f.route {
			k, ok := pos[h.Res]
			if !ok {
				k = len(used)
				pos[h.Res] = k
				used = append(used, h.Res)
				wsum = append(wsum, 0)
			}
			wsum[k] += h.Weight
		}
	}
	rem := make([]float64, len(used))
	for k, id := range used {
		rem[k] = float64(res[id].capacity)
		if c := res[id].collapse; c != nil {
			seen := map[int]bool{}
			for _, f := range flows {
				if f.kind != c.Kind || f.class <= 0 {
					continue
				}
				for _, h := range f.route {
					if h.Res == id {
						seen[f.class] = true
					}
				}
			}
			if len(seen) >= c.MinClasses && c.Capacity < res[id].capacity {
				rem[k] = float64(c.Capacity)
			}
		}
	}
	rates := make([]float64, len(flows))
	frozen := make([]bool, len(flows))
	level := 0.0
	left := len(flows)
	for left > 0 {
		delta := math.Inf(1)
		for k := range used {
			if wsum[k] > 0 && rem[k]/wsum[k] < delta {
				delta = rem[k] / wsum[k]
			}
		}
		for i, f := range flows {
			if !frozen[i] && f.cap > 0 && float64(f.cap)-level < delta {
				delta = float64(f.cap) - level
			}
		}
		if delta < 0 {
			delta = 0
		}
		level += delta
		for k := range used {
			if wsum[k] > 0 {
				rem[k] -= delta * wsum[k]
			}
		}
		for i, f := range flows {
			if frozen[i] {
				continue
			}
			hit := f.cap > 0 && float64(f.cap)-level <= eps*float64(f.cap)
			for _, h := range f.route {
				if rem[pos[h.Res]] <= eps*float64(res[h.Res].capacity) {
					hit = true
				}
			}
			if hit {
				frozen[i] = true
				rates[i] = level
				left--
				for _, h := range f.route {
					wsum[pos[h.Res]] -= h.Weight
				}
			}
		}
		if left > 0 {
			for k := range wsum {
				if wsum[k] < 1e-12 {
					wsum[k] = 0
				}
			}
		}
	}
	return rates
}

// snapshot returns the network's resources and active flows (in canonical order)
// as the reference sees them, and the flows' current rates.
func snapshot(n *Network) ([]refRes, []refFlow, []float64) {
	res := make([]refRes, len(n.res))
	for i, r := range n.res {
		res[i] = refRes{capacity: r.Capacity, collapse: r.Collapse}
	}
	active := n.activeFlows(nil)
	slices.SortFunc(active, canonical)
	flows := make([]refFlow, len(active))
	rates := make([]float64, len(active))
	for i, f := range active {
		flows[i] = refFlow{id: f.ID, kind: f.Spec.Kind, class: f.Spec.Class, route: f.Spec.Route, cap: f.Spec.Cap}
		rates[i] = f.rate
	}
	return res, flows, rates
}

// randomNetwork adds 1–16 resources, some with collapse rules.
func randomNetwork(t *testing.T, rng *rand.Rand) (*Engine, *Network) {
	e := NewEngine()
	n := NewNetwork(e)
	nres := 1 + rng.IntN(16)
	for i := 0; i < nres; i++ {
		// Capacities that are not round numbers, to exercise rounding.
		id, err := n.AddResource("r"+strconv.Itoa(i), Rate(0.5+rng.Float64()*60)*GBps)
		require.NoError(t, err)
		if rng.IntN(6) == 0 {
			require.NoError(t, n.SetCollapse(id, Collapse{Kind: Write, MinClasses: 2, Capacity: Rate(0.3+rng.Float64()*10) * GBps}))
		}
	}
	return e, n
}

// randomSpec draws a flow: 0–5 hops (repeats allowed), odd weights,
// sometimes a cap (always when there is no route).
func randomSpec(rng *rand.Rand, nres int) FlowSpec {
	hops := rng.IntN(6)
	route := make([]Hop, hops)
	for i := range route {
		w := 0.0
		if rng.IntN(2) == 0 {
			w = 1 + rng.Float64()
		}
		route[i] = Hop{Res: ResourceID(rng.IntN(nres)), Weight: w}
	}
	var c Rate
	if hops == 0 || rng.IntN(3) == 0 {
		c = Rate(0.1+rng.Float64()*40) * GBps
	}
	return FlowSpec{
		Label: "f", Kind: FlowKind(rng.IntN(3)), Class: rng.IntN(4), Route: route,
		Bytes: Bytes(1 + rng.IntN(1<<20)), Cap: c, Latency: Duration(rng.IntN(500)) * Nanosecond,
	}
}

// TestIncrementalMatchesReference starts random flows at random instants
// on random networks (3000 seeds) and, after every instant, compares each
// active flow's rate with the reference, bit for bit.
func TestIncrementalMatchesReference(t *testing.T) {
	seeds := 3000
	if testing.Short() {
		seeds = 300
	}
	checks := 0
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		e, n := randomNetwork(t, rng)
		steps := 1 + rng.IntN(40)
		for s := 0; s < steps; s++ {
			// Start a burst of flows now, then let time pass (flows finish).
			for k := rng.IntN(6); k > 0; k-- {
				_, err := n.Start(randomSpec(rng, len(n.res)))
				require.NoError(t, err, "seed %d", seed)
			}
			require.NoError(t, e.RunUntil(e.Now()), "seed %d", seed)
			compareWithReference(t, n, seed, s)
			checks++
			require.NoError(t, e.RunUntil(e.Now().Add(Duration(rng.IntN(40_000))*Nanosecond)), "seed %d", seed)
			compareWithReference(t, n, seed, s)
			checks++
		}
		require.NoError(t, e.Run(), "seed %d", seed)
		started, finished := n.Counts()
		require.Equal(t, started, finished, "seed %d", seed)
	}
	t.Logf("%d seeds, %d comparisons", seeds, checks)
}

func compareWithReference(t *testing.T, n *Network, seed uint64, step int) {
	t.Helper()
	res, flows, got := snapshot(n)
	want := referenceRates(res, flows)
	for i := range flows {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			t.Fatalf("seed %d step %d: flow #%d rate %v (%x), reference %v (%x)", seed, step, flows[i].id,
				got[i], math.Float64bits(got[i]), want[i], math.Float64bits(want[i]))
		}
	}
}

// TestGlobalSolveAgreesClosely: progressive filling over all flows at once
// (the old solver) differs from the per-component answer by rounding only.
func TestGlobalSolveAgreesClosely(t *testing.T) {
	differ := 0
	for seed := uint64(1); seed <= 1000; seed++ {
		rng := rand.New(rand.NewPCG(seed, 5))
		_, n := randomNetwork(t, rng)
		res := make([]refRes, len(n.res))
		for i, r := range n.res {
			res[i] = refRes{capacity: r.Capacity, collapse: r.Collapse}
		}
		var flows []refFlow
		for i := 0; i < 1+rng.IntN(30); i++ {
			s := randomSpec(rng, len(res))
			for k := range s.Route {
				if s.Route[k].Weight == 0 {
					s.Route[k].Weight = 1
				}
			}
			flows = append(flows, refFlow{id: FlowID(i + 1), kind: s.Kind, class: s.Class, route: s.Route, cap: s.Cap})
		}
		local := referenceRates(res, flows)
		global := progressiveFilling(res, flows)
		for i := range flows {
			require.InEpsilon(t, global[i], local[i], 1e-9, "seed %d flow %d", seed, i)
			if global[i] != local[i] {
				differ++
			}
		}
	}
	t.Logf("rates differing in the last bits between global and per-component filling: %d", differ)
}

// exactLog is an Observer that records everything with exact floats.
type exactLog struct{ b strings.Builder }

func (l *exactLog) FlowStarted(t Time, f *Flow) { fmt.Fprintf(&l.b, "%d start #%d\n", t, f.ID) }
func (l *exactLog) FlowRateChanged(t Time, f *Flow) {
	fmt.Fprintf(&l.b, "%d rate #%d %x finish %d\n", t, f.ID, math.Float64bits(f.rate), f.finish)
}
func (l *exactLog) FlowFinished(t Time, f *Flow) { fmt.Fprintf(&l.b, "%d end #%d\n", t, f.ID) }
func (l *exactLog) ResourceBusy(r *Resource, from, to Time, load Rate) {
	fmt.Fprintf(&l.b, "%d-%d busy %s %x\n", from, to, r.Name, math.Float64bits(float64(load)))
}

// TestIncrementalLogEqualsReferenceMode runs random workloads twice, once
// solving only changed components (flows started by Launch, records
// reused) and once solving every component from scratch at every reshare
// (flows started by Start), and requires the same exact log: rates, finish
// times, busy intervals, event order and the time of every delivery.
func TestIncrementalLogEqualsReferenceMode(t *testing.T) {
	run := func(seed uint64, reference bool) (string, []Time) {
		rng := rand.New(rand.NewPCG(seed, 3))
		e, n := randomNetwork(t, rng)
		n.reference = reference
		log := &exactLog{}
		n.SetObserver(log)
		var delivered []Time
		for i := 0; i < 150; i++ {
			spec := randomSpec(rng, len(n.res))
			spec.Done = func() { delivered = append(delivered, e.Now()) }
			at := Time(rng.IntN(100)) * Time(Microsecond) / 4
			e.At(at, func() {
				if reference {
					_, err := n.Start(spec)
					require.NoError(t, err)
				} else {
					require.NoError(t, n.Launch(spec))
				}
			})
		}
		require.NoError(t, e.Run())
		return log.b.String(), delivered
	}
	for seed := uint64(1); seed <= 300; seed++ {
		fast, d1 := run(seed, false)
		ref, d2 := run(seed, true)
		if fast != ref {
			t.Fatalf("seed %d: incremental log differs from the reference-mode log", seed)
		}
		require.Equal(t, d2, d1, "seed %d", seed)
	}
}

// A flow started at the very instant another one completes, by an event
// that runs before the completion event, moves all its bytes (the old
// engine completed it at once with zero bytes moved).
func TestFlowStartedAtACompletionInstantIsNotDone(t *testing.T) {
	e, n, ids, _ := newNet(t, 1*GBps)
	var bDone Time
	_, err := n.Start(FlowSpec{Label: "a", Route: route(ids[0]), Bytes: 1000})
	require.NoError(t, err)
	e.At(Time(Microsecond), func() {
		_, err := n.Start(FlowSpec{Label: "b", Route: route(ids[0]), Bytes: 1_000_000, Done: func() { bDone = e.Now() }})
		require.NoError(t, err)
	})
	require.NoError(t, e.Run())
	assert.Equal(t, Time(Microsecond+Millisecond), bDone)
}

// Two disjoint groups of flows: a start in one does not disturb the other.
func TestOtherComponentsKeepTheirRates(t *testing.T) {
	e, n, ids, rec := newNet(t, 10*GBps, 7*GBps)
	a, _ := n.Start(FlowSpec{Label: "a", Route: route(ids[0]), Bytes: 1 << 30})
	settle(t, e)
	lines := len(rec.Lines)
	b, _ := n.Start(FlowSpec{Label: "b", Route: route(ids[1]), Bytes: 1 << 30})
	settle(t, e)
	assert.Equal(t, 10e9, float64(a.Rate()))
	assert.Equal(t, 7e9, float64(b.Rate()))
	for _, l := range rec.Lines[lines:] {
		assert.NotContains(t, l, "rate #1", "a's component did not change")
	}
}

// Flows started at one instant get the same rates and finish times, bit
// for bit, whatever the order in which they were started: the property
// that lets an instant's work run in any order.
func TestRatesDoNotDependOnStartOrder(t *testing.T) {
	for seed := uint64(1); seed <= 500; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		nres := 1 + rng.IntN(8)
		caps := make([]Rate, nres)
		for i := range caps {
			caps[i] = Rate(0.5+rng.Float64()*60) * GBps
		}
		specs := make([]FlowSpec, 2+rng.IntN(12))
		for i := range specs {
			specs[i] = randomSpec(rng, nres)
			if rng.IntN(3) == 0 && i > 0 {
				specs[i] = specs[rng.IntN(i)] // alike flows too
			}
		}
		run := func(order []int) ([]uint64, []Time) {
			e := NewEngine()
			n := NewNetwork(e)
			for i, c := range caps {
				_, err := n.AddResource("r"+strconv.Itoa(i), c)
				require.NoError(t, err)
			}
			rates := make([]uint64, len(specs))
			ends := make([]Time, len(specs))
			flows := make([]*Flow, len(specs))
			for _, i := range order {
				spec := specs[i]
				spec.Done = func() { ends[i] = e.Now() }
				f, err := n.Start(spec)
				require.NoError(t, err)
				flows[i] = f
			}
			require.NoError(t, e.RunUntil(0))
			for i, f := range flows {
				rates[i] = math.Float64bits(f.rate)
			}
			require.NoError(t, e.Run())
			return rates, ends
		}
		order := rng.Perm(len(specs))
		r1, e1 := run(slices.Sorted(slices.Values(order)))
		r2, e2 := run(order)
		require.Equal(t, r1, r2, "seed %d: rates", seed)
		require.Equal(t, e1, e2, "seed %d: deliveries", seed)
	}
}
