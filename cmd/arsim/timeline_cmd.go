package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/scenarios"
	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/viz"
)

func cmdTimeline(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("timeline", "timeline [--topology PRESET|FILE] --algo A [--bytes N] [--iters K] --out FILE.json [--picture FILE.png|.svg] [--ranks-shown 0,4] [--waits merged|each] [--blocks]",
		[]string{"arsim timeline --algo one_stage --bytes 42KiB --out one_stage.json --picture one_stage.png",
			"arsim timeline --algo nccl --bytes 43008 --iters 2 --out nccl.json --picture nccl.png --ranks-shown 0,3,4   # then open ui.perfetto.dev and drop the file",
			"arsim timeline --topology h200x2 --algo nccl --opts max_channels=2 --bytes 4MiB --blocks --out blocks.json --picture blocks.png"}, errOut)
	mf := addMachineFlags(fs)
	algo := fs.String("algo", "", "algorithm (arsim algos)")
	bytesFlag := fs.String("bytes", "42KiB", "message size")
	iters := fs.Int("iters", 1, "allreduces back to back")
	ranks := fs.Int("ranks", 0, "world size (default: all GPUs)")
	outFile := fs.String("out", "", "Perfetto / Chrome trace JSON to write")
	picture := fs.String("picture", "", "also draw the timeline to this .svg or .png file")
	blocks := fs.Bool("blocks", false, "one track per thread block (NCCL channel; the tree's up and down thread groups), with each operation's per-block loop limit")
	shown := fs.String("ranks-shown", "", "ranks drawn in the picture, e.g. 0,4 or 0-3 (default: all), with their GPUs' links")
	waits := fs.String("waits", "merged", "picture: merged (a rank's waits on one row) or each (every wait on a row of its own)")
	noCheck := fs.Bool("no-check", false, noCheckUsage)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *waits != "merged" && *waits != "each" {
		return badInputf("timeline: --waits %q is not one of merged, each", *waits)
	}
	if *algo == "" || *outFile == "" {
		return badInputf("timeline: --algo and --out are required (arsim timeline --help)")
	}
	if _, err := parseAlgos(*algo); err != nil {
		return err
	}
	if *iters < 1 || *iters > 1000 {
		return badInputf("timeline: --iters %d: want 1–1000", *iters)
	}
	t, mode, o, err := mf.resolve(errOut)
	if err != nil {
		return err
	}
	if err := checkOpts([]string{*algo}, t, o); err != nil {
		return err
	}
	b, err := parseSize(*bytesFlag)
	if err != nil {
		return err
	}
	if err := checkWritable(*outFile, ".json"); err != nil {
		return err
	}
	if *picture != "" {
		if err := checkWritable(*picture, ".svg", ".png"); err != nil {
			return err
		}
	}
	n := *ranks
	if n == 0 {
		n = t.NumGPUs()
	}
	if n < 2 || n > t.NumGPUs() {
		return badInputf("timeline: --ranks %d: want 2–%d", *ranks, t.NumGPUs())
	}
	show, err := parseRankList(*shown, n)
	if err != nil {
		return err
	}
	if *noCheck {
		uncheckedNote(errOut)
	} else {
		notes, err := proveAll(ctx, proofRequest{top: t, ranks: n, dtype: algos.BF16, launch: mode, opts: optsForAlgo(o)}, []string{*algo}, []int64{b}, nil, nil)
		if err != nil {
			return fmt.Errorf("timeline: %w", err)
		}
		checkNotes(errOut, notes)
	}
	if *picture != "" {
		if err := checkPictureSize(t, *ranks, *algo, b, mode, o, *iters); err != nil {
			return err
		}
	}
	timeline := scenarios.Timeline
	if *blocks {
		timeline = scenarios.TimelineByBlock
	}
	slices, res, err := timeline(t, *ranks, *algo, b, mode, o, *iters)
	if err != nil {
		return badInput(err)
	}
	if err := writeFileAtomic(*outFile, func(w io.Writer) error { return viz.WritePerfetto(w, slices) }); err != nil {
		return err
	}
	if *picture != "" {
		title := fmt.Sprintf("%s, %d B, %s (%.2f µs per allreduce)", *algo, b, t.Name, res.MeanUs())
		if err := drawAtomic(*picture, func(name string) error {
			return viz.DrawTimelineWith(name, title, slices, viz.TimelineOptions{EachWait: *waits == "each", Ranks: show})
		}); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "%s: %d allreduce(s) of %d B with %s on %s: %.2f µs each; %d slices written to %s\nOpen https://ui.perfetto.dev and drag the file onto the page (or chrome://tracing).\n",
		*algo, *iters, b, *algo, t.Name, res.MeanUs(), len(slices), *outFile)
	return nil
}

// parseRankList reads --ranks-shown: ranks and ranges (0,4 or 0-3), each
// below n; "" is every rank (nil).
func parseRankList(s string, n int) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []int
	for _, part := range splitList(s) {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(strings.TrimSpace(lo))
		b, err2 := a, error(nil)
		if isRange {
			b, err2 = strconv.Atoi(strings.TrimSpace(hi))
		}
		if err1 != nil || err2 != nil || a < 0 || b < a || b >= n {
			return nil, badInputf("--ranks-shown %q: want ranks 0–%d, a list or ranges such as 0,4 or 0-3", part, n-1)
		}
		for r := a; r <= b; r++ {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	sort.Ints(out)
	return out, nil
}

// checkPictureSize refuses a --picture of more slices than one can draw
// in reasonable time or read, before the timeline is simulated.
func checkPictureSize(t *topology.Topology, ranks int, algo string, b int64, mode hw.LaunchMode, o map[string]string, iters int) error {
	n, err := scenarios.TimelineSlices(t, ranks, algo, b, mode, o, iters)
	if err != nil {
		return badInput(err)
	}
	if n > scenarios.MaxPictureSlices {
		return badInputf("timeline: --picture of about %d slices is above the limit of %d (drawing takes about 130 µs a slice, and so many are not legible); run fewer --iters or a smaller size, or leave out --picture (the trace takes up to %d)",
			n, scenarios.MaxPictureSlices, scenarios.MaxTimelineSlices)
	}
	return nil
}
