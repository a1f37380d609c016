package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/trace"
	"github.com/arsim/arsim/validate"
	"github.com/arsim/arsim/viz"
)

func cmdValidate(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("validate", "validate --traces FILE [--traces FILE …] [--topology PRESET|FILE] [--gpu NAME] [--params FILE] [--opts NCCL_…] [--format table|json] [--plot FILE.svg|.png] [--skip-bad]",
		[]string{"arsim validate --traces testdata/h200x2/measurements.jsonl",
			"arsim validate --traces testdata/nccltests/rtx5090x8_2socket_p2p_sys.txt --topology rtxpro6000x8-2numa --opts NCCL_P2P_LEVEL=SYS",
			"arsim validate --traces all_reduce_perf.txt --topology topo_m.txt   # your nccl-tests output on your machine",
			"arsim validate --traces testdata/h200x2/measurements.jsonl --traces testdata/h200x2-arsim/measurements.jsonl --skip-bad --plot validate.svg",
			"arsim validate --traces testdata/h200x2/measurements.jsonl --params fitted.params --format json"}, errOut)
	var traces fileList
	fs.Var(&traces, "traces", tracesUsage)
	params := fs.String("params", "", "parameter file set over the machine's values (last)")
	topo := fs.String("topology", "", "simulate every record on this machine: a preset or a topology file (needed for nccl-tests output and profiler traces, which name no machine)")
	gpu := fs.String("gpu", "", gpuUsage+"; default for nccl-tests: the GPU on its rank lines")
	optsFlag := fs.String("opts", "", "NCCL settings the measurement ran under, which nccl-tests and profiler traces do not print (NCCL_P2P_LEVEL=SYS, NCCL_PROTO=LL,Simple, …)")
	format := fs.String("format", "table", "output: table or json")
	plotFile := fs.String("plot", "", "also draw simulated versus measured to this .svg or .png file")
	skipBad := fs.Bool("skip-bad", false, "skip malformed trace lines (and list them) instead of failing")
	parallel := fs.Int("parallel", 0, "records simulated at once (default: all cores); output does not depend on it")
	progress := fs.Bool("progress", false, "show progress on stderr (the default when stderr is a terminal)")
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
	files, mm, err := loadMeasured(traces, *skipBad, *optsFlag, *topo, *gpu, *params, errOut)
	if err != nil {
		return err
	}
	total := 0
	for _, f := range files {
		total += len(f.recs)
	}
	var bar func(done, total int)
	if showProgress(*progress, errOut) {
		bar = progressBar(errOut, "records")
	}
	var vs []*validate.Validation
	offset := 0
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		if len(f.recs) > 0 && f.recs[0].SMHalves != nil {
			fmt.Fprintf(errOut, "arsim: %s: SMs (stores, flags) placed in the halves of the capture's own chip (%s)\n", f.path, trace.HalvesPath(f.path))
		} else if validate.NamesFlagSMs(f.recs) {
			fmt.Fprintf(errOut, "arsim: %s: flags' SMs placed in the H200's map of halves, for want of %s (two of four H100s scanned split otherwise; the capture part sm_halves writes the chip's own)\n", f.path, trace.HalvesPath(f.path))
		}
		vo := validate.Options{Params: mm.params, Parallel: *parallel, File: f.path, Preset: mm.preset, Machine: mm.machine}
		if bar != nil && total > 0 {
			base := offset
			vo.Progress = func(done, _ int) { bar(base+done, total) }
		}
		v, err := validate.Run(f.recs, vo)
		if err != nil {
			return badInput(err)
		}
		offset += len(f.recs)
		vs = append(vs, v)
		if len(f.skipped) > 0 {
			vs = append(vs, &validate.Validation{Skipped: f.skipped})
		}
	}
	v := validate.Merge(vs...)
	if err := reportValidation(out, errOut, files, v, *format, *plotFile); err != nil {
		return err
	}
	return nothingSimulated(v, len(badLines(files)))
}

