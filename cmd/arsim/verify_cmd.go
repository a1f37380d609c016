package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/scenarios"
	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
)

func cmdVerify(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("verify", "verify [--topology PRESET|FILE] [--gpu NAME] [--tokens N] [--compute 5ms] [--accept A] [--draft 1.5ms] [--launch graph|eager] [--layer-kernels N] [--algos a,b] [--opts k=v,…] [--format table|json] [-v]",
		[]string{"arsim verify", "arsim verify --tokens 4 --algos one_stage,nccl", "arsim verify --topology topo_m.txt --gpu \"RTX 5090\"   # your nvidia-smi topo -m",
			"arsim verify --topology rtxpro6000x8-switches --launch eager", "arsim verify --opts NCCL_P2P_LEVEL=SYS,NCCL_PROTO=LL --format json"}, errOut)
	mf := addMachineFlags(fs)
	tokensFlag := fs.String("tokens", "3", "tokens verified per pass (draft tokens + 1); a list (1,3,4,8,16,64) prints a what-if table")
	compute := fs.Duration("compute", 0, "layer compute per pass (default 4.475ms + 0.15ms × tokens: 5 ms at 3–4 tokens, an estimate)")
	accept := fs.Float64("accept", 0, "mean accepted tokens per speculative step (default 0.8 × tokens, from published EAGLE-3 acceptance 3.2 of 4)")
	draft := fs.Duration("draft", 1500*time.Microsecond, "drafter time per speculative step")
	list := fs.String("algos", "", "algorithms to compare, comma-separated (default: all)")
	format := fs.String("format", "table", "output: table or json")
	layerKernels := fs.Int("layer-kernels", scenarios.DefaultLayerKernels, "the model's own kernels per layer besides its allreduces; with --launch eager the host issues each (an estimate)")
	verbose := fs.Bool("v", false, "print every algorithm's notes, NCCL's choices (P2P level, ring search, threads) included")
	noCheck := fs.Bool("no-check", false, noCheckUsage)
	firmness := fs.Bool("firmness", false, "also move each machine parameter alone (×0.8, ×1.25, ×0.5, ×2) and list the moves that make another algorithm the fastest")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *layerKernels < 1 || *layerKernels > 10000 {
		return badInputf("verify: --layer-kernels %d: want 1–10000", *layerKernels)
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
	if *format != "table" && *format != "json" {
		return badInputf("verify: --format %q is not one of table, json", *format)
	}
	var toks []int
	for _, f := range splitList(*tokensFlag) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > 65536 {
			return badInputf("verify: --tokens %q: want whole numbers 1–65536, e.g. 3 or 1,3,4,8,16,64", f)
		}
		toks = append(toks, n)
	}
	if len(toks) == 0 {
		return badInputf("verify: --tokens is empty")
	}
	computeD, err := simDuration("compute", *compute)
	if err != nil {
		return err
	}
	draftD, err := simDuration("draft", *draft)
	if err != nil {
		return err
	}
	if err := finite("accept", *accept); err != nil {
		return err
	}
	cfg := scenarios.VerifyConfig{Top: t, Tokens: toks[0], Compute: computeD, Accept: *accept, Draft: draftD, Launch: mode, Opts: scenarios.WithGraphCalls(o, mode), LayerKernels: *layerKernels}
	if len(toks) > 1 && *format == "json" {
		return badInputf("verify: --format json takes one --tokens value")
	}
	if len(toks) > 1 && *firmness {
		return badInputf("verify: --firmness takes one --tokens value")
	}
	res, err := provedPasses(ctx, &cfg, names, toks, *noCheck, errOut)
	if err != nil {
		return err
	}
	if len(toks) > 1 {
		return writeTokensTable(out, errOut, cfg, t.Name, names, toks)
	}
	tokens := &toks[0]
	var firm *scenarios.Firm
	if *firmness {
		if firm, err = verifyFirmness(ctx, mf, t, mode, o, *tokens, res); err != nil {
			return err
		}
	}
	if *format == "json" {
		err = writeVerifyJSON(out, t.Name, *tokens, res, firm)
	} else {
		err = writeVerifyTable(out, cfg, t.Name, res, *verbose)
		if err == nil && firm != nil {
			writeFirmness(out, firm, scenarios.BytesPerAllreduce(*tokens))
		}
	}
	if err != nil {
		return err
	}
	outs := make([]ran, len(res))
	for i, r := range res {
		outs[i] = ran{r.Algo, r.Err}
	}
	return noteCannotRun(errOut, t.Name, outs)
}

