package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
)

// isInput reports whether err is an input error (exit status 2) with a
// message.
func isInput(err error) bool {
	_, ok := errors.AsType[inputError](err)
	return ok && err.Error() != ""
}

// FuzzSizes: --sizes, --bytes and --max-bytes. A size list or range never
// panics; what is accepted is 1 to 256 sizes of 1 B to 1 TiB, a range
// ascending; what is refused is an input error.
func FuzzSizes(f *testing.F) {
	for _, s := range []string{"43008", "42KiB", "1KiB..256MiB", "1..1TiB", "8,1KiB,43008", "64KB", "0", "-1", "1e30", "NaN",
		"12 parsecs", "1MiB..1KiB", "9223372036854775807", "1024TiB", "1TiB", ",,,", "..", "1..", " 2 GiB ", "1B..1B"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sizes, err := parseSizes(s)
		if err != nil {
			if !isInput(err) {
				t.Fatalf("%q: %v is not an input error", s, err)
			}
			return
		}
		if len(sizes) == 0 || len(sizes) > maxSizes {
			t.Fatalf("%q: %d sizes", s, len(sizes))
		}
		for i, b := range sizes {
			if b < 1 || b > algos.MaxBytes {
				t.Fatalf("%q: size %d accepted", s, b)
			}
			if strings.Contains(s, "..") && i > 0 && b <= sizes[i-1] {
				t.Fatalf("%q: range not ascending: %v", s, sizes)
			}
		}
	})
}

// FuzzOpts: --opts. Whatever the text, parsing and checking it against
// every algorithm never panics; an option accepted is one some algorithm
// takes, with a value that algorithm's own Validate accepts.
func FuzzOpts(f *testing.F) {
	for _, s := range []string{"proto=ll,channels=2", "p2p_level=sys,proto=ll", "nosuchkey=1", "channels=0", "channels=-1", "channels=2000000000",
		"threads=0", "max_size=-1", "shape=bogus", "blocks=1000000000,threads=1000000000", "nthreads=96", "nthreads=100", "blocks=188",
		"blocks=189", "threads=1024", "hidden=65536", "=", "a=b=c", "channels=1e3", "channels=0x10", "channels=+5", "  proto = ll  ",
		"NCCL_P2P_LEVEL=SYS,NCCL_PROTO=LL,Simple", "NCCL_MAX_NCHANNELS=2000000000", "NCCL_PROTO=^LL128", "NCCL_NTHREADS=100", "NCCL_ALGO=Tree,NCCL_MIN_NCHANNELS=0"} {
		f.Add(s)
	}
	top, err := topology.Load("rtxpro6000x8-2numa")
	if err != nil {
		f.Fatal(err)
	}
	names := algos.Names()
	f.Fuzz(func(t *testing.T, s string) {
		opts, err := parseOpts(s)
		if err != nil {
			if !isInput(err) {
				t.Fatalf("%q: %v is not an input error", s, err)
			}
			return
		}
		if err := checkOpts(names, top, opts); err != nil {
			if !isInput(err) {
				t.Fatalf("%q: %v is not an input error", s, err)
			}
			return
		}
		for k := range opts {
			taken := false
			for _, n := range names {
				a, _ := algos.Lookup(n)
				mine := algos.OptionsFor(n, opts)
				if _, ok := mine[k]; !ok {
					continue
				}
				taken = true
				req := algos.Request{Top: top, Ranks: 8, Bytes: 4096, DType: algos.BF16, Opts: mine}
				if err := algos.Validate(a, req); err != nil {
					t.Fatalf("%q accepted for all, but %s refuses it: %v", s, n, err)
				}
			}
			if !taken {
				t.Fatalf("%q: option %q accepted, taken by no algorithm", s, k)
			}
		}
	})
}

// FuzzDurations: --compute and --draft. A duration that parses is either
// refused as input or becomes simulated time of 0 to an hour, exactly its
// nanoseconds in picoseconds (no overflow).
func FuzzDurations(f *testing.F) {
	for _, s := range []string{"5ms", "1.5ms", "6000h", "1h", "1h0m0.000000001s", "-1ms", "0", "2562047h", "9223372036854775807ns", "0.5us", "1µs"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := time.ParseDuration(s)
		if err != nil {
			return // the flag package refuses it as input
		}
		got, err := simDuration("compute", d)
		if err != nil {
			if !isInput(err) {
				t.Fatalf("%q: %v is not an input error", s, err)
			}
			if d >= 0 && d <= maxDuration {
				t.Fatalf("%q (%v) refused: %v", s, d, err)
			}
			return
		}
		if d < 0 || d > maxDuration || got != sim.Duration(d.Nanoseconds())*sim.Nanosecond || got < 0 {
			t.Fatalf("%q (%v) accepted as %v", s, d, got)
		}
	})
}

// A size refused says why: its sign, its unit, its fraction (with the
// bytes to write instead where they are whole) or the limit.
func TestSizeRefusalsSayWhy(t *testing.T) {
	for s, want := range map[string]string{
		"0":                    "is not a positive number of bytes",
		"-5KiB":                "is not a positive number of bytes",
		"1PiB":                 `has the unit "PiB", which is not one of`,
		"12 parsecs":           `has the unit "parsecs"`,
		"1.5MiB":               "is not written as a whole number: write it as 1572864",
		"1e3":                  "write it as 1000",
		"1.3KiB":               "is not a whole number of bytes (1331.2 B)",
		"99999999999999999999": "is above the limit of 1099511627776 B",
		"1e30":                 "is above the limit",
		"2TiB":                 "is above the limit",
		"NaN":                  "is not a positive number of bytes",
	} {
		_, err := parseSize(s)
		if assert.True(t, isInput(err), "%q: %v", s, err) {
			assert.Contains(t, err.Error(), want, s)
		}
	}
}
