package trace

import (
	"fmt"
	"os"
)

// ReadOptions control how strictly the readers treat malformed input.
// The zero value is strict.
type ReadOptions struct {
	// SkipBad makes a reader skip a malformed line (or event) and report it
	// in the returned []BadLine instead of failing. Default false: the first
	// malformed line is returned as an error.
	SkipBad bool
}

// BadLine is a line (or, for Kineto traces, an event) that a reader skipped
// because ReadOptions.SkipBad was set.
type BadLine struct {
	// Line is the 1-based line number in the input.
	Line int
	// Err says what is wrong; it is a *ParseError.
	Err error
}

// ParseError is the error every reader in this package returns for
// malformed input. Its message reads
//
//	trace: file.jsonl line 12: field "us": want number, got string
type ParseError struct {
	// File is the name the caller gave the input (usually its path).
	File string
	// Line is the 1-based line number; 0 when the error concerns the
	// whole input.
	Line int
	// Field is the offending field or column, or "" when none applies.
	Field string
	// Msg describes the problem.
	Msg string
}

// Error implements error.
func (e *ParseError) Error() string {
	loc := e.File
	if loc == "" {
		loc = "<input>"
	}
	if e.Line > 0 {
		loc = fmt.Sprintf("%s line %d", loc, e.Line)
	}
	if e.Field != "" {
		return fmt.Sprintf("trace: %s: field %q: %s", loc, e.Field, e.Msg)
	}
	return fmt.Sprintf("trace: %s: %s", loc, e.Msg)
}

// fieldError is a problem with one field, before the file and line are known.
type fieldError struct {
	field string
	msg   string
}

func (e *fieldError) Error() string {
	if e.field == "" {
		return e.msg
	}
	return fmt.Sprintf("field %q: %s", e.field, e.msg)
}

func fieldErrf(field, format string, args ...any) *fieldError {
	return &fieldError{field: field, msg: fmt.Sprintf(format, args...)}
}

// at turns err (a *fieldError or any other error) into a *ParseError for
// the given file and line.
func at(file string, line int, err error) *ParseError {
	if fe, ok := err.(*fieldError); ok {
		return &ParseError{File: file, Line: line, Field: fe.field, Msg: fe.msg}
	}
	if pe, ok := err.(*ParseError); ok {
		return pe
	}
	return &ParseError{File: file, Line: line, Msg: err.Error()}
}

// openFile opens path for one of the *File readers.
func openFile(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	return f, nil
}
