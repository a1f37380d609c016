package scenarios

import (
	"context"
	"runtime"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/internal/crash"
	"github.com/arsim/arsim/topology"
)

// SweepConfig describes a sweep of algorithms over message sizes.
type SweepConfig struct {
	Top    *topology.Topology
	Ranks  int // default all GPUs
	Algos  []string
	Sizes  []int64
	DType  algos.DType // default bf16
	Launch hw.LaunchMode
	Opts   map[string]string
	// Iterations back to back per point; the steady-state time per
	// allreduce is reported (default 3, like nccl-tests timing many
	// back-to-back operations).
	Iterations int
	// Parallel points at once (default GOMAXPROCS). Results are identical
	// for any value: each point runs on its own machine and engine.
	Parallel int
	// Progress, if set, is called after each point with (done, total).
	Progress func(done, total int)
	// Planned holds schedules already planned for this sweep's request
	// (Top, Ranks, DType, Launch and Opts as here), by algorithm and size,
	// such as those a proof planned and checked: those points run them
	// instead of planning again. A schedule planned for any other request
	// must not be given.
	Planned map[PlanKey]*algos.Schedule
}

// PlanKey names a sweep point's schedule: its algorithm and size.
type PlanKey struct {
	Algo  string
	Bytes int64
}

// SweepRow is one point.
type SweepRow struct {
	Algo  string
	Bytes int64
	Us    float64 // mean time per allreduce
	// BusGBps is nccl-tests' bus bandwidth: bytes/time × 2(n−1)/n.
	BusGBps float64
	// ModelUs is NCCL's own analytic estimate (algos.NCCLModel) for rows of
	// the nccl algorithm; 0 otherwise.
	ModelUs float64
	// Mechanisms are the parts of the machine's physics the point's
	// schedule rests on as it ran (algos.RanMechanisms).
	Mechanisms []algos.Mechanism
	Err        error // the algorithm cannot run this point (and why)
}

// Point simulates one allreduce size with one algorithm.
func Point(top *topology.Topology, ranks int, algo string, bytes int64, dt algos.DType, launch hw.LaunchMode, opts map[string]string, iters int) (float64, error) {
	s, err := algos.Plan(algo, algos.Request{Top: top, Ranks: ranks, Bytes: bytes, DType: dt, Launch: launch, Opts: optsFor(algo, opts)})
	if err != nil {
		return 0, err
	}
	us, _, err := runPoint(top, s, launch, iters)
	return us, err
}

// runPoint runs a planned schedule iters times back to back on a fresh
// machine and returns the steady-state time per allreduce (µs) and the
// run's result.
func runPoint(top *topology.Topology, s *algos.Schedule, launch hw.LaunchMode, iters int) (float64, *algos.Result, error) {
	m, err := hw.New(top)
	if err != nil {
		return 0, nil, err
	}
	res, err := algos.Run(m, s, algos.RunOptions{Iterations: iters, Launch: launch})
	if err != nil {
		return 0, nil, err
	}
	return res.SteadyUs(), res, nil
}

// Sweep runs every algorithm at every size, in parallel, and returns rows
// ordered by algorithm (as given) then size (as given). A point that
// cannot run has its error in its row; a panic in the simulator ends the
// sweep with a *crash.Error.
func Sweep(ctx context.Context, c SweepConfig) ([]SweepRow, error) {
	if c.Ranks == 0 {
		c.Ranks = c.Top.NumGPUs()
	}
	if c.DType == "" {
		c.DType = algos.BF16
	}
	if c.Iterations <= 0 {
		c.Iterations = 3
	}
	if c.Parallel <= 0 {
		c.Parallel = runtime.GOMAXPROCS(0)
	}
	rows := make([]SweepRow, 0, len(c.Algos)*len(c.Sizes))
	for _, a := range c.Algos {
		for _, b := range c.Sizes {
			rows = append(rows, SweepRow{Algo: a, Bytes: b})
		}
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(c.Parallel)
	var mu sync.Mutex
	done := 0
	n := float64(c.Ranks)
	for i := range rows {
		g.Go(func() (err error) {
			defer crash.Recover(&err)
			if err := ctx.Err(); err != nil {
				return err
			}
			r := &rows[i]
			us, mech, err := c.point(r.Algo, r.Bytes)
			r.Mechanisms = mech
			if err != nil {
				r.Err = err
			} else {
				r.Us = us
				r.BusGBps = float64(r.Bytes) / (us * 1e-6) / 1e9 * 2 * (n - 1) / n
			}
			if r.Algo == "nccl" && r.Err == nil {
				m, _, err := algos.NCCLModel(algos.Request{Top: c.Top, Ranks: c.Ranks, Bytes: r.Bytes, DType: c.DType, Launch: c.Launch, Opts: optsFor("nccl", c.Opts)})
				if err == nil {
					r.ModelUs = m
				}
			}
			if c.Progress != nil {
				mu.Lock()
				done++
				c.Progress(done, len(rows))
				mu.Unlock()
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return rows, nil
}

// point times one point: the schedule in Planned if there is one, else
// one planned here; with the mechanisms the schedule rests on.
func (c *SweepConfig) point(algo string, bytes int64) (float64, []algos.Mechanism, error) {
	s := c.Planned[PlanKey{algo, bytes}]
	if s == nil {
		var err error
		s, err = algos.Plan(algo, algos.Request{Top: c.Top, Ranks: c.Ranks, Bytes: bytes, DType: c.DType, Launch: c.Launch, Opts: optsFor(algo, c.Opts)})
		if err != nil {
			return 0, nil, err
		}
	}
	us, res, err := runPoint(c.Top, s, c.Launch, c.Iterations)
	if err != nil {
		return 0, algos.MechanismsOf(s, c.Top), err
	}
	return us, algos.RanMechanisms(s, c.Top, res), nil
}

// Winners returns, per size, the fastest algorithm (ties: first in Algos).
func Winners(rows []SweepRow) map[int64]SweepRow {
	best := map[int64]SweepRow{}
	for _, r := range rows {
		if r.Err != nil {
			continue
		}
		if b, ok := best[r.Bytes]; !ok || r.Us < b.Us {
			best[r.Bytes] = r
		}
	}
	return best
}

// Crossover returns the first size at which algorithm b becomes faster than
// a (given rows sorted by size), or 0 if it never does.
func Crossover(rows []SweepRow, a, b string) int64 {
	ta := map[int64]float64{}
	for _, r := range rows {
		if r.Algo == a && r.Err == nil {
			ta[r.Bytes] = r.Us
		}
	}
	for _, r := range rows {
		if r.Algo == b && r.Err == nil {
			if x, ok := ta[r.Bytes]; ok && r.Us < x {
				return r.Bytes
			}
		}
	}
	return 0
}
