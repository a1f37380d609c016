package sim

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newNet(t *testing.T, caps ...Rate) (*Engine, *Network, []ResourceID, *Recorder) {
	t.Helper()
	e := NewEngine()
	n := NewNetwork(e)
	rec := &Recorder{}
	n.SetObserver(rec)
	ids := make([]ResourceID, len(caps))
	for i, c := range caps {
		id, err := n.AddResource(string(rune('A'+i)), c)
		require.NoError(t, err)
		ids[i] = id
	}
	return e, n, ids, rec
}

// settle runs the events queued for the current instant (the reshare).
func settle(t *testing.T, e *Engine) {
	t.Helper()
	require.NoError(t, e.RunUntil(e.Now()))
}

func route(ids ...ResourceID) []Hop {
	h := make([]Hop, len(ids))
	for i, id := range ids {
		h[i] = Hop{Res: id}
	}
	return h
}

func TestSingleFlowTimeIsBytesOverRatePlusLatency(t *testing.T) {
	e, n, ids, _ := newNet(t, 50*GBps)
	var done Time
	_, err := n.Start(FlowSpec{Label: "w", Route: route(ids[0]), Bytes: 50_000, Latency: 500 * Nanosecond, Done: func() { done = e.Now() }})
	require.NoError(t, err)
	require.NoError(t, e.Run())
	// 50 kB at 50 GB/s is 1 µs on the wire; it lands one route latency later.
	assert.Equal(t, Time(1500*Nanosecond), done)
}

// Two flows sharing one link get half each; when the short one ends the long
// one speeds up to the full link.
func TestTwoFlowsShareOneLink(t *testing.T) {
	e, n, ids, rec := newNet(t, 10*GBps)
	var a, b Time
	_, err := n.Start(FlowSpec{Label: "a", Route: route(ids[0]), Bytes: 10_000, Done: func() { a = e.Now() }})
	require.NoError(t, err)
	_, err = n.Start(FlowSpec{Label: "b", Route: route(ids[0]), Bytes: 30_000, Done: func() { b = e.Now() }})
	require.NoError(t, err)
	require.NoError(t, e.Run())
	// a: 10 kB at 5 GB/s = 2 µs. b: 10 kB by then, 20 kB left at 10 GB/s = 2 µs more.
	assert.Equal(t, Time(2*Microsecond), a)
	assert.Equal(t, Time(4*Microsecond), b)
	assert.Empty(t, rec.Overloads)
	assert.InDelta(t, 40_000, rec.BusyBytes[ids[0]], 1e-6)
}

// The textbook max-min case: flow X crosses links A (cap 10) and B (cap 4);
// flow Y uses A only; flow Z uses B only. B is the first bottleneck: X and Z
// get 2 each; Y then takes what is left of A: 8.
func TestFlowCrossingTwoBottlenecks(t *testing.T) {
	e, n, ids, rec := newNet(t, 10*GBps, 4*GBps)
	x, _ := n.Start(FlowSpec{Label: "x", Route: route(ids[0], ids[1]), Bytes: 1 << 30})
	y, _ := n.Start(FlowSpec{Label: "y", Route: route(ids[0]), Bytes: 1 << 30})
	z, _ := n.Start(FlowSpec{Label: "z", Route: route(ids[1]), Bytes: 1 << 30})
	settle(t, e)
	assert.InDelta(t, 2e9, float64(x.Rate()), 1)
	assert.InDelta(t, 8e9, float64(y.Rate()), 1)
	assert.InDelta(t, 2e9, float64(z.Rate()), 1)
	require.NoError(t, e.Run())
	assert.Empty(t, rec.Overloads)
}

// A flow capped below its fair share (a read limited by bytes in flight)
// leaves the rest of the link to the others.
func TestCapLeavesShareToOthers(t *testing.T) {
	e, n, ids, _ := newNet(t, 10*GBps)
	r, _ := n.Start(FlowSpec{Label: "read", Kind: Read, Route: route(ids[0]), Bytes: 1 << 30, Cap: 2 * GBps})
	w, _ := n.Start(FlowSpec{Label: "write", Route: route(ids[0]), Bytes: 1 << 30})
	settle(t, e)
	assert.InDelta(t, 2e9, float64(r.Rate()), 1)
	assert.InDelta(t, 8e9, float64(w.Rate()), 1)
}

