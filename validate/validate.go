package validate

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/internal/crash"
	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// Options control Run.
type Options struct {
	// Params are the parameter sets to build presets with, by preset name
	// (the preset's defaults with overrides applied). A preset not named
	// here is built from its defaults.
	Params map[string]*topology.Params
	// Parallel records simulated at once (default GOMAXPROCS). The result
	// does not depend on it.
	Parallel int
	// File names the trace in the result (Compared.File); optional.
	File string
	// Progress, if set, is called after each record with (done, total).
	Progress func(done, total int)
	// Preset, if set, names the preset every record is simulated on,
	// whatever its system id (for a capture of a machine that no preset
	// declares; arsim validate --topology).
	Preset string
	// Machine, if set, is the machine every record is simulated on (an
	// imported topology: topology.ImportPreset); it wins over Preset.
	Machine *topology.Preset
}

// Compared is one measured record beside its simulated twin.
type Compared struct {
	File   string `json:"file,omitempty"`
	Line   int    `json:"line"`
	Kind   string `json:"kind"`
	System string `json:"system"`
	// Group is kind × implementation/algorithm × protocol × transport ×
	// launch for allreduces, kind × direction/target/operation for the
	// micro kinds, e.g. "allreduce nccl/ring ll shm cudagraph".
	Group string `json:"group"`
	// Unit is the unit of Measured and Predicted (Record.Primary).
	Unit      string  `json:"unit"`
	Measured  float64 `json:"measured"`
	Predicted float64 `json:"predicted"`
	// ErrorPct is (Predicted − Measured) / Measured × 100.
	ErrorPct float64 `json:"error_pct"`
	// ModelPredicted and ModelErrorPct are NCCL's own analytic estimate
	// (algos.NCCLModel) for NCCL records; nil otherwise.
	ModelPredicted *float64 `json:"nccl_model,omitempty"`
	ModelErrorPct  *float64 `json:"nccl_model_error_pct,omitempty"`
	// ModelFallback: NCCL's ring search found no speed on this machine and
	// its estimate rests on the fallback graph's 0.1 GB/s (NCCL's own
	// number, but not a time for the machine).
	ModelFallback bool `json:"nccl_model_fallback,omitempty"`
	// NCCLChoice is what the model's NCCL chose for an NCCL record, which
	// its schedule ran: algorithm/protocol and channels ("ring/ll, 4
	// channels"); empty for other records.
	NCCLChoice string `json:"nccl_choice,omitempty"`
	// Note says how the record was modelled, where that is not obvious.
	Note string `json:"note,omitempty"`
	// HostPaced: the simulated value is the host's issue interval (an
	// eager call the device finished before the host issued the next), so
	// it rests on a host-cost parameter, not on the machine model.
	HostPaced bool `json:"host_paced,omitempty"`
	// KernelEnd: the simulated value is the kernel's end (its blocks bound
	// by a resource they share end together in the model), so Measured is
	// the record's slowest block rather than its median one.
	KernelEnd bool `json:"kernel_end,omitempty"`
	// FittedFor names the parameters this record was fitted for (a Fit's
	// fitted side); Dimensions, for a record a fit covers but did not fit
	// on, what it is predicted along (see Fits).
	FittedFor  string   `json:"fitted_for,omitempty"`
	Dimensions []string `json:"dimensions,omitempty"`
	// Mechanisms are what a predicted record times (mechanismsOf; an
	// allreduce's, those of the schedule simulating it), the rows of
	// EvidenceOf it counts in: set on the predicted side of the fits and
	// on every record of a file no fit or parameter source names (cited);
	// none for copy engines, launches and host costs.
	Mechanisms []algos.Mechanism `json:"mechanisms,omitempty"`
	// bin and impl place an allreduce record for WinnerBins: the same
	// system, launch, world size, dtype and size; the implementation.
	bin, impl string
	// config is what the record was measured in (trace.Record
	// Configuration), for Repeats; bytes an allreduce record's size, for
	// BySize (0: not an allreduce).
	config string
	bytes  int64
	// source names where a predicted record was measured, for EvidenceOf:
	// its system, or "published nccl-tests" for a table's row.
	source string
}

