package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/arsim/arsim/scenarios"
	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
	"github.com/arsim/arsim/viz"
)

// fileList is a repeatable flag.
type fileList []string

func (f *fileList) String() string { return strings.Join(*f, ",") }
func (f *fileList) Set(s string) error {
	if s == "" {
		return fmt.Errorf("empty file name")
	}
	*f = append(*f, s)
	return nil
}

// traceFile is one trace read for validate or calibrate.
type traceFile struct {
	path string
	recs []trace.Record
	bad  []trace.BadLine
}

// readTraces reads every file; a malformed line is an input error unless
// skipBad, when it is kept in bad.
func readTraces(paths []string, skipBad bool) ([]traceFile, error) {
	if len(paths) == 0 {
		return nil, badInputf("no trace: give --traces FILE (JSON Lines v1, e.g. testdata/h200x2/measurements.jsonl)")
	}
	var out []traceFile
	for _, p := range paths {
		recs, bad, err := trace.ReadJSONLFile(p, trace.ReadOptions{SkipBad: skipBad})
		if err != nil {
			if _, isParse := err.(*trace.ParseError); isParse && !skipBad {
				return nil, badInputf("%v (--skip-bad skips malformed lines)", err)
			}
			return nil, badInput(err)
		}
		out = append(out, traceFile{path: p, recs: recs, bad: bad})
	}
	return out, nil
}

// presetParams returns the parameters of every preset the records use,
// with the parameter file applied when one is given.
func presetParams(files []traceFile, paramsFile, override string) (map[string]*topology.Params, error) {
	out := map[string]*topology.Params{}
	var forced *topology.Preset
	if override != "" {
		p, err := topology.Lookup(override)
		if err != nil {
			return nil, badInputf("--topology: %v", err)
		}
		forced = p
	}
	for _, f := range files {
		for _, r := range f.recs {
			p, ok := forced, forced != nil
			if !ok {
				p, ok = topology.ForSystem(r.System)
			}
			if !ok || out[p.Name] != nil {
				continue
			}
			ps := p.DefaultParams()
			if paramsFile != "" {
				if err := applyParamsFile(ps, paramsFile); err != nil {
					return nil, fmt.Errorf("preset %s: %w", p.Name, err)
				}
			}
			out[p.Name] = ps
		}
	}
	return out, nil
}

func cmdValidate(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("validate", "validate --traces FILE [--traces FILE …] [--topology PRESET] [--params FILE] [--format table|json] [--plot FILE.svg|.png] [--skip-bad]",
		[]string{"arsim validate --traces testdata/h200x2/measurements.jsonl",
			"arsim validate --traces testdata/h200x2/measurements.jsonl --traces testdata/h200x2-arsim/measurements.jsonl --skip-bad --plot validate.svg",
			"arsim validate --traces testdata/h200x2/measurements.jsonl --params fitted.params --format json"}, errOut)
	var traces fileList
	fs.Var(&traces, "traces", "measured trace, JSON Lines v1 (repeat for several files)")
	params := fs.String("params", "", "parameter file overriding the values of the preset(s) the traces use")
	topo := fs.String("topology", "", "simulate every record on this preset, whatever its system id (for a machine no preset declares)")
	format := fs.String("format", "table", "output: table or json")
	plotFile := fs.String("plot", "", "also draw simulated versus measured to this .svg or .png file")
	skipBad := fs.Bool("skip-bad", false, "skip malformed trace lines (and list them) instead of failing")
	parallel := fs.Int("parallel", 0, "records simulated at once (default: all cores); output does not depend on it")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return badInputf("validate: unexpected argument %q (traces are given with --traces)", fs.Arg(0))
	}
	if *format != "table" && *format != "json" {
		return badInputf("validate: --format %q is not one of table, json", *format)
	}
	if *plotFile != "" {
		if err := checkWritable(*plotFile, ".svg", ".png"); err != nil {
			return err
		}
	}
	files, err := readTraces(traces, *skipBad)
	if err != nil {
		return err
	}
	ps, err := presetParams(files, *params, *topo)
	if err != nil {
		return err
	}
	total := 0
	for _, f := range files {
		total += len(f.recs)
	}
	var bar func(done, total int)
	if isTerminal(errOut) {
		bar = progressBar(errOut)
	}
	var vs []*scenarios.Validation
	offset := 0
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		o := scenarios.ValidateOptions{Params: ps, Parallel: *parallel, File: f.path, Preset: *topo}
		if bar != nil && total > 0 {
			base := offset
			o.Progress = func(done, _ int) { bar(base+done, total) }
		}
		v, err := scenarios.Validate(f.recs, o)
		if err != nil {
			return err
		}
		offset += len(f.recs)
		vs = append(vs, v)
	}
	return reportValidation(out, errOut, files, scenarios.MergeValidations(vs...), *format, *plotFile)
}

