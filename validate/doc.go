// Package validate compares the simulator with measurements: every record
// of a measured trace (package trace) gets a simulated twin, and Run
// reports measured against simulated, record by record, by group and in
// sum; Calibrate fits parameters to records and scores the fit on records
// held out of it.
//
// Each record kind registers its twin in a file of its own (kind_*.go) with
// [Register]: how to simulate a record of that kind, what it needs, and why
// one may be skipped. The micro-measurement kinds are simulated by the
// functions of micro.go (a copy, a pointer chase, a flag ping-pong, …, each
// on a fresh machine); allreduces by the algorithm that models the
// implementation measured. A record that cannot be simulated is never
// dropped: it is listed with its reason, a *[SkipError] that errors.Is
// matches with [ErrNotModelled], [ErrNoPreset], [ErrBadRecord] or
// [ErrSimulation].
//
// Records run in parallel, each on its own machine and engine; the result
// is the same for any parallelism and in line order. Nothing here prints.
package validate
