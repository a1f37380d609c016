package design

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/internal/crash"
	"github.com/arsim/arsim/topology"
)

// Config describes a search.
type Config struct {
	Top    *topology.Topology
	Ranks  int   // default: all GPUs
	Bytes  int64 // message size
	DType  algos.DType
	Launch hw.LaunchMode
	// Budget is the most candidates timed, both stages together (default
	// 400): the structures first, then launch configurations (blocks ×
	// threads) of the fastest structures while the budget lasts.
	Budget int
	// Refine is how many of the fastest structures get their launch
	// configuration searched (default 5).
	Refine int
	// Iterations back to back per candidate; the steady-state time per
	// allreduce counts, as sweeps report it (default 3).
	Iterations int
	// Parallel candidates at once (default GOMAXPROCS); the result does not
	// depend on it.
	Parallel int
	// Progress, if set, is called after each candidate with (done, total).
	Progress func(done, total int)
}

// Candidate is one point of the space and what became of it.
type Candidate struct {
	Params Params
	Name   string
	// As is what built it: a built-in algorithm with its options, or
	// "composed".
	As string
	// Us is the steady-state time per allreduce in µs.
	Us float64
	// Checked: the checker proved the schedule.
	Checked bool
	// Binds says what the schedule pays at least (algos.Binds).
	Binds string
	// Mechanisms are the parts of the machine's physics the schedule
	// rests on as it ran (algos.RanMechanisms).
	Mechanisms []algos.Mechanism
	// Stage 1 (structure) or 2 (launch configuration of a structure).
	Stage int
	// Err says why the point could not be built, proved or run here.
	Err error
}

// Result is a search's outcome.
type Result struct {
	// Candidates that were proved and timed, fastest first (ties by name).
	Candidates []Candidate
	// Failed: points that were composable but could not be planned,
	// proved or run here (P2P off, unequal islands, …), by name.
	Failed []Candidate
	// NotComposable counts points of the space no builder makes.
	NotComposable int
	// Builtins: every registered algorithm at its default options, timed
	// the same way, fastest first: the bar the search must clear.
	Builtins []Candidate
}

// Best returns the fastest candidate, or nil.
func (r *Result) Best() *Candidate {
	if len(r.Candidates) == 0 {
		return nil
	}
	return &r.Candidates[0]
}

func (c *Config) defaults() error {
	if c.Top == nil {
		return errors.New("design: no topology")
	}
	if c.Ranks == 0 {
		c.Ranks = c.Top.NumGPUs()
	}
	if c.Ranks < 2 || c.Ranks > c.Top.NumGPUs() {
		return fmt.Errorf("design: %d ranks: want 2–%d on %s", c.Ranks, c.Top.NumGPUs(), c.Top.Name)
	}
	if c.DType == "" {
		c.DType = algos.BF16
	}
	if es := c.DType.Size(); es == 0 || c.Bytes <= 0 || c.Bytes%es != 0 {
		return fmt.Errorf("design: %d bytes is not a positive whole number of %s elements", c.Bytes, c.DType)
	}
	if c.Budget <= 0 {
		c.Budget = 400
	}
	if c.Refine <= 0 {
		c.Refine = 5
	}
	if c.Iterations <= 0 {
		c.Iterations = 3
	}
	if c.Parallel <= 0 {
		c.Parallel = runtime.GOMAXPROCS(0)
	}
	return nil
}

func (c *Config) request() algos.Request {
	return algos.Request{Top: c.Top, Ranks: c.Ranks, Bytes: c.Bytes, DType: c.DType, Launch: c.Launch}
}

