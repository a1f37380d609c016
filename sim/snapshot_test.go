package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorder is a Handler that notes each argument with the time it ran.
type recorder struct {
	e   *Engine
	got []string
}

func (h *recorder) Handle(arg int64) {
	h.got = append(h.got, Duration(h.e.Now()).String()+":"+string(rune('a'+arg)))
}

// Handler events and closures share one order: time, then scheduling.
func TestHandlerEventsRunInOrderWithClosures(t *testing.T) {
	e := NewEngine()
	h := &recorder{e: e}
	id := e.Register(h)
	e.CallAt(2000, id, 1)
	e.At(1000, func() { h.got = append(h.got, "closure") })
	e.CallAt(1000, id, 0)
	fn := e.Func(id, 2)
	e.At(1000, fn)
	require.NoError(t, e.Run())
	assert.Equal(t, []string{"closure", "1 ns:a", "1 ns:c", "2 ns:b"}, h.got)
	assert.Panics(t, func() { e.CallAt(5000, id, -1) })
	assert.Panics(t, func() { e.CallAt(5000, id+1, 0) })
}

// Stop makes Run return after the event that called it; Run continues.
func TestStopReturnsAfterTheEvent(t *testing.T) {
	e := NewEngine()
	n := 0
	for i := range 3 {
		e.At(Time(i), func() {
			n++
			if i == 1 {
				e.Stop()
			}
		})
	}
	e.Stop() // outside Run: nothing
	require.NoError(t, e.Run())
	assert.Equal(t, 2, n)
	assert.Equal(t, 1, e.Pending())
	require.NoError(t, e.Run())
	assert.Equal(t, 3, n)
}

// periodicNet is a small network whose work repeats every period: a
// handler starts two flows sharing a link (their callbacks made by Func)
// and raises a flag whose waiter, made by Func too, starts the next round.
type periodicNet struct {
	e           *Engine
	n           *Network
	f           *FlagVar
	ids         []ResourceID
	hRound, hOK HandlerID
	round       int64
	delivered   []Time
	period      Duration
	fns         []func()
}

func newPeriodicNet(t *testing.T) *periodicNet {
	e := NewEngine()
	p := &periodicNet{e: e, n: NewNetwork(e), period: 10 * Microsecond}
	for i, c := range []Rate{10 * GBps, 7.3 * GBps} {
		id, err := p.n.AddResource(string(rune('A'+i)), c)
		require.NoError(t, err)
		p.ids = append(p.ids, id)
	}
	p.f = NewFlag(e, "f")
	p.hRound = e.Register(handlerFunc(p.startRound))
	p.hOK = e.Register(handlerFunc(func(arg int64) { p.delivered = append(p.delivered, e.Now()) }))
	p.fns = []func(){e.Func(p.hOK, 0), e.Func(p.hOK, 1), e.Func(p.hRound, 0)}
	return p
}

type handlerFunc func(int64)

func (h handlerFunc) Handle(arg int64) { h(arg) }

func (p *periodicNet) startRound(int64) {
	p.round++
	_ = p.n.Launch(FlowSpec{Label: "x", Route: []Hop{{Res: p.ids[0]}, {Res: p.ids[1], Weight: 1.1}}, Bytes: 30_000, Latency: 300 * Nanosecond, Done: p.fns[0]})
	_ = p.n.Launch(FlowSpec{Label: "y", Route: []Hop{{Res: p.ids[0]}}, Bytes: 11_111, Cap: 3 * GBps, Latency: 200 * Nanosecond, Done: p.fns[1]})
	p.e.CallAfter(p.period/2, p.hOK, 2)
	p.f.Wait(p.round, p.period, Name("w"), p.fns[2])
	p.e.After(Nanosecond, func() { p.f.Set(p.round) })
}

// oneStep is one round's worth of flag value.
var oneStep = []int64{1}

// Advancing over whole periods leaves the engine where running them does:
// time, events counted, flows started and finished, flow IDs, every
// resource's carried bytes bit for bit, and what happens afterwards.
func TestAdvanceEqualsRunningThePeriods(t *testing.T) {
	const rounds = 40
	full := newPeriodicNet(t)
	full.e.CallAt(0, full.hRound, 0)
	require.NoError(t, full.e.RunUntil(Time(rounds)*Time(full.period)-1))

	fast := newPeriodicNet(t)
	fast.e.CallAt(0, fast.hRound, 0)
	var snaps [2]Snapshot
	// Round k starts at k × (period + 1 ns). A closure pending (the
	// flag's landing, 1 ns into a round) cannot be written down; 5 ns
	// into a round it has run.
	for i := range snaps {
		at := Time(i+1)*Time(fast.period+Nanosecond) + Time(5*Nanosecond)
		require.NoError(t, fast.e.RunUntil(at))
		require.True(t, fast.e.TakeSnapshot(&snaps[i], []int64{fast.round}), "round %d", i+1)
	}
	require.True(t, snaps[0].Equal(&snaps[1]))
	var refs []int64
	snaps[1].Refs(func(h HandlerID, arg int64) { refs = append(refs, int64(h)*10+arg) })
	assert.Contains(t, refs, int64(fast.hRound)*10, "the waiter's callback is named")
	fast.e.Advance(&snaps[0], &snaps[1], rounds-4, oneStep)
	fast.round += rounds - 4
	require.NoError(t, fast.e.RunUntil(Time(rounds)*Time(fast.period)-1))

	assert.Equal(t, full.e.Now(), fast.e.Now())
	assert.Equal(t, full.e.Processed(), fast.e.Processed())
	assert.Equal(t, full.f.Value(), fast.f.Value())
	s1, f1 := full.n.Counts()
	s2, f2 := fast.n.Counts()
	assert.Equal(t, [2]uint64{s1, f1}, [2]uint64{s2, f2})
	assert.Equal(t, full.n.nextID, fast.n.nextID)
	for i, r := range full.n.Resources() {
		assert.Equal(t, r.Carried(), fast.n.Resources()[i].Carried(), r.Name)
	}
	// The callbacks of the rounds advanced over did not run; those of
	// the rounds run afterwards ran when they do in the full run.
	k := len(fast.delivered) - 6
	assert.Equal(t, full.delivered[len(full.delivered)-6:], fast.delivered[k:], "the rounds after the advance")
	assert.Len(t, fast.delivered, 12)
}

