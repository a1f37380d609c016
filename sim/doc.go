// Package sim is arsim's deterministic discrete-event engine: integer
// picosecond time, an event queue ordered by (time, sequence), and a fluid
// network of resources shared by flows under weighted max-min fairness.
//
// The engine knows nothing of GPUs. Package hw binds a machine (package
// topology) to it; package algos executes allreduce schedules on hw.
//
// # Time
//
// [Time] is an instant and [Duration] a span, both integer picoseconds, so
// at 64 GB/s one byte is 15.6 ps and an int64 covers 106 days. Nothing in
// this package reads the wall clock, starts a goroutine or draws from a
// global random source: the same calls give bit-identical results on any
// GOMAXPROCS.
//
// # Events
//
// [Engine] runs events in order of (time, sequence number): two events at
// the same instant run in the order they were scheduled. An event is a
// closure, or a handler event: a registered [Handler] and an integer
// argument (many events of one kind, such as an executor's op
// completions, share one handler and differ by the argument). Handler
// events allocate nothing, and a [Snapshot] can name them.
//
//	e := sim.NewEngine()
//	e.After(2*sim.Microsecond, func() { fmt.Println("at", e.Now()) })
//	e.Run()
//
// [Engine.Stop] makes Run return after the event running now, so that a
// caller can look at the state between two events and carry on.
//
// # Flows
//
// A [Network] holds [Resource]s (each direction of a link, a memory, a
// socket interconnect), each with a capacity in bytes per second. A [Flow]
// moves a number of payload bytes across a route of resources; on each hop
// it consumes Weight wire bytes per payload byte (PCIe TLP headers, LL
// protocol flags). All flows active at one instant share capacity by
// weighted max-min fairness (progressive filling), recomputed whenever a
// flow starts or finishes; a flow may also carry its own rate cap, which is
// how non-posted reads are limited to bytes in flight / round-trip time.
// The flow's callback runs one route latency after its last byte leaves.
//
// Fair shares are solved per connected component (flows sharing a
// resource, transitively), and only the components whose flows changed are
// solved again, so the cost of a start or finish grows with the size of
// its component, not with the number of flows in flight. The rates are bit
// for bit those of progressive filling run on each component alone, its
// flows in canonical order (start time, route, weights, cap, kind, class,
// then ID; see Network): flows that tie up to their ID are alike to the
// solver, so the rates do not depend on the order in which flows started
// within one instant. Every event of a network settles it at its instant
// (flows due finish, changed components are solved again), so neither
// does anything else: which of an instant's events ran first changes the
// number of events, never a time. Records and scratch are reused, and
// [Network.Launch] starts a flow whose record is recycled once it has
// finished.
//
// An [Observer] sees every flow start, rate change and finish, and every
// interval during which a resource carried load, so timelines and
// utilisation can be drawn later. Nothing in this package prints.
//
// # Snapshots
//
// [Engine.TakeSnapshot] writes down the engine's whole state (pending
// events, flags, networks) relative to the current instant; two equal
// snapshots taken at T1 < T2 mean that what follows T2 is what followed
// T1, shifted by T2 − T1, and [Engine.Advance] then moves the engine over
// whole periods without running their events. The engine lists every flag
// and network made on it, so a snapshot covers them by construction; what
// it cannot write down exactly (a pending closure it did not make with
// [Engine.Func], a network with an Observer) makes it fail rather than
// guess. Callers that keep state of their own (package algos' executor)
// compare it beside the snapshot. Package hw keeps no state between
// events beyond caches (routes, P2P checks), which change no result: what
// a new mechanism there must remember (a queue, a credit) belongs in a
// network's resources and flows or in flags, where snapshots see it.
package sim
