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

// proveAll proves every algorithm at every size class of sizes, in
// parallel, and returns the first refusal as an error naming the
// algorithm, world size, size and the check that failed. A point the
// algorithm cannot plan is left to the timing (which reports it). A
// schedule too large for the checker is proved at the largest size below
// it that the checker takes; notes say so, once per algorithm. progress,
// if set, is told (done, total). proved holds the schedules proved at the
// very size asked for, by algorithm and size, for the timing of the same
// request to run instead of planning them again.
func proveAll(ctx context.Context, pr proofRequest, names []string, sizes []int64, progress func(done, total int)) (notes []string, proved map[scenarios.PlanKey]*algos.Schedule, err error) {
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
	refused := make([]error, len(pts))
	smaller := make([]string, len(pts))
	planned := make([]*algos.Schedule, len(pts))
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
			refused[i], smaller[i], planned[i] = prove(pr, p)
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
		return nil, nil, err
	}
	for i, e := range refused {
		if e != nil {
			return nil, nil, fmt.Errorf("%s, %d ranks, %v: the checker refuses the schedule, so it is not timed (--no-check times it anyway): %w", pts[i].algo, pr.ranks, sim.Bytes(pts[i].bytes), e)
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
	proved = map[scenarios.PlanKey]*algos.Schedule{}
	for i, s := range planned {
		if s != nil {
			proved[scenarios.PlanKey{Algo: pts[i].algo, Bytes: pts[i].bytes}] = s
		}
	}
	return notes, proved, nil
}

// prove plans and checks one point; a plan that fails is not the
// checker's to judge (nil). When the schedule is too large to check, it
// proves the largest smaller size of the same algorithm that checks and
// says so. proved is the schedule of the point itself when the checker
// proved it.
func prove(pr proofRequest, p proofPoint) (refused error, smaller string, proved *algos.Schedule) {
	a, err := algos.Lookup(p.algo)
	if err != nil {
		return nil, "", nil
	}
	var last *algos.Schedule
	check := func(b int64) (bool, error) {
		s, err := algos.Plan(p.algo, algos.Request{Top: pr.top, Ranks: pr.ranks, Bytes: b, DType: pr.dtype, Launch: pr.launch, Opts: pr.opts(p.algo)})
		if err != nil {
			return false, nil
		}
		last = s
		return true, algos.Check(s)
	}
	planned, err := check(p.bytes)
	if !planned {
		return nil, "", nil
	}
	if err == nil {
		return nil, "", last
	}
	if !errors.Is(err, algos.ErrTooLarge) {
		return err, "", nil
	}
	sizes := sizesFor(a, pr.dtype.Size())
	for i := len(sizes) - 1; i >= 0; i-- {
		b := sizes[i]
		if b >= p.bytes || b%pr.dtype.Size() != 0 {
			continue
		}
		planned, err := check(b)
		if !planned {
			continue
		}
		if err == nil {
			return nil, fmt.Sprintf("schedules from %v on are too large for the checker; proved at %v (same program, fewer or smaller chunks)", sim.Bytes(p.bytes), sim.Bytes(b)), nil
		}
		if !errors.Is(err, algos.ErrTooLarge) {
			return err, "", nil
		}
	}
	return nil, fmt.Sprintf("not proved at %v: too large for the checker at every size tried", sim.Bytes(p.bytes)), nil
}

// checkNotes prints the checker's notes on errOut.
func checkNotes(errOut io.Writer, notes []string) {
	for _, n := range notes {
		fmt.Fprintln(errOut, "arsim: check: "+n)
	}
}

// optsForAlgo keeps the options an algorithm accepts, as the timing does.
func optsForAlgo(o map[string]string) func(string) map[string]string {
	return func(name string) map[string]string {
		a, err := algos.Lookup(name)
		if err != nil || len(o) == 0 {
			return nil
		}
		out := map[string]string{}
		for _, spec := range a.Options() {
			if v, ok := o[spec.Name]; ok {
				out[spec.Name] = v
			}
		}
		return out
	}
}

// noCheckUsage is the --no-check flag's text.
const noCheckUsage = "time schedules without proving them first (by default a schedule the checker refuses is an error)"

// uncheckedNote is printed when --no-check is given.
func uncheckedNote(errOut io.Writer) {
	fmt.Fprintln(errOut, "arsim: --no-check: schedules are timed without being proved correct")
}
