package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/scenarios"
	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/viz"
)

func cmdSweep(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("sweep", "sweep [--topology PRESET|FILE] [--gpu NAME] [--algos a,b] [--sizes 1KiB..256MiB|list] [--dtype bf16] [--format table|csv|json|nccl-tests] [--plot FILE.svg|.png] [--plot-busbw FILE]",
		[]string{"arsim sweep", "arsim sweep --algos one_stage,two_stage,nccl --sizes 1KiB..16MiB --plot sweep.svg --plot-busbw busbw.svg",
			"arsim sweep --topology topo_m.txt --gpu \"RTX 5090\" --algos nccl,two_stage --sizes 42KiB   # your nvidia-smi topo -m",
			"arsim sweep --algos nccl --opts NCCL_P2P_LEVEL=SYS --dtype fp32 --sizes 8..128MiB --format nccl-tests",
			"arsim sweep --topology h200x2 --sizes 8,1KiB,43008 --format json"}, errOut)
	mf := addMachineFlags(fs)
	list := fs.String("algos", "", "algorithms, comma-separated (default: all)")
	sizes := fs.String("sizes", "1KiB..256MiB", "message sizes: a list or a power-of-two range")
	ranks := fs.Int("ranks", 0, "world size (default: all GPUs)")
	format := fs.String("format", "table", "output: table, csv, json or nccl-tests (nccl-tests' all_reduce_perf columns, one block per algorithm)")
	plotFile := fs.String("plot", "", "also draw latency versus size to this .svg or .png file")
	parallel := fs.Int("parallel", 0, "points simulated at once (default: all cores); output does not depend on it")
	dtype := fs.String("dtype", "bf16", "element type: bf16, fp16 or fp32 (nccl-tests' bfloat16, half, float)")
	plotBus := fs.String("plot-busbw", "", "also draw bus bandwidth versus size to this .svg or .png file")
	noCheck := fs.Bool("no-check", false, noCheckUsage)
	progress := fs.Bool("progress", false, "show progress on stderr (the default when stderr is a terminal)")
	verbose := fs.Bool("v", false, "print each algorithm's plan notes at each size, NCCL's choices (P2P level, ring search, protocol, channels, threads) included; after a table on stdout, else on stderr")
	firmness := fs.Bool("firmness", false, "also say, at each size, which single machine parameter moves (×0.8, ×1.25, ×0.5, ×2) make another algorithm the fastest (table format, at most 8 sizes)")
	if err := parse(fs, args); err != nil {
		return err
	}
	dt, err := parseDType(*dtype)
	if err != nil {
		return err
	}
	t, mode, o, err := mf.resolve(errOut)
	if err != nil {
		return err
	}
	names, err := parseAlgos(*list)
	if err != nil {
		return err
	}
	if err := checkOpts(names, t, o); err != nil {
		return err
	}
	sz, err := parseSizes(*sizes)
	if err != nil {
		return err
	}
	if err := checkSweepArgs(*format, sz, dt, *ranks, t.NumGPUs(), *plotFile, *plotBus); err != nil {
		return err
	}
	if *firmness && (*format != "table" || len(sz) > maxFirmnessSizes) {
		return badInputf("sweep: --firmness prints with --format table at %d sizes at most (each size times every parameter's moves)", maxFirmnessSizes)
	}
	n := *ranks
	if n == 0 {
		n = t.NumGPUs()
	}
	show := showProgress(*progress, errOut) && (*progress || len(names)*len(sz) >= 40)
	cfg := scenarios.SweepConfig{Top: t, Ranks: *ranks, Algos: names, Sizes: sz, DType: dt, Launch: mode, Opts: o, Parallel: *parallel}
	var rows []scenarios.SweepRow
	timing := func(ctx context.Context, planned map[scenarios.PlanKey]*algos.Schedule, progress func(int, int)) (err error) {
		cfg.Planned, cfg.Progress = planned, progress
		rows, err = scenarios.Sweep(ctx, cfg)
		return err
	}
	var bar func(int, int)
	if *noCheck {
		uncheckedNote(errOut)
		if show {
			bar = progressBar(errOut, "points")
		}
		err = timing(ctx, nil, bar)
	} else {
		if show {
			bar = progressBar(errOut, "schedules proved and points timed")
		}
		// The proof plans with the request the sweep times (the same
		// machine, world size, type, launch and options): its schedules
		// are run as they were proved rather than planned again.
		notes, proofErr, timingErr := proveWhileTiming(ctx, proofRequest{top: t, ranks: n, dtype: dt, launch: mode, opts: optsForAlgo(o)}, names, sz, bar, timing)
		if proofErr != nil {
			return fmt.Errorf("sweep: %w", proofErr)
		}
		checkNotes(errOut, notes)
		err = timingErr
	}
	if err != nil {
		return err
	}
	if err := writeSweep(out, errOut, sweepOutput{format: *format, verbose: *verbose, plot: *plotFile, plotBus: *plotBus},
		algos.Request{Top: t, Ranks: n, DType: dt, Launch: mode}, o, names, sz, rows); err != nil {
		return err
	}
	if !*firmness {
		return nil
	}
	return sweepFirmness(ctx, out, mf, scenarios.SensitivityConfig{Ranks: n, DType: dt, Launch: mode, Opts: o, Parallel: *parallel}, sz, rows)
}

