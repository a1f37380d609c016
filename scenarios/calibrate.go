package scenarios

import (
	"fmt"
	"io"
	"math"
	"path"
	"strconv"
	"strings"

	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// CalibrateOptions control Calibrate.
type CalibrateOptions struct {
	// Fit are glob patterns (path.Match) over parameter names; every
	// matching parameter is fitted. Each pattern must match at least one.
	Fit []string
	// HoldoutEvery: every HoldoutEvery-th simulable record (in line order)
	// is held out of the fit and only scored (default 3; 1 is refused).
	HoldoutEvery int
	// Preset, if set, names the preset every record is simulated on,
	// whatever its system id (arsim calibrate --topology).
	Preset string
	// Base are the parameters to start from, by preset name (default: the
	// preset's defaults).
	Base map[string]*topology.Params
	// File names the traces in the fitted parameters' source.
	File string
	// Sweeps of coordinate descent over the parameters (default 3; fewer
	// when a sweep moves nothing).
	Sweeps int
	// MaxEvals caps the parameter settings simulated (default 600), so a
	// calibration takes bounded time. Each evaluation simulates the fit
	// records that depend on the parameter being searched.
	MaxEvals int
	// Parallel records simulated at once (default GOMAXPROCS).
	Parallel int
	// Progress, if set, is told what is being searched.
	Progress func(msg string)
}

// ErrorStats are the absolute errors of a set of records.
type ErrorStats struct {
	Count        int     `json:"count"`
	MedianAbsPct float64 `json:"median_abs_error_pct"`
	P95AbsPct    float64 `json:"p95_abs_error_pct"`
}

// FittedParam is one parameter after calibration.
type FittedParam struct {
	Name string  `json:"name"`
	Unit string  `json:"unit"`
	Min  float64 `json:"min"`
	// Max is the upper physical bound; 0: none (the search stops at 4×
	// the starting value).
	Max float64 `json:"max"`
	// Default is the value the fit started from; Fitted where it ended.
	Default   float64 `json:"default"`
	Fitted    float64 `json:"fitted"`
	ChangePct float64 `json:"change_pct"`
	// Status: "fitted", "pinned at lower bound …", "pinned at upper bound
	// …", "pinned at search limit …", "unchanged" (the start was best),
	// "no effect" (no fit record's prediction depends on it) or "not
	// fitted: …".
	Status string `json:"status"`
	// Records is how many fit records depend on the parameter.
	Records int `json:"records"`
	// Source is the parameter's source after the fit.
	Source string `json:"source"`
}

// Calibration is the outcome of Calibrate.
type Calibration struct {
	Preset string `json:"preset"`
	File   string `json:"file,omitempty"`
	// Fit and HeldOut are the errors before and after the fit.
	FitBefore     ErrorStats    `json:"fit_before"`
	FitAfter      ErrorStats    `json:"fit_after"`
	HeldOutBefore ErrorStats    `json:"held_out_before"`
	HeldOutAfter  ErrorStats    `json:"held_out_after"`
	Params        []FittedParam `json:"params"`
	// Skipped records could not be simulated at the start (see Validate).
	Skipped     int `json:"skipped"`
	Evaluations int `json:"evaluations"`
	Sweeps      int `json:"sweeps"`
	// EvalCapHit says the fit stopped at MaxEvals.
	EvalCapHit bool `json:"eval_cap_hit"`
	// Fitted is the whole parameter set after the fit.
	Fitted *topology.Params `json:"-"`
	// defaults are the preset's own values, for WriteParams.
	defaults *topology.Params
}

// calib holds the state of one calibration.
type calib struct {
	preset   *topology.Preset
	twins    []*twin
	fit      []int // indices into twins
	opts     CalibrateOptions
	evals    int
	capHit   bool
	measured []float64
}

// predict simulates the twins idx with parameters ps; a failed build or
// simulation gives NaN for the records concerned.
func (c *calib) predict(ps *topology.Params, idx []int) []float64 {
	c.evals++
	out := make([]float64, len(idx))
	top, err := c.preset.BuildWith(ps)
	if err != nil {
		for i := range out {
			out[i] = math.NaN()
		}
		return out
	}
	sub := make([]*twin, len(idx))
	for i, k := range idx {
		sub[i] = c.twins[k]
	}
	res := simulateAll(sub, func(*twin) (*topology.Topology, error) { return top, nil }, c.opts.Parallel, false, nil)
	for i, o := range res {
		if o.err != nil {
			out[i] = math.NaN()
		} else {
			out[i] = o.pred
		}
	}
	return out
}

// objective is the median absolute log error of preds against the twins
// idx, plus a thousandth of the mean as a tie-break (the median alone is
// flat between records). A failed prediction makes it +Inf.
func (c *calib) objective(idx []int, preds []float64) float64 {
	if len(idx) == 0 {
		return 0
	}
	errs := make([]float64, len(idx))
	sum := 0.0
	for i, k := range idx {
		p := preds[i]
		if math.IsNaN(p) || p <= 0 {
			return math.Inf(1)
		}
		errs[i] = math.Abs(math.Log(p / c.measured[k]))
		sum += errs[i]
	}
	return median(errs) + 1e-3*sum/float64(len(errs))
}

func (c *calib) stats(idx []int, preds []float64) ErrorStats {
	abs := make([]float64, 0, len(idx))
	for i, k := range idx {
		abs = append(abs, math.Abs(errPct(preds[i], c.measured[k])))
	}
	return ErrorStats{Count: len(idx), MedianAbsPct: median(abs), P95AbsPct: nearestRank(abs, 95)}
}

// MatchParams returns the names in ps that the patterns match, in
// definition order, or an error naming a pattern that is malformed or
// matches nothing (with the parameter names).
func MatchParams(ps *topology.Params, patterns []string) ([]string, error) {
	if len(patterns) == 0 {
		return nil, fmt.Errorf("scenarios: calibrate: no parameters to fit (want glob patterns, e.g. pcie.*; parameters: %s)", strings.Join(ps.Names(), ", "))
	}
	chosen := map[string]bool{}
	for _, pat := range patterns {
		n := 0
		for _, name := range ps.Names() {
			ok, err := path.Match(pat, name)
			if err != nil {
				return nil, fmt.Errorf("scenarios: calibrate: pattern %q: %v", pat, err)
			}
			if ok {
				chosen[name] = true
				n++
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("scenarios: calibrate: pattern %q matches no parameter (parameters: %s)", pat, strings.Join(ps.Names(), ", "))
		}
	}
	var out []string
	for _, name := range ps.Names() {
		if chosen[name] {
			out = append(out, name)
		}
	}
	return out, nil
}

// space is a parameter's search interval, in log space when its lower bound
// is positive.
type space struct {
	lo, hi    float64 // in the parameter's unit
	log       bool
	integer   bool
	limitNote string // why hi is what it is, when not a physical bound
}

func (s space) toX(v float64) float64 {
	if s.log {
		return math.Log(v)
	}
	return v
}

func (s space) fromX(x float64) float64 {
	v := x
	if s.log {
		v = math.Exp(x)
	}
	if s.integer {
		v = math.Round(v)
	}
	return min(max(v, s.lo), s.hi)
}

// Calibrate fits the parameters matching opts.Fit to the records by
// coordinate descent: for each parameter in turn, a 9-point scan of its
// physical range (log-spaced when the lower bound is positive; a missing
// upper bound is taken as 4× the starting value), then a golden-section
// search around the best scan point, minimising the median absolute log
// error over the fit records that depend on the parameter; the new value is
// kept only when the median over all fit records does not get worse.
// Every HoldoutEvery-th simulable record, in the order given, is held out
// and only scored. All records must belong to one preset. Values never
// leave their physical ranges: a fit that wants to is reported as pinned at
// the bound.
func Calibrate(recs []trace.Record, opts CalibrateOptions) (*Calibration, error) {
	if opts.HoldoutEvery == 0 {
		opts.HoldoutEvery = 3
	}
	if opts.HoldoutEvery < 2 {
		return nil, fmt.Errorf("scenarios: calibrate: holdout-every must be ≥ 2 (every k-th record is held out), got %d", opts.HoldoutEvery)
	}
	if opts.Sweeps <= 0 {
		opts.Sweeps = 3
	}
	if opts.MaxEvals <= 0 {
		opts.MaxEvals = 600
	}
	c := &calib{opts: opts}
	skipped := 0
	override, err := overridePreset(opts.Preset)
	if err != nil {
		return nil, err
	}
	var prepared []*twin
	for _, r := range recs {
		t, why := prepare(r, override)
		if why != "" {
			skipped++
			continue
		}
		if c.preset != nil && t.preset != c.preset {
			return nil, fmt.Errorf("scenarios: calibrate: records of presets %s and %s: calibrate one machine at a time", c.preset.Name, t.preset.Name)
		}
		c.preset = t.preset
		prepared = append(prepared, t)
	}
	if c.preset == nil {
		return nil, fmt.Errorf("scenarios: calibrate: none of the %d records can be simulated", len(recs))
	}
	defaults := c.preset.DefaultParams()
	base := defaults.Clone()
	if b := opts.Base[c.preset.Name]; b != nil {
		base = b.Clone()
	}
	names, err := MatchParams(base, opts.Fit)
	if err != nil {
		return nil, err
	}
	// The simulable records: those that run at the starting parameters.
	c.twins = prepared
	all := make([]int, len(prepared))
	for i := range all {
		all[i] = i
	}
	c.measured = make([]float64, len(prepared))
	for i, t := range prepared {
		c.measured[i] = t.measured
	}
	start := c.predict(base, all)
	var ok []int
	for i, p := range start {
		if math.IsNaN(p) {
			skipped++
			continue
		}
		ok = append(ok, i)
	}
	if len(ok) < 2 {
		return nil, fmt.Errorf("scenarios: calibrate: only %d record(s) can be simulated; need a fit set and a held-out set", len(ok))
	}
	var held []int
	for j, i := range ok {
		if (j+1)%opts.HoldoutEvery == 0 {
			held = append(held, i)
		} else {
			c.fit = append(c.fit, i)
		}
	}
	pick := func(preds []float64, idx []int) []float64 {
		out := make([]float64, len(idx))
		for j, i := range idx {
			out[j] = preds[i]
		}
		return out
	}
	cal := &Calibration{Preset: c.preset.Name, File: opts.File, Skipped: skipped, defaults: defaults}
	cal.FitBefore = c.stats(c.fit, pick(start, c.fit))
	cal.HeldOutBefore = c.stats(held, pick(start, held))

	// Coordinate descent. cur holds the fit records' predictions at ps.
	ps := base.Clone()
	cur := pick(start, c.fit)
	results := make([]FittedParam, len(names))
	affected := make([][]int, len(names)) // positions in c.fit
	for i, name := range names {
		p, _ := base.Lookup(name)
		results[i] = FittedParam{Name: name, Unit: p.Unit, Min: p.Min, Max: p.Max, Default: p.Value, Fitted: p.Value, Source: p.Source}
	}
	sweeps := 0
	for sweep := 0; sweep < opts.Sweeps && !c.capHit; sweep++ {
		sweeps++
		moved := false
		for i, name := range names {
			if c.capHit {
				break
			}
			if opts.Progress != nil {
				opts.Progress(fmt.Sprintf("sweep %d: %s", sweep+1, name))
			}
			status, changed := c.fitOne(ps, name, &cur, &affected[i], sweep == 0)
			switch {
			case status == "" && results[i].Status == "":
				results[i].Status = "not searched: evaluation cap reached"
			case changed || (sweep == 0 && status != ""):
				results[i].Status = status
			}
			results[i].Records = len(affected[i])
			moved = moved || changed
		}
		if !moved {
			break
		}
	}
	final := c.predict(ps, all)
	cal.FitAfter = c.stats(c.fit, pick(final, c.fit))
	cal.HeldOutAfter = c.stats(held, pick(final, held))
	src := fmt.Sprintf("fitted by arsim calibrate on %d records of %s (held-out median |err| %.1f%%)", len(c.fit), orUnnamed(opts.File), cal.HeldOutAfter.MedianAbsPct)
	for i := range results {
		r := &results[i]
		r.Fitted = ps.Get(r.Name)
		if r.Default != 0 {
			r.ChangePct = (r.Fitted - r.Default) / r.Default * 100
		}
		if r.Fitted != r.Default {
			if err := ps.Set(r.Name, r.Fitted, src); err != nil {
				return nil, err
			}
			r.Source = src
		}
		if r.Status == "" {
			r.Status = "unchanged"
		}
	}
	cal.Params = results
	cal.Fitted = ps
	cal.Evaluations = c.evals
	cal.Sweeps = sweeps
	cal.EvalCapHit = c.capHit
	return cal, nil
}

func orUnnamed(f string) string {
	if f == "" {
		return "the given traces"
	}
	return f
}

// fitOne searches one parameter, updating ps and cur (the fit records'
// predictions) when a better value is found. dep holds the fit positions
// that depend on the parameter; it is found on the first sweep.
func (c *calib) fitOne(ps *topology.Params, name string, cur *[]float64, dep *[]int, first bool) (status string, changed bool) {
	p, _ := ps.Lookup(name)
	if p.Unit == "bool" {
		return "not fitted: a switch (bool), not a quantity", false
	}
	sp := space{lo: p.Min, hi: p.Max, integer: p.Unit == "count" && p.Value == math.Trunc(p.Value)}
	if sp.hi == 0 {
		sp.hi = 4 * p.Value
		sp.limitNote = "4× the starting value (no physical upper bound)"
		if sp.hi <= sp.lo {
			return "not fitted: no upper bound and a starting value of 0", false
		}
	}
	sp.log = sp.lo > 0
	xlo, xhi := sp.toX(sp.lo), sp.toX(sp.hi)
	fitIdx := c.fit
	eval := func(v float64, pos []int) []float64 {
		q := ps.Clone()
		if err := q.Set(name, v, ""); err != nil {
			out := make([]float64, len(pos))
			for i := range out {
				out[i] = math.NaN()
			}
			return out
		}
		idx := make([]int, len(pos))
		for i, k := range pos {
			idx[i] = fitIdx[k]
		}
		return c.predict(q, idx)
	}
	const gridN = 9
	gridV := make([]float64, gridN)
	for g := range gridV {
		gridV[g] = sp.fromX(xlo + (xhi-xlo)*float64(g)/(gridN-1))
	}
	allPos := make([]int, len(fitIdx))
	for i := range allPos {
		allPos[i] = i
	}
	gridPreds := make([][]float64, gridN)
	if first {
		// Which fit records depend on the parameter: those whose prediction
		// moves anywhere on the grid.
		for g, v := range gridV {
			gridPreds[g] = eval(v, allPos)
		}
		*dep = (*dep)[:0]
		for k := range allPos {
			for g := range gridV {
				a, b := gridPreds[g][k], (*cur)[k]
				if math.IsNaN(a) || math.Abs(a-b) > 1e-9*math.Abs(b) {
					*dep = append(*dep, k)
					break
				}
			}
		}
		for g := range gridPreds {
			sub := make([]float64, len(*dep))
			for j, k := range *dep {
				sub[j] = gridPreds[g][k]
			}
			gridPreds[g] = sub
		}
	} else {
		for g, v := range gridV {
			if c.evals >= c.opts.MaxEvals {
				c.capHit = true
				return "", false
			}
			gridPreds[g] = eval(v, *dep)
		}
	}
	pos := *dep
	if len(pos) == 0 {
		return "no effect", false
	}
	idx := make([]int, len(pos))
	for j, k := range pos {
		idx[j] = fitIdx[k]
	}
	curSub := make([]float64, len(pos))
	for j, k := range pos {
		curSub[j] = (*cur)[k]
	}
	type point struct {
		x, v, f float64
		preds   []float64
	}
	best := point{x: sp.toX(p.Value), v: p.Value, f: c.objective(idx, curSub), preds: curSub}
	startF := best.f
	bestG := -1
	gf := make([]float64, gridN)
	for g := range gridV {
		gf[g] = c.objective(idx, gridPreds[g])
		if gf[g] < best.f {
			best = point{x: sp.toX(gridV[g]), v: gridV[g], f: gf[g], preds: gridPreds[g]}
			bestG = g
		}
	}
	// Golden-section search between the neighbours of the best scan point
	// (or of the starting value).
	centre := best.x
	if bestG < 0 {
		centre = min(max(sp.toX(p.Value), xlo), xhi)
	}
	step := (xhi - xlo) / (gridN - 1)
	a, b := max(xlo, centre-step), min(xhi, centre+step)
	tol := 1e-5 * (xhi - xlo)
	if sp.integer {
		tol = 0.5
		if sp.log {
			tol = math.Log1p(0.5 / max(p.Value, 1))
		}
	}
	invPhi := (math.Sqrt(5) - 1) / 2
	try := func(x float64) (float64, bool) {
		if c.evals >= c.opts.MaxEvals {
			c.capHit = true
			return math.Inf(1), false
		}
		v := sp.fromX(x)
		preds := eval(v, pos)
		f := c.objective(idx, preds)
		if f < best.f {
			best = point{x: x, v: v, f: f, preds: preds}
		}
		return f, true
	}
	x1, x2 := b-invPhi*(b-a), a+invPhi*(b-a)
	f1, ok1 := try(x1)
	f2, ok2 := try(x2)
	for ok1 && ok2 && b-a > tol {
		if f1 <= f2 {
			b, x2, f2 = x2, x1, f1
			x1 = b - invPhi*(b-a)
			f1, ok1 = try(x1)
		} else {
			a, x1, f1 = x1, x2, f2
			x2 = a + invPhi*(b-a)
			f2, ok2 = try(x2)
		}
	}
	if !(best.f < startF) || best.v == p.Value {
		return "unchanged", false
	}
	// Keep the value only if the fit set as a whole does not get worse.
	next := append([]float64(nil), (*cur)...)
	for j, k := range pos {
		next[k] = best.preds[j]
	}
	if c.objective(fitIdx, next) > c.objective(fitIdx, *cur) {
		return "unchanged", false
	}
	if err := ps.Set(name, best.v, ""); err != nil {
		return "not fitted: " + err.Error(), false
	}
	*cur = next
	status = "fitted"
	// At a bound when within two search tolerances of it (the golden
	// section converges to within one of a bound it is pressed against). A
	// share of the range instead would call 9 µs "at the bound" of a
	// 0–10,000 µs parameter.
	near := 2 * tol
	switch {
	case sp.toX(best.v)-xlo <= near:
		status = "pinned at lower bound " + strconv.FormatFloat(sp.lo, 'g', -1, 64)
	case xhi-sp.toX(best.v) <= near && sp.limitNote != "":
		status = "pinned at search limit " + strconv.FormatFloat(sp.hi, 'g', -1, 64) + ": " + sp.limitNote
	case xhi-sp.toX(best.v) <= near:
		status = "pinned at upper bound " + strconv.FormatFloat(sp.hi, 'g', -1, 64)
	}
	return status, true
}

// WriteParams writes the calibrated parameters in topology's parameter
// file form (ReadOverrides; `--params FILE` loads it), with a comment
// header naming the preset. Only parameters that differ from the preset's
// defaults are written.
func (c *Calibration) WriteParams(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# preset: %s\n", c.Preset)
	fmt.Fprintf(&b, "# arsim calibrate on %s: fit %d records, held out %d; median |error| fit %.2f%% -> %.2f%%, held out %.2f%% -> %.2f%%\n",
		orUnnamed(c.File), c.FitBefore.Count, c.HeldOutBefore.Count, c.FitBefore.MedianAbsPct, c.FitAfter.MedianAbsPct, c.HeldOutBefore.MedianAbsPct, c.HeldOutAfter.MedianAbsPct)
	for _, p := range c.Params {
		fmt.Fprintf(&b, "#   %s: %s\n", p.Name, p.Status)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	out := &topology.Params{}
	for _, p := range c.Fitted.All() {
		if d, ok := c.defaults.Lookup(p.Name); ok && d.Value == p.Value {
			continue
		}
		out.Add(p)
	}
	if len(out.Names()) == 0 {
		_, err := io.WriteString(w, "# no parameter differs from the preset's defaults\n")
		return err
	}
	return out.WriteFile(w)
}