// A snapshot fails where the state cannot be written down: a pending
// closure the engine did not make, or an observer.
func TestSnapshotRefusesWhatItCannotName(t *testing.T) {
	e, n, ids, _ := newNet(t, 10*GBps)
	var s Snapshot
	assert.False(t, e.TakeSnapshot(&s, nil), "the recorder observes")
	n.SetObserver(nil)
	require.True(t, e.TakeSnapshot(&s, nil))
	e.After(Microsecond, func() {})
	assert.False(t, e.TakeSnapshot(&s, nil), "a closure")
	require.NoError(t, e.Run())
	require.NoError(t, n.Launch(FlowSpec{Label: "a", Route: route(ids[0]), Bytes: 100, Done: func() {}}))
	settle(t, e)
	assert.False(t, e.TakeSnapshot(&s, nil), "a flow's closure")
}

// Snapshots differ where the states do: a flag's value relative to its
// base, a flow's bytes left, an event's time.
func TestSnapshotsSeeDifferences(t *testing.T) {
	take := func(setup func(e *Engine, n *Network, f *FlagVar, ids []ResourceID)) *Snapshot {
		e, n, ids, _ := newNet(t, 10*GBps)
		n.SetObserver(nil)
		f := NewFlag(e, "f")
		setup(e, n, f, ids)
		var s Snapshot
		require.True(t, e.TakeSnapshot(&s, []int64{3}))
		return &s
	}
	h := handlerFunc(func(int64) {})
	base := take(func(e *Engine, n *Network, f *FlagVar, ids []ResourceID) { f.Set(4) })
	same := take(func(e *Engine, n *Network, f *FlagVar, ids []ResourceID) { f.Set(4) })
	assert.True(t, base.Equal(same))
	for name, setup := range map[string]func(e *Engine, n *Network, f *FlagVar, ids []ResourceID){
		"flag": func(e *Engine, n *Network, f *FlagVar, ids []ResourceID) { f.Set(5) },
		"event": func(e *Engine, n *Network, f *FlagVar, ids []ResourceID) {
			f.Set(4)
			e.CallAt(10, e.Register(h), 0)
		},
		"flow": func(e *Engine, n *Network, f *FlagVar, ids []ResourceID) {
			f.Set(4)
			require.NoError(t, n.Launch(FlowSpec{Label: "a", Route: route(ids[0]), Bytes: 100}))
			settle(t, e)
		},
	} {
		assert.False(t, base.Equal(take(setup)), name)
	}
}

// StopAfterInstant makes Run return once the instant's last event has run,
// those scheduled at the instant by its events included.
func TestStopAfterInstantRunsTheInstantOut(t *testing.T) {
	e := NewEngine()
	h := &recorder{e: e}
	id := e.Register(h)
	e.At(1000, func() {
		e.StopAfterInstant()
		e.CallAt(1000, id, 3) // joins the instant
	})
	e.CallAt(1000, id, 1)
	e.CallAt(2000, id, 2)
	require.NoError(t, e.Run())
	assert.Equal(t, []string{"1 ns:b", "1 ns:d"}, h.got)
	assert.Equal(t, Time(1000), e.Now())
	assert.Equal(t, 1, e.Pending())
	require.NoError(t, e.Run())
	assert.Equal(t, []string{"1 ns:b", "1 ns:d", "2 ns:c"}, h.got)
}

// Unordered snapshots of two states that differ only in the order of one
// instant's events are equal; ordered ones are not.
func TestUnorderedSnapshotIgnoresTheOrderWithinAnInstant(t *testing.T) {
	take := func(args []int64, unordered bool) *Snapshot {
		e := NewEngine()
		id := e.Register(&recorder{e: e})
		for _, a := range args {
			e.CallAt(1000, id, a)
		}
		e.CallAt(3000, id, 9)
		s := &Snapshot{Unordered: unordered}
		require.True(t, e.TakeSnapshot(s, nil))
		return s
	}
	assert.False(t, take([]int64{1, 2, 3}, false).Equal(take([]int64{3, 1, 2}, false)))
	assert.True(t, take([]int64{1, 2, 3}, true).Equal(take([]int64{3, 1, 2}, true)))
	assert.False(t, take([]int64{1, 2, 3}, true).Equal(take([]int64{1, 2, 4}, true)))
}
