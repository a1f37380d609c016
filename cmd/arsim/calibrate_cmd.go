package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
	"github.com/arsim/arsim/validate"
)

func cmdCalibrate(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("calibrate", "calibrate --traces FILE [--traces FILE …] --fit PATTERN[,PATTERN] --params-out FILE [--holdout-every 3] [--sizes LO..HI] [--topology PRESET] [--params FILE] [--skip-bad]",
		[]string{"arsim calibrate --traces testdata/h200x2/measurements.jsonl --fit 'pcie.link_efficiency,torch.copy_issue_*' --params-out fitted.params",
			"arsim calibrate --traces testdata/h200x2-arsim/measurements.jsonl --skip-bad --fit 'gpu.launch_*,nvlink.*' --params-out h200.params --holdout-every 4",
			"arsim validate --traces testdata/h200x2/measurements.jsonl --params fitted.params"}, errOut)
	var traces fileList
	fs.Var(&traces, "traces", tracesUsage)
	fit := fs.String("fit", "", "parameters to fit: glob patterns over names (arsim topology show), comma-separated")
	paramsOut := fs.String("params-out", "", "write the fitted parameter file here (loads with --params)")
	holdout := fs.Int("holdout-every", 3, "hold every N-th simulable record out of the fit and report its error")
	params := fs.String("params", "", "parameter file to start from instead of the preset's defaults")
	topo := fs.String("topology", "", "simulate every record on this machine: a preset or a topology file (needed for nccl-tests output and profiler traces)")
	gpu := fs.String("gpu", "", gpuUsage+"; default for nccl-tests: the GPU on its rank lines")
	optsFlag := fs.String("opts", "", "NCCL settings the measurement ran under (NCCL_P2P_LEVEL=SYS, …)")
	progress := fs.Bool("progress", false, "show progress on stderr (the default when stderr is a terminal)")
	skipBad := fs.Bool("skip-bad", false, "skip malformed trace lines instead of failing")
	sweeps := fs.Int("sweeps", 3, "coordinate-descent sweeps over the parameters")
	maxEvals := fs.Int("max-evals", 600, "cap on parameter settings simulated (bounds the run time)")
	parallel := fs.Int("parallel", 0, "records simulated at once (default: all cores); output does not depend on it")
	sizes := fs.String("sizes", "", "fit and hold out only the allreduces of these sizes: LO..HI (every size from LO to HI) or a list; other records are left out")
	perBlock := fs.Bool("per-block", false, "instead of --fit: recompute the GPU's own per-block costs (gpu.*, nccl.*) from a capture of tools/capture's perblock part on your GPU, by the rules the H200's were fitted with (docs/PER_BLOCK.md)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *perBlock {
		if *fit != "" || *sizes != "" {
			return badInputf("calibrate: --per-block recomputes its own parameters: leave out --fit and --sizes")
		}
		if *paramsOut == "" {
			return badInputf("calibrate: --params-out FILE is required")
		}
		if err := checkWritable(*paramsOut); err != nil {
			return err
		}
		return calibratePerBlock(traces, *skipBad, *topo, *params, *paramsOut, out, errOut)
	}
	if err := checkCalibrateFlags(fs.Args(), *fit, *paramsOut, *holdout, *sweeps, *maxEvals); err != nil {
		return err
	}
	keep, err := sizeFilter(*sizes)
	if err != nil {
		return err
	}
	files, mm, err := loadMeasured(traces, *skipBad, *optsFlag, *topo, *gpu, *params, errOut)
	if err != nil {
		return err
	}
	var recs []trace.Record
	var names []string
	for _, f := range files {
		recs = append(recs, validate.GraphFilesFrom(f.recs, f.path)...)
		names = append(names, f.path)
	}
	if keep != nil {
		all := len(recs)
		recs = slices.DeleteFunc(recs, func(r trace.Record) bool { return !keep(r) })
		if len(recs) == 0 {
			return badInputf("calibrate: --sizes %s keeps none of the %d records (allreduces of those sizes only)", *sizes, all)
		}
		fmt.Fprintf(errOut, "arsim: calibrate: --sizes %s keeps %d of the %d records\n", *sizes, len(recs), all)
	}
	opts := validate.CalibrateOptions{Fit: splitList(*fit), HoldoutEvery: *holdout, Base: mm.params, Preset: mm.preset, Machine: mm.machine, File: strings.Join(names, ", "),
		Sweeps: *sweeps, MaxEvals: *maxEvals, Parallel: *parallel}
	if showProgress(*progress, errOut) {
		opts.Progress = func(msg string) { fmt.Fprintf(errOut, "\r\033[K%s", msg) }
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	t0 := time.Now()
	cal, err := validate.Calibrate(recs, opts)
	if opts.Progress != nil {
		fmt.Fprint(errOut, "\r\033[K")
	}
	if err != nil {
		return badInput(err)
	}
	elapsed := time.Since(t0)
	var buf bytes.Buffer
	if err := cal.WriteParams(&buf); err != nil {
		return err
	}
	if err := writeFileAtomic(*paramsOut, func(w io.Writer) error { _, err := w.Write(buf.Bytes()); return err }); err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	if err := writeCalibration(out, cal); err != nil {
		return err
	}
	fmt.Fprintf(out, "\n%d parameter settings simulated in %d sweep(s), %.1f s%s\nwrote %s (load it with --params %s)\n",
		cal.Evaluations, cal.Sweeps, elapsed.Seconds(), map[bool]string{true: " (stopped at --max-evals)", false: ""}[cal.EvalCapHit], *paramsOut, *paramsOut)
	return nil
}

// calibratePerBlock is calibrate --per-block: the GPU's own per-block
// costs recomputed from a capture of the perblock part
// (validate.RefitPerBlock), the host's (hostmem.*, pcie.*) left as the
// machine has them, written as a parameter file.
func calibratePerBlock(traces []string, skipBad bool, topo, paramsFile, paramsOut string, out, errOut io.Writer) error {
	files, mm, err := loadMeasured(traces, skipBad, "", topo, "", paramsFile, errOut)
	if err != nil {
		return err
	}
	p, err := perBlockMachine(files, mm)
	if err != nil {
		return err
	}
	ps := p.DefaultParams()
	if q, ok := mm.params[p.Name]; ok && q != nil {
		ps = q.Clone()
	}
	ref, err := validate.RefitReference()
	if err != nil {
		return err
	}
	var caps []validate.Capture
	var names []string
	for _, f := range files {
		caps = append(caps, validate.Capture{Recs: f.recs, File: f.path})
		names = append(names, f.path)
	}
	got, err := validate.RefitPerBlockMedian(caps, ref, p, ps)
	if err != nil {
		return badInput(err)
	}
	res := &topology.Params{}
	var b bytes.Buffer
	from := names[0]
	if len(names) > 1 {
		from = fmt.Sprintf("%d captures, the median of each (%s)", len(names), strings.Join(names, ", "))
	}
	fmt.Fprintf(&b, "Per-block costs of %s recomputed from %s (the GPU's own; the host's stay the machine's)\n\n", p.Name, from)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "parameter\tunit\tmachine's\trecomputed\tnote")
	for _, r := range got {
		note := ""
		switch {
		case r.Kept:
			note = "kept: no capture has a record of its rule"
		case !validate.RefitChip(r.Name):
			note = "the host's: kept"
		case r.Clamped:
			note = fmt.Sprintf("clamped (the rule gave %.4g)", r.Raw)
		case r.Captures < len(files):
			note = fmt.Sprintf("from %d of the %d captures", r.Captures, len(files))
		}
		v := r.New
		if !r.Kept && validate.RefitChip(r.Name) {
			par, _ := ps.Lookup(r.Name)
			res.Add(par)
		} else {
			v = r.Old
		}
		fmt.Fprintf(tw, "%s\t%s\t%.4g\t%.4g\t%s\n", r.Name, r.Unit, r.Old, v, note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := writeFileAtomic(paramsOut, func(w io.Writer) error {
		fmt.Fprintf(w, "# preset: %s\n# arsim calibrate --per-block on %s\n", p.Name, strings.Join(names, ", "))
		return res.WriteFile(w)
	}); err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	fmt.Fprintf(&b, "\nwrote %s (load it with --params %s)\n", paramsOut, paramsOut)
	_, err = out.Write(b.Bytes())
	return err
}

// perBlockMachine is the machine the captures ran on: --topology's, else
// the one their records' system names; every capture must name the same.
func perBlockMachine(files []traceFile, mm *measuredMachine) (*topology.Preset, error) {
	if mm.machine != nil {
		return mm.machine, nil
	}
	if mm.preset != "" {
		return topology.Lookup(mm.preset)
	}
	var p *topology.Preset
	for _, f := range files {
		var q *topology.Preset
		for _, r := range f.recs {
			if x, ok := topology.ForSystem(r.System); ok {
				q = x
				break
			}
		}
		switch {
		case q == nil:
			return nil, badInputf("calibrate: --per-block: no record of %s names a known system: give --topology (the machine the capture ran on)", f.path)
		case p != nil && q != p:
			return nil, badInputf("calibrate: --per-block: %s ran on %s, %s on %s: give captures of one machine, or --topology", files[0].path, p.Name, f.path, q.Name)
		}
		p = q
	}
	return p, nil
}

// sizeFilter returns which records --sizes keeps (nil: every one): the
// allreduces, single or in sequence, whose size lies from LO to HI
// (LO..HI) or is one of a list.
func sizeFilter(s string) (func(trace.Record) bool, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	allreduce := func(r trace.Record) bool {
		return r.Kind == trace.KindAllreduce || r.Kind == trace.KindAllreduceSequence
	}
	if a, b, ok, err := parseSizeRange(s); ok {
		if err != nil {
			return nil, fmt.Errorf("calibrate: --sizes: %w", err)
		}
		return func(r trace.Record) bool { return allreduce(r) && r.Bytes >= a && r.Bytes <= b }, nil
	}
	list, err := parseSizes(s)
	if err != nil {
		return nil, fmt.Errorf("calibrate: --sizes: %w", err)
	}
	return func(r trace.Record) bool { return allreduce(r) && slices.Contains(list, r.Bytes) }, nil
}

// checkCalibrateFlags refuses what calibrate cannot run with.
func checkCalibrateFlags(rest []string, fit, paramsOut string, holdout, sweeps, maxEvals int) error {
	if len(rest) > 0 {
		return badInputf("calibrate: unexpected argument %q", rest[0])
	}
	if strings.TrimSpace(fit) == "" {
		return badInputf("calibrate: --fit is required (glob patterns over parameter names, e.g. pcie.link_efficiency,gpu.launch_*)")
	}
	if paramsOut == "" {
		return badInputf("calibrate: --params-out FILE is required")
	}
	if holdout < 2 {
		return badInputf("calibrate: --holdout-every must be ≥ 2, got %d", holdout)
	}
	if err := intIn("sweeps", sweeps, 1, 100, "each sweep fits every parameter once more; the fit settles in a few"); err != nil {
		return err
	}
	if err := intIn("max-evals", maxEvals, 1, 100_000, "each setting simulates every fit record"); err != nil {
		return err
	}
	return checkWritable(paramsOut)
}

func writeCalibration(out io.Writer, c *validate.Calibration) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "Calibration of preset %s on %s\n\n", c.Preset, c.File)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "parameter\tunit\tdefault\tfitted\tchange\trecords\tstatus\t")
	for _, p := range c.Params {
		change := fmt.Sprintf("%+.2f%%", p.ChangePct)
		if p.Default == 0 && p.Fitted != 0 {
			change = "from 0" // no ratio to give
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t\n", p.Name, p.Unit, strconv.FormatFloat(p.Default, 'g', 6, 64), strconv.FormatFloat(p.Fitted, 'g', 6, 64), change, p.Records, p.Status)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(&b, "\n(records: fit records whose prediction depends on the parameter)\n\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "records\tcount\tmedian |error| before\tafter\tp95 |error| before\tafter\t")
	for _, row := range []struct {
		name          string
		before, after validate.ErrorStats
	}{{"fit", c.FitBefore, c.FitAfter}, {"held out", c.HeldOutBefore, c.HeldOutAfter}} {
		fmt.Fprintf(tw, "%s\t%d\t%.2f%%\t%.2f%%\t%.2f%%\t%.2f%%\t\n", row.name, row.before.Count, row.before.MedianAbsPct, row.after.MedianAbsPct, row.before.P95AbsPct, row.after.P95AbsPct)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if c.Skipped > 0 {
		fmt.Fprintf(&b, "(%d records cannot be simulated and were left out; arsim validate lists why)\n", c.Skipped)
	}
	_, err := out.Write(b.Bytes())
	return err
}
