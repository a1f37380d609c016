package crash

import (
	"errors"
	"fmt"
	"runtime/debug"
)

// Error is a recovered panic: a bug, never a property of the input.
type Error struct {
	Value any    // what was passed to panic
	Stack []byte // the panicking goroutine's stack (runtime/debug.Stack)
}

func (e *Error) Error() string { return fmt.Sprintf("internal error: panic: %v", e.Value) }

// Unwrap returns the panic's value when it is an error.
func (e *Error) Unwrap() error {
	if err, ok := e.Value.(error); ok {
		return err
	}
	return nil
}

// Recover, deferred directly, turns a panic of the function that deferred
// it into an *Error stored in *err:
//
//	func work() (err error) {
//		defer crash.Recover(&err)
//		…
//	}
//
// A panic that is already an *Error (from a nested Recover) is kept as it
// is. Without a panic, *err is left alone.
func Recover(err *error) {
	p := recover()
	if p == nil {
		return
	}
	if e, ok := p.(*Error); ok {
		*err = e
		return
	}
	*err = &Error{Value: p, Stack: debug.Stack()}
}

// Is reports whether err is, or wraps, a recovered panic.
func Is(err error) bool {
	_, ok := errors.AsType[*Error](err)
	return ok
}

// First returns the first error of errs that is a recovered panic, or nil.
func First(errs ...error) error {
	for _, e := range errs {
		if Is(e) {
			return e
		}
	}
	return nil
}
