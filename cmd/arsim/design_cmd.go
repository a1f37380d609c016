package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/design"
	"github.com/arsim/arsim/sim"
)

func cmdDesign(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("design", "design [--topology T] [--bytes B] [--ranks N] [--budget K] [--out FILE] [--format table|json]",
		[]string{"arsim design --topology rtxpro6000x8-2numa --bytes 42KiB",
			"arsim design --topology rtxpro6000x8-switches --bytes 42KiB --out winner.json   # then: arsim sweep --algos spec:winner.json,two_stage",
			"arsim design --topology h200x2 --bytes 1MiB --format json"}, errOut)
	topo := fs.String("topology", "rtxpro6000x8-2numa", topologyUsage)
	gpu := fs.String("gpu", "", gpuUsage)
	params := fs.String("params", "", paramsUsage)
	launch := fs.String("launch", "graph", "kernel launches: graph or eager")
	bytesFlag := fs.String("bytes", "42KiB", "message size")
	ranks := fs.Int("ranks", 0, "world size (default: all GPUs)")
	budget := fs.Int("budget", 400, "most candidates timed: the structures, then blocks × threads of the fastest")
	outFile := fs.String("out", "", "write the winner as a spec file (use it as spec:FILE in sweep, timeline, check, explain)")
	format := fs.String("format", "table", "output: table or json")
	show := fs.Int("show", 25, "table rows (the JSON lists every candidate)")
	parallel := fs.Int("parallel", 0, "candidates simulated at once (default: all cores); output does not depend on it")
	if err := parse(fs, args); err != nil {
		return err
	}
	t, err := loadMachine(machineSpec{topo: *topo, gpu: *gpu, params: *params}, errOut)
	if err != nil {
		return err
	}
	mode, err := parseLaunch(*launch)
	if err != nil {
		return err
	}
	b, err := parseSize(*bytesFlag)
	if err != nil {
		return err
	}
	if *format != "table" && *format != "json" {
		return badInputf("design: --format %q is not one of table, json", *format)
	}
	if *ranks < 0 || *ranks == 1 || *ranks > t.NumGPUs() {
		return badInputf("design: --ranks %d: want 2–%d", *ranks, t.NumGPUs())
	}
	if err := intIn("budget", *budget, 1, 100_000, "each candidate is proved and timed"); err != nil {
		return err
	}
	if *outFile != "" {
		if err := checkWritable(*outFile); err != nil {
			return err
		}
	}
	cfg := design.Config{Top: t, Ranks: *ranks, Bytes: b, Launch: mode, Budget: *budget, Parallel: *parallel}
	if isTerminal(errOut) {
		cfg.Progress = progressBar(errOut, "candidates")
	}
	start := time.Now()
	res, err := design.Search(ctx, cfg)
	if err != nil {
		return badInput(err)
	}
	wall := time.Since(start)
	n := *ranks
	if n == 0 {
		n = t.NumGPUs()
	}
	switch *format {
	case "json":
		err = writeDesignJSON(out, t.Name, n, b, res)
	default:
		err = writeDesignTable(out, t.Name, n, b, res, *show)
	}
	if err != nil {
		return err
	}
	par := *parallel
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	// Wall time goes to stderr: the output itself does not depend on it.
	fmt.Fprintf(errOut, "design: %d candidates proved and timed (%d more failed here, %d not composable) in %.1f s on %d cores\n",
		len(res.Candidates), len(res.Failed), res.NotComposable, wall.Seconds(), par)
	if *outFile != "" {
		best := res.Best()
		if best == nil {
			return fmt.Errorf("design: no candidate ran on %s; nothing to write", t.Name)
		}
		spec := design.Spec{Name: best.Name, Params: best.Params, Topology: t.Name, Ranks: n, Bytes: b, Us: round(best.Us, 3), As: best.As, Binds: best.Binds}
		if err := writeFileAtomic(*outFile, func(w io.Writer) error { return design.WriteSpec(w, spec) }); err != nil {
			return err
		}
		fmt.Fprintf(errOut, "wrote %s: use it as spec:%s (sweep, timeline, check, explain)\n", *outFile, *outFile)
	}
	return nil
}

// structure is a candidate's point without its launch configuration.
func structure(c design.Candidate) string {
	p := c.Params
	p.Blocks, p.Threads = 0, 0
	return p.Name()
}