// Weights: a flow that puts 2 wire bytes per payload byte (LL) on the link
// gets half the payload rate of a weight-1 flow when both share it: the
// wire is split evenly in payload terms, 10 = 2x + x.
func TestWeightedShare(t *testing.T) {
	e, n, ids, _ := newNet(t, 9*GBps)
	ll, _ := n.Start(FlowSpec{Label: "ll", Route: []Hop{{Res: ids[0], Weight: 2}}, Bytes: 1 << 30})
	s, _ := n.Start(FlowSpec{Label: "simple", Route: route(ids[0]), Bytes: 1 << 30})
	settle(t, e)
	assert.InDelta(t, 3e9, float64(ll.Rate()), 1)
	assert.InDelta(t, 3e9, float64(s.Rate()), 1)
	assert.InDelta(t, 9e9, float64(n.Resource(ids[0]).Load()), 1)
}

func TestCollapse(t *testing.T) {
	e, n, ids, _ := newNet(t, 50*GBps)
	require.NoError(t, n.SetCollapse(ids[0], Collapse{Kind: Write, MinClasses: 2, Capacity: 6 * GBps}))
	a, _ := n.Start(FlowSpec{Label: "a", Class: 1, Route: route(ids[0]), Bytes: 1 << 30})
	settle(t, e)
	assert.InDelta(t, 50e9, float64(a.Rate()), 1)
	b, _ := n.Start(FlowSpec{Label: "b", Class: 1, Route: route(ids[0]), Bytes: 1 << 30})
	settle(t, e)
	assert.InDelta(t, 25e9, float64(b.Rate()), 1, "same destination complex: no collapse")
	c, _ := n.Start(FlowSpec{Label: "c", Class: 2, Route: route(ids[0]), Bytes: 1 << 30})
	settle(t, e)
	assert.InDelta(t, 2e9, float64(c.Rate()), 1, "two destination complexes: aggregate collapses to 6 GB/s")
	_, err := n.Start(FlowSpec{Label: "r", Kind: Read, Class: 3, Route: route(ids[0]), Bytes: 1 << 30})
	require.NoError(t, err)
	settle(t, e)
	assert.InDelta(t, 1.5e9, float64(a.Rate()), 1, "reads count against capacity but do not trigger the collapse")
}

func TestBadSpecs(t *testing.T) {
	_, n, ids, _ := newNet(t, 1*GBps)
	_, err := n.AddResource("z", 0)
	assert.ErrorContains(t, err, `resource "z": capacity must be a positive`)
	_, err = n.Start(FlowSpec{Label: "neg", Route: route(ids[0]), Bytes: -1})
	assert.ErrorContains(t, err, `flow "neg": bytes must be ≥ 0`)
	_, err = n.Start(FlowSpec{Label: "lost", Route: route(7), Bytes: 1})
	assert.ErrorContains(t, err, `flow "lost" hop 0: sim: no resource 7`)
	_, err = n.Start(FlowSpec{Label: "nowhere", Bytes: 1})
	assert.ErrorContains(t, err, "needs a route or a rate cap")
	assert.Equal(t, 0, n.Active())
}

// randomWorkload starts flows at random times over random routes and
// returns the engine's log. Used for determinism and conservation.
func randomWorkload(t *testing.T, seed uint64) (*Recorder, *Network, float64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	e := NewEngine()
	n := NewNetwork(e)
	rec := &Recorder{}
	n.SetObserver(rec)
	const nres = 12
	for i := 0; i < nres; i++ {
		_, err := n.AddResource(string(rune('a'+i)), Rate(1+rng.IntN(60))*GBps)
		require.NoError(t, err)
	}
	var sent float64
	delivered := 0
	for i := 0; i < 300; i++ {
		hops := 1 + rng.IntN(4)
		var r []Hop
		for _, p := range rng.Perm(nres)[:hops] {
			r = append(r, Hop{Res: ResourceID(p), Weight: 1 + float64(rng.IntN(3))/8})
		}
		bytes := Bytes(rng.IntN(1 << 22))
		var capr Rate
		if rng.IntN(3) == 0 {
			capr = Rate(1+rng.IntN(20)) * GBps
		}
		at := Time(rng.IntN(200)) * Time(Microsecond)
		spec := FlowSpec{Label: "f", Route: r, Bytes: bytes, Cap: capr, Latency: Duration(rng.IntN(2000)) * Nanosecond, Done: func() { delivered++ }}
		for _, h := range r {
			sent += float64(bytes) * h.Weight
		}
		e.At(at, func() {
			_, err := n.Start(spec)
			require.NoError(t, err)
		})
	}
	require.NoError(t, e.Run())
	require.Equal(t, 300, delivered)
	return rec, n, sent
}

func TestDeterministicAndConserving(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		rec1, n, sent := randomWorkload(t, seed)
		rec2, _, _ := randomWorkload(t, seed)
		require.Equal(t, rec1.String(), rec2.String(), "seed %d: same inputs must give the same log", seed)
		require.Empty(t, rec1.Overloads, "seed %d", seed)
		var carried float64
		for _, r := range n.Resources() {
			carried += r.Carried()
		}
		// Wire bytes carried by all resources equal the wire bytes the flows
		// put on them (payload × weight per hop), to float rounding.
		require.InDelta(t, sent, carried, sent*1e-9+1, "seed %d", seed)
		started, finished := n.Counts()
		require.Equal(t, started, finished)
	}
}

