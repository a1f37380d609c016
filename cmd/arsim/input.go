package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/internal/crash"
	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
)

// What every command shares about input it refuses and results it cannot
// give: exit statuses, options, numbers and durations (stray arguments are
// refused by parse, in run.go; outputs are written by output.go).

// Exit statuses, as `arsim help` lists them.
const (
	exitOK       = 0 // success (and --help)
	exitNoResult = 1 // the run could not produce a result; the reason is printed
	exitBadInput = 2 // bad input or usage, refused before any work with what is wrong
	exitInternal = 3 // a bug in arsim: a recovered panic
)

var exitStatuses = []struct {
	code    int
	meaning string
}{
	{exitOK, "success"},
	{exitNoResult, "the run could not produce a result (nothing could be simulated, an output could not be written); the reason is printed"},
	{exitBadInput, "bad input or usage: a flag, option, size, file or record that arsim refuses, with what is wrong and what is allowed"},
	{exitInternal, "internal error: a bug in arsim, not in the input (please report it with the command line)"},
}

// exitStatusLine is the short form each command's --help ends with.
const exitStatusLine = "Exit status: 0 success, 1 no result (the reason is printed), 2 bad input or usage, 3 internal error (arsim help)"

// errHelpShown ends a run after --help printed the usage (exit 0).
var errHelpShown = errors.New("help shown")

// inputError marks errors caused by what the user gave: exit status 2.
type inputError struct{ err error }

func (e inputError) Error() string { return e.err.Error() }
func (e inputError) Unwrap() error { return e.err }

func badInput(err error) error {
	if err == nil {
		return nil
	}
	if crash.Is(err) {
		return err // a bug stays a bug, whatever the caller thought
	}
	return inputError{err}
}

func badInputf(format string, args ...any) error { return inputError{fmt.Errorf(format, args...)} }

// exitCode maps a run's error to the exit status: a recovered panic is 3
// even when wrapped as bad input.
func exitCode(err error) int {
	switch {
	case err == nil, errors.Is(err, errHelpShown):
		return exitOK
	case crash.Is(err):
		return exitInternal
	}
	if _, ok := errors.AsType[inputError](err); ok {
		return exitBadInput
	}
	return exitNoResult
}

// trackedWriter remembers the first error writing to w (a full disk, a
// closed pipe), so that a run whose output was lost does not exit 0.
type trackedWriter struct {
	w   io.Writer
	err error
}

func (t *trackedWriter) Write(p []byte) (int, error) {
	n, err := t.w.Write(p)
	if err != nil && t.err == nil {
		t.err = err
	}
	return n, err
}

// finish is the run's outcome once its output is flushed: a failed write
// to standard output turns success into exit status 1.
func finish(err error, out *trackedWriter) error {
	if err == nil && out.err != nil {
		return fmt.Errorf("writing the output: %w", out.err)
	}
	return err
}

// reportError prints err for the user: an internal error with the command
// line to report and the stack.
func reportError(w io.Writer, err error, args []string) {
	if err == nil || errors.Is(err, errHelpShown) {
		return
	}
	fmt.Fprintln(w, "arsim:", err)
	ce, ok := errors.AsType[*crash.Error](err)
	if !ok {
		return
	}
	fmt.Fprintf(w, "\nThis is a bug in arsim, not a problem with the input. Please report it with the command line\n\n  arsim %s\n\nand the stack below.\n\n%s", quoteArgs(args), ce.Stack)
}

// quoteArgs writes a command line that a shell reads back as args.
func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r == '-' || r == '_' || r == '.' || r == '/' || r == ',' || r == '=' || r == ':' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
		}) < 0 {
			q[i] = a
			continue
		}
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// stderrNote prints a line for the user beside the results (not part of
// them): why an algorithm did not run, for example.
func stderrNote(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "arsim: "+format+"\n", args...)
}

// checkOpts refuses --opts that none of the algorithms takes, or a value
// one of them refuses, whatever the number of algorithms: an option is
// input, and a typo must not turn into a row that "cannot run here".
func checkOpts(names []string, t *topology.Topology, opts map[string]string) error {
	return badInput(algos.ValidateOptions(names, t, opts))
}

// intRange writes an integer option's range as `arsim algos` lists it.
func intRange(r algos.IntRange) string {
	hi := strconv.Itoa(r.Max)
	if r.PerMachine != nil {
		hi = r.MaxName
	}
	s := strconv.Itoa(max(r.Min, 1)) + ".." + hi
	if r.Step > 1 {
		s += fmt.Sprintf(" (×%d)", r.Step)
	}
	return s
}

// ran is one algorithm's outcome in a command's results.
type ran struct {
	algo string
	err  error
}

// noteCannotRun says on stderr, once per algorithm, which could not run on
// machine and why (its row stays in the results, marked), and returns an
// error (exit status 1) when none could: the run produced no result.
func noteCannotRun(errOut io.Writer, machine string, outs []ran) error {
	seen := map[string]bool{}
	ok := 0
	for _, o := range outs {
		if o.err == nil {
			ok++
			continue
		}
		if !seen[o.algo] {
			seen[o.algo] = true
			stderrNote(errOut, "%s cannot run on %s: %v", o.algo, machine, o.err)
		}
	}
	if ok == 0 && len(outs) > 0 {
		return fmt.Errorf("nothing was simulated: no algorithm could run on %s (the reasons are above)", machine)
	}
	return nil
}

// maxDuration is the longest duration a flag takes: an hour, beyond any
// pass of a model and far inside the simulator's clock (int64 picoseconds
// run out after 106 days; a run adds many such durations).
const maxDuration = time.Hour

// simDuration converts duration flag --name to simulated time, refusing a
// negative one and one above maxDuration (whose picoseconds would
// overflow once summed over a pass).
func simDuration(name string, d time.Duration) (sim.Duration, error) {
	if d < 0 || d > maxDuration {
		return 0, badInputf("--%s %v: want a duration from 0 to %v", name, d, maxDuration)
	}
	return sim.Duration(d.Nanoseconds()) * sim.Nanosecond, nil
}

// finite refuses NaN and ±Inf in number flag --name.
func finite(name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return badInputf("--%s %v: want a finite number", name, v)
	}
	return nil
}

// intIn refuses integer flag --name outside lo..hi, saying why hi.
func intIn(name string, v, lo, hi int, why string) error {
	if v < lo || v > hi {
		return badInputf("--%s %d: want %d–%d (%s)", name, v, lo, hi, why)
	}
	return nil
}

// readHead reads the first n bytes of the file at path (fewer if it is
// shorter): enough to tell a format, without reading an endless file.
func readHead(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}
