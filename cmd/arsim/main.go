// Command arsim simulates GPU allreduce on multi-GPU machines: the verify
// pass of speculative decoding, size sweeps, timelines, and machine
// descriptions. Run `arsim help` for the commands.
package main

import (
	"context"
	"os"
)

func main() {
	out := &trackedWriter{w: os.Stdout}
	err := run(context.Background(), os.Args[1:], out, os.Stderr)
	err = finish(err, out)
	reportError(os.Stderr, err, os.Args[1:])
	os.Exit(exitCode(err))
}