func TestFlagWaitAndDeadlockReport(t *testing.T) {
	e := NewEngine()
	f := NewFlag(e, "start[0][1]")
	var woke Time
	f.Wait(1, 100*Nanosecond, Name("rank1"), func() { woke = e.Now() })
	e.At(Time(Microsecond), func() { f.Set(1) })
	g := NewFlag(e, "end[0][1]")
	g.Wait(2, 0, Name("rank0 op 7"), func() {})
	require.NoError(t, e.Run())
	assert.Equal(t, Time(1100*Nanosecond), woke)
	assert.Equal(t, []string{"rank0 op 7 waits for end[0][1] ≥ 2 (holds 0)"}, g.Blocked())
}

func TestEngineOrdersTiesBySequence(t *testing.T) {
	e := NewEngine()
	var got []int
	for i := 0; i < 50; i++ {
		e.At(Time(5-i%3), func() { got = append(got, i) })
	}
	require.NoError(t, e.Run())
	prev := -1
	prevT := -1
	for _, i := range got {
		ti := 5 - i%3
		if ti == prevT {
			assert.Greater(t, i, prev)
		} else {
			assert.Greater(t, ti, prevT)
		}
		prev, prevT = i, ti
	}
	assert.Panics(t, func() { e.At(0, func() {}) })
}

func TestEventLimit(t *testing.T) {
	e := NewEngine()
	var tick func()
	tick = func() { e.After(Nanosecond, tick) }
	e.After(0, tick)
	e.SetEventLimit(1000)
	assert.ErrorContains(t, e.Run(), "event limit")
}

func TestDurationString(t *testing.T) {
	cases := map[Duration]string{
		15:                           "15 ps",
		640 * Nanosecond:             "640 ns",
		Micros(12.345):               "12.35 µs",
		Micros(225):                  "225 µs",
		30*Millisecond + Micros(100): "30.1 ms",
		-2 * Microsecond:             "-2 µs",
		Second * 5 / 2:               "2.5 s",
	}
	for d, want := range cases {
		assert.Equal(t, want, d.String())
	}
	assert.Equal(t, "42 KiB", Bytes(43008).String())
	assert.Equal(t, "1000 B", Bytes(1000).String())
	_, err := FromSeconds(math.NaN())
	assert.Error(t, err)
}

// takeDue finds exactly the flows due, in ID order, and leaves the due
// set valid: the groups' heap in order, every group non-empty and of one
// instant, every flow's group and place right; flows whose finish moves
// (fixDue again) move with it.
func TestTakeDueTakesExactlyTheDueFlows(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := 0; trial < 200; trial++ {
		n := NewNetwork(NewEngine())
		var flows []*Flow
		for i := 0; i < 1+rng.IntN(300); i++ {
			f := &Flow{ID: FlowID(i + 1), dueI: -1, finish: Time(rng.IntN(1 + trial%20))}
			flows = append(flows, f)
			n.fixDue(f)
		}
		for range rng.IntN(50) {
			f := flows[rng.IntN(len(flows))]
			f.finish = Time(rng.IntN(1 + trial%20))
			n.fixDue(f)
		}
		if trial%2 == 1 {
			// IDs spread wide: taken flows are sorted, not placed.
			for i, f := range flows {
				f.ID = FlowID(rng.IntN(1<<20))<<20 | FlowID(i+1)
			}
		}
		now := Time(rng.IntN(20))
		got := map[FlowID]bool{}
		prev := FlowID(0)
		for _, f := range n.takeDue(now, nil) {
			require.Greater(t, f.ID, prev, "ID order")
			prev = f.ID
			require.LessOrEqual(t, f.finish, now)
			require.Nil(t, f.dueG)
			got[f.ID] = true
		}
		for _, f := range flows {
			require.Equal(t, f.finish <= now, got[f.ID], "flow %d finishing at %d, now %d", f.ID, f.finish, now)
			if f.finish > now {
				require.Same(t, f, f.dueG.flows[f.dueI])
				require.Equal(t, f.finish, f.dueG.at)
			}
		}
		for i, g := range n.dueHeap {
			require.Equal(t, int32(i), g.hidx)
			require.NotEmpty(t, g.flows)
			if i > 0 {
				require.GreaterOrEqual(t, g.at, n.dueHeap[(i-1)/4].at, "heap order at %d", i)
			}
		}
	}
}