// sweepFirmness writes, at each size, how firm the fastest of the
// algorithms that ran is (scenarios.Firmness with c at that size).
func sweepFirmness(ctx context.Context, out io.Writer, mf *machineFlags, c scenarios.SensitivityConfig, sizes []int64, rows []scenarios.SweepRow) error {
	mach, err := mf.machine()
	if err != nil {
		return err
	}
	c.Preset, c.Params = mach.preset, mach.params
	var ran []string
	for _, r := range rows {
		if r.Err == nil && !slices.Contains(ran, r.Algo) {
			ran = append(ran, r.Algo)
		}
	}
	firms := make([]*scenarios.Firm, len(sizes))
	for i, b := range sizes {
		c.Bytes = b
		if firms[i], err = scenarios.Firmness(ctx, c, ran); err != nil {
			return fmt.Errorf("sweep: --firmness at %v: %w", sim.Bytes(b), err)
		}
	}
	writeSweepFirmness(out, sizes, firms)
	return nil
}

// sweepOutput is what a sweep writes besides its rows: the format, the
// plan notes (-v) and the plots.
type sweepOutput struct {
	format        string
	verbose       bool
	plot, plotBus string
}

// writeSweep writes a sweep's rows in its format, then, with -v, each
// plan's notes (req without Bytes and Opts: the sweep's machine, world
// size, type and launch), what could not run, and the plots.
func writeSweep(out, errOut io.Writer, so sweepOutput, req algos.Request, o map[string]string, names []string, sz []int64, rows []scenarios.SweepRow) error {
	t, n := req.Top, req.Ranks
	var err error
	switch so.format {
	case "json":
		err = writeSweepJSON(out, t.Name, names, rows)
	case "csv":
		err = writeSweepCSV(out, rows)
	case "nccl-tests":
		err = writeSweepNCCLTests(out, t, n, req.DType, req.Launch, names, rows)
	default:
		if err = writeSweepTable(out, t.Name, names, sz, rows); err == nil {
			err = writeEvidence(out, names, sweepUses(rows))
		}
	}
	if err != nil {
		return err
	}
	if so.verbose {
		w := out
		if so.format != "table" {
			w = errOut // keep machine-readable output clean
		}
		writeSweepNotes(w, req, o, names, sz)
	}
	outs := make([]ran, len(rows))
	for i, r := range rows {
		outs[i] = ran{r.Algo, r.Err}
	}
	if err := noteCannotRun(errOut, t.Name, outs); err != nil {
		return err
	}
	return drawSweepPlots(errOut, t.Name, names, rows, so.plot, so.plotBus)
}

