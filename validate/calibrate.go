package validate

import (
	"fmt"
	"io"
	"math"
	"path"
	"strings"

	"github.com/arsim/arsim/internal/crash"
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
	// Machine, if set, is the machine every record is simulated on (an
	// imported topology: topology.ImportPreset); it wins over Preset.
	Machine *topology.Preset
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
	// Skipped records could not be simulated at the start (see Run).
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
	twins    []*Twin
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
	sub := make([]*Twin, len(idx))
	for i, k := range idx {
		sub[i] = c.twins[k]
	}
	res := simulateAll(sub, func(*Twin) (*topology.Topology, error) { return top, nil }, c.opts.Parallel, false, nil)
	for i, o := range res {
		if crash.Is(o.err) {
			panic(o.err) // a bug: Calibrate returns it
		}
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
		return nil, fmt.Errorf("validate: calibrate: no parameters to fit (want glob patterns, e.g. pcie.*; parameters: %s)", strings.Join(ps.Names(), ", "))
	}
	chosen := map[string]bool{}
	for _, pat := range patterns {
		n := 0
		for _, name := range ps.Names() {
			ok, err := path.Match(pat, name)
			if err != nil {
				return nil, fmt.Errorf("validate: calibrate: pattern %q: %w", pat, err)
			}
			if ok {
				chosen[name] = true
				n++
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("validate: calibrate: pattern %q matches no parameter (parameters: %s)", pat, strings.Join(ps.Names(), ", "))
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
func Calibrate(recs []trace.Record, opts CalibrateOptions) (_ *Calibration, err error) {
	defer crash.Recover(&err) // predict re-raises a simulator panic: a bug, returned as such
	if opts.HoldoutEvery == 0 {
		opts.HoldoutEvery = 3
	}
	if opts.HoldoutEvery < 2 {
		return nil, fmt.Errorf("validate: calibrate: holdout-every must be ≥ 2 (every k-th record is held out), got %d", opts.HoldoutEvery)
	}
	if opts.Sweeps <= 0 {
		opts.Sweeps = 3
	}
	if opts.MaxEvals <= 0 {
		opts.MaxEvals = 600
	}
	c := &calib{opts: opts}
	skipped, err := c.prepare(recs)
	if err != nil {
		return nil, err
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
	all := make([]int, len(c.twins))
	for i := range all {
		all[i] = i
	}
	start := c.predict(base, all)
	if err := c.kernelEnds(base); err != nil {
		return nil, err
	}
	held, failed, err := c.split(start)
	if err != nil {
		return nil, err
	}
	cal := &Calibration{Preset: c.preset.Name, File: opts.File, Skipped: skipped + failed, defaults: defaults}
	cal.FitBefore = c.stats(c.fit, pick(start, c.fit))
	cal.HeldOutBefore = c.stats(held, pick(start, held))
	ps := base.Clone()
	results, sweeps := c.descend(ps, names, pick(start, c.fit))
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

// prepare maps the records onto their twins (all of one preset) and
// returns how many have none.
func (c *calib) prepare(recs []trace.Record) (skipped int, err error) {
	override, err := overridePreset(c.opts.Preset, c.opts.Machine)
	if err != nil {
		return 0, err
	}
	for _, r := range recs {
		t, err := prepare(r, override)
		if err != nil {
			skipped++
			continue
		}
		if c.preset != nil && t.preset != c.preset {
			return 0, fmt.Errorf("validate: calibrate: records of presets %s and %s: calibrate one machine at a time", c.preset.Name, t.preset.Name)
		}
		c.preset = t.preset
		c.twins = append(c.twins, t)
	}
	if c.preset == nil {
		return 0, fmt.Errorf("validate: calibrate: none of the %d records can be simulated", len(recs))
	}
	c.measured = make([]float64, len(c.twins))
	for i, t := range c.twins {
		c.measured[i] = t.measured
	}
	return skipped, nil
}

// kernelEnds compares the twins whose value at the starting parameters ps
// is the kernel's end (Twin.Ends) with their slowest block, for the whole
// fit: the comparison does not switch as the parameters move.
func (c *calib) kernelEnds(ps *topology.Params) error {
	top, err := c.preset.BuildWith(ps)
	if err != nil {
		return nil // the records fail to simulate, as split reports
	}
	for i, t := range c.twins {
		if t.Ends == nil {
			continue
		}
		if end, err := t.Ends(top); err == nil && end {
			c.measured[i] = t.EndValue
		}
	}
	return nil
}

// split divides the records that simulate at the starting parameters
// (start) into the fit set (c.fit) and every HoldoutEvery-th, held out; it
// returns the held-out ones and how many failed.
func (c *calib) split(start []float64) (held []int, failed int, err error) {
	var ok []int
	for i, p := range start {
		if math.IsNaN(p) {
			failed++
			continue
		}
		ok = append(ok, i)
	}
	if len(ok) < 2 {
		return nil, 0, fmt.Errorf("validate: calibrate: only %d record(s) can be simulated; need a fit set and a held-out set", len(ok))
	}
	if c.opts.HoldoutEvery > len(ok) {
		return nil, 0, fmt.Errorf("validate: calibrate: holdout-every %d holds out none of the %d records that simulate (want 2–%d): the held-out error would be over no record", c.opts.HoldoutEvery, len(ok), len(ok))
	}
	for j, i := range ok {
		if (j+1)%c.opts.HoldoutEvery == 0 {
			held = append(held, i)
		} else {
			c.fit = append(c.fit, i)
		}
	}
	return held, failed, nil
}

// descend runs the sweeps of coordinate descent over names from ps (which
// it updates), cur being the fit records' predictions at ps; it returns
// each parameter's outcome (Fitted and Source still to fill) and the
// sweeps run.
func (c *calib) descend(ps *topology.Params, names []string, cur []float64) ([]FittedParam, int) {
	results := make([]FittedParam, len(names))
	affected := make([][]int, len(names)) // positions in c.fit
	for i, name := range names {
		p, _ := ps.Lookup(name)
		results[i] = FittedParam{Name: name, Unit: p.Unit, Min: p.Min, Max: p.Max, Default: p.Value, Fitted: p.Value, Source: p.Source}
	}
	sweeps := 0
	for sweep := 0; sweep < c.opts.Sweeps && !c.capHit; sweep++ {
		sweeps++
		moved := false
		for i, name := range names {
			if c.capHit {
				break
			}
			if c.opts.Progress != nil {
				c.opts.Progress(fmt.Sprintf("sweep %d: %s", sweep+1, name))
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
	return results, sweeps
}

// pick returns preds at the indices idx.
func pick(preds []float64, idx []int) []float64 {
	out := make([]float64, len(idx))
	for j, i := range idx {
		out[j] = preds[i]
	}
	return out
}

func orUnnamed(f string) string {
	if f == "" {
		return "the given traces"
	}
	return f
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