// Skipped is a record that could not be simulated, and why.
type Skipped struct {
	File   string `json:"file,omitempty"`
	Line   int    `json:"line"`
	Kind   string `json:"kind,omitempty"`
	Reason string `json:"reason"`
	// Err is the reason as an error, a *SkipError: errors.Is(Err,
	// ErrNotModelled) and the like.
	Err error `json:"-"`
}

// Summary sums up a validation.
type Summary struct {
	Count             int     `json:"count"`
	Skipped           int     `json:"skipped"`
	MedianAbsErrorPct float64 `json:"median_abs_error_pct"`
	P95AbsErrorPct    float64 `json:"p95_abs_error_pct"`
	// ModelCount, ModelMedianAbs and ModelP95Abs are over the NCCL
	// records that have both a simulated time and NCCL's own estimate;
	// OursOnModelRecords* are arsim's errors over the same records.
	ModelCount int `json:"nccl_model_count"`
	// ModelFallbackCount of them have NCCL's estimate on its fallback
	// graph (Compared.ModelFallback).
	ModelFallbackCount       int           `json:"nccl_model_fallback_count,omitempty"`
	ModelMedianAbs           *float64      `json:"nccl_model_median_abs_error_pct,omitempty"`
	ModelP95Abs              *float64      `json:"nccl_model_p95_abs_error_pct,omitempty"`
	OursOnModelRecordsMedian *float64      `json:"arsim_median_abs_error_pct_on_nccl_records,omitempty"`
	OursOnModelRecordsP95    *float64      `json:"arsim_p95_abs_error_pct_on_nccl_records,omitempty"`
	SkippedByReason          []ReasonCount `json:"skipped_by_reason,omitempty"`
	// HostPaced* are over the records whose simulated value is a host
	// issue interval (Compared.HostPaced); DevicePaced* over the
	// rest, whose value the machine model sets.
	// KernelEndCount records are compared at their slowest block
	// (Compared.KernelEnd).
	KernelEndCount       int     `json:"kernel_end_count,omitempty"`
	HostPacedCount       int     `json:"host_paced_count"`
	HostPacedMedianAbs   float64 `json:"host_paced_median_abs_error_pct"`
	HostPacedP95Abs      float64 `json:"host_paced_p95_abs_error_pct"`
	DevicePacedCount     int     `json:"device_paced_count"`
	DevicePacedMedianAbs float64 `json:"device_paced_median_abs_error_pct"`
	DevicePacedP95Abs    float64 `json:"device_paced_p95_abs_error_pct"`
	// Repeats is over the configurations measured more than once; nil
	// when none is.
	Repeats *Repeats `json:"repeats,omitempty"`
}

// Repeats is how far the records of one configuration measured more than
// once (another run, process or instance of one machine type: the same
// trace.Record.Configuration) lie from their configuration's median: the
// floor under the error no model of one machine can go below.
type Repeats struct {
	Configurations int `json:"configurations"`
	Records        int `json:"records"`
	// MedianAbsPct and P95AbsPct are over every such record's |measured /
	// its configuration's median − 1|; the DevicePaced and HostPaced ones
	// over those records as Compared.HostPaced splits them.
	MedianAbsPct            float64 `json:"median_abs_pct"`
	P95AbsPct               float64 `json:"p95_abs_pct"`
	DevicePacedRecords      int     `json:"device_paced_records"`
	DevicePacedMedianAbsPct float64 `json:"device_paced_median_abs_pct"`
	DevicePacedP95AbsPct    float64 `json:"device_paced_p95_abs_pct"`
	HostPacedRecords        int     `json:"host_paced_records"`
	HostPacedMedianAbsPct   float64 `json:"host_paced_median_abs_pct"`
	HostPacedP95AbsPct      float64 `json:"host_paced_p95_abs_pct"`
}

// ReasonCount is how many records were skipped for one reason.
type ReasonCount struct {
	Reason string `json:"reason"`
	Count  int    `json:"count"`
}

// GroupSummary sums up the records of one group.
type GroupSummary struct {
	Group             string   `json:"group"`
	Count             int      `json:"count"`
	MedianErrorPct    float64  `json:"median_error_pct"`
	MedianAbsErrorPct float64  `json:"median_abs_error_pct"`
	MaxAbsErrorPct    float64  `json:"max_abs_error_pct"`
	ModelMedianAbs    *float64 `json:"nccl_model_median_abs_error_pct,omitempty"`
}

