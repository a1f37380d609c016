package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/arsim/arsim/internal/crash"
)

type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, out, errOut io.Writer) error
}

func commands() []command {
	return []command{
		{"verify", "simulate the speculative-decoding verify pass for each algorithm (the default)", cmdVerify},
		{"sweep", "latency and bus bandwidth versus message size for each algorithm", cmdSweep},
		{"timeline", "write a Perfetto timeline of one run (a track per rank and per link)", cmdTimeline},
		{"algos", "list the allreduce algorithms", cmdAlgos},
		{"check", "prove every algorithm's schedule correct over world sizes and message sizes", cmdCheck},
		{"explain", "print an algorithm's schedule step by step", cmdExplain},
		{"design", "search checked schedules for the fastest on a machine at a message size", cmdDesign},
		{"topology", "list, show or import machine topologies", cmdTopology},
		{"validate", "compare the simulator with measured traces, record by record", cmdValidate},
		{"calibrate", "fit machine parameters to measured traces (with a held-out check)", cmdCalibrate},
		{"sass", "read a kernel's machine code (cuobjdump -sass): the round trips its loop waits for its loads", cmdSass},
	}
}

// run is the whole program; main only prints the error and exits. A
// panic in the command's own goroutine comes back as a *crash.Error (exit
// status 3); the commands' worker goroutines recover their own.
func run(ctx context.Context, args []string, out, errOut io.Writer) (err error) {
	defer crash.Recover(&err)
	if len(args) == 0 {
		return cmdVerify(ctx, nil, out, errOut)
	}
	name := args[0]
	if name == "help" || name == "-h" || name == "--help" {
		if len(args) > 2 {
			return badInputf("help: unexpected argument %q (arsim help COMMAND)", args[2])
		}
		if len(args) > 1 {
			return helpFor(ctx, args[1], out)
		}
		printHelp(out)
		return nil
	}
	if name == "--version" || name == "version" {
		return printVersion(out)
	}
	if strings.HasPrefix(name, "-") {
		// Flags without a command belong to the default command.
		return cmdVerify(ctx, args, out, errOut)
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(ctx, args[1:], out, errOut)
		}
	}
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	sort.Strings(names)
	return badInputf("unknown command %q (commands: %s; `arsim help` explains them)", name, strings.Join(names, ", "))
}

func printHelp(w io.Writer) {
	fmt.Fprintln(w, "arsim — a deterministic simulator of GPU allreduce on PCIe, NUMA and NVLink machines")
	fmt.Fprintln(w, "\nUsage: arsim [command] [flags]   (no command: verify on rtxpro6000x8-2numa)")
	fmt.Fprintln(w, "\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun `arsim help COMMAND` (or `arsim COMMAND --help`) for a command's flags and examples; `arsim --version` for the build.")
	fmt.Fprintln(w, "\nExit status:")
	for _, s := range exitStatuses {
		fmt.Fprintf(w, "  %d  %s\n", s.code, s.meaning)
	}
}

// newFlags returns a flag set whose --help prints usage and examples.
func newFlags(name, usage string, examples []string, errOut io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.Usage = func() {
		fmt.Fprintf(errOut, "Usage: arsim %s\n\nFlags:\n", usage)
		fs.PrintDefaults()
		if len(examples) > 0 {
			fmt.Fprintln(errOut, "\nExamples:")
			for _, e := range examples {
				fmt.Fprintln(errOut, "  "+e)
			}
		}
		fmt.Fprintln(errOut, "\n"+exitStatusLine)
	}
	return fs
}

// parse parses flags; --help ends the run with status 0. Flags are all a
// command takes after its own positional arguments (which the caller has
// taken off args), so anything left over is refused: a stray word, or a
// flag after one, which Go's flag package would silently not read.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelpShown
		}
		return badInput(err)
	}
	if fs.NArg() > 0 {
		more := ""
		if fs.NArg() > 1 {
			more = fmt.Sprintf(" (and %d more: %s)", fs.NArg()-1, quoteArgs(fs.Args()[1:]))
		}
		return badInputf("%s: unexpected argument %q%s: here only flags may follow, and a flag after a stray word would not be read (arsim %s --help)", fs.Name(), fs.Arg(0), more, fs.Name())
	}
	if f := fs.Lookup("parallel"); f != nil {
		if g, ok := f.Value.(flag.Getter); ok {
			if n, ok := g.Get().(int); ok && n < 0 {
				return badInputf("%s: --parallel %d: want how many to simulate at once, 1 or more (0 or unset: all cores)", fs.Name(), n)
			}
		}
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