// nothingSimulated is the error (exit status 1) of a validation that
// compared no record: its summary would otherwise pass for a result.
func nothingSimulated(v *validate.Validation, bad int) error {
	if v.Summary.Count > 0 {
		return nil
	}
	why := "the traces hold no record"
	switch {
	case len(v.Skipped) > 0:
		why = fmt.Sprintf("all %d records were skipped (the reasons are listed above; --topology names a preset for records of a machine no preset declares)", len(v.Skipped))
	case bad > 0:
		why = fmt.Sprintf("every line was malformed (%d skipped)", bad)
	}
	return fmt.Errorf("validate: nothing was simulated: %s", why)
}

func reportValidation(out, errOut io.Writer, files []traceFile, v *validate.Validation, format, plotFile string) error {
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
		if err := drawAtomic(plotFile, func(name string) error { return viz.DrawValidation(name, v) }); err != nil {
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

func writeValidateJSON(out io.Writer, files []traceFile, v *validate.Validation) error {
	var paths []string
	for _, f := range files {
		paths = append(paths, f.path)
	}
	sched, err := scheduleSide(v)
	if err != nil {
		return err
	}
	doc := struct {
		Files       []string                `json:"files"`
		Records     []validate.Compared     `json:"records"`
		Skipped     []validate.Skipped      `json:"skipped"`
		BadLines    []badLineJSON           `json:"bad_lines"`
		Summary     validate.Summary        `json:"summary"`
		Groups      []validate.GroupSummary `json:"groups"`
		HeldOut     *validate.HeldOut       `json:"held_out,omitempty"`
		Schedules   *scheduleSideJSON       `json:"predicted_on_what_schedules_rest_on,omitempty"`
		Winners     *validate.WinnerBins    `json:"winners,omitempty"`
		BySize      []validate.SizeSummary  `json:"by_size,omitempty"`
		Lines       []validate.LineFit      `json:"lines,omitempty"`
		ByMechanism []validate.EvidenceRow  `json:"by_mechanism,omitempty"`
	}{paths, v.Records, v.Skipped, badLines(files), v.Summary, v.Groups, v.HeldOut, sched, v.Winners, v.BySize, v.Lines, v.Mechanisms}
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

func writeValidateTable(out io.Writer, files []traceFile, v *validate.Validation) error {
	var b bytes.Buffer
	multi := len(files) > 1
	var names []string
	for _, f := range files {
		names = append(names, f.path)
	}
	fmt.Fprintf(&b, "Measured versus simulated: %s\n\n", strings.Join(names, ", "))
	if err := writeComparedRecords(&b, v.Records, multi); err != nil {
		return err
	}
	fmt.Fprintf(&b, "\nGroups, worst median |error| first\n\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "group\trecords\tmedian error\tmedian |error|\tmax |error|\tnccl_model median |error|\t")
	for _, g := range v.Groups {
		fmt.Fprintf(tw, "%s\t%d\t%+.1f%%\t%.1f%%\t%.1f%%\t%s\t\n", g.Group, g.Count, g.MedianErrorPct, g.MedianAbsErrorPct, g.MaxAbsErrorPct, strings.TrimPrefix(fmtPct(g.ModelMedianAbs), "+"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(v.BySize) > 0 {
		fmt.Fprintf(&b, "\nAllreduce records by size\n\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "size\trecords\thost-paced\tmedian error\tmedian |error|\terror from … to\tdevice-paced: from … to\t")
		for _, g := range v.BySize {
			device := "–"
			if g.HostPaced < g.Count {
				device = fmt.Sprintf("%+.1f%% … %+.1f%%", g.DeviceMinErrorPct, g.DeviceMaxErrorPct)
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%+.1f%%\t%.1f%%\t%+.1f%% … %+.1f%%\t%s\t\n", g.Range, g.Count, g.HostPaced, g.MedianErrorPct, g.MedianAbsErrorPct, g.MinErrorPct, g.MaxErrorPct, device)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if err := writeLines(&b, v.Lines, multi); err != nil {
		return err
	}
	writeValidateSummary(&b, v.Summary, len(badLines(files)))
	sched, err := scheduleSide(v)
	if err != nil {
		return err
	}
	writeHeldOut(&b, v.HeldOut, sched)
	writeMechanisms(&b, v.Mechanisms)
	writeWinners(&b, v.Winners)
	if len(v.Skipped) > 0 {
		fmt.Fprintf(&b, "\nSkipped (%d)\n", len(v.Skipped))
		var items []lineItem
		for _, sk := range v.Skipped {
			items = append(items, lineItem{sk.File, sk.Line, sk.Reason})
		}
		writeByReason(&b, items, multi)
	}
	if items := badLineItems(files); len(items) > 0 {
		fmt.Fprintf(&b, "\nBad lines skipped (%d)\n", len(items))
		writeByReason(&b, items, multi)
	}
	_, err = out.Write(b.Bytes())
	return err
}

// writeHeldOut writes the error on the fitted and predicted sides of the
// fits, and of the predicted records by dimension.
func writeHeldOut(b *bytes.Buffer, h *validate.HeldOut, sched *scheduleSideJSON) {
	if h == nil {
		return
	}
	fmt.Fprintf(b, "\nHeld out by dimension (parameters fitted on some records, the others predicted without refitting)\n")
	fmt.Fprintf(b, "  fitted side      %d: median |error| %.1f%%, p95 %.1f%%\n", h.Fitted.Count, h.Fitted.MedianAbsPct, h.Fitted.P95AbsPct)
	fmt.Fprintf(b, "  predicted side   %d: median |error| %.1f%%, p95 %.1f%%, %d beyond %.0f%%\n", h.Predicted.Count, h.Predicted.MedianAbsPct, h.Predicted.P95AbsPct,
		h.PredictedBeyond, validate.BeyondPct)
	if sched != nil {
		fmt.Fprintf(b, "    of which on what built-in schedules rest on (records timing a mechanism some schedule uses)\n"+
			"                   %d: median |error| %.1f%%, p95 %.1f%%, %d beyond %.0f%%\n", sched.Count, sched.MedianAbsPct, sched.P95AbsPct, sched.Beyond, validate.BeyondPct)
	}
	if h.Spread.P95AbsPct > 0 {
		fmt.Fprintf(b, "  the runs' spread on that side: median %.1f%%, p95 %.1f%%, %d beyond %.0f%% (each configuration measured more than once\n"+
			"                   predicted at its measured median, every other record exactly: what one value per configuration can reach)\n",
			h.Spread.MedianAbsPct, h.Spread.P95AbsPct, h.SpreadBeyond, validate.BeyondPct)
	}
	if h.Typical.Count > 0 {
		fmt.Fprintf(b, "  with the runs' spread left out: median %.1f%%, p95 %.1f%%, %d beyond %.0f%% (each record's configuration, %d in all,\n"+
			"                   its median simulated value against its median measured one: the model on the typical run)\n",
			h.Typical.MedianAbsPct, h.Typical.P95AbsPct, h.TypicalBeyond, validate.BeyondPct, h.Configurations)
	}
	repeats := false
	for _, d := range h.Dims {
		fmt.Fprintf(b, "    %-44s %4d: median %5.1f%% (signed %+6.1f%%), p95 %5.1f%%, %4d beyond", d.Dimension, d.Count, d.MedianAbsPct, d.MedianPct, d.P95AbsPct, d.Beyond)
		if d.Repeats != nil {
			repeats = true
			fmt.Fprintf(b, "   repeats %4d: p95 %5.1f%% apart, model p95 %5.1f%%", d.Repeats.Count, d.Repeats.P95AbsPct, d.Model.P95AbsPct)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(b, "  signed: the median of the row's errors (below 0: the model is fast), a bias along the dimension rather than\n"+
		"  a scatter; beyond: the row's records beyond %.0f%%\n", validate.BeyondPct)
	if repeats {
		fmt.Fprintf(b, "  repeats: the row's records whose configuration was measured more than once here, how far they lie from\n"+
			"  its median (about the best a model that cannot tell the runs apart does), and the model's error on them\n")
	}
}

// scheduleSideJSON is the predicted side of the fits restricted to the
// records that time a mechanism some built-in schedule rests on.
type scheduleSideJSON struct {
	validate.ErrorStats
	Beyond int `json:"beyond_20pct"`
}

// scheduleSide is v's predicted side on what the built-in schedules rest
// on (evidence.json's used_by_schedules); nil without a held-out report.
func scheduleSide(v *validate.Validation) (*scheduleSideJSON, error) {
	if v.HeldOut == nil {
		return nil, nil
	}
	ev, err := committedEvidence()
	if err != nil {
		return nil, err
	}
	st, n := v.PredictedOn(func(m algos.Mechanism) bool { return ev[m].UsedBySchedules })
	return &scheduleSideJSON{st, n}, nil
}

// writeMechanisms writes the predicted records' error by the mechanisms
// schedules rest on.
func writeMechanisms(b *bytes.Buffer, ms []validate.EvidenceRow) {
	if len(ms) == 0 {
		return
	}
	fmt.Fprintf(b, "\nBy the mechanisms schedules rest on (predicted records, device-paced; verify, sweep and design print these for the project's captures)\n")
	for _, e := range ms {
		fmt.Fprintf(b, "  %s: %s\n", e.Mechanism, e)
	}
}

// writeWinners says in how many bins the simulated fastest implementation
// is the measured fastest, and lists the others.
func writeWinners(b *bytes.Buffer, w *validate.WinnerBins) {
	if w == nil {
		return
	}
	fmt.Fprintf(b, "\nWhich implementation wins: right in %d of %d bins (%.0f%%; right = the simulated winner measures within %.0f%% of the measured fastest)\n",
		w.Right, w.Bins, float64(w.Right)/float64(w.Bins)*100, validate.WinnerTolerancePct)
	for i, x := range w.Wrong {
		if i == 10 {
			fmt.Fprintf(b, "  … and %d more\n", len(w.Wrong)-10)
			break
		}
		fmt.Fprintf(b, "  %s: picked %s, %.0f%% slower than %s\n", x.Bin, x.Picked, x.SlowerPct, x.Fastest)
	}
}

// writeComparedRecords writes one row per record compared (with its file
// when there are several).
func writeComparedRecords(b *bytes.Buffer, recs []validate.Compared, multi bool) error {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	if multi {
		fmt.Fprint(tw, "file\t")
	}
	fmt.Fprintln(tw, "line\tgroup\tmeasured\tsimulated\tunit\terror\tnccl_model error\t")
	for _, r := range recs {
		if multi {
			fmt.Fprintf(tw, "%s\t", filepath.Base(filepath.Dir(r.File))+"/"+filepath.Base(r.File))
		}
		e := r.ErrorPct
		model := fmtPct(r.ModelErrorPct)
		if r.ModelFallback {
			model += " (fallback graph)"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Line, r.Group, fmtVal(r.Measured), fmtVal(r.Predicted), r.Unit, fmtPct(&e), model)
	}
	return tw.Flush()
}

// writeValidateSummary writes the summary: counts, errors, and the errors
// of host-paced, device-paced and NCCL records apart.
func writeValidateSummary(b *bytes.Buffer, s validate.Summary, bad int) {
	fmt.Fprintf(b, "\nSummary\n")
	fmt.Fprintf(b, "  records simulated  %d\n", s.Count)
	fmt.Fprintf(b, "  records skipped    %d\n", s.Skipped)
	if bad > 0 {
		fmt.Fprintf(b, "  bad lines skipped  %d\n", bad)
	}
	if s.Count == 0 {
		b.WriteString("  median |error|     – (no record simulated)\n  p95 |error|        –\n")
	} else {
		fmt.Fprintf(b, "  median |error|     %.1f%%\n", s.MedianAbsErrorPct)
		fmt.Fprintf(b, "  p95 |error|        %.1f%%\n", s.P95AbsErrorPct)
	}
	if s.HostPacedCount > 0 {
		fmt.Fprintf(b, "  device-paced       %d: median |error| %.1f%%, p95 %.1f%% (the machine model sets the value)\n", s.DevicePacedCount, s.DevicePacedMedianAbs, s.DevicePacedP95Abs)
		fmt.Fprintf(b, "  host-paced         %d: median |error| %.1f%%, p95 %.1f%% (eager calls and copies: the value is a host issue-cost parameter)\n", s.HostPacedCount, s.HostPacedMedianAbs, s.HostPacedP95Abs)
	}
	if s.KernelEndCount > 0 {
		fmt.Fprintf(b, "  kernel's end       %d streaming loops whose blocks fill a link or memory they share: compared at their slowest block (the model shares it fairly, so every block ends together)\n", s.KernelEndCount)
	}
	if r := s.Repeats; r != nil {
		fmt.Fprintf(b, "  repeats            %d configurations measured more than once (%d records): |distance from their median| median %.1f%%, p95 %.1f%% (what no model of one machine can beat)\n",
			r.Configurations, r.Records, r.MedianAbsPct, r.P95AbsPct)
		if r.HostPacedRecords > 0 && r.DevicePacedRecords > 0 {
			fmt.Fprintf(b, "                     device-paced %d: median %.1f%%, p95 %.1f%%; host-paced %d: median %.1f%%, p95 %.1f%%\n",
				r.DevicePacedRecords, r.DevicePacedMedianAbsPct, r.DevicePacedP95AbsPct, r.HostPacedRecords, r.HostPacedMedianAbsPct, r.HostPacedP95AbsPct)
		}
	}
	if s.ModelMedianAbs != nil {
		fmt.Fprintf(b, "  NCCL records       %d: arsim median |error| %.1f%%, p95 %.1f%%; nccl_model (NCCL's own estimate) median %.1f%%, p95 %.1f%%\n",
			s.ModelCount, *s.OursOnModelRecordsMedian, *s.OursOnModelRecordsP95, *s.ModelMedianAbs, *s.ModelP95Abs)
		if s.ModelFallbackCount > 0 {
			fmt.Fprintf(b, "                     %d of them: NCCL's ring search finds no speed on this machine and falls back to its 0.1 GB/s graph, so its estimate is that graph's, not a time for the machine (its choice follows from it)\n", s.ModelFallbackCount)
		}
	}
}

// badLineItems lists the malformed lines skipped, each with its problem
// (the field and message, without the file and line).
func badLineItems(files []traceFile) []lineItem {
	var items []lineItem
	for _, f := range files {
		for _, bl := range f.bad {
			msg := bl.Err.Error()
			if pe, ok := errors.AsType[*trace.ParseError](bl.Err); ok {
				msg = pe.Msg
				if pe.Field != "" {
					msg = fmt.Sprintf("field %q: %s", pe.Field, pe.Msg)
				}
			}
			items = append(items, lineItem{f.path, bl.Line, msg})
		}
	}
	return items
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
	ls = slices.Compact(ls) // two records of one line (nccl-tests' two placements)
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

// writeLines prints the NCCL records' lines (validate.LineFits): fixed
// cost and cost per MiB, measured and simulated, where the model's NCCL
// makes one choice over three sizes or more.
func writeLines(b *bytes.Buffer, lines []validate.LineFit, multi bool) error {
	if len(lines) == 0 {
		return nil
	}
	fmt.Fprintf(b, "\nNCCL records as a line, time = fixed + per MiB × size, over the sizes where the model's NCCL makes one choice\n")
	fmt.Fprintf(b, "(device-paced records; a miss in the fixed cost is per call or per step, one in the cost per MiB per byte)\n\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	head := "group\tNCCL's choice in the model\tsizes\tmeasured µs + µs/MiB\tsimulated µs + µs/MiB\tmeasured off the line\t"
	if multi {
		head = "file\t" + head
	}
	fmt.Fprintln(tw, head)
	for _, l := range lines {
		row := fmt.Sprintf("%s\t%s\t%v … %v (%d)\t%.1f + %.1f\t%.1f + %.1f\t≤ %.1f%%\t", l.Group, l.Choice, sim.Bytes(l.MinBytes), sim.Bytes(l.MaxBytes), l.Sizes,
			l.MeasuredFixedUs, l.MeasuredPerMiBUs, l.SimulatedFixedUs, l.SimulatedPerMiBUs, l.MaxMeasuredOffPct)
		if multi {
			row = l.File + "\t" + row
		}
		fmt.Fprintln(tw, row)
	}
	return tw.Flush()
}
