// Command arsim simulates GPU allreduce on multi-GPU machines: the verify
// pass of speculative decoding, size sweeps, timelines, and machine
// descriptions. Run `arsim help` for the commands.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
)

func main() {
	err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)
	if err == nil {
		return
	}
	if !errors.Is(err, errHelpShown) {
		fmt.Fprintln(os.Stderr, "arsim:", err)
	}
	os.Exit(exitCode(err))
}