// writeSweepNotes prints, per algorithm, the notes its plan carries at
// each size (req with Bytes and Opts set per point), consecutive sizes
// with the same notes together. A point the algorithm cannot plan has
// none: the table says why.
func writeSweepNotes(out io.Writer, req algos.Request, o map[string]string, names []string, sizes []int64) {
	for _, name := range names {
		req.Opts = algos.OptionsFor(name, o)
		var from, to int64
		var notes []string
		flush := func() {
			if len(notes) == 0 {
				return
			}
			at := sim.Bytes(from).String()
			if to != from {
				at += "–" + sim.Bytes(to).String()
			}
			fmt.Fprintf(out, "  %s at %s:\n", name, at)
			for _, n := range notes {
				fmt.Fprintf(out, "    %s\n", n)
			}
		}
		fmt.Fprintln(out)
		for _, b := range sizes {
			req.Bytes = b
			s, err := algos.Plan(name, req)
			var these []string
			if err == nil {
				these = s.Notes
			}
			if len(notes) > 0 && slices.Equal(these, notes) {
				to = b
				continue
			}
			flush()
			from, to, notes = b, b, these
		}
		flush()
	}
}

// checkSweepArgs refuses what sweep cannot do before anything is simulated:
// an unknown format, sizes that are no whole number of elements, a world
// size the machine has not, plots it could not write.
func checkSweepArgs(format string, sz []int64, dt algos.DType, ranks, gpus int, plots ...string) error {
	if format != "table" && format != "csv" && format != "json" && format != "nccl-tests" {
		return badInputf("sweep: --format %q is not one of table, csv, json, nccl-tests", format)
	}
	for _, b := range sz {
		if b%dt.Size() != 0 {
			return badInputf("sweep: size %d B is not a whole number of %s elements (%d B each)", b, dt, dt.Size())
		}
	}
	if ranks < 0 || ranks == 1 || ranks > gpus {
		return badInputf("sweep: --ranks %d: want 2–%d", ranks, gpus)
	}
	for _, f := range plots {
		if f != "" {
			if err := checkWritable(f, ".svg", ".png"); err != nil {
				return err
			}
		}
	}
	return nil
}

// drawSweepPlots draws latency (plotFile) and bus bandwidth (plotBus)
// against size, each where a file was asked for.
func drawSweepPlots(errOut io.Writer, machine string, names []string, rows []scenarios.SweepRow, plotFile, plotBus string) error {
	if plotFile != "" {
		if err := drawAtomic(plotFile, func(name string) error { return viz.DrawSweep(name, machine, names, rows) }); err != nil {
			return err
		}
		fmt.Fprintf(errOut, "wrote %s\n", plotFile)
	}
	if plotBus != "" {
		if err := drawAtomic(plotBus, func(name string) error { return viz.DrawSweepBusBW(name, machine, names, rows) }); err != nil {
			return err
		}
		fmt.Fprintf(errOut, "wrote %s\n", plotBus)
	}
	return nil
}

// parseDType reads --dtype: arsim's names or nccl-tests'.
func parseDType(s string) (algos.DType, error) {
	switch strings.ToLower(s) {
	case "bf16", "bfloat16":
		return algos.BF16, nil
	case "fp16", "half", "float16":
		return algos.FP16, nil
	case "fp32", "float", "float32":
		return algos.FP32, nil
	}
	return "", badInputf("--dtype %q is not one of bf16, fp16, fp32 (or bfloat16, half, float)", s)
}

// ncclTestsType is nccl-tests' name of an element type.
func ncclTestsType(d algos.DType) string {
	return map[algos.DType]string{algos.BF16: "bfloat16", algos.FP16: "half", algos.FP32: "float"}[d]
}