func reportValidation(out, errOut io.Writer, files []traceFile, v *scenarios.Validation, format, plotFile string) error {
	var err error
	if format == "json" {
		err = writeValidateJSON(out, files, v)
	} else {
		err = writeValidateTable(out, files, v)
	}
	if err != nil {
		return err
	}
	if plotFile != "" {
		if err := viz.DrawValidation(plotFile, v); err != nil {
			return err
		}
		fmt.Fprintf(errOut, "wrote %s\n", plotFile)
	}
	return nil
}

type badLineJSON struct {
	File  string `json:"file"`
	Line  int    `json:"line"`
	Error string `json:"error"`
}

func badLines(files []traceFile) []badLineJSON {
	out := []badLineJSON{}
	for _, f := range files {
		for _, b := range f.bad {
			out = append(out, badLineJSON{File: f.path, Line: b.Line, Error: b.Err.Error()})
		}
	}
	return out
}

func writeValidateJSON(out io.Writer, files []traceFile, v *scenarios.Validation) error {
	var paths []string
	for _, f := range files {
		paths = append(paths, f.path)
	}
	doc := struct {
		Files    []string                    `json:"files"`
		Records  []scenarios.ValidatedRecord `json:"records"`
		Skipped  []scenarios.Skipped         `json:"skipped"`
		BadLines []badLineJSON               `json:"bad_lines"`
		Summary  scenarios.Summary           `json:"summary"`
		Groups   []scenarios.GroupSummary    `json:"groups"`
	}{paths, v.Records, v.Skipped, badLines(files), v.Summary, v.Groups}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// fmtVal prints a measured or simulated value with 4 significant digits.
func fmtVal(x float64) string { return strconv.FormatFloat(x, 'g', 4, 64) }

func fmtPct(p *float64) string {
	if p == nil {
		return "–"
	}
	return fmt.Sprintf("%+.1f%%", *p)
}

func writeValidateTable(out io.Writer, files []traceFile, v *scenarios.Validation) error {
	var b bytes.Buffer
	multi := len(files) > 1
	var names []string
	for _, f := range files {
		names = append(names, f.path)
	}
	fmt.Fprintf(&b, "Measured versus simulated: %s\n\n", strings.Join(names, ", "))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	if multi {
		fmt.Fprint(tw, "file\t")
	}
	fmt.Fprintln(tw, "line\tgroup\tmeasured\tsimulated\tunit\terror\tnccl_model error\t")
	for _, r := range v.Records {
		if multi {
			fmt.Fprintf(tw, "%s\t", filepath.Base(filepath.Dir(r.File))+"/"+filepath.Base(r.File))
		}
		e := r.ErrorPct
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Line, r.Group, fmtVal(r.Measured), fmtVal(r.Predicted), r.Unit, fmtPct(&e), fmtPct(r.ModelErrorPct))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(&b, "\nGroups, worst median |error| first\n\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "group\trecords\tmedian error\tmedian |error|\tmax |error|\tnccl_model median |error|\t")
	for _, g := range v.Groups {
		fmt.Fprintf(tw, "%s\t%d\t%+.1f%%\t%.1f%%\t%.1f%%\t%s\t\n", g.Group, g.Count, g.MedianErrorPct, g.MedianAbsErrorPct, g.MaxAbsErrorPct, strings.TrimPrefix(fmtPct(g.ModelMedianAbs), "+"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	s := v.Summary
	fmt.Fprintf(&b, "\nSummary\n")
	fmt.Fprintf(&b, "  records simulated  %d\n", s.Count)
	fmt.Fprintf(&b, "  records skipped    %d\n", s.Skipped)
	if bl := badLines(files); len(bl) > 0 {
		fmt.Fprintf(&b, "  bad lines skipped  %d\n", len(bl))
	}
	if s.Count == 0 {
		b.WriteString("  median |error|     – (no record simulated)\n  p95 |error|        –\n")
	} else {
		fmt.Fprintf(&b, "  median |error|     %.1f%%\n", s.MedianAbsErrorPct)
		fmt.Fprintf(&b, "  p95 |error|        %.1f%%\n", s.P95AbsErrorPct)
	}
	if s.HostPacedCount > 0 {
		fmt.Fprintf(&b, "  device-paced       %d: median |error| %.1f%%, p95 %.1f%% (the machine model sets the value)\n", s.DevicePacedCount, s.DevicePacedMedianAbs, s.DevicePacedP95Abs)
		fmt.Fprintf(&b, "  host-paced         %d: median |error| %.1f%%, p95 %.1f%% (eager calls and copies: the value is a host issue-cost parameter)\n", s.HostPacedCount, s.HostPacedMedianAbs, s.HostPacedP95Abs)
	}
	if s.ModelMedianAbs != nil {
		fmt.Fprintf(&b, "  NCCL records       %d: arsim median |error| %.1f%%, p95 %.1f%%; nccl_model (NCCL's own estimate) median %.1f%%, p95 %.1f%%\n",
			s.ModelCount, *s.OursOnModelRecordsMedian, *s.OursOnModelRecordsP95, *s.ModelMedianAbs, *s.ModelP95Abs)
	}
	if len(v.Skipped) > 0 {
		fmt.Fprintf(&b, "\nSkipped (%d)\n", len(v.Skipped))
		var items []lineItem
		for _, sk := range v.Skipped {
			items = append(items, lineItem{sk.File, sk.Line, sk.Reason})
		}
		writeByReason(&b, items, multi)
	}
	if len(files) > 0 {
		var items []lineItem
		for _, f := range files {
			for _, bl := range f.bad {
				msg := bl.Err.Error()
				var pe *trace.ParseError
				if errors.As(bl.Err, &pe) {
					msg = pe.Msg
					if pe.Field != "" {
						msg = fmt.Sprintf("field %q: %s", pe.Field, pe.Msg)
					}
				}
				items = append(items, lineItem{f.path, bl.Line, msg})
			}
		}
		if len(items) > 0 {
			fmt.Fprintf(&b, "\nBad lines skipped (%d)\n", len(items))
			writeByReason(&b, items, multi)
		}
	}
	_, err := out.Write(b.Bytes())
	return err
}

// lineItem is a line of a file with a reason.
type lineItem struct {
	file   string
	line   int
	reason string
}

// writeByReason lists items grouped by file and reason, in first-seen
// order, with runs of consecutive lines shortened to ranges.
func writeByReason(b *bytes.Buffer, items []lineItem, withFile bool) {
	type key struct{ file, reason string }
	lines := map[key][]int{}
	var order []key
	for _, it := range items {
		k := key{it.file, it.reason}
		if _, ok := lines[k]; !ok {
			order = append(order, k)
		}
		lines[k] = append(lines[k], it.line)
	}
	for _, k := range order {
		ls := lines[k]
		where := "line"
		if len(ls) > 1 {
			where = "lines"
		}
		prefix := ""
		if withFile {
			prefix = k.file + " "
		}
		fmt.Fprintf(b, "  %s%s %s (%d): %s\n", prefix, where, lineRanges(ls), len(ls), k.reason)
	}
}

// lineRanges prints sorted line numbers with consecutive runs as a–b.
func lineRanges(ls []int) string {
	ls = append([]int(nil), ls...)
	sort.Ints(ls)
	var parts []string
	for i := 0; i < len(ls); {
		j := i
		for j+1 < len(ls) && ls[j+1] == ls[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d–%d", ls[i], ls[j]))
		} else {
			parts = append(parts, strconv.Itoa(ls[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

func cmdCalibrate(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("calibrate", "calibrate --traces FILE [--traces FILE …] --fit PATTERN[,PATTERN] --params-out FILE [--holdout-every 3] [--topology PRESET] [--params FILE] [--skip-bad]",
		[]string{"arsim calibrate --traces testdata/h200x2/measurements.jsonl --fit 'pcie.link_efficiency,torch.copy_issue_*' --params-out fitted.params",
			"arsim calibrate --traces testdata/h200x2-arsim/measurements.jsonl --skip-bad --fit 'gpu.launch_*,nvlink.*' --params-out h200.params --holdout-every 4",
			"arsim validate --traces testdata/h200x2/measurements.jsonl --params fitted.params"}, errOut)
	var traces fileList
	fs.Var(&traces, "traces", "measured trace, JSON Lines v1 (repeat for several files)")
	fit := fs.String("fit", "", "parameters to fit: glob patterns over names (arsim topology show), comma-separated")
	paramsOut := fs.String("params-out", "", "write the fitted parameter file here (loads with --params)")
	holdout := fs.Int("holdout-every", 3, "hold every N-th simulable record out of the fit and report its error")
	params := fs.String("params", "", "parameter file to start from instead of the preset's defaults")
	topo := fs.String("topology", "", "simulate every record on this preset, whatever its system id")
	skipBad := fs.Bool("skip-bad", false, "skip malformed trace lines instead of failing")
	sweeps := fs.Int("sweeps", 3, "coordinate-descent sweeps over the parameters")
	maxEvals := fs.Int("max-evals", 600, "cap on parameter settings simulated (bounds the run time)")
	parallel := fs.Int("parallel", 0, "records simulated at once (default: all cores); output does not depend on it")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return badInputf("calibrate: unexpected argument %q", fs.Arg(0))
	}
	if strings.TrimSpace(*fit) == "" {
		return badInputf("calibrate: --fit is required (glob patterns over parameter names, e.g. pcie.link_efficiency,gpu.launch_*)")
	}
	if *paramsOut == "" {
		return badInputf("calibrate: --params-out FILE is required")
	}
	if *holdout < 2 {
		return badInputf("calibrate: --holdout-every must be ≥ 2, got %d", *holdout)
	}
	if *sweeps < 1 || *maxEvals < 1 {
		return badInputf("calibrate: --sweeps and --max-evals must be ≥ 1")
	}
	if err := checkWritable(*paramsOut); err != nil {
		return err
	}
	files, err := readTraces(traces, *skipBad)
	if err != nil {
		return err
	}
	base, err := presetParams(files, *params, *topo)
	if err != nil {
		return err
	}
	var recs []trace.Record
	var names []string
	for _, f := range files {
		recs = append(recs, f.recs...)
		names = append(names, f.path)
	}
	opts := scenarios.CalibrateOptions{Fit: splitList(*fit), HoldoutEvery: *holdout, Base: base, Preset: *topo, File: strings.Join(names, ", "),
		Sweeps: *sweeps, MaxEvals: *maxEvals, Parallel: *parallel}
	if isTerminal(errOut) {
		opts.Progress = func(msg string) { fmt.Fprintf(errOut, "\r\033[K%s", msg) }
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	t0 := time.Now()
	cal, err := scenarios.Calibrate(recs, opts)
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
	if err := os.WriteFile(*paramsOut, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	if err := writeCalibration(out, cal); err != nil {
		return err
	}
	fmt.Fprintf(out, "\n%d parameter settings simulated in %d sweep(s), %.1f s%s\nwrote %s (load it with --params %s)\n",
		cal.Evaluations, cal.Sweeps, elapsed.Seconds(), map[bool]string{true: " (stopped at --max-evals)", false: ""}[cal.EvalCapHit], *paramsOut, *paramsOut)
	return nil
}

func writeCalibration(out io.Writer, c *scenarios.Calibration) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "Calibration of preset %s on %s\n\n", c.Preset, c.File)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "parameter\tunit\tdefault\tfitted\tchange\trecords\tstatus\t")
	for _, p := range c.Params {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%+.2f%%\t%d\t%s\t\n", p.Name, p.Unit, strconv.FormatFloat(p.Default, 'g', 6, 64), strconv.FormatFloat(p.Fitted, 'g', 6, 64), p.ChangePct, p.Records, p.Status)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(&b, "\n(records: fit records whose prediction depends on the parameter)\n\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "records\tcount\tmedian |error| before\tafter\tp95 |error| before\tafter\t")
	for _, row := range []struct {
		name          string
		before, after scenarios.ErrorStats
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