// provedPasses proves the schedules of the passes' allreduces (unless
// noCheck) while timing one pass per algorithm (scenarios.Verify) with
// them; with several token counts it only proves them, for the what-if
// table to run its passes with cfg.Planned. A refusal is the error.
func provedPasses(ctx context.Context, cfg *scenarios.VerifyConfig, names []string, toks []int, noCheck bool, errOut io.Writer) ([]scenarios.VerifyResult, error) {
	var res []scenarios.VerifyResult
	timing := func(ctx context.Context, planned map[scenarios.PlanKey]*algos.Schedule, _ func(int, int)) error {
		cfg.Planned = planned // the proof's requests are the passes': all GPUs, bf16, this launch and these options
		if len(toks) > 1 {
			return nil // the what-if table runs its passes itself
		}
		var err error
		res, err = scenarios.Verify(*cfg, names)
		return err
	}
	var err error
	if noCheck {
		uncheckedNote(errOut)
		err = timing(ctx, nil, nil)
	} else {
		sizes := []int64{scenarios.BytesPerAllreduce(1)}
		for _, n := range toks {
			sizes = append(sizes, scenarios.BytesPerAllreduce(n))
		}
		var bar func(int, int)
		if isTerminal(errOut) {
			bar = progressBar(errOut, "schedules proved")
		}
		notes, proofErr, timingErr := proveWhileTiming(ctx, proofRequest{top: cfg.Top, ranks: cfg.Top.NumGPUs(), dtype: algos.BF16, launch: cfg.Launch, opts: optsForAlgo(cfg.Opts)}, names, sizes, bar, timing)
		if proofErr != nil {
			return nil, fmt.Errorf("verify: %w", proofErr)
		}
		checkNotes(errOut, notes)
		err = timingErr
	}
	if err != nil {
		return nil, badInput(err)
	}
	return res, nil
}

func parseLaunch(s string) (hw.LaunchMode, error) {
	switch s {
	case "graph":
		return hw.Graph, nil
	case "eager":
		return hw.Eager, nil
	}
	return 0, badInputf("--launch %q is not one of graph, eager", s)
}

func parseAlgos(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return algos.Names(), nil
	}
	names := splitList(s)
	if len(names) == 0 {
		return nil, badInputf("--algos %q names no algorithm: give names separated by commas (arsim algos lists them), or leave it out for all", s)
	}
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if _, err := algos.Lookup(n); err != nil {
			return nil, badInput(err)
		}
		if seen[n] {
			return nil, badInputf("--algos %q names %s twice: each algorithm runs once, in the order given", s, n)
		}
		seen[n] = true
	}
	return names, nil
}

