package validate

import (
	"cmp"
	"math"
	"slices"
)

// LineFit is the NCCL allreduce records of one file and group over the
// sizes where the model's NCCL makes one choice (Compared.NCCLChoice: the
// same algorithm, protocol and channels), each side fitted as a fixed
// cost plus a cost per MiB, time = FixedUs + PerMiBUs × size, by least
// squares of the relative distances (relativeLine). Where a table
// misses, the two lines say whether the model lacks a cost of every call
// (or every step, at this world size) or a cost of every byte: the
// parameters to look at or to calibrate differ. Device-paced records
// only (a host-paced value is the host's issue interval), with positive
// times on both sides (the distances are relative); at least three sizes.
type LineFit struct {
	File     string `json:"file,omitempty"`
	Group    string `json:"group"`
	Choice   string `json:"nccl_choice"`
	Records  int    `json:"records"`
	Sizes    int    `json:"sizes"`
	MinBytes int64  `json:"min_bytes"`
	MaxBytes int64  `json:"max_bytes"`
	// MeasuredFixedUs and MeasuredPerMiBUs are the measured records' line,
	// MaxMeasuredOffPct the largest distance of a measured record from it
	// (percent of the record's value): how well a line describes them.
	MeasuredFixedUs   float64 `json:"measured_fixed_us"`
	MeasuredPerMiBUs  float64 `json:"measured_per_mib_us"`
	MaxMeasuredOffPct float64 `json:"max_measured_off_pct"`
	// SimulatedFixedUs and SimulatedPerMiBUs are the simulated values' line.
	SimulatedFixedUs  float64 `json:"simulated_fixed_us"`
	SimulatedPerMiBUs float64 `json:"simulated_per_mib_us"`
}

// minLineSizes is the fewest sizes a LineFit is made from.
const minLineSizes = 3

// LineFits fits the NCCL allreduce records (those with an NCCLChoice) by
// file, group and choice (LineFit), ordered by file, group and size.
func LineFits(recs []Compared) []LineFit {
	type key struct{ file, group, choice string }
	by := map[key][]Compared{}
	var keys []key
	for _, r := range recs {
		if r.NCCLChoice == "" || r.HostPaced || r.Unit != "us" || r.bytes <= 0 || !(r.Measured > 0) || !(r.Predicted > 0) {
			continue
		}
		k := key{r.File, r.Group, r.NCCLChoice}
		if _, ok := by[k]; !ok {
			keys = append(keys, k)
		}
		by[k] = append(by[k], r)
	}
	var out []LineFit
	for _, k := range keys {
		rs := by[k]
		sizes := map[int64]bool{}
		lf := LineFit{File: k.file, Group: k.group, Choice: k.choice, Records: len(rs), MinBytes: rs[0].bytes, MaxBytes: rs[0].bytes}
		xs := make([]float64, len(rs))
		meas := make([]float64, len(rs))
		sim := make([]float64, len(rs))
		for i, r := range rs {
			sizes[r.bytes] = true
			lf.MinBytes, lf.MaxBytes = min(lf.MinBytes, r.bytes), max(lf.MaxBytes, r.bytes)
			xs[i], meas[i], sim[i] = float64(r.bytes)/(1<<20), r.Measured, r.Predicted
		}
		lf.Sizes = len(sizes)
		if lf.Sizes < minLineSizes {
			continue
		}
		lf.MeasuredFixedUs, lf.MeasuredPerMiBUs = relativeLine(xs, meas)
		lf.SimulatedFixedUs, lf.SimulatedPerMiBUs = relativeLine(xs, sim)
		for i, y := range meas {
			off := math.Abs(lf.MeasuredFixedUs+lf.MeasuredPerMiBUs*xs[i]-y) / y * 100
			lf.MaxMeasuredOffPct = max(lf.MaxMeasuredOffPct, off)
		}
		out = append(out, lf)
	}
	slices.SortStableFunc(out, func(a, b LineFit) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Group, b.Group), cmp.Compare(a.MinBytes, b.MinBytes))
	})
	return out
}

// relativeLine returns the intercept and slope of the line through (xs,
// ys) that least-squares the relative distances (a + b·x − y) / y: every
// record counts alike, a 1 GiB one no more than a 1 MiB one. xs must hold
// two distinct values or more, ys be positive.
func relativeLine(xs, ys []float64) (intercept, slope float64) {
	// the normal equations of Σ w (a + b x − y)², w = 1/y²
	var sw, swx, swxx, swy, swxy float64
	for i, x := range xs {
		w := 1 / (ys[i] * ys[i])
		sw += w
		swx += w * x
		swxx += w * x * x
		swy += w * ys[i]
		swxy += w * x * ys[i]
	}
	det := sw*swxx - swx*swx
	slope = (sw*swxy - swx*swy) / det
	return (swy - slope*swx) / sw, slope
}
