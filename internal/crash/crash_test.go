package crash

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func panics(v any) (err error) {
	defer Recover(&err)
	panic(v)
}

func TestRecoverTurnsAPanicIntoAnErrorWithItsStack(t *testing.T) {
	err := panics("boom")
	if !Is(err) {
		t.Fatalf("got %v, want a crash error", err)
	}
	e, _ := errors.AsType[*Error](err)
	if e.Value != "boom" || !strings.Contains(err.Error(), "internal error: panic: boom") {
		t.Fatalf("error %q, value %v", err, e.Value)
	}
	if !strings.Contains(string(e.Stack), "panics") {
		t.Fatalf("stack does not name the panicking function:\n%s", e.Stack)
	}
}

func TestRecoverKeepsAnErrorValueReachable(t *testing.T) {
	cause := errors.New("cause")
	err := panics(cause)
	if !errors.Is(err, cause) {
		t.Fatalf("%v does not wrap its cause", err)
	}
}

func TestRecoverLeavesAnErrorAloneWithoutAPanic(t *testing.T) {
	f := func() (err error) {
		defer Recover(&err)
		return fmt.Errorf("plain")
	}
	if err := f(); Is(err) || err.Error() != "plain" {
		t.Fatalf("got %v", err)
	}
}

func TestFirstFindsTheCrashAmongOtherErrors(t *testing.T) {
	c := panics(1)
	if got := First(errors.New("a"), nil, fmt.Errorf("wrapped: %w", c)); !Is(got) {
		t.Fatalf("got %v", got)
	}
	if First(errors.New("a"), nil) != nil {
		t.Fatal("found a crash where there is none")
	}
}