// Validation is the outcome of Run: every record either in Records or
// in Skipped, both in line order.
type Validation struct {
	Records []Compared `json:"records"`
	Skipped []Skipped  `json:"skipped"`
	Summary Summary    `json:"summary"`
	// Groups, worst median |error| first.
	Groups []GroupSummary `json:"groups"`
	// HeldOut is the error on the fitted and predicted sides of the
	// fits (Fits), when any record is covered by one.
	HeldOut *HeldOut `json:"held_out,omitempty"`
	// Winners says whether the simulated fastest implementation is the
	// measured fastest, per bin of allreduce records that compare two or
	// more implementations.
	Winners *WinnerBins `json:"winners,omitempty"`
	// BySize sums up the allreduce records by size range (SizeRanges),
	// the ranges that hold any.
	BySize []SizeSummary `json:"by_size,omitempty"`
	// Lines fits the NCCL allreduce records of each file and group where
	// the model's NCCL makes one choice as a fixed cost plus a cost per
	// byte, measured and simulated (LineFits).
	Lines []LineFit `json:"lines,omitempty"`
	// Mechanisms sums up the predicted records by the mechanisms
	// schedules rest on (EvidenceOf), those these records time.
	Mechanisms []EvidenceRow `json:"by_mechanism,omitempty"`
}

// SizeRanges are the allreduce sizes BySize sums up, in bytes, each from
// its Min to its Max: where a protocol, a step size or the links bound
// NCCL's time on most machines.
var SizeRanges = []struct {
	Name     string
	Min, Max int64
}{
	{"≤ 2 KiB", 0, 2 << 10},
	{"> 2 KiB, ≤ 1 MiB", 2<<10 + 1, 1 << 20},
	{"> 1 MiB, ≤ 16 MiB", 1<<20 + 1, 16 << 20},
	{"> 16 MiB", 16<<20 + 1, math.MaxInt64},
}

// SizeSummary sums up the allreduce records of one size range.
type SizeSummary struct {
	Range             string  `json:"range"`
	Count             int     `json:"count"`
	HostPaced         int     `json:"host_paced"`
	MedianErrorPct    float64 `json:"median_error_pct"`
	MedianAbsErrorPct float64 `json:"median_abs_error_pct"`
	// MinErrorPct and MaxErrorPct are the extremes of the signed error.
	MinErrorPct float64 `json:"min_error_pct"`
	MaxErrorPct float64 `json:"max_error_pct"`
	// DeviceMinErrorPct and DeviceMaxErrorPct are the extremes over the
	// device-paced records alone (Count − HostPaced of them), the records
	// the machine model sets; both 0 where every record is host-paced.
	DeviceMinErrorPct float64 `json:"device_min_error_pct"`
	DeviceMaxErrorPct float64 `json:"device_max_error_pct"`
}

