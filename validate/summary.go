package validate

import (
	"errors"
	"math"
	"slices"
	"sort"
)

func errPct(pred, meas float64) float64 { return (pred - meas) / meas * 100 }

// summarize fills Summary and Groups from Records and Skipped.
func (v *Validation) summarize() {
	if v.Records == nil {
		v.Records = []Compared{}
	}
	if v.Skipped == nil {
		v.Skipped = []Skipped{}
	}
	s := Summary{Count: len(v.Records), Skipped: len(v.Skipped)}
	var abs, modelAbs, oursOnModel, hostAbs, devAbs []float64
	groups := map[string]*struct{ errs, abs, model []float64 }{}
	var order []string
	for _, r := range v.Records {
		a := math.Abs(r.ErrorPct)
		abs = append(abs, a)
		if r.HostPaced {
			hostAbs = append(hostAbs, a)
		} else {
			devAbs = append(devAbs, a)
		}
		g, ok := groups[r.Group]
		if !ok {
			g = &struct{ errs, abs, model []float64 }{}
			groups[r.Group] = g
			order = append(order, r.Group)
		}
		if r.KernelEnd {
			s.KernelEndCount++
		}
		g.errs = append(g.errs, r.ErrorPct)
		g.abs = append(g.abs, a)
		if r.ModelErrorPct != nil {
			m := math.Abs(*r.ModelErrorPct)
			modelAbs = append(modelAbs, m)
			oursOnModel = append(oursOnModel, a)
			if r.ModelFallback {
				s.ModelFallbackCount++
			}
			g.model = append(g.model, m)
		}
	}
	s.MedianAbsErrorPct, s.P95AbsErrorPct = median(abs), nearestRank(abs, 95)
	s.HostPacedCount, s.HostPacedMedianAbs, s.HostPacedP95Abs = len(hostAbs), median(hostAbs), nearestRank(hostAbs, 95)
	s.DevicePacedCount, s.DevicePacedMedianAbs, s.DevicePacedP95Abs = len(devAbs), median(devAbs), nearestRank(devAbs, 95)
	s.Repeats = repeatsOf(v.Records)
	v.BySize = bySize(v.Records)
	v.Lines = LineFits(v.Records)
	s.ModelCount = len(modelAbs)
	if len(modelAbs) > 0 {
		s.ModelMedianAbs, s.ModelP95Abs = ptrTo(median(modelAbs)), ptrTo(nearestRank(modelAbs, 95))
		s.OursOnModelRecordsMedian, s.OursOnModelRecordsP95 = ptrTo(median(oursOnModel)), ptrTo(nearestRank(oursOnModel, 95))
	}
	reasons := map[string]int{}
	for _, sk := range v.Skipped {
		reasons[sk.class()]++
	}
	for reason, n := range reasons {
		s.SkippedByReason = append(s.SkippedByReason, ReasonCount{Reason: reason, Count: n})
	}
	sort.Slice(s.SkippedByReason, func(i, j int) bool {
		a, b := s.SkippedByReason[i], s.SkippedByReason[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return a.Reason < b.Reason
	})
	v.Summary = s
	v.HeldOut = heldOut(v.Records)
	v.Winners = winnerBins(v.Records)
	v.Mechanisms = v.Mechanisms[:0]
	for _, e := range evidenceOf(v.Records) {
		if e.Records > 0 {
			v.Mechanisms = append(v.Mechanisms, e)
		}
	}
	v.Groups = v.Groups[:0]
	for _, name := range order {
		g := groups[name]
		gs := GroupSummary{Group: name, Count: len(g.errs), MedianErrorPct: median(g.errs), MedianAbsErrorPct: median(g.abs), MaxAbsErrorPct: maxOf(g.abs)}
		if len(g.model) > 0 {
			gs.ModelMedianAbs = ptrTo(median(g.model))
		}
		v.Groups = append(v.Groups, gs)
	}
	sort.SliceStable(v.Groups, func(i, j int) bool {
		a, b := v.Groups[i], v.Groups[j]
		if a.MedianAbsErrorPct != b.MedianAbsErrorPct {
			return a.MedianAbsErrorPct > b.MedianAbsErrorPct
		}
		return a.Group < b.Group
	})
}

// class is the skip's reason as the summary counts it: a failed
// simulation by the package that failed, any other by its reason.
func (s Skipped) class() string {
	if se, ok := errors.AsType[*SkipError](s.Err); ok {
		return se.class()
	}
	return s.Reason
}

func ptrTo(v float64) *float64 { return &v }

// median returns the median of xs (the mean of the middle two for an even
// count), 0 for none. xs is not modified.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// nearestRank returns the p-th percentile of xs by the nearest-rank
// method: the ⌈p/100 × n⌉-th smallest value; 0 for none.
func nearestRank(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	k := int(math.Ceil(p / 100 * float64(len(s))))
	k = min(max(k, 1), len(s))
	return s[k-1]
}

func maxOf(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// repeatDeviations is, for each record whose configuration was measured
// more than once, how far (|%|) its measurement lies from the median of
// its configuration's measurements; -1 for the others. configs is how many
// configurations were measured more than once.
func repeatDeviations(recs []Compared) (dev []float64, configs int) {
	groups := configGroups(recs, func(i int, r Compared) (string, bool) { return r.config, r.config != "" })
	dev = make([]float64, len(recs))
	for i := range dev {
		dev[i] = -1
	}
	for _, idx := range groups {
		if len(idx) < 2 {
			continue
		}
		vals := make([]float64, len(idx))
		for j, i := range idx {
			vals[j] = recs[i].Measured
		}
		med := median(vals)
		if med <= 0 {
			continue
		}
		configs++
		for _, i := range idx {
			dev[i] = math.Abs(recs[i].Measured/med-1) * 100
		}
	}
	return dev, configs
}

// configGroups returns the indices of recs grouped by key (records whose
// key says false left out), the groups in the order their first record
// appears.
func configGroups(recs []Compared, key func(i int, r Compared) (string, bool)) [][]int {
	at := map[string]int{}
	var groups [][]int
	for i, r := range recs {
		k, ok := key(i, r)
		if !ok {
			continue
		}
		g, seen := at[k]
		if !seen {
			g = len(groups)
			at[k] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	return groups
}

// repeatsOf sums up the records whose configuration was measured more
// than once (Repeats).
func repeatsOf(recs []Compared) *Repeats {
	devs, configs := repeatDeviations(recs)
	if configs == 0 {
		return nil
	}
	rp := &Repeats{Configurations: configs}
	var all, dev, host []float64
	for i, d := range devs {
		if d < 0 {
			continue
		}
		all = append(all, d)
		if recs[i].HostPaced {
			host = append(host, d)
		} else {
			dev = append(dev, d)
		}
	}
	rp.Records = len(all)
	rp.MedianAbsPct, rp.P95AbsPct = median(all), nearestRank(all, 95)
	rp.DevicePacedRecords, rp.DevicePacedMedianAbsPct, rp.DevicePacedP95AbsPct = len(dev), median(dev), nearestRank(dev, 95)
	rp.HostPacedRecords, rp.HostPacedMedianAbsPct, rp.HostPacedP95AbsPct = len(host), median(host), nearestRank(host, 95)
	return rp
}

// bySize sums up the allreduce records by SizeRanges.
func bySize(recs []Compared) []SizeSummary {
	var out []SizeSummary
	for _, rg := range SizeRanges {
		ss := SizeSummary{Range: rg.Name}
		var errs, abs, device []float64
		for _, r := range recs {
			if r.bytes <= 0 || r.bytes < rg.Min || r.bytes > rg.Max {
				continue
			}
			errs = append(errs, r.ErrorPct)
			abs = append(abs, math.Abs(r.ErrorPct))
			if r.HostPaced {
				ss.HostPaced++
			} else {
				device = append(device, r.ErrorPct)
			}
		}
		if len(device) > 0 {
			ss.DeviceMinErrorPct, ss.DeviceMaxErrorPct = slices.Min(device), slices.Max(device)
		}
		if len(errs) == 0 {
			continue
		}
		ss.Count = len(errs)
		ss.MedianErrorPct, ss.MedianAbsErrorPct = median(errs), median(abs)
		ss.MinErrorPct, ss.MaxErrorPct = slices.Min(errs), slices.Max(errs)
		out = append(out, ss)
	}
	return out
}
