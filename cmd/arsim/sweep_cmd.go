package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/arsim/arsim/scenarios"
	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/viz"
)

func cmdSweep(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("sweep", "sweep [--topology T] [--algos a,b] [--sizes 1KiB..256MiB|list] [--format table|csv|json] [--plot FILE.svg|.png]",
		[]string{"arsim sweep", "arsim sweep --algos one_stage,two_stage,nccl --sizes 1KiB..16MiB --plot sweep.svg", "arsim sweep --topology h200x2 --sizes 8,1KiB,43008 --format json"}, errOut)
	mf := addMachineFlags(fs)
	list := fs.String("algos", "", "algorithms, comma-separated (default: all)")
	sizes := fs.String("sizes", "1KiB..256MiB", "message sizes: a list or a power-of-two range")
	ranks := fs.Int("ranks", 0, "world size (default: all GPUs)")
	format := fs.String("format", "table", "output: table, csv or json")
	plotFile := fs.String("plot", "", "also draw latency versus size to this .svg or .png file")
	parallel := fs.Int("parallel", 0, "points simulated at once (default: all cores); output does not depend on it")
	if err := parse(fs, args); err != nil {
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
	sz, err := parseSizes(*sizes)
	if err != nil {
		return err
	}
	if *format != "table" && *format != "csv" && *format != "json" {
		return badInputf("sweep: --format %q is not one of table, csv, json", *format)
	}
	if *ranks < 0 || *ranks == 1 || *ranks > t.NumGPUs() {
		return badInputf("sweep: --ranks %d: want 2–%d", *ranks, t.NumGPUs())
	}
	if *plotFile != "" {
		if err := checkWritable(*plotFile, ".svg", ".png"); err != nil {
			return err
		}
	}
	cfg := scenarios.SweepConfig{Top: t, Ranks: *ranks, Algos: names, Sizes: sz, Launch: mode, Opts: o, Parallel: *parallel}
	if isTerminal(errOut) {
		cfg.Progress = progressBar(errOut, "points")
	}
	rows, err := scenarios.Sweep(ctx, cfg)
	if err != nil {
		return err
	}
	switch *format {
	case "json":
		err = writeSweepJSON(out, t.Name, rows)
	case "csv":
		err = writeSweepCSV(out, rows)
	default:
		err = writeSweepTable(out, t.Name, names, sz, rows)
	}
	if err != nil {
		return err
	}
	if *plotFile != "" {
		if err := viz.DrawSweep(*plotFile, t.Name, names, rows); err != nil {
			return err
		}
		fmt.Fprintf(errOut, "wrote %s\n", *plotFile)
	}
	return nil
}

// checkWritable fails before a long run if path cannot be written.
func checkWritable(path string, exts ...string) error {
	ext := strings.ToLower(filepath.Ext(path))
	ok := len(exts) == 0
	for _, e := range exts {
		ok = ok || e == ext
	}
	if !ok {
		return badInputf("%s: file type %q is not one of %s", path, ext, strings.Join(exts, ", "))
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return badInputf("cannot write %s: %v", path, err)
	}
	return f.Close()
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

func writeSweepJSON(out io.Writer, topo string, rows []scenarios.SweepRow) error {
	type row struct {
		Algo  string   `json:"algo"`
		Bytes int64    `json:"bytes"`
		Us    *float64 `json:"us"`
		BusBW *float64 `json:"busbw_gbps"`
		Model *float64 `json:"nccl_model_us,omitempty"`
		Error string   `json:"error,omitempty"`
	}
	doc := struct {
		Topology string `json:"topology"`
		Rows     []row  `json:"rows"`
	}{Topology: topo}
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
