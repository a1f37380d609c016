package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"runtime"
	"sort"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/internal/crash"
	"github.com/arsim/arsim/scenarios"
	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
)

// The checker before timing: sweep, verify and timeline prove every
// schedule they time (algos.Check) at its world size, options and size
// class, and refuse to time one the checker refuses.

// proofPoint is one schedule to prove.
type proofPoint struct {
	algo  string
	bytes int64
}

// sizeClass groups sizes by factors of four (1–3 KiB, 4–15 KiB, …): a
// schedule is proved once per class, at the first size asked for in it.
func sizeClass(b int64) int { return bits.Len64(uint64(b)) / 2 }

// proofRequest is what the schedules are planned with.
type proofRequest struct {
	top    *topology.Topology
	ranks  int
	dtype  algos.DType
	launch hw.LaunchMode
	// opts are per algorithm: the options it accepts.
	opts func(algo string) map[string]string
}

// proofPoints lists what proveAll proves: every algorithm at the first
// size asked for in each size class.
func proofPoints(names []string, sizes []int64) []proofPoint {
	var pts []proofPoint
	for _, a := range names {
		seen := map[int]bool{}
		for _, b := range sizes {
			if c := sizeClass(b); !seen[c] {
				seen[c] = true
				pts = append(pts, proofPoint{a, b})
			}
		}
	}
	return pts
}