// Space lists the structures of the design space for a machine, in a fixed
// order, each at its kernel's default launch configuration. Island
// groupings are those the machine has: by socket, and by PCIe switch
// where that groups differently.
func Space(top *topology.Topology, ranks int) []Params {
	var out []Params
	add := func(p Params) { out = append(out, p) }
	for _, shape := range []string{"one_shot", "two_shot"} {
		add(Params{Shape: shape, Move: "pull", Barrier: "flag"})
		add(Params{Shape: shape, Move: "pull", Barrier: "atomic"})
		add(Params{Shape: shape, Move: "pull", Barrier: "flag", Flags: "host"})
		add(Params{Shape: shape, Staging: "host", Move: "pull", Barrier: "flag", Flags: "host"})
		add(Params{Shape: shape, Staging: "host", Move: "pull", Barrier: "flag", Flags: "host", FlagApart: 1024})
	}
	add(Params{Shape: "one_shot", Move: "push", Barrier: "flag"})
	add(Params{Shape: "one_shot", Move: "push", Order: "staged", Barrier: "flag"})
	for _, rearm := range []string{"deferred", "reader"} {
		for _, chunks := range []int{1, 2, 4} {
			p := Params{Shape: "one_shot", Move: "push", Barrier: "data", Rearm: rearm}
			if chunks > 1 {
				p.Chunks = chunks
			}
			add(p)
		}
	}
	add(Params{Shape: "two_shot", Move: "push", Barrier: "atomic"})
	add(Params{Shape: "two_shot", Move: "push", Barrier: "flag"})
	add(Params{Shape: "two_shot", Move: "push", Barrier: "data", Rearm: "reader"})
	add(Params{Shape: "two_shot", Move: "push", Order: "staged", Barrier: "flag"})
	groupings := []string{"socket"}
	if sock, err1 := algos.Islands(top, ranks, "socket"); err1 == nil {
		if sw, err2 := algos.Islands(top, ranks, "switch"); err2 == nil && fmt.Sprint(sw) != fmt.Sprint(sock) {
			groupings = append(groupings, "switch")
		}
	}
	for _, by := range groupings {
		add(Params{Shape: "islands", Islands: by, Move: "pull", Exchange: "pull", Barrier: "flag"})
		add(Params{Shape: "islands", Islands: by, Move: "pull", Exchange: "push", Barrier: "flag"})
		add(Params{Shape: "islands", Islands: by, Move: "push", Exchange: "push", Barrier: "data", Rearm: "reader"})
		add(Params{Shape: "islands", Islands: by, Move: "push", Exchange: "push", Order: "staged", Barrier: "flag"})
	}
	for _, proto := range []string{"ll", "simple"} {
		for _, tr := range []string{"p2p", "shm"} {
			add(Params{Shape: "ring", Proto: proto, Transport: tr})
		}
	}
	add(Params{Shape: "tree"})
	add(Params{Shape: "nccl"})
	add(Params{Shape: "nccl", P2PLevel: "sys"})
	add(Params{Shape: "halving_doubling"})
	add(Params{Shape: "custom_ar"})
	return out
}

// Launch grids searched in stage 2, around the kernels' defaults (36
// blocks is vLLM's limit, 1024 threads CUDA's).
var (
	gridBlocks  = []int{1, 2, 4, 8, 16, 24, 36}
	gridThreads = []int{128, 256, 512, 1024}
)

// refinable reports whether a structure takes blocks and threads.
func refinable(p Params) bool { return !p.nccl() || p.Shape == "halving_doubling" }

