package main

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"text/tabwriter"

	"github.com/arsim/arsim/sass"
)

// cmdSass reads cuobjdump -sass output (plain or gzipped) and prints, for
// each kernel with a loop, what one thread of its main loop waits for its
// loads: the number arsim's loop model takes from a kernel's code
// (docs/PER_BLOCK.md).
func cmdSass(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("sass", "sass --file DUMP [--kernel REGEXP]", []string{
		"cuobjdump -sass my_kernels.cubin > my.sass && arsim sass --file my.sass",
		"arsim sass --file testdata/h200x1-arsim/system/sass_perblock_sm_90.txt.gz --kernel 'pb_nccl_reduce_[0-9]'",
	}, errOut)
	file := fs.String("file", "", "cuobjdump -sass output, plain text or gzipped (required)")
	pattern := fs.String("kernel", "", "only kernels whose names match this regular expression")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *file == "" {
		return badInputf("sass: --file is required (cuobjdump -sass output)")
	}
	var want *regexp.Regexp
	if *pattern != "" {
		re, err := regexp.Compile(*pattern)
		if err != nil {
			return badInputf("sass: --kernel %q: %v", *pattern, err)
		}
		want = re
	}
	kernels, err := sass.ParseFile(*file)
	if err != nil {
		return badInput(err)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "kernel\tloop instructions\tglobal loads\t16-B stores\tround trips waited\tspilled B loaded / stored\t")
	shown, noLoop, sides := 0, 0, 0
	for _, k := range kernels {
		if want != nil && !want.MatchString(k.Name) {
			continue
		}
		l, err := k.MainLoop()
		if err != nil {
			noLoop++
			continue
		}
		shown++
		plain, _ := k.MainLoopOn(sass.PlainSources) // the loop MainLoop found: no error
		if plain.Instrs == l.Instrs {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.2f\t%d / %d\t\n", k.Name, l.Instrs, l.Loads, l.Stores16, l.Waits, l.SpillLoadBytes, l.SpillStoreBytes)
			continue
		}
		// loads picked by a flag: each side on its own row
		sides++
		for _, src := range []sass.Sources{sass.PlainSources, sass.VolatileSources} {
			s, _ := k.MainLoopOn(src) // as above
			fmt.Fprintf(tw, "%s (%s loads)\t%d\t%d\t%d\t%.2f\t%d / %d\t\n", k.Name, src, s.Instrs, s.Loads, s.Stores16, s.Waits, s.SpillLoadBytes, s.SpillStoreBytes)
		}
	}
	if shown == 0 {
		return fmt.Errorf("sass: %s: no kernel with a loop%s (%d kernels read, %d without a loop)", *file, matching(*pattern), len(kernels), noLoop)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nPer pass of each kernel's main loop (its longest backward branch), its instructions issued in order, a\n"+
		"global load's data a round trip after its issue. A loop of U 16-B packs a source a thread and D destinations\n"+
		"stores U × D packs an iteration: round trips an iteration = waited × U × D / 16-B stores. A pull over ranks\n"+
		"stores one pack an iteration (U = D = 1): pass its round trips on as --opts load_waits=N (rounded). Spilled bytes\n"+
		"are what a thread loads from and stores to local memory a pass (LDL, STL); the SM issues them as the copy's own.")
	if sides > 0 {
		fmt.Fprintf(out, "\n%d kernels pick each source's load by a flag (a plain load or ld.volatile.global, each under a\n"+
			"predicate): each side is its own row, with only the instructions that side runs.", sides)
	}
	if noLoop > 0 {
		fmt.Fprintf(out, " %d kernels have no loop.", noLoop)
	}
	fmt.Fprintln(out)
	return nil
}

func matching(pattern string) string {
	if pattern == "" {
		return ""
	}
	return fmt.Sprintf(" matching %q", pattern)
}