// Run simulates the twin of every record and compares it with the measured
// value (Record.Primary). Each record's system id picks the preset that
// declares it (topology.ForSystem). A record that cannot be simulated is
// listed in Skipped with the reason, never dropped. Records are run in
// parallel; the result is the same for any Parallel and in line order.
func Run(recs []trace.Record, opts Options) (*Validation, error) {
	override, err := overridePreset(opts.Preset, opts.Machine)
	if err != nil {
		return nil, err
	}
	for name, ps := range opts.Params {
		if ps == nil || (opts.Machine != nil && name == opts.Machine.Name) {
			continue
		}
		if _, err := topology.Lookup(name); err != nil {
			return nil, fmt.Errorf("validate: parameters for %w", err)
		}
	}
	recs = append([]trace.Record(nil), recs...)
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Line < recs[j].Line })
	graphFilesFrom(recs, opts.File)
	cache := &topoCache{params: opts.Params}
	var (
		ts      []*Twin
		skipped []Skipped
	)
	for _, r := range recs {
		t, err := prepare(r, override)
		if err != nil {
			skipped = append(skipped, skip(opts.File, r, err))
			continue
		}
		ts = append(ts, t)
	}
	outs := simulateAll(ts, func(t *Twin) (*topology.Topology, error) { return cache.get(t.preset) }, opts.Parallel, true, opts.Progress)
	v := &Validation{}
	uncited := !cited(opts.File, opts.Params) // every record a prediction
	for i, t := range ts {
		o := outs[i]
		if crash.Is(o.err) {
			return nil, fmt.Errorf("validate: %s line %d: %w", opts.File, t.rec.Line, o.err)
		}
		if o.err != nil {
			skipped = append(skipped, skip(opts.File, t.rec, simulationFailed(o.err)))
			continue
		}
		measured := t.measured
		if o.end {
			measured = t.EndValue
		}
		c := Compared{File: opts.File, Line: t.rec.Line, Kind: string(t.rec.Kind), System: t.rec.System, Group: t.Group,
			Unit: t.unit, Measured: measured, Predicted: o.pred, ErrorPct: errPct(o.pred, measured), Note: t.Note, HostPaced: o.hostPaced,
			KernelEnd: o.end}
		if o.model != nil {
			e := errPct(*o.model, measured)
			c.ModelPredicted, c.ModelErrorPct, c.ModelFallback, c.NCCLChoice = o.model, &e, o.modelFallback, o.choice
		}
		if f, covered := fitOf(opts.File, t.rec); f != nil {
			c.FittedFor = strings.Join(f.Params, ", ")
		} else if covered || uncited {
			if covered {
				c.Dimensions = dimensionsOf(t.rec)
			}
			top, _ := cache.get(t.preset) // built for the simulation just run
			if t.mechs != nil && top != nil {
				c.Mechanisms = t.mechs(top)
			} else {
				c.Mechanisms = mechanismsOf(t.rec, peerOf(top))
			}
			c.source = t.rec.System
			if t.rec.API == APINCCLTests && t.rec.System == "" {
				c.source = "published nccl-tests"
			}
		}
		c.bin, c.impl = winnerBin(t.rec)
		c.config = t.rec.Configuration()
		if h := storesHalf(t.rec); h.Known {
			// the same storing SMs and reader on chips that split their SMs
			// otherwise (trace.Record.SMHalves) are not one configuration: a
			// run on one is no repeat of a run on the other (the spread
			// floor, HeldOut)
			c.config += fmt.Sprintf("\x00halves %+v", h)
		}
		if t.rec.Kind == trace.KindAllreduce {
			c.bytes = t.rec.Bytes
		}
		v.Records = append(v.Records, c)
	}
	sort.SliceStable(skipped, func(i, j int) bool { return skipped[i].Line < skipped[j].Line })
	v.Skipped = skipped
	v.summarize()
	return v, nil
}

// skip lists record r of file as skipped for err, a *SkipError.
func skip(file string, r trace.Record, err error) Skipped {
	s := Skipped{File: file, Line: r.Line, Kind: string(r.Kind), Reason: err.Error(), Err: err}
	if se, ok := errors.AsType[*SkipError](err); ok {
		s.Reason = se.Reason
	}
	return s
}

// Merge joins validations of several files (records and skipped in the
// order given) and recomputes the summary and groups.
func Merge(vs ...*Validation) *Validation {
	out := &Validation{}
	for _, v := range vs {
		out.Records = append(out.Records, v.Records...)
		out.Skipped = append(out.Skipped, v.Skipped...)
	}
	out.summarize()
	return out
}

// prepare maps a record onto its twin, or returns why it cannot be
// simulated (a *SkipError).
func prepare(r trace.Record, override *topology.Preset) (*Twin, error) {
	measured, unit, err := r.Primary()
	if err != nil {
		return nil, &SkipError{Why: ErrBadRecord, Reason: err.Error(), Cause: err}
	}
	p, ok := override, override != nil
	if !ok {
		p, ok = topology.ForSystem(r.System)
	}
	if !ok {
		return nil, &SkipError{Why: ErrNoPreset, Reason: fmt.Sprintf("no preset models system %q (a preset declares its trace system ids; --topology names one for every record)", r.System)}
	}
	f, ok := twins[r.Kind]
	if !ok {
		return nil, notModelled("kind %q is not simulated", r.Kind)
	}
	t, err := f(r)
	if err != nil {
		return nil, err
	}
	t.rec, t.preset, t.unit, t.measured = r, p, unit, measured
	return t, nil
}

// overridePreset is the machine given (an imported one), else the preset
// named by a --topology override; nil for none.
func overridePreset(name string, machine *topology.Preset) (*topology.Preset, error) {
	if machine != nil {
		return machine, nil
	}
	if name == "" {
		return nil, nil
	}
	p, err := topology.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	return p, nil
}

