package main

import (
	"context"
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/topology"
)

// sweepArgs is the 8-rank one-allreduce sweep these benchmarks time.
var sweepArgs = []string{"sweep", "--algos", "ring", "--sizes", "1MiB"}

// BenchmarkSweepRing8 is one whole `arsim sweep --algos ring --sizes 1MiB`
// on the default machine (8 ranks), in-process: flags, the proof and the
// timing (process start and package initialisation aside); unchecked
// with --no-check.
func BenchmarkSweepRing8(b *testing.B) {
	for _, bc := range []struct {
		name string
		args []string
	}{
		{"checked", sweepArgs},
		{"unchecked", append(sweepArgs[:len(sweepArgs):len(sweepArgs)], "--no-check")},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				require.NoError(b, run(context.Background(), bc.args, io.Discard, io.Discard))
			}
		})
	}
}

// BenchmarkSweepRing8Parts times the parts of that sweep one by one: the
// planning, the checker and the run of the planned schedule.
func BenchmarkSweepRing8Parts(b *testing.B) {
	parts := sweepParts(b)
	for _, name := range []string{"plan", "check", "run"} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				parts[name]()
			}
		})
	}
}

// sweepParts returns the sweep's parts as functions: the whole command
// checked and unchecked, its planning, checker and run.
func sweepParts(tb testing.TB) map[string]func() {
	top, err := topology.Load("rtxpro6000x8-2numa")
	require.NoError(tb, err)
	req := algos.Request{Top: top, Ranks: top.NumGPUs(), Bytes: 1 << 20, DType: algos.BF16, Launch: hw.Graph}
	s, err := algos.Plan("ring", req)
	require.NoError(tb, err)
	return map[string]func(){
		"checked": func() { require.NoError(tb, run(context.Background(), sweepArgs, io.Discard, io.Discard)) },
		"unchecked": func() {
			require.NoError(tb, run(context.Background(), append(sweepArgs[:len(sweepArgs):len(sweepArgs)], "--no-check"), io.Discard, io.Discard))
		},
		"plan": func() {
			_, err := algos.Plan("ring", req)
			require.NoError(tb, err)
		},
		"check": func() { require.NoError(tb, algos.Check(s)) },
		"run": func() {
			m, err := hw.New(top)
			require.NoError(tb, err)
			_, err = algos.Run(m, s, algos.RunOptions{Iterations: 3, Launch: hw.Graph})
			require.NoError(tb, err)
		},
	}
}

var (
	sweepRepeat = flag.Int("sweep.repeat", 0, "TestSweepRepeat: run the part this many times")
	sweepPart   = flag.String("sweep.part", "checked", "TestSweepRepeat's part: checked, unchecked, plan, check or run")
)

// TestSweepRepeat runs one part of the 8-rank sweep (-sweep.part) the
// number of times -sweep.repeat says, without the benchmark's machinery:
// for instruction counts, the difference of two counts divided by the
// difference of the repeats is one run's. Skipped without the flag.
func TestSweepRepeat(t *testing.T) {
	if *sweepRepeat == 0 {
		t.Skip("pass -sweep.repeat N")
	}
	f := sweepParts(t)[*sweepPart]
	require.NotNil(t, f, "-sweep.part %q", *sweepPart)
	for i := 0; i < *sweepRepeat; i++ {
		f()
	}
}

// A proved sweep times the schedules its proof planned (a size class's
// first size) and plans the others itself: its rows are those of a sweep
// that plans every point.
func TestProvedVerifyTimesAsUnchecked(t *testing.T) {
	for _, args := range [][]string{
		{"verify", "--algos", "ring,one_stage,nccl", "--format", "json"},
		{"verify", "--algos", "two_stage,tree", "--tokens", "1,3,8", "--launch", "eager"},
	} {
		checked, _, err := runCLI(t, args...)
		require.NoError(t, err)
		unchecked, _, err := runCLI(t, append(args, "--no-check")...)
		require.NoError(t, err)
		require.Equal(t, unchecked, checked, args)
	}
}

func TestProvedSweepTimesAsUnchecked(t *testing.T) {
	args := []string{"sweep", "--algos", "ring,tree,one_stage,lamport_one_shot", "--sizes", "1KiB,3KiB,43008,1MiB", "--format", "csv"}
	checked, _, err := runCLI(t, args...)
	require.NoError(t, err)
	unchecked, _, err := runCLI(t, append(args, "--no-check")...)
	require.NoError(t, err)
	require.Equal(t, unchecked, checked)
}
