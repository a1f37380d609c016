package algos_test

import (
	"flag"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
)

// runBoth runs s twice on fresh machines, every event and with the steady
// state advanced over, and requires bit-identical results. It returns the
// allreduces skipped.
func runBoth(t *testing.T, top *topology.Topology, s *algos.Schedule, opt algos.RunOptions, name string) int {
	t.Helper()
	m, err := hw.New(top)
	require.NoError(t, err)
	full := opt
	full.EveryEvent = true
	want, wantErr := algos.Run(m, s, full)
	m, err = hw.New(top)
	require.NoError(t, err)
	got, gotErr := algos.Run(m, s, opt)
	if wantErr != nil {
		require.EqualError(t, gotErr, wantErr.Error(), name)
		return 0
	}
	require.NoError(t, gotErr, name)
	require.Zero(t, want.Skipped, name)
	skipped := got.Skipped
	got.Skipped = 0
	require.Equal(t, want, got, name)
	return skipped
}

var steadyFull = flag.Bool("steady.full", false, "compare skipped and full runs over the whole matrix (sizes × launches × run lengths)")

// Advancing over the periods of a steady state gives, bit for bit, the
// results of running every event: time, each allreduce's end, every op's
// span and the event count, for every algorithm on every preset, at
// several sizes, in graph and eager launches, for verify passes (122
// allreduces between compute gaps) and back-to-back runs. With
// -steady.full every size runs every launch and run length (~1,600 pairs
// of runs, a minute on two cores).
func TestSteadyStateSkipIsExact(t *testing.T) {
	type variant struct {
		bytes  int64
		launch hw.LaunchMode
		iters  int
		gap    sim.Duration
	}
	variants := []variant{
		{43008, hw.Graph, 122, 40 * sim.Microsecond}, {43008, hw.Eager, 122, 40 * sim.Microsecond},
		{8, hw.Graph, 12, 0}, {1 << 20, hw.Graph, 8, 0}, {43008, hw.Eager, 3, 0},
	}
	if *steadyFull {
		variants = nil
		for _, b := range []int64{8, 43008, 1 << 20} {
			for _, l := range []hw.LaunchMode{hw.Graph, hw.Eager} {
				for _, v := range []variant{{iters: 122, gap: 40 * sim.Microsecond}, {iters: 20}, {iters: 3}} {
					variants = append(variants, variant{b, l, v.iters, v.gap})
				}
			}
		}
	}
	var mu sync.Mutex
	runs, skipping, skipped := 0, 0, 0
	verifySkips := map[string]int{}
	t.Run("presets", func(t *testing.T) {
		for _, preset := range topology.Presets() {
			t.Run(preset, func(t *testing.T) {
				t.Parallel()
				top, err := topology.Load(preset)
				require.NoError(t, err)
				for _, algo := range algos.Names() {
					for _, v := range variants {
						s, err := algos.Plan(algo, algos.Request{Top: top, Ranks: top.NumGPUs(), Bytes: v.bytes, DType: algos.BF16, Launch: v.launch})
						if err != nil {
							continue
						}
						name := fmt.Sprintf("%s/%s/%d B/%s/x%d/gap %v", preset, algo, v.bytes, v.launch, v.iters, v.gap)
						n := runBoth(t, top, s, algos.RunOptions{Iterations: v.iters, Gap: v.gap, Launch: v.launch, Spans: true}, name)
						mu.Lock()
						runs++
						if n > 0 {
							skipping++
							skipped += n
							if v.iters == 122 {
								verifySkips[algo]++
							}
						}
						mu.Unlock()
					}
				}
			})
		}
	})
	t.Logf("%d pairs of runs compared, %d advanced over a steady state (%d allreduces skipped); verify passes skipped by algorithm: %v", runs, skipping, skipped, verifySkips)
	// Every algorithm reaches a steady state in some verify pass.
	for _, algo := range algos.Names() {
		require.Positive(t, verifySkips[algo], "%s never skipped a verify pass", algo)
	}
}