// writeSweepNCCLTests prints each algorithm's rows as nccl-tests'
// all_reduce_perf prints a run (trace.ReadNCCLTests reads one back): size,
// count, type, redop, root, then time (µs), algbw and busbw (GB/s) and
// #wrong for out-of-place and in-place, which are one simulation here.
func writeSweepNCCLTests(out io.Writer, t *topology.Topology, ranks int, dt algos.DType, mode hw.LaunchMode, names []string, rows []scenarios.SweepRow) error {
	graph := 0
	if mode == hw.Graph {
		graph = 1
	}
	for i, name := range names {
		if i > 0 {
			fmt.Fprintln(out)
		}
		var sizes []int64
		for _, r := range rows {
			if r.Algo == name {
				sizes = append(sizes, r.Bytes)
			}
		}
		if len(sizes) == 0 {
			continue
		}
		fmt.Fprintf(out, "# arsim sweep: %s simulated on %s (not a measurement); out-of-place and in-place are the same simulation\n", name, t.Name)
		fmt.Fprintf(out, "# nThread 1 nGpus %d minBytes %d maxBytes %d step: listed warmup iters: 0 iters: 3 agg iters: 1 validation: 0 graph: %d\n#\n# Using devices\n", ranks, slices.Min(sizes), slices.Max(sizes), graph)
		for r := 0; r < ranks; r++ {
			fmt.Fprintf(out, "#  Rank %2d Group  0 Pid      0 on      arsim device %2d [%s] simulated GPU of %s\n", r, r, "sim", t.Name)
		}
		fmt.Fprintln(out, "#")
		fmt.Fprintln(out, "#                                                              out-of-place                       in-place          ")
		fmt.Fprintln(out, "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong")
		fmt.Fprintln(out, "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       ")
		var bus []float64
		for _, r := range rows {
			if r.Algo != name {
				continue
			}
			if r.Err != nil {
				fmt.Fprintf(out, "# %12d bytes: %s cannot run here: %v\n", r.Bytes, name, r.Err)
				continue
			}
			alg := float64(r.Bytes) / (r.Us * 1e-6) / 1e9
			half := fmt.Sprintf("  %7s  %6s  %6s  %6s", ncclFloat(r.Us, 7), ncclFloat(alg, 6), ncclFloat(r.BusGBps, 6), "N/A")
			fmt.Fprintf(out, "%12d  %12d  %8s  %6s  %6d%s%s\n", r.Bytes, r.Bytes/dt.Size(), ncclTestsType(dt), "sum", -1, half, half)
			bus = append(bus, r.BusGBps)
		}
		fmt.Fprintln(out, "# Out of bounds values : 0 OK")
		avg := 0.0
		for _, b := range bus {
			avg += b / float64(len(bus))
		}
		fmt.Fprintf(out, "# Avg bus bandwidth    : %g\n#\n", round(avg, 4))
	}
	return nil
}