func writeDesignTable(out io.Writer, topo string, n int, b int64, res *design.Result, show int) error {
	fmt.Fprintf(out, "Design search on %s, %d ranks, %v (%d B): %d candidates proved correct and timed, fastest first\n\n", topo, n, sim.Bytes(b), b, len(res.Candidates))
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "rank\tµs\tdesign\tbuilt as\twhat binds")
	shown := 0
	var names []string
	uses := map[string][]algos.Mechanism{}
	for i := 0; i < len(res.Candidates) && shown < show; {
		c := res.Candidates[i]
		// Launch configurations of one structure at exactly the same time
		// are one line.
		j := i + 1
		for j < len(res.Candidates) && res.Candidates[j].Us == c.Us && structure(res.Candidates[j]) == structure(c) {
			j++
		}
		name := c.Name
		if j-i > 1 {
			name += fmt.Sprintf(" (and %d more blocks × threads, same time)", j-i-1)
		}
		fmt.Fprintf(tw, "%d\t%.2f\t%s\t%s\t%s\n", i+1, c.Us, name, c.As, c.Binds)
		names = append(names, fmt.Sprintf("#%d", i+1))
		uses[names[len(names)-1]] = c.Mechanisms
		shown++
		i = j
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(res.Builtins) > 0 {
		bb := res.Builtins[0]
		fmt.Fprintf(out, "\nBest built-in at its defaults: %s, %.2f µs", bb.Name, bb.Us)
		if best := res.Best(); best != nil {
			fmt.Fprintf(out, "; the search's best, %s, takes %.2f µs (%.2f× the built-in's time)", best.Name, best.Us, best.Us/bb.Us)
		}
		fmt.Fprintln(out)
	}
	if err := writeEvidence(out, names, uses); err != nil {
		return err
	}
	if len(res.Failed) > 0 {
		fmt.Fprintf(out, "\nCould not run here (%d):\n", len(res.Failed))
		for _, f := range res.Failed {
			fmt.Fprintf(out, "  %s: %v\n", f.Name, f.Err)
		}
	}
	return nil
}

func writeDesignJSON(out io.Writer, topo string, n int, b int64, res *design.Result) error {
	type cand struct {
		Name    string            `json:"name"`
		Us      float64           `json:"us"`
		Checked bool              `json:"checked"`
		Params  design.Params     `json:"params"`
		As      string            `json:"as"`
		Binds   string            `json:"binds"`
		RestsOn []algos.Mechanism `json:"rests_on"`
	}
	type failed struct {
		Name   string        `json:"name"`
		Params design.Params `json:"params"`
		Error  string        `json:"error"`
	}
	type builtin struct {
		Name string  `json:"name"`
		Us   float64 `json:"us"`
	}
	doc := struct {
		Topology      string         `json:"topology"`
		Ranks         int            `json:"ranks"`
		Bytes         int64          `json:"bytes"`
		Candidates    []cand         `json:"candidates"`
		Failed        []failed       `json:"failed,omitempty"`
		NotComposable int            `json:"not_composable"`
		Builtins      []builtin      `json:"builtins"`
		Evidence      []evidenceJSON `json:"evidence,omitempty"`
	}{Topology: topo, Ranks: n, Bytes: b, Candidates: []cand{}, NotComposable: res.NotComposable}
	ev, err := committedEvidence()
	if err != nil {
		return err
	}
	names := make([]string, 0, len(res.Candidates))
	uses := map[string][]algos.Mechanism{}
	for _, c := range res.Candidates {
		doc.Candidates = append(doc.Candidates, cand{c.Name, round(c.Us, 3), c.Checked, c.Params, c.As, c.Binds, shown(c.Mechanisms, ev)})
		names = append(names, c.Name)
		uses[c.Name] = c.Mechanisms
	}
	if doc.Evidence, err = evidenceRows(names, uses); err != nil {
		return err
	}
	for _, f := range res.Failed {
		doc.Failed = append(doc.Failed, failed{f.Name, f.Params, f.Err.Error()})
	}
	for _, x := range res.Builtins {
		doc.Builtins = append(doc.Builtins, builtin{x.Name, round(x.Us, 3)})
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// loaderNames describes the prefixed names every command takes besides the
// registered algorithms.
func loaderNames() string {
	var parts []string
	for _, p := range algos.LoaderPrefixes() {
		switch p {
		case "file:":
			parts = append(parts, "file:FILE.xml (an MSCCL XML schedule)")
		case "spec:":
			parts = append(parts, "spec:FILE (a design saved by arsim design --out)")
		default:
			parts = append(parts, p+"…")
		}
	}
	return strings.Join(parts, ", ")
}
