package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/arsim/arsim/internal/crash"
)

// What every command shares about input it refuses and results it cannot
// give: exit statuses, stray arguments, numbers, durations and outputs.

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