// ncclFloat formats a number as nccl-tests does (getFloatStr): two
// decimals, fewer when the width would overflow.
func ncclFloat(v float64, width int) string {
	for _, prec := range []int{2, 1, 0} {
		if s := strconv.FormatFloat(v, 'f', prec, 64); len(s) <= width {
			return s
		}
	}
	return strconv.FormatFloat(v, 'e', 1, 64)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// showProgress says whether to draw progress on errOut: when asked
// (--progress) or when it is a terminal; never into a pipe otherwise.
func showProgress(asked bool, errOut io.Writer) bool { return asked || isTerminal(errOut) }

// progressBar draws "[####....] done/total what" on one line of w.
func progressBar(w io.Writer, what string) func(done, total int) {
	return func(done, total int) {
		const width = 30
		fill := done * width / max(total, 1)
		fmt.Fprintf(w, "\r[%s%s] %d/%d %s", strings.Repeat("#", fill), strings.Repeat(".", width-fill), done, total, what)
		if done == total {
			fmt.Fprintln(w)
		}
	}
}

func writeSweepJSON(out io.Writer, topo string, names []string, rows []scenarios.SweepRow) error {
	type row struct {
		Algo  string   `json:"algo"`
		Bytes int64    `json:"bytes"`
		Us    *float64 `json:"us"`
		BusBW *float64 `json:"busbw_gbps"`
		Model *float64 `json:"nccl_model_us,omitempty"`
		Error string   `json:"error,omitempty"`
	}
	ev, err := evidenceRows(names, sweepUses(rows))
	if err != nil {
		return err
	}
	doc := struct {
		Topology string         `json:"topology"`
		Rows     []row          `json:"rows"`
		Evidence []evidenceJSON `json:"evidence,omitempty"`
	}{Topology: topo, Evidence: ev}
	for _, r := range rows {
		x := row{Algo: r.Algo, Bytes: r.Bytes}
		if r.Err != nil {
			x.Error = r.Err.Error()
		} else {
			x.Us, x.BusBW = ptr(round(r.Us, 3)), ptr(round(r.BusGBps, 3))
			if r.ModelUs > 0 {
				x.Model = ptr(round(r.ModelUs, 3))
			}
		}
		doc.Rows = append(doc.Rows, x)
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

func writeSweepCSV(out io.Writer, rows []scenarios.SweepRow) error {
	w := csv.NewWriter(out)
	if err := w.Write([]string{"algo", "bytes", "us", "busbw_gbps", "nccl_model_us", "error"}); err != nil {
		return err
	}
	for _, r := range rows {
		rec := []string{r.Algo, strconv.FormatInt(r.Bytes, 10), "", "", "", ""}
		if r.Err != nil {
			rec[5] = r.Err.Error()
		} else {
			rec[2], rec[3] = strconv.FormatFloat(r.Us, 'f', 3, 64), strconv.FormatFloat(r.BusGBps, 'f', 3, 64)
			if r.ModelUs > 0 {
				rec[4] = strconv.FormatFloat(r.ModelUs, 'f', 3, 64)
			}
		}
		if err := w.Write(rec); err != nil {
			return err
		}
	}
	w.Flush()
	return w.Error()
}

func writeSweepTable(out io.Writer, topo string, names []string, sizes []int64, rows []scenarios.SweepRow) error {
	fmt.Fprintf(out, "Allreduce latency (µs) on %s; * marks the fastest per size; nccl_model is NCCL's own analytic estimate\n\n", topo)
	at := map[string]scenarios.SweepRow{}
	for _, r := range rows {
		at[r.Algo+"/"+strconv.FormatInt(r.Bytes, 10)] = r
	}
	win := scenarios.Winners(rows)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "size\t")
	hasNCCL := false
	for _, n := range names {
		fmt.Fprintf(tw, "%s\t", n)
		hasNCCL = hasNCCL || n == "nccl"
	}
	if hasNCCL {
		fmt.Fprint(tw, "nccl_model\t")
	}
	fmt.Fprintln(tw, "busbw of winner\t")
	for _, b := range sizes {
		fmt.Fprintf(tw, "%v\t", sim.Bytes(b))
		for _, n := range names {
			r := at[n+"/"+strconv.FormatInt(b, 10)]
			switch {
			case r.Err != nil:
				fmt.Fprint(tw, "n/a\t")
			case win[b].Algo == n:
				fmt.Fprintf(tw, "*%.2f\t", r.Us)
			default:
				fmt.Fprintf(tw, "%.2f\t", r.Us)
			}
		}
		if hasNCCL {
			if r := at["nccl/"+strconv.FormatInt(b, 10)]; r.ModelUs > 0 {
				fmt.Fprintf(tw, "(%.2f)\t", r.ModelUs)
			} else {
				fmt.Fprint(tw, "n/a\t")
			}
		}
		fmt.Fprintf(tw, "%.1f GB/s\t\n", win[b].BusGBps)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var errs []string
	seen := map[string]bool{}
	for _, r := range rows {
		if r.Err != nil && !seen[r.Algo] {
			seen[r.Algo] = true
			errs = append(errs, fmt.Sprintf("  %s: n/a because %v", r.Algo, r.Err))
		}
	}
	sort.Strings(errs)
	for _, e := range errs {
		fmt.Fprintln(out, e)
	}
	return nil
}