// Search runs the search: every structure of Space is built, proved and
// timed, then launch configurations of the Refine fastest, within Budget.
func Search(ctx context.Context, c Config) (*Result, error) {
	if err := c.defaults(); err != nil {
		return nil, err
	}
	req := c.request()
	res := &Result{}
	var stage1 []Params
	for _, p := range Space(c.Top, c.Ranks) {
		if _, _, _, err := resolve(p, req); errors.Is(err, ErrNotComposable) {
			res.NotComposable++
			continue
		}
		stage1 = append(stage1, p)
	}
	if len(stage1) > c.Budget {
		stage1 = stage1[:c.Budget]
	}
	builtins := algos.Names()
	total := len(stage1) + len(builtins)
	var mu sync.Mutex
	done := 0
	progress := func() {
		if c.Progress == nil {
			return
		}
		mu.Lock()
		done++
		c.Progress(done, total)
		mu.Unlock()
	}
	first, err := c.evaluate(ctx, req, stage1, 1, progress)
	if err != nil {
		return nil, err
	}
	// The bar: every built-in at its default options.
	bar := make([]Candidate, len(builtins))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(c.Parallel)
	for i, name := range builtins {
		g.Go(func() (err error) {
			defer crash.Recover(&err)
			if err := gctx.Err(); err != nil {
				return err
			}
			bar[i] = c.timeBuiltin(req, name)
			progress()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	// Stage 2: launch configurations of the fastest structures.
	ok := rank(first)
	seen := map[string]bool{}
	for _, x := range first {
		seen[x.Name] = true
	}
	var stage2 []Params
	left := c.Budget - len(stage1)
	picked := 0
	for _, x := range ok {
		if picked == c.Refine || left <= 0 {
			break
		}
		if !refinable(x.Params) {
			continue
		}
		picked++
		for _, bl := range gridBlocks {
			for _, th := range gridThreads {
				p := x.Params
				p.Blocks, p.Threads = bl, th
				if seen[p.Name()] || left <= 0 {
					continue
				}
				seen[p.Name()] = true
				stage2 = append(stage2, p)
				left--
			}
		}
	}
	total += len(stage2)
	second, err := c.evaluate(ctx, req, stage2, 2, progress)
	if err != nil {
		return nil, err
	}
	all := append(first, second...)
	res.Candidates = rank(all)
	for _, x := range all {
		if x.Err != nil {
			res.Failed = append(res.Failed, x)
		}
	}
	sort.SliceStable(res.Failed, func(i, j int) bool { return res.Failed[i].Name < res.Failed[j].Name })
	res.Builtins = rank(bar)
	return res, nil
}

// rank returns the proved and timed candidates, fastest first, ties by
// name.
func rank(cs []Candidate) []Candidate {
	var out []Candidate
	for _, x := range cs {
		if x.Err == nil && x.Checked {
			out = append(out, x)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Us != out[j].Us {
			return out[i].Us < out[j].Us
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// evaluate builds, proves and times ps in parallel; the result is in ps's
// order whatever the parallelism.
func (c *Config) evaluate(ctx context.Context, req algos.Request, ps []Params, stage int, progress func()) ([]Candidate, error) {
	out := make([]Candidate, len(ps))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(c.Parallel)
	for i, p := range ps {
		g.Go(func() (err error) {
			defer crash.Recover(&err)
			if err := gctx.Err(); err != nil {
				return err
			}
			out[i] = c.one(req, p, stage)
			progress()
			return nil
		})
	}
	return out, g.Wait()
}

// one builds, proves and times point p.
func (c *Config) one(req algos.Request, p Params, stage int) Candidate {
	x := Candidate{Params: p, Name: p.Name(), Stage: stage}
	s, as, err := Build(p, req)
	x.As = as
	if err != nil {
		x.Err = err
		return x
	}
	s.Algo = "design " + x.Name
	if err := algos.Check(s); err != nil {
		x.Err = err
		return x
	}
	x.Checked = true
	x.Us, x.Mechanisms, x.Err = c.time(s)
	x.Binds = algos.Binds(algos.Stats(s), algos.PayloadGBps(c.Top))
	if lb, err := algos.LoopBinds(s, c.Top); err == nil && lb != "" {
		x.Binds += "; " + lb
	}
	return x
}

// time runs s and returns its steady-state µs per allreduce and the
// mechanisms it rests on as it ran (algos.RanMechanisms; the schedule's
// own where the run failed).
func (c *Config) time(s *algos.Schedule) (float64, []algos.Mechanism, error) {
	m, err := hw.New(c.Top)
	if err != nil {
		return 0, algos.MechanismsOf(s, c.Top), err
	}
	r, err := algos.Run(m, s, algos.RunOptions{Iterations: c.Iterations, Launch: c.Launch})
	if err != nil {
		return 0, algos.MechanismsOf(s, c.Top), err
	}
	return r.SteadyUs(), algos.RanMechanisms(s, c.Top, r), nil
}

// timeBuiltin proves and times a registered algorithm at its default
// options.
func (c *Config) timeBuiltin(req algos.Request, name string) Candidate {
	x := Candidate{Name: name, As: name}
	s, err := algos.Plan(name, req)
	if err != nil {
		x.Err = err
		return x
	}
	if err := algos.Check(s); err != nil {
		x.Err = err
		return x
	}
	x.Checked = true
	x.Us, x.Mechanisms, x.Err = c.time(s)
	return x
}