func writeVerifyJSON(out io.Writer, topo string, tokens int, res []scenarios.VerifyResult, firm *scenarios.Firm) error {
	type row struct {
		Algo            string   `json:"algo"`
		UsPerAllreduce  *float64 `json:"us_per_allreduce"`
		PassMs          *float64 `json:"pass_ms"`
		TokensPerS      *float64 `json:"tokens_per_s"`
		PlainTokensPerS *float64 `json:"plain_tokens_per_s"`
		Error           string   `json:"error,omitempty"`
		Notes           []string `json:"notes,omitempty"`
	}
	names := make([]string, len(res))
	for i, r := range res {
		names[i] = r.Algo
	}
	ev, err := evidenceRows(names, verifyUses(res))
	if err != nil {
		return err
	}
	doc := struct {
		Topology          string         `json:"topology"`
		Tokens            int            `json:"tokens"`
		BytesPerAllreduce int64          `json:"bytes_per_allreduce"`
		Results           []row          `json:"results"`
		Evidence          []evidenceJSON `json:"evidence,omitempty"`
		Firmness          *firmJSON      `json:"firmness,omitempty"`
	}{Topology: topo, Tokens: tokens, BytesPerAllreduce: scenarios.BytesPerAllreduce(tokens), Evidence: ev, Firmness: firmnessJSON(firm)}
	for _, r := range res {
		x := row{Algo: r.Algo, Notes: r.Notes}
		if r.Err != nil {
			x.Error = r.Err.Error()
		} else {
			x.UsPerAllreduce, x.PassMs, x.TokensPerS, x.PlainTokensPerS = ptr(round(r.UsPerAllreduce, 3)), ptr(round(r.PassMs, 4)), ptr(round(r.SpecTokS, 2)), ptr(round(r.PlainTokS, 2))
		}
		doc.Results = append(doc.Results, x)
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

func ptr(v float64) *float64 { return &v }

// rangeIn finds the first two numbers of the form "82 (000)" in a note.
func rangeIn(note string) (lo, hi float64, ok bool) {
	var xs []float64
	for _, f := range strings.Fields(strings.NewReplacer(":", " ", ",", " ").Replace(note)) {
		if v, err := strconv.ParseFloat(f, 64); err == nil && v > 1 {
			xs = append(xs, v)
		}
	}
	if len(xs) < 2 {
		return 0, 0, false
	}
	return min(xs[0], xs[1]), max(xs[0], xs[1]), true
}

func round(v float64, digits int) float64 {
	p := 1.0
	for i := 0; i < digits; i++ {
		p *= 10
	}
	return float64(int64(v*p+0.5)) / p
}

func writeVerifyTable(out io.Writer, cfg scenarios.VerifyConfig, topo string, res []scenarios.VerifyResult, verbose bool) error {
	writeVerifyHeader(out, cfg, topo)
	fmt.Fprintln(out)
	ok := make([]scenarios.VerifyResult, 0, len(res))
	for _, r := range res {
		if r.Err == nil {
			ok = append(ok, r)
		}
	}
	sort.SliceStable(ok, func(i, j int) bool { return ok[i].UsPerAllreduce < ok[j].UsPerAllreduce })
	bestPlain := -1
	for i, r := range ok {
		if bestPlain < 0 || r.PlainTokS > ok[bestPlain].PlainTokS {
			bestPlain = i
		}
	}
	if bestPlain > 0 && ok[bestPlain].PlainTokS <= ok[0].PlainTokS*1.002 {
		bestPlain = 0 // a tie within rounding
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "algorithm\tµs/allreduce\tpass ms\tspec tok/s\tplain tok/s\t\t")
	for i, r := range ok {
		mark := ""
		if i == 0 {
			mark = "  ← winner"
		}
		plain := fmt.Sprintf("%.1f", r.PlainTokS)
		if i == bestPlain && bestPlain != 0 {
			plain = "*" + plain
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.1f\t%s\t%s\t\n", r.Algo, r.UsPerAllreduce, r.PassMs, r.SpecTokS, plain, mark)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if bestPlain > 0 {
		fmt.Fprintf(out, "* plain decoding (1-token passes, %v allreduces) is fastest with %s, not with the winner at %d tokens\n", sim.Bytes(scenarios.BytesPerAllreduce(1)), ok[bestPlain].Algo, cfg.Tokens)
	}
	for _, r := range res {
		if r.Err != nil {
			fmt.Fprintf(out, "  %s: cannot run here: %v\n", r.Algo, r.Err)
		}
	}
	acc := cfg.Accept
	if acc == 0 {
		acc = max(1, 0.8*float64(cfg.Tokens))
	}
	fmt.Fprintf(out, "\nplain: 1 token per step (1-token pass); spec: %.2f accepted tokens per (%.2f ms draft + pass) (defaults, both estimates: acceptance 0.8 × tokens from published EAGLE-3 heads, draft 1.5 ms; set --accept, --draft)\n", acc, float64(cfg.Draft)/float64(sim.Millisecond))
	next := writeWhyWins(out, cfg, ok)
	focus := map[string]bool{}
	if len(ok) > 0 {
		focus[ok[0].Algo] = true
	}
	if next > 0 {
		focus[ok[next].Algo] = true
	}
	writeNotes(out, res, focus, verbose)
	names := make([]string, len(ok))
	for i, r := range ok {
		names[i] = r.Algo
	}
	if err := writeEvidence(out, names, verifyUses(res)); err != nil {
		return err
	}
	if len(scenarios.UserOpts(cfg.Opts)) > 0 {
		fmt.Fprintln(out, "\n(Published figures for this machine are for its algorithms as configured there: not compared under --opts.)")
		return nil
	}
	return writeDisagreements(out, topo, cfg.Tokens, res)
}

// internalNote says whether a plan note is one of NCCL's internals (its
// P2P level, ring search, threads and slices; the ring and tree plans),
// which -v prints.
func internalNote(n string, first bool) bool {
	switch {
	case strings.HasPrefix(n, "NCCL: "):
		return !first
	case strings.HasPrefix(n, "nccl: "), strings.HasPrefix(n, "ring: "), strings.HasPrefix(n, "tree: "):
		return true
	}
	return false
}

// writeNotes prints each note once, with the algorithms it belongs to. By
// default: the notes of the algorithms in focus (the winner and the
// runner-up), NCCL's one-line summary, and every note saying an algorithm
// ran another; verbose: all.
func writeNotes(out io.Writer, res []scenarios.VerifyResult, focus map[string]bool, verbose bool) {
	var order []string
	who := map[string][]string{}
	hidden := 0
	for _, r := range res {
		firstNCCL := true
		for _, n := range r.Notes {
			first := firstNCCL && strings.HasPrefix(n, "NCCL: ")
			if strings.HasPrefix(n, "NCCL: ") {
				firstNCCL = false
			}
			show := verbose || strings.Contains(n, "fell back") || (first && !internalNote(n, true)) || (focus[r.Algo] && !internalNote(n, first))
			if !show {
				hidden++
				continue
			}
			if _, ok := who[n]; !ok {
				order = append(order, n)
			}
			if !slices.Contains(who[n], r.Algo) {
				who[n] = append(who[n], r.Algo)
			}
		}
	}
	if len(order) > 0 {
		fmt.Fprintln(out)
	}
	for _, n := range order {
		fmt.Fprintf(out, "  note (%s): %s\n", strings.Join(who[n], ", "), n)
	}
	if hidden > 0 && !verbose {
		fmt.Fprintln(out, "  (-v prints every algorithm's plan notes, NCCL's choices included)")
	}
}

// explainWin compares the two schedules' shape: synchronisation rounds on
// the critical path and bytes each GPU moves.
func explainWin(cfg scenarios.VerifyConfig, a, b string) string {
	rate := gpuLinkGBps(cfg.Top)
	sa, ea := scheduleShape(cfg, a, rate)
	sb, eb := scheduleShape(cfg, b, rate)
	if ea != nil || eb != nil {
		return ""
	}
	return fmt.Sprintf("%s %s; %s %s (%.0f GB/s of payload per GPU link direction).", a, sa, b, sb, rate)
}

// scheduleShape says what costs the schedule pays (algos.Binds): rounds
// of flag waits one after another, and the bytes through the busiest GPU
// link direction with the time they take at the link's payload rate.
func scheduleShape(cfg scenarios.VerifyConfig, name string, rate float64) (string, error) {
	s, err := algos.Plan(name, algos.Request{Top: cfg.Top, Ranks: cfg.Top.NumGPUs(), Bytes: scenarios.BytesPerAllreduce(cfg.Tokens), DType: algos.BF16, Launch: cfg.Launch, Opts: cfg.Opts})
	if err != nil {
		return "", err
	}
	b := algos.Binds(algos.Stats(s), rate)
	if lb, err := algos.LoopBinds(s, cfg.Top); err == nil && lb != "" {
		b += "; " + lb
	}
	return b, nil
}

// gpuLinkGBps is the payload rate of GPU 0's widest link (algos.PayloadGBps).
func gpuLinkGBps(t *topology.Topology) float64 { return algos.PayloadGBps(t) }

// writeDisagreements prints the published figures for this machine beside
// the simulation, with the error, whether they agree or not, each cited by
// who measured what (the source once, when every figure has the same).
func writeDisagreements(out io.Writer, topo string, tokens int, res []scenarios.VerifyResult) error {
	pub, err := scenarios.PublishedFigures()
	if err != nil {
		return err
	}
	byAlgo := map[string]scenarios.VerifyResult{}
	for _, r := range res {
		if r.Err == nil {
			byAlgo[r.Algo] = r
		}
	}
	bytes := scenarios.BytesPerAllreduce(tokens)
	type line struct{ text, kind, source string }
	var lines []line
	// plainAgrees: the simulated plain decoding falls in its published
	// range; passAgrees: the verify pass with nccl is within a quarter of
	// its published figure. Seen, and not both or neither, the source's
	// NCCL figures disagree with each other in this model (regimeNote).
	plainSeen, plainAgrees, passSeen, passAgrees := false, false, false, false
	for _, p := range pub {
		if p.System != topo {
			continue
		}
		var sim float64
		var what, unit string
		switch {
		case p.Kind == "allreduce" && p.Bytes == bytes && p.Impl == "nccl":
			r, ok := byAlgo["nccl"]
			if !ok {
				continue
			}
			sim, what, unit = r.UsPerAllreduce, fmt.Sprintf("nccl allreduce %d B", p.Bytes), "µs"
		case p.Kind == "allreduce" && p.Bytes == bytes && p.Algo == "one_stage":
			r, ok := byAlgo["one_stage"]
			if !ok {
				continue
			}
			sim, what, unit = r.UsPerAllreduce, fmt.Sprintf("one-stage allreduce %d B", p.Bytes), "µs"
		case p.Kind == "verify_pass" && p.Bytes == bytes:
			r, ok := byAlgo["nccl"]
			if !ok {
				continue
			}
			sim, what, unit = r.PassMs*1000, "verify pass with nccl", "µs"
			passSeen, passAgrees = true, math.Abs(sim-p.Value) <= 0.25*p.Value
		case p.Kind == "throughput" && p.Algo == "baseline_decode":
			r, ok := byAlgo["nccl"]
			if !ok {
				continue
			}
			lo, hi, ok := rangeIn(p.Note)
			if !ok {
				continue
			}
			lines = append(lines, line{fmt.Sprintf("%-28s published %.1f–%.1f tok/s", "plain decoding", lo, hi), "measured", p.Source})
			lines[len(lines)-1].text += fmt.Sprintf("%%s, simulated with nccl %.1f tok/s", r.PlainTokS)
			plainSeen, plainAgrees = true, r.PlainTokS >= lo && r.PlainTokS <= hi
			continue
		default:
			continue
		}
		kind := "measured"
		switch p.Launch {
		case "estimate":
			kind = "an estimate, not a measurement"
		case "attribution":
			kind = "the source's share of a measured pass, not a measured allreduce"
		}
		lines = append(lines, line{fmt.Sprintf("%-28s published %9.1f %s%%s, simulated %9.1f %s: %+.0f%%%%", what, p.Value, unit, sim, unit, (sim-p.Value)/p.Value*100), kind, p.Source})
	}
	if len(lines) == 0 {
		return nil
	}
	same := true
	for _, l := range lines {
		same = same && strings.TrimSuffix(l.source, " (two runs)") == strings.TrimSuffix(lines[0].source, " (two runs)")
	}
	if same {
		fmt.Fprintf(out, "\nPublished figures for this machine, from %s:\n", strings.TrimSuffix(lines[0].source, " (two runs)"))
	} else {
		fmt.Fprintln(out, "\nPublished figures for this machine:")
	}
	for _, l := range lines {
		cite := " (" + l.kind + ")"
		if !same {
			cite = " (" + l.kind + "; " + l.source + ")"
		}
		fmt.Fprintf(out, "  "+l.text+"\n", cite)
	}
	if plainSeen && passSeen && plainAgrees != passAgrees {
		fmt.Fprint(out, regimeNote(plainAgrees))
	}
	return nil
}

// regimeNote says why a machine's measured plain decoding and its measured
// verify pass with NCCL cannot both agree (docs/VALIDATION.md, "The
// headline machine"): the pass runs as many allreduces as a plain token,
// so NCCL as slow as the pass says makes plain decoding far slower than
// measured. fast: the model is in the fast regime (plain decoding agrees).
// Only rtxpro6000x8-2numa's published figures have both, and the regimes
// named are that machine's (platform.iommu_host_latency about 3 µs puts
// its NCCL at 196–200 µs, the slow one).
func regimeNote(fast bool) string {
	const head = "  These figures cannot all hold in one model: the pass runs as many NCCL allreduces as a plain token, and\n" +
		"  NCCL as slow as the measured pass makes plain decoding far slower than measured.\n"
	if fast {
		return head + "  The pass fits the slow regime, a platform property off here (platform.iommu_host_latency, a translation\n" +
			"  on every GPU access to host memory; docs/VALIDATION.md, \"The headline machine\"): measure your box with\n" +
			"  nccl-tests and calibrate it.\n"
	}
	return head + "  Plain decoding fits the fast regime, with platform.iommu_host_latency at 0 (docs/VALIDATION.md, \"The\n" +
		"  headline machine\").\n"
}

// writeTokensTable is the what-if over tokens per pass: µs per allreduce
// for each algorithm and token count, the winner marked.
func writeTokensTable(out, errOut io.Writer, cfg scenarios.VerifyConfig, topo string, names []string, toks []int) error {
	fmt.Fprintf(out, "Verify pass on %s, µs per allreduce by tokens per pass (bytes = tokens × 7168 × 2); * marks the fastest\n\n", topo)
	cols := make([][]scenarios.VerifyResult, len(toks))
	for i, n := range toks {
		c := cfg
		c.Tokens = n
		c.Accept = 0
		if cfg.Compute != 0 {
			c.Compute = 0 // a fixed --compute applies to one token count only
		}
		res, err := scenarios.Verify(c, names)
		if err != nil {
			return badInput(err)
		}
		cols[i] = res
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "algorithm\t")
	for _, n := range toks {
		fmt.Fprintf(tw, "%d tok (%v)\t", n, sim.Bytes(scenarios.BytesPerAllreduce(n)))
	}
	fmt.Fprintln(tw)
	best := make([]string, len(toks))
	for i := range toks {
		b := -1.0
		for _, r := range cols[i] {
			if r.Err == nil && (b < 0 || r.UsPerAllreduce < b) {
				b, best[i] = r.UsPerAllreduce, r.Algo
			}
		}
	}
	for j, name := range names {
		fmt.Fprintf(tw, "%s\t", name)
		for i := range toks {
			r := cols[i][j]
			switch {
			case r.Err != nil:
				fmt.Fprint(tw, "n/a\t")
			case best[i] == name:
				fmt.Fprintf(tw, "*%.2f\t", r.UsPerAllreduce)
			default:
				fmt.Fprintf(tw, "%.2f\t", r.UsPerAllreduce)
			}
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprint(tw, "pass ms (winner)\t")
	for i := range toks {
		for _, r := range cols[i] {
			if r.Algo == best[i] {
				fmt.Fprintf(tw, "%.2f\t", r.PassMs)
			}
		}
	}
	fmt.Fprintln(tw)
	if err := tw.Flush(); err != nil {
		return err
	}
	var outs []ran
	uses := map[string][]algos.Mechanism{}
	for _, col := range cols {
		for _, r := range col {
			outs = append(outs, ran{r.Algo, r.Err})
			uses[r.Algo] = algos.UnionMechanisms(uses[r.Algo], r.Mechanisms)
		}
	}
	if err := writeEvidence(out, names, uses); err != nil {
		return err
	}
	return noteCannotRun(errOut, topo, outs)
}

// writeVerifyHeader says what the pass is: the allreduces, the compute, the
// launch mode and what it implies.
func writeVerifyHeader(out io.Writer, cfg scenarios.VerifyConfig, topo string) {
	bytes := scenarios.BytesPerAllreduce(cfg.Tokens)
	computeMs := float64(cfg.Compute) / float64(sim.Millisecond)
	if cfg.Compute == 0 {
		computeMs = float64(scenarios.DefaultCompute(cfg.Tokens)) / float64(sim.Millisecond)
	}
	computeSrc := "as given by --compute"
	if cfg.Compute == 0 {
		computeSrc = fmt.Sprintf("estimate: %v + %v per token, 5 ms at 3–4 tokens as the deployment report below measured; --compute to change", scenarios.ComputeFixed, scenarios.ComputePerToken)
	}
	fmt.Fprintf(out, "Verify pass on %s: %d tokens → %d allreduces of %d B (%v) per pass, %.2f ms compute (%s), launches: %v\n",
		topo, cfg.Tokens, scenarios.Layers*scenarios.AllreducesPerLayer, bytes, sim.Bytes(bytes), computeMs, computeSrc, cfg.Launch)
	n := scenarios.Layers * scenarios.AllreducesPerLayer
	if cfg.Launch == hw.Eager {
		issue := scenarios.EagerIssue(cfg.Top, cfg.LayerKernels)
		fmt.Fprintf(out, "Eager: the host launches every kernel one by one, %d of the model's per layer (--layer-kernels) and each allreduce, at gpu.launch_eager = %.2f µs each: an allreduce cannot start before %.2f µs of launches per allreduce are issued, so no pass is shorter than %d × %.2f µs = %.2f ms, whatever the allreduce.\n",
			cfg.LayerKernels, cfg.Top.Params.Get("gpu.launch_eager"), issue.Micros(), n, issue.Micros(), issue.Micros()*float64(n)/1000)
	} else {
		fmt.Fprintln(out, "CUDA graphs: the pass is replayed without host launches (--launch eager shows what host launches add).")
	}
}

// writeWhyWins names the winner's margin over the runner-up, the first
// algorithm measurably slower (ties named as such), and why it wins; it
// returns the runner-up's index in ok, or -1.
func writeWhyWins(out io.Writer, cfg scenarios.VerifyConfig, ok []scenarios.VerifyResult) int {
	// The runner-up is the first algorithm measurably slower than the
	// winner; ties (custom_ar running one_stage, say) are named as such.
	var ties []string
	next := -1
	for i := 1; i < len(ok); i++ {
		if ok[i].UsPerAllreduce <= ok[0].UsPerAllreduce*1.005 {
			ties = append(ties, ok[i].Algo)
			continue
		}
		next = i
		break
	}
	if next > 0 {
		w, nx := ok[0], ok[next]
		tie := ""
		if len(ties) > 0 {
			tie = fmt.Sprintf(" (tied with %s, which runs the same way here)", strings.Join(ties, ", "))
		}
		fmt.Fprintf(out, "\nWhy %s wins%s: %.1f µs per allreduce against %.1f µs for %s, the next best (%.1f× faster).\n", w.Algo, tie, w.UsPerAllreduce, nx.UsPerAllreduce, nx.Algo, nx.UsPerAllreduce/w.UsPerAllreduce)
		if why := explainWin(cfg, w.Algo, nx.Algo); why != "" {
			fmt.Fprintln(out, why)
		}
	}
	return next
}
