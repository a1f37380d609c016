// Package hw binds a machine (package topology) to the event engine
// (package sim): it turns GPU-level actions into flows and events with the
// platform's physics.
//
// The actions are those a collective kernel or a copy performs:
//
//   - [Machine.Write]: SM stores into peer or host memory. Posted: they stream
//     at the fair share, capped by the issuing SMs' store rate.
//   - [Machine.Read]: SM loads from peer or host memory. Non-posted: requests
//     go out, completions come back, and the rate is at most bytes in flight
//     / round trip, where bytes in flight = resident threads × 16 B × loads
//     in flight per thread (Little's law).
//   - [Machine.Copy]: copy-engine transfers (H2D, D2H, P2P) with their own
//     window and setup cost.
//   - [Machine.SignalFlag] and [Machine.WaitFlag]: a flag is a tiny posted
//     write that lands one route latency plus a memory access after it is
//     sent; a wait ends when the flag lands plus one poll round trip to the
//     memory that holds it.
//   - [Machine.LaunchCost] and [Machine.IssueInterval]: what a kernel
//     launch adds on the device (the gap between kernels and the kernel's
//     prologue) and the host's interval between eager calls.
//   - [Machine.FenceCost]: a system-scope fence after stores, about one
//     round trip to the memory stored to plus a per-fabric extra; beside
//     other blocks polling host memory it waits for their loads too
//     ([Machine.FenceBesidePolls]).
//   - [Machine.ReduceTime]: local work, a reduction at memory bandwidth.
//
// On PCIe each payload byte puts (payload + TLP overhead) / payload / link
// efficiency wire bytes on the link, with the payload size of the access
// kind (copy engine, SM store, read completion); on NVLink the access kind's
// measured efficiency. All values come from the topology's parameters.
//
// The simulated twins of the measurement kinds of the trace format (a copy,
// a pointer chase, a flag ping-pong, …), built on these actions, are in
// package validate.
package hw
