// Package design searches the space of allreduce schedules composed from a
// few choices for the one that runs fastest on a machine at a message
// size: pull or push; one shot, two shots, or islands (by PCIe switch or by
// socket) with the exchange between islands a choice of its own; the kind
// of barrier (flags, atomics, or completion carried by the data); where
// the flags live (GPU or host memory); staging through host memory when
// peer-to-peer is off; chunking (pipeline depth); blocks and threads.
//
// Each point of the space (Params) is built into a schedule — by a
// built-in algorithm with options where one has that shape, so that every
// built-in is a point of the space and the search's best is never slower
// than the best of them, else by a composer here — then proved by
// algos.Check and timed by algos.Run on a fresh hw.Machine. Search ranks
// the candidates and says what binds each (algos.Binds). The winner's
// Params, saved as a spec file (WriteSpec), plan the same design again for
// any request under the name spec:FILE (the loader registered here).
//
// The search is deterministic: candidates are enumerated in a fixed order,
// timed in parallel (one engine per candidate, errgroup), and ranked by
// time then name; nothing depends on GOMAXPROCS or the wall clock.
package design
