// Command arsim simulates GPU allreduce on multi-GPU machines: the verify
// pass of speculative decoding, size sweeps, timelines, and machine
// descriptions. Run `arsim help` for the commands.
package main

import (
	"context"
	"os"
	"runtime/debug"
)

func main() {
	tuneGC()
	out := &trackedWriter{w: os.Stdout}
	err := run(context.Background(), os.Args[1:], out, os.Stderr)
	err = finish(err, out)
	reportError(os.Stderr, err, os.Args[1:])
	os.Exit(exitCode(err))
}

// tuneGC lets the heap grow to five times what is live between
// collections (GOGC 400, not Go's 100) with a soft limit of 2 GiB, unless
// GOGC or GOMEMLIMIT say otherwise. A run's live heap is a few to a
// hundred MB, mostly machines, schedules and results that stay live, so
// collections cost much and free little: on a 2-core machine `arsim
// sweep --algos ring --sizes 1MiB` took 10.4 ms instead of 12.4 (median of
// 40 whole processes), `arsim check` 2.6 s instead of 3.5, with the largest
// resident sets 46–232 MB instead of 36–145 (docs/PERFORMANCE.md).
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(2 << 30)
	}
}