// planProofs plans every proof point of names × sizes, in parallel; a
// point the algorithm cannot plan is left out (the timing reports it).
// The schedules are the ones proveAll proves and the timing of the same
// request runs: neither writes to a schedule, so both may read it at once.
func planProofs(ctx context.Context, pr proofRequest, names []string, sizes []int64) (map[scenarios.PlanKey]*algos.Schedule, error) {
	pts := proofPoints(names, sizes)
	planned := make([]*algos.Schedule, len(pts))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, p := range pts {
		g.Go(func() (err error) {
			defer crash.Recover(&err)
			if err := ctx.Err(); err != nil {
				return err
			}
			planned[i], _ = pr.plan(p.algo, p.bytes)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	plans := map[scenarios.PlanKey]*algos.Schedule{}
	for i, s := range planned {
		if s != nil {
			plans[scenarios.PlanKey{Algo: pts[i].algo, Bytes: pts[i].bytes}] = s
		}
	}
	return plans, nil
}

// plan plans one algorithm at one size for the request.
func (pr proofRequest) plan(algo string, bytes int64) (*algos.Schedule, error) {
	return algos.Plan(algo, algos.Request{Top: pr.top, Ranks: pr.ranks, Bytes: bytes, DType: pr.dtype, Launch: pr.launch, Opts: pr.opts(algo)})
}

// proveWhileTiming proves the schedules of names × sizes (proveAll) while
// timing them (timing, given the schedules planned for the proof, to run
// instead of planning them again): the two use the cores at once, and a
// refusal cancels the timing. The proof's error comes first: a schedule
// the checker refuses is not timed, whatever its timing gave. progress,
// if set, is told (done, total) over both. proofErr is the proof's (or
// the planning's) error, timingErr the timing's.
func proveWhileTiming(ctx context.Context, pr proofRequest, names []string, sizes []int64, progress func(done, total int),
	timing func(ctx context.Context, planned map[scenarios.PlanKey]*algos.Schedule, progress func(done, total int)) error) (notes []string, proofErr, timingErr error) {
	plans, err := planProofs(ctx, pr, names, sizes)
	if err != nil {
		return nil, err, nil
	}
	var proofProgress, timingProgress func(int, int)
	if progress != nil {
		var mu sync.Mutex
		var done, total [2]int
		part := func(k int) func(int, int) {
			return func(d, t int) {
				mu.Lock()
				defer mu.Unlock()
				done[k], total[k] = d, t
				progress(done[0]+done[1], total[0]+total[1])
			}
		}
		proofProgress, timingProgress = part(0), part(1)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		notes, proofErr = proveAll(gctx, pr, names, sizes, plans, proofProgress)
		return proofErr
	})
	g.Go(func() error {
		timingErr = timing(gctx, plans, timingProgress)
		return nil
	})
	if err := g.Wait(); err != nil {
		return nil, err, nil
	}
	return notes, nil, timingErr
}

// proveAll proves every algorithm at every size class of sizes, in
// parallel, and returns the first refusal as an error naming the
// algorithm, world size, size and the check that failed. plans holds
// the proof points' schedules when they are planned already (planProofs;
// nil: proveAll plans them). A point the algorithm cannot plan is left
// to the timing (which reports it). A schedule too large for the checker
// is proved at the largest size below it that the checker takes; notes
// say so, once per algorithm. progress, if set, is told (done, total).
func proveAll(ctx context.Context, pr proofRequest, names []string, sizes []int64, plans map[scenarios.PlanKey]*algos.Schedule, progress func(done, total int)) (notes []string, err error) {
	pts := proofPoints(names, sizes)
	refused := make([]error, len(pts))
	smaller := make([]string, len(pts))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	var mu sync.Mutex
	done := 0
	for i, p := range pts {
		g.Go(func() (err error) {
			defer crash.Recover(&err)
			if err := ctx.Err(); err != nil {
				return err
			}
			s, ok := plans[scenarios.PlanKey{Algo: p.algo, Bytes: p.bytes}]
			if !ok && plans == nil {
				s, _ = pr.plan(p.algo, p.bytes)
			}
			refused[i], smaller[i] = prove(pr, p, s)
			if progress != nil {
				mu.Lock()
				done++
				progress(done, len(pts))
				mu.Unlock()
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for i, e := range refused {
		if e != nil {
			return nil, fmt.Errorf("%s, %d ranks, %v: the checker refuses the schedule, so it is not timed (--no-check times it anyway): %w", pts[i].algo, pr.ranks, sim.Bytes(pts[i].bytes), e)
		}
	}
	seen := map[string]bool{}
	for i, s := range smaller {
		if s != "" && !seen[pts[i].algo] {
			seen[pts[i].algo] = true
			notes = append(notes, fmt.Sprintf("%s: %s", pts[i].algo, s))
		}
	}
	sort.Strings(notes)
	return notes, nil
}

// prove checks one point's schedule s; a point that could not be planned
// (nil) is not the checker's to judge. When the schedule is too large to
// check, it proves the largest smaller size of the same algorithm that
// checks and says so.
func prove(pr proofRequest, p proofPoint, s *algos.Schedule) (refused error, smaller string) {
	if s == nil {
		return nil, ""
	}
	a, err := algos.Lookup(p.algo)
	if err != nil {
		return nil, ""
	}
	err = algos.Check(s)
	if err == nil {
		return nil, ""
	}
	if !errors.Is(err, algos.ErrTooLarge) {
		return err, ""
	}
	sizes := sizesFor(a, pr.dtype.Size())
	for i := len(sizes) - 1; i >= 0; i-- {
		b := sizes[i]
		if b >= p.bytes || b%pr.dtype.Size() != 0 {
			continue
		}
		s, err := pr.plan(p.algo, b)
		if err != nil {
			continue
		}
		err = algos.Check(s)
		if err == nil {
			return nil, fmt.Sprintf("schedules from %v on are too large for the checker; proved at %v (same program, fewer or smaller chunks)", sim.Bytes(p.bytes), sim.Bytes(b))
		}
		if !errors.Is(err, algos.ErrTooLarge) {
			return err, ""
		}
	}
	return nil, fmt.Sprintf("not proved at %v: too large for the checker at every size tried", sim.Bytes(p.bytes))
}

// checkNotes prints the checker's notes on errOut.
func checkNotes(errOut io.Writer, notes []string) {
	for _, n := range notes {
		fmt.Fprintln(errOut, "arsim: check: "+n)
	}
}

// optsForAlgo keeps the options an algorithm accepts, as the timing does
// (algos.OptionsFor).
func optsForAlgo(o map[string]string) func(string) map[string]string {
	return func(name string) map[string]string { return algos.OptionsFor(name, o) }
}

// noCheckUsage is the --no-check flag's text.
const noCheckUsage = "time schedules without proving them first (by default a schedule the checker refuses is an error)"

// uncheckedNote is printed when --no-check is given.
func uncheckedNote(errOut io.Writer) {
	fmt.Fprintln(errOut, "arsim: --no-check: schedules are timed without being proved correct")
}
