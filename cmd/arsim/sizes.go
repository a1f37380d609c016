package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/arsim/arsim/algos"
)

const sizeForms = "accepted forms: 43008, 42KiB, 1MiB, 2GiB, 64KB (=64000), a list 1KiB,42KiB,1MiB, or a range 1KiB..256MiB (powers of two)"

// parseSize reads one size: plain bytes or a number with B, KiB, MiB, GiB,
// TiB, KB, MB, GB, TB.
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"KB", 1000}, {"MB", 1000_000}, {"GB", 1000_000_000}, {"TB", 1000_000_000_000}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t = strings.TrimSpace(strings.TrimSuffix(t, u.suffix))
			mult = u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 {
		return 0, badInputf("size %q %s (%s)", s, whyNotASize(s, t, mult, err), sizeForms)
	}
	if n > algos.MaxBytes/mult {
		return 0, badInputf("size %q is above the limit of %d B (1 TiB: more than any GPU's memory)", s, int64(algos.MaxBytes))
	}
	return n * mult, nil
}

// maxSizes is the most sizes one list may hold: a range from 1 B to the
// largest size has 41, and each size is simulated for every algorithm.
const maxSizes = 256

// parseSizeRange reads LO..HI into its bounds; ok is false for a string
// that is no range.
func parseSizeRange(s string) (a, b int64, ok bool, err error) {
	lo, hi, ok := strings.Cut(s, "..")
	if !ok {
		return 0, 0, false, nil
	}
	if a, err = parseSize(lo); err != nil {
		return 0, 0, true, err
	}
	if b, err = parseSize(hi); err != nil {
		return 0, 0, true, err
	}
	if a > b {
		return 0, 0, true, badInputf("size range %q runs backwards (%s)", s, sizeForms)
	}
	return a, b, true, nil
}

// parseSizes reads a list or a power-of-two range.
func parseSizes(s string) ([]int64, error) {
	if a, b, ok, err := parseSizeRange(s); ok {
		if err != nil {
			return nil, err
		}
		var out []int64
		for x := a; x <= b; x *= 2 {
			out = append(out, x)
		}
		return out, nil
	}
	var out []int64
	for _, p := range splitList(s) {
		v, err := parseSize(p)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, badInputf("no sizes in %q (%s)", s, sizeForms)
	}
	if len(out) > maxSizes {
		return nil, badInputf("%d sizes: want at most %d (each is simulated for every algorithm; a range covers 1 B to 1 TiB in 41)", len(out), maxSizes)
	}
	return out, nil
}

// whyNotASize says what is wrong with size s, whose number part t (its
// unit, mult, taken off) strconv.ParseInt refused (err) or read as zero or
// less.
func whyNotASize(s, t string, mult int64, err error) string {
	var ne *strconv.NumError
	switch {
	case errors.As(err, &ne) && ne.Err == strconv.ErrRange && !strings.HasPrefix(t, "-"):
		return fmt.Sprintf("is above the limit of %d B (1 TiB: more than any GPU's memory)", int64(algos.MaxBytes))
	case err == nil || strings.HasPrefix(t, "-"):
		return "is not a positive number of bytes"
	}
	if f, ferr := strconv.ParseFloat(t, 64); ferr == nil && f > 0 && !strings.ContainsAny(t, "xXpPiInN_") {
		b := f * float64(mult)
		if b > float64(algos.MaxBytes) {
			return fmt.Sprintf("is above the limit of %d B (1 TiB: more than any GPU's memory)", int64(algos.MaxBytes))
		}
		if b == math.Trunc(b) {
			return fmt.Sprintf("is not written as a whole number: write it as %d", int64(b))
		}
		return fmt.Sprintf("is not a whole number of bytes (%g B)", b)
	}
	u := strings.TrimSpace(s)
	if i := strings.IndexFunc(u, func(r rune) bool { return r < '0' || r > '9' }); i > 0 {
		return fmt.Sprintf("has the unit %q, which is not one of B, KiB, MiB, GiB, TiB, KB, MB, GB, TB", strings.TrimSpace(u[i:]))
	}
	return "is not a positive number of bytes"
}
