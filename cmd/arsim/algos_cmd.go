package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/msccl"
	"github.com/arsim/arsim/scenarios"
	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
)

func cmdAlgos(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("algos", "algos", []string{"arsim algos"}, errOut)
	if err := parse(fs, args); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tDESCRIPTION\tOPTIONS")
	for _, n := range algos.Names() {
		a, _ := algos.Lookup(n)
		var opts []string
		for _, o := range a.Options() {
			if o.Values != nil {
				opts = append(opts, o.Name+"="+strings.Join(o.Values, "|"))
			} else {
				opts = append(opts, o.Name+"="+intRange(o.Int))
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", n, a.Describe(), strings.Join(opts, " "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nAlso by name, in every command: %s.\n", loaderNames())
	return nil
}

// checkSizes are the message sizes `arsim check` proves: one element, odd
// element counts, and 1 KiB to 64 MiB by factors of 4.
func checkSizes() []int64 {
	s := []int64{2, 14, 43010}
	for b := int64(1 << 10); b <= 64<<20; b *= 4 {
		s = append(s, b)
	}
	return s
}

func cmdCheck(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("check", "check [--algos a,b] [--ranks 2,3,4,5,8,16] [--max-bytes N] [--schedule FILE.xml] [--topology PRESET|FILE]",
		[]string{"arsim check", "arsim check --algos ring --ranks 8", "arsim check --topology topo_m.txt --ranks 8", "arsim check --schedule msccl/testdata/ring_allreduce_8.xml", "arsim check --algos spec:winner.json"}, errOut)
	list := fs.String("algos", "", "algorithms to check (default: all); also file:FILE.xml (MSCCL) and spec:FILE (arsim design --out)")
	ranksFlag := fs.String("ranks", "2,3,4,5,8,16", "world sizes")
	maxBytes := fs.String("max-bytes", "64MiB", "largest message size")
	schedule := fs.String("schedule", "", "an MSCCL XML schedule to check at its own world size (same as --algos file:FILE --ranks N)")
	topo := fs.String("topology", "", "plan on this machine, a preset or a topology file (default: rtxpro6000x8-2numa up to 8 ranks, a switch fabric beyond)")
	gpu := fs.String("gpu", "", gpuUsage)
	params := fs.String("params", "", paramsUsage)
	progress := fs.Bool("progress", false, "show progress on stderr (the default when stderr is a terminal)")
	if err := parse(fs, args); err != nil {
		return err
	}
	var machine *topology.Topology
	if *topo != "" {
		t, err := loadMachine(machineSpec{topo: *topo, gpu: *gpu, params: *params}, errOut)
		if err != nil {
			return err
		}
		machine = t
	} else if *gpu != "" || *params != "" {
		return badInputf("check: --gpu and --params need --topology")
	}
	if *schedule != "" {
		a, err := msccl.ReadFile(*schedule)
		if err != nil {
			return badInput(err)
		}
		*list = msccl.Prefix + *schedule
		*ranksFlag = fmt.Sprint(a.NGPUs)
	}
	names, err := parseAlgos(*list)
	if err != nil {
		return err
	}
	limit, err := parseSize(*maxBytes)
	if err != nil {
		return err
	}
	worlds, err := parseWorlds(*ranksFlag)
	if err != nil {
		return err
	}
	tops := map[int]*topology.Topology{}
	checked, skipped := 0, 0
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ALGORITHM\tRANKS\tSIZES CHECKED\tRESULT")
	var bar func(int, int)
	if showProgress(*progress, errOut) {
		bar = progressBar(errOut, "algorithm × world size")
	}
	step, steps := 0, len(names)*len(worlds)
	for _, name := range names {
		a, _ := algos.Lookup(name)
		for _, n := range worlds {
			if bar != nil {
				step++
				bar(step, steps)
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := a.WorldSizes(n); err != nil {
				fmt.Fprintf(tw, "%s\t%d\t-\tskipped: %v\n", name, n, err)
				skipped++
				continue
			}
			if machine != nil && n > machine.NumGPUs() {
				fmt.Fprintf(tw, "%s\t%d\t-\tskipped: %s has %d GPUs\n", name, n, machine.Name, machine.NumGPUs())
				skipped++
				continue
			}
			t, err := checkTopology(tops, n)
			if machine != nil {
				t, err = machine, nil
			}
			if err != nil {
				return err
			}
			count, refused, tooLarge, err := checkSchedules(a, name, t, n, limit)
			if err != nil {
				return err
			}
			checked += count
			if refused != nil {
				fmt.Fprintf(tw, "%s\t%d\t-\tnot allowed on %s: %v\n", name, n, t.Name, refused)
				skipped++
				continue
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\tok%s\n", name, n, count, tooLarge)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "\n%d schedules proved correct (sum at every rank, no races across back-to-back runs (two, or every phase of a buffer rotation), no deadlock, no wait ended by a flag value raised out of order); %d algorithm × world-size pairs not allowed\n", checked, skipped)
	return nil
}

// sizesFor returns the sizes check proves for a: checkSizes, rounded up
// to the algorithm's size unit when it has one (an MSCCL schedule takes
// whole chunks only), without repeats.
func sizesFor(a algos.Algorithm, elem int64) []int64 {
	u, ok := a.(algos.SizeUnit)
	if !ok {
		return checkSizes()
	}
	unit := max(u.Unit(elem), 1)
	var out []int64
	for _, b := range checkSizes() {
		b = (b + unit - 1) / unit * unit
		if len(out) == 0 || out[len(out)-1] != b {
			out = append(out, b)
		}
	}
	return out
}

// sizesBelow returns the largest size check proves for a below b.
func sizesBelow(a algos.Algorithm, b int64) int64 {
	var last int64
	for _, x := range sizesFor(a, algos.BF16.Size()) {
		if x < b {
			last = x
		}
	}
	return last
}

// parseWorlds reads --ranks: world sizes ≥ 2, returned sorted.
func parseWorlds(list string) ([]int, error) {
	var worlds []int
	for _, s := range splitList(list) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 2 {
			return nil, badInputf("check: --ranks %q: world sizes are integers ≥ 2", s)
		}
		if n > algos.MaxCheckRanks {
			return nil, badInputf("check: --ranks %d: the checker handles at most %d ranks (its symbolic data holds which ranks' inputs a byte sums in one 64-bit word)", n, algos.MaxCheckRanks)
		}
		worlds = append(worlds, n)
	}
	sort.Ints(worlds)
	return slices.Compact(worlds), nil
}

// checkTopology is the machine check plans n ranks on (the headline preset
// up to 8 GPUs, a switch fabric beyond), built once per size into tops.
func checkTopology(tops map[int]*topology.Topology, n int) (*topology.Topology, error) {
	if t, ok := tops[n]; ok {
		return t, nil
	}
	var t *topology.Topology
	var err error
	if n > 8 {
		t, err = topology.SwitchFabric(n, 4)
	} else {
		t, err = topology.Load("rtxpro6000x8-2numa")
	}
	tops[n] = t
	return t, err
}

// checkSchedules plans and checks algorithm a (called name) on n ranks of
// t at every size up to limit and returns how many it proved; refused is
// why the algorithm will not plan this world size on this machine at all
// (e.g. islands of unequal size: not a schedule to check); tooLarge says
// from which size the schedules outgrow the checker, if they do.
func checkSchedules(a algos.Algorithm, name string, t *topology.Topology, n int, limit int64) (count int, refused error, tooLarge string, err error) {
	for i, b := range sizesFor(a, algos.BF16.Size()) {
		if b > limit {
			continue
		}
		s, err := algos.Plan(name, algos.Request{Top: t, Ranks: n, Bytes: b, DType: algos.BF16, Launch: hw.Graph})
		if err != nil && i == 0 {
			return 0, err, "", nil
		}
		if err != nil {
			return 0, nil, "", fmt.Errorf("check: %s, %d ranks, %d B: plan: %w", name, n, b, err)
		}
		if err := algos.Check(s); err != nil {
			if errors.Is(err, algos.ErrTooLarge) && count > 0 {
				return count, nil, fmt.Sprintf(" (up to %v; from %v the schedule is too large for the checker)", sim.Bytes(sizesBelow(a, b)), sim.Bytes(b)), nil
			}
			if errors.Is(err, algos.ErrTooLarge) {
				return 0, fmt.Errorf("its schedule is too large for the checker at every size (%w)", err), "", nil
			}
			return 0, nil, "", fmt.Errorf("check: %s, %d ranks, %d B: %w", name, n, b, err)
		}
		count++
	}
	return count, nil, "", nil
}

func cmdExplain(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("explain", "explain ALGO [--ranks N] [--bytes B] [--topology T] [--opts k=v,…]", []string{"arsim explain one_stage --ranks 4", "arsim explain ring --ranks 4 --bytes 4KiB --opts proto=ll"}, errOut)
	ranks := fs.Int("ranks", 4, "world size")
	bytesFlag := fs.String("bytes", "4KiB", "message size")
	topo := fs.String("topology", "rtxpro6000x8-2numa", topologyUsage)
	gpu := fs.String("gpu", "", gpuUsage)
	params := fs.String("params", "", paramsUsage)
	opts := fs.String("opts", "", "algorithm options key=value,… (short or NCCL spelling)")
	sens := fs.Bool("sensitivity", false, "also time it with each machine parameter moved by 10 % alone and list the parameters its time rests on, the most first")
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if err := parse(fs, args); err != nil {
			return err
		}
		return badInputf("explain: name an algorithm (valid: %s)", strings.Join(algos.Names(), ", "))
	}
	name := args[0]
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	b, err := parseSize(*bytesFlag)
	if err != nil {
		return err
	}
	mach, err := resolveMachine(machineSpec{topo: *topo, gpu: *gpu, params: *params})
	if err != nil {
		return err
	}
	t, err := mach.build()
	if err != nil {
		return err
	}
	printAssumptions(errOut, mach)
	o, err := parseOpts(*opts)
	if err != nil {
		return err
	}
	if err := checkOpts([]string{name}, t, o); err != nil {
		return err
	}
	s, err := algos.Plan(name, algos.Request{Top: t, Ranks: *ranks, Bytes: b, DType: algos.BF16, Launch: hw.Graph, Opts: o})
	if err != nil {
		return badInput(err)
	}
	a, _ := algos.Lookup(name)
	fmt.Fprintf(out, "%s — %s\n%d ranks, %v (%d B) on %s\n", name, a.Describe(), *ranks, sim.Bytes(b), b, t.Name)
	for _, n := range s.Notes {
		fmt.Fprintln(out, "  note: "+n)
	}
	st := algos.Stats(s)
	fmt.Fprintf(out, "%d operations; longest chain of flag waits: %d; most bytes one GPU moves: %v (%s)\n", st.Ops, st.ChainWaits, sim.Bytes(st.MaxRankBytes), st.Where)
	fmt.Fprintln(out, "\nWho moves data to whom (bytes, rows: from, columns: to; h = host memory):")
	writeTrafficMatrix(out, s)
	fmt.Fprintln(out, "\nRank 0's program in words (consecutive operations of one kind and purpose grouped):")
	for i, ph := range phases(s.Programs[0]) {
		fmt.Fprintf(out, "  %2d. %s\n", i+1, ph)
	}
	fmt.Fprintln(out, "\nRank 0's program, step by step (\"after\" lists the ops it waits for):")
	for i, op := range s.Programs[0] {
		after := ""
		if len(op.After) > 0 {
			var xs []string
			for _, a := range op.After {
				xs = append(xs, fmt.Sprint(a))
			}
			after = "  after " + strings.Join(xs, ",")
		}
		fmt.Fprintf(out, "  %3d  %s%s\n", i, op, after)
		if i == 199 && len(s.Programs[0]) > 200 {
			fmt.Fprintf(out, "  … %d more\n", len(s.Programs[0])-200)
			break
		}
	}
	if err := algos.Check(s); err != nil {
		return fmt.Errorf("explain: the checker rejects this schedule: %w", err)
	}
	fmt.Fprintln(out, "\nChecker: every rank ends with the sum of all inputs; no races across back-to-back runs (two, or every phase of a buffer rotation); no deadlock.")
	// what it rests on as it runs: three back to back, as sweep times it
	mechs := algos.MechanismsOf(s, t)
	if m, err := hw.New(t); err == nil {
		if res, err := algos.Run(m, s, algos.RunOptions{Iterations: 3, Launch: hw.Graph}); err == nil {
			mechs = algos.RanMechanisms(s, t, res)
		}
	}
	if *sens {
		base, ss, err := scenarios.Sensitivities(ctx, scenarios.SensitivityConfig{Preset: mach.preset, Params: mach.params,
			Algo: name, Ranks: *ranks, Bytes: b, Launch: hw.Graph, Opts: o})
		if err != nil {
			return fmt.Errorf("explain: %w", err)
		}
		writeSensitivities(out, t.Name, base, ss)
	}
	return writeEvidence(out, []string{name}, map[string][]algos.Mechanism{name: mechs})
}

// minElasticity is the least |elasticity| writeSensitivities lists.
const minElasticity = 0.01

// writeSensitivities lists the parameters an allreduce's time rests on,
// the most first, with their values and sources.
func writeSensitivities(out io.Writer, machine string, base float64, ss []scenarios.Sensitivity) {
	fmt.Fprintf(out, "\nIts time: %.2f µs per allreduce in steady state (three back to back, as sweep times them).\n", base)
	fmt.Fprintln(out, "What that time rests on, parameter by parameter (each moved alone by +10 %, or −10 % where +10 % leaves its")
	fmt.Fprintln(out, "range, the schedule planned again; elasticity: the time's relative change over the parameter's, 1 in proportion):")
	var shown []scenarios.Sensitivity
	var small, skipped, failed int
	var smallOther []string // small, but planned another schedule
	for _, x := range ss {
		switch {
		case x.Err != nil:
			failed++
		case x.Skipped != "":
			skipped++
		case math.Abs(x.Elasticity) < minElasticity:
			small++
			if x.PlanChanged {
				smallOther = append(smallOther, x.Param.Name)
			}
		default:
			shown = append(shown, x)
		}
	}
	nameW, valW := len("parameter"), len("value")
	for _, x := range shown {
		nameW = max(nameW, len(x.Param.Name))
		valW = max(valW, len(strconv.FormatFloat(x.Param.Value, 'g', -1, 64)))
	}
	fmt.Fprintf(out, "  elasticity  %-*s  %*s  %-5s  plan   source\n", nameW, "parameter", valW, "value", "unit")
	changed := 0
	for _, x := range shown {
		plan := "same"
		if x.PlanChanged {
			plan = "other"
			changed++
		}
		fmt.Fprintf(out, "  %+10.3f  %-*s  %*s  %-5s  %-5s  %s\n", x.Elasticity, nameW, x.Param.Name, valW,
			strconv.FormatFloat(x.Param.Value, 'g', -1, 64), x.Param.Unit, plan, shortSource(x.Param.Source))
	}
	if changed > 0 {
		fmt.Fprintf(out, "  plan other: moved, the parameter made the algorithm plan another schedule (protocol, channels, chunking):\n"+
			"  its elasticity is a step between two plans, not a slope of one\n")
	}
	fmt.Fprintf(out, "  %d other parameters move it by less than %.2f %% per 1 %%", small, minElasticity)
	if len(smallOther) > 0 {
		fmt.Fprintf(out, " (plan other: %s)", strings.Join(smallOther, ", "))
	}
	fmt.Fprintf(out, ";\n  %d not moved (switches, bit masks, the architecture, parameters at 0 or with no step in their range)", skipped)
	if failed > 0 {
		fmt.Fprintf(out, "; %d could not be tried (the machine or the schedule refused the value)", failed)
	}
	fmt.Fprintf(out, ". Whole sources: arsim topology show %s\n", machine)
}

// shortSource is a parameter's source cut to one line of the table.
func shortSource(s string) string {
	const most = 90
	if r := []rune(s); len(r) > most {
		return string(r[:most-1]) + "…"
	}
	return s
}

func writeTrafficMatrix(out io.Writer, s *algos.Schedule) {
	n := s.Ranks
	// index n+socket for host memories
	idx := func(m hw.Mem) int {
		if m.Host {
			return n + m.Socket
		}
		return m.Rank
	}
	size := n + 4
	mat := make([][]int64, size)
	for i := range mat {
		mat[i] = make([]int64, size)
	}
	used := make([]bool, size)
	for _, prog := range s.Programs {
		for _, op := range prog {
			switch op.Kind {
			case algos.Read, algos.Write, algos.Copy:
				a, b := idx(op.Src.Buf.At), idx(op.Dst.Buf.At)
				if a != b && a < size && b < size {
					mat[a][b] += op.Src.Len
					used[a], used[b] = true, true
				}
			}
		}
	}
	label := func(i int) string {
		if i < n {
			return fmt.Sprintf("gpu%d", i)
		}
		return fmt.Sprintf("h%d", i-n)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 1, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "\t")
	for j := 0; j < size; j++ {
		if used[j] || j < n {
			fmt.Fprintf(tw, "%s\t", label(j))
		}
	}
	fmt.Fprintln(tw)
	for i := 0; i < size; i++ {
		if !(used[i] || i < n) {
			continue
		}
		fmt.Fprintf(tw, "%s\t", label(i))
		for j := 0; j < size; j++ {
			if used[j] || j < n {
				if mat[i][j] == 0 {
					fmt.Fprint(tw, ".\t")
				} else {
					fmt.Fprintf(tw, "%d\t", mat[i][j])
				}
			}
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

var labelNumbers = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\s+(rank|peer|ch|slice|loop|part)\s+\d+|\s+\d+$`)
})

// phases groups a program's consecutive ops of one kind whose labels agree
// once rank, channel, slice and step numbers are taken out, and describes
// each group in a line.
func phases(prog []algos.Op) []string {
	var out []string
	for i := 0; i < len(prog); {
		key := labelNumbers().ReplaceAllString(prog[i].Label, "")
		j := i
		var bytes int64
		peers := map[string]bool{}
		for j < len(prog) && prog[j].Kind == prog[i].Kind && labelNumbers().ReplaceAllString(prog[j].Label, "") == key {
			bytes += prog[j].Src.Len
			switch prog[j].Kind {
			case algos.Read:
				peers[prog[j].Src.Buf.At.String()] = true
			case algos.Write, algos.Copy:
				peers[prog[j].Dst.Buf.At.String()] = true
			case algos.Signal, algos.Wait:
				peers[prog[j].Flag.At.String()] = true
			}
			j++
		}
		n := j - i
		what := fmt.Sprintf("%s ×%d", prog[i].Kind, n)
		if n == 1 {
			what = prog[i].Kind.String()
		}
		line := what
		if key != "" {
			line += " — " + key
		}
		if bytes > 0 {
			line += fmt.Sprintf(", %v", sim.Bytes(bytes))
		}
		if len(peers) > 0 {
			var ps []string
			for p := range peers {
				ps = append(ps, p)
			}
			sort.Strings(ps)
			line += " (" + strings.Join(ps, ", ") + ")"
		}
		if prog[i].Kind == algos.Compute {
			line += fmt.Sprintf(", %v", prog[i].Dur)
		}
		out = append(out, line)
		i = j
	}
	return out
}
