package validate

import (
	"errors"
	"fmt"
	"strings"
)

// Why a record has no simulated value. A skipped record's Err wraps one of
// these (errors.Is).
var (
	// ErrBadRecord: the record lacks what its twin needs (its primary
	// value, two ranks for a barrier).
	ErrBadRecord = errors.New("validate: record incomplete for its twin")
	// ErrNoPreset: no preset models the record's system.
	ErrNoPreset = errors.New("validate: no preset for the system")
	// ErrNotModelled: the record measures something the model does not
	// cover (local HBM streaming, a fence variant, an NCCL setting, …).
	ErrNotModelled = errors.New("validate: not modelled")
	// ErrSimulation: the twin ran and failed (an error or a panic of the
	// simulator, or a value that is not a positive number).
	ErrSimulation = errors.New("validate: simulation failed")
)

// SkipError says why a record was not compared with its twin. Its Reason
// is the sentence shown beside the record; Unwrap gives the sentinel and
// the cause underneath, if any.
type SkipError struct {
	// Why is ErrBadRecord, ErrNoPreset, ErrNotModelled or ErrSimulation.
	Why error
	// Reason says why in words, for people.
	Reason string
	// Cause is the error underneath (a simulator's, a trace's), or nil.
	Cause error
}

func (e *SkipError) Error() string { return "validate: " + e.Reason }

// Unwrap returns the sentinel and the cause.
func (e *SkipError) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Why}
	}
	return []error{e.Why, e.Cause}
}

// class shortens the reason for counting skipped records: a failed
// simulation by the first part of its cause's message (the package that
// failed), any other skip by its whole reason.
func (e *SkipError) class() string {
	if errors.Is(e.Why, ErrSimulation) && e.Cause != nil {
		msg := e.Cause.Error()
		if i := strings.Index(msg, ":"); i > 0 {
			return "simulation failed: " + msg[:i]
		}
	}
	return e.Reason
}

func notModelled(format string, a ...any) error {
	return &SkipError{Why: ErrNotModelled, Reason: fmt.Sprintf(format, a...)}
}

func badRecord(format string, a ...any) error {
	return &SkipError{Why: ErrBadRecord, Reason: fmt.Sprintf(format, a...)}
}

// simulationFailed wraps what a twin's simulation returned.
func simulationFailed(cause error) *SkipError {
	return &SkipError{Why: ErrSimulation, Reason: "simulation failed: " + cause.Error(), Cause: cause}
}
