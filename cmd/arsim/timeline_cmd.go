package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/arsim/arsim/scenarios"
	"github.com/arsim/arsim/viz"
)

func cmdTimeline(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("timeline", "timeline [--topology T] --algo A [--bytes N] [--iters K] --out FILE.json",
		[]string{"arsim timeline --algo one_stage --bytes 42KiB --out one_stage.json --picture one_stage.png", "arsim timeline --algo nccl --bytes 43008 --iters 2 --out nccl.json   # then open ui.perfetto.dev and drop the file"}, errOut)
	mf := addMachineFlags(fs)
	algo := fs.String("algo", "", "algorithm (arsim algos)")
	bytesFlag := fs.String("bytes", "42KiB", "message size")
	iters := fs.Int("iters", 1, "allreduces back to back")
	ranks := fs.Int("ranks", 0, "world size (default: all GPUs)")
	outFile := fs.String("out", "", "Perfetto / Chrome trace JSON to write")
	picture := fs.String("picture", "", "also draw the timeline to this .svg or .png file")
	if err := parse(fs, args); err != nil {
		return err
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
	slices, res, err := scenarios.Timeline(t, *ranks, *algo, b, mode, o, *iters)
	if err != nil {
		return badInput(err)
	}
	f, err := os.Create(*outFile)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	if err := viz.WritePerfetto(w, slices); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if *picture != "" {
		title := fmt.Sprintf("%s, %d B, %s (%.2f µs per allreduce)", *algo, b, t.Name, res.MeanUs())
		if err := viz.DrawTimeline(*picture, title, slices); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "%s: %d allreduce(s) of %d B with %s on %s: %.2f µs each; %d slices written to %s\nOpen https://ui.perfetto.dev and drag the file onto the page (or chrome://tracing).\n",
		*algo, *iters, b, *algo, t.Name, res.MeanUs(), len(slices), *outFile)
	return nil
}
