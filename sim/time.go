package sim

import (
	"fmt"
	"math"
	"strconv"
)

// Duration is a span of simulated time in integer picoseconds.
type Duration int64

// Time is an instant of simulated time: picoseconds since the start of a run.
type Time int64

// Common durations.
const (
	Picosecond  Duration = 1
	Nanosecond           = 1000 * Picosecond
	Microsecond          = 1000 * Nanosecond
	Millisecond          = 1000 * Microsecond
	Second               = 1000 * Millisecond
)

// Add returns t+d.
func (t Time) Add(d Duration) Time { return t + Time(d) }

// Sub returns t-u.
func (t Time) Sub(u Time) Duration { return Duration(t - u) }

// String prints t as the duration since the start of the run.
func (t Time) String() string { return Duration(t).String() }

// Micros returns d in microseconds.
func (d Duration) Micros() float64 { return float64(d) / float64(Microsecond) }

// Seconds returns d in seconds.
func (d Duration) Seconds() float64 { return float64(d) / float64(Second) }

// String prints d with a unit that keeps 3–4 significant digits:
// "15 ps", "640 ns", "12.35 µs", "30.1 ms", "2.5 s".
func (d Duration) String() string {
	neg := d < 0
	a := d
	if neg {
		a = -d
	}
	var s string
	switch {
	case a < Nanosecond:
		s = strconv.FormatInt(int64(a), 10) + " ps"
	case a < Microsecond:
		s = trim(float64(a)/float64(Nanosecond)) + " ns"
	case a < Millisecond:
		s = trim(float64(a)/float64(Microsecond)) + " µs"
	case a < Second:
		s = trim(float64(a)/float64(Millisecond)) + " ms"
	default:
		s = trim(float64(a)/float64(Second)) + " s"
	}
	if neg {
		return "-" + s
	}
	return s
}

func trim(v float64) string {
	prec := 2
	if v >= 100 {
		prec = 1
	}
	s := strconv.FormatFloat(v, 'f', prec, 64)
	for len(s) > 0 && s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	if len(s) > 0 && s[len(s)-1] == '.' {
		s = s[:len(s)-1]
	}
	return s
}

// FromSeconds converts seconds to a Duration, rounding up to the next
// picosecond so that a transfer never finishes before its bytes are moved.
// It returns an error for NaN, negative or overflowing values.
func FromSeconds(s float64) (Duration, error) {
	if math.IsNaN(s) || s < 0 {
		return 0, fmt.Errorf("sim: duration %v s is not a non-negative number", s)
	}
	ps := math.Ceil(s * float64(Second))
	if ps >= math.MaxInt64/2 {
		return 0, fmt.Errorf("sim: duration %v s overflows simulated time", s)
	}
	return Duration(ps), nil
}

// Micros converts microseconds to a Duration, rounded to the nearest
// picosecond (for parameters written in µs).
func Micros(us float64) Duration { return Duration(math.Round(us * float64(Microsecond))) }

// Nanos converts nanoseconds to a Duration, rounded to the nearest picosecond.
func Nanos(ns float64) Duration { return Duration(math.Round(ns * float64(Nanosecond))) }

// Bytes is a count of bytes.
type Bytes int64

// Binary size units.
const (
	KiB Bytes = 1 << 10
	MiB Bytes = 1 << 20
	GiB Bytes = 1 << 30
)

// String prints b exactly when it is a whole number of KiB/MiB/GiB, else in bytes:
// "42 KiB", "256 MiB", "43008 B" is printed as "42 KiB", "1000 B".
func (b Bytes) String() string {
	switch {
	case b != 0 && b%GiB == 0:
		return strconv.FormatInt(int64(b/GiB), 10) + " GiB"
	case b != 0 && b%MiB == 0:
		return strconv.FormatInt(int64(b/MiB), 10) + " MiB"
	case b != 0 && b%KiB == 0:
		return strconv.FormatInt(int64(b/KiB), 10) + " KiB"
	}
	return strconv.FormatInt(int64(b), 10) + " B"
}

// Rate is a data rate in bytes per second.
type Rate float64

// GBps is one gigabyte (10^9 bytes) per second, the unit vendors quote.
const GBps Rate = 1e9

// GB returns r in GB/s.
func (r Rate) GB() float64 { return float64(r) / 1e9 }

// String prints r in GB/s with two decimals.
func (r Rate) String() string { return strconv.FormatFloat(r.GB(), 'f', 2, 64) + " GB/s" }
