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
// [Engine] runs callbacks in order of (time, sequence number): two events
// at the same instant run in the order they were scheduled.
//
//	e := sim.NewEngine()
//	e.After(2*sim.Microsecond, func() { fmt.Println("at", e.Now()) })
//	e.Run()
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
// for bit those of progressive filling run on each component alone (see
// Network); records and scratch are reused, and [Network.Launch] starts a
// flow whose record is recycled once it has finished.
//
// An [Observer] sees every flow start, rate change and finish, and every
// interval during which a resource carried load, so timelines and
// utilisation can be drawn later. Nothing in this package prints.
package sim