// topoCache builds each preset once, from the options' parameters or its
// defaults.
type topoCache struct {
	params map[string]*topology.Params
	mu     sync.Mutex
	built  map[string]*topology.Topology
	errs   map[string]error
}

func (c *topoCache) get(p *topology.Preset) (*topology.Topology, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.built[p.Name]; ok {
		return t, nil
	}
	if err, ok := c.errs[p.Name]; ok {
		return nil, err
	}
	ps := c.params[p.Name]
	if ps == nil {
		ps = p.DefaultParams()
	}
	t, err := p.BuildWith(ps)
	if c.built == nil {
		c.built, c.errs = map[string]*topology.Topology{}, map[string]error{}
	}
	if err != nil {
		c.errs[p.Name] = err
		return nil, err
	}
	c.built[p.Name] = t
	return t, nil
}

// outcome is the simulation of one twin.
type outcome struct {
	pred      float64
	hostPaced bool
	err       error
	model     *float64
	// modelFallback: the model's estimate rests on NCCL's fallback graph.
	modelFallback bool
	// choice: what NCCL chose (Twin.Model), which the schedule ran.
	choice string
	// end: the value is the kernel's end (Twin.Ends).
	end bool
}

// simulateOne runs one twin. A panic inside the simulator becomes the
// outcome's error as a *crash.Error: a bug, which Run and Calibrate return
// instead of listing it as a reason to skip the record.
func simulateOne(tw *Twin, t *topology.Topology, withModel bool) (o outcome) {
	defer crash.Recover(&o.err)
	o.pred, o.hostPaced, o.err = tw.Sim(t)
	if o.err == nil && (o.pred <= 0 || math.IsNaN(o.pred) || math.IsInf(o.pred, 0)) {
		o.err = fmt.Errorf("simulated value %v is not a positive number", o.pred)
	}
	if withModel && tw.Ends != nil && o.err == nil {
		o.end, o.err = tw.Ends(t)
	}
	if withModel && tw.Model != nil && o.err == nil {
		if e, err := tw.Model(t); err == nil && e.Us > 0 {
			o.model, o.modelFallback, o.choice = &e.Us, e.Fallback, e.Choice
		}
	}
	return o
}

// simulateAll runs every twin on the topology top(twin) in parallel, keeping
// order.
func simulateAll(ts []*Twin, top func(*Twin) (*topology.Topology, error), parallel int, withModel bool, progress func(done, total int)) []outcome {
	if parallel <= 0 {
		parallel = runtime.GOMAXPROCS(0)
	}
	out := make([]outcome, len(ts))
	var g errgroup.Group
	g.SetLimit(parallel)
	var mu sync.Mutex
	done := 0
	for i, tw := range ts {
		g.Go(func() error {
			o := &out[i]
			defer crash.Recover(&o.err) // building the machine too: a bug is returned as one
			t, err := top(tw)
			if err != nil {
				o.err = err
			} else {
				*o = simulateOne(tw, t, withModel)
			}
			if progress != nil {
				mu.Lock()
				done++
				progress(done, len(ts))
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait()
	return out
}

// GraphFilesFrom returns recs with each relative NCCL_GRAPH_FILE (nccl_env)
// made a path from the directory of file, the trace they were read from,
// where a capture keeps the graph file beside its records: what Validate
// does itself, for callers that pool several files' records (calibrate).
// recs is not changed.
func GraphFilesFrom(recs []trace.Record, file string) []trace.Record {
	recs = slices.Clone(recs)
	graphFilesFrom(recs, file)
	return recs
}

// graphFilesFrom makes a record's relative NCCL_GRAPH_FILE (nccl_env) a path
// from the trace file's directory, where a capture keeps the graph file
// beside its records; recs is a copy, and each changed record gets a map of
// its own.
func graphFilesFrom(recs []trace.Record, file string) {
	dir := filepath.Dir(file)
	if file == "" || dir == "." {
		return
	}
	for i := range recs {
		p, ok := recs[i].NCCLEnv["NCCL_GRAPH_FILE"]
		if !ok || p == "" || filepath.IsAbs(p) {
			continue
		}
		env := maps.Clone(recs[i].NCCLEnv)
		env["NCCL_GRAPH_FILE"] = filepath.Join(dir, p)
		recs[i].NCCLEnv = env
	}
}
