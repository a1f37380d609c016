package scenarios

import (
	"fmt"
	"maps"
	"runtime"
	"strconv"

	"golang.org/x/sync/errgroup"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/internal/crash"
	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
)

// Model shape of Kimi-K2.5 (DeepSeek-V3-style text config).
// Source: Kimi-K2.5's published model configuration (hidden_size 7168,
// num_hidden_layers 61); two TP allreduces per layer (after o_proj and after
// the MLP/MoE).
const (
	Hidden             = 7168
	Layers             = 61
	AllreducesPerLayer = 2
)

// VerifyConfig describes one verify-pass simulation. Zero fields take the
// defaults documented on each.
type VerifyConfig struct {
	Top   *topology.Topology
	Ranks int // GPUs in the tensor-parallel group; default all GPUs of Top
	// Tokens verified per pass (draft tokens + 1); default 3.
	Tokens int
	// Compute is the layer compute of one whole pass (all 61 layers),
	// spread evenly between the allreduces. Default: DefaultCompute(Tokens).
	Compute sim.Duration
	// Draft is the drafter's time per speculative step. Default 1.5 ms
	// (estimate: three EAGLE-3 draft steps of a one-layer head).
	Draft sim.Duration
	// Accept is the mean accepted tokens per speculative step. Default
	// 0.8 × Tokens, at least 1 (published: Kimi-K2 EAGLE-3 heads verifying
	// 4 tokens accept 2.6–3.8, GSM8K 3.2 = 0.8 × 4).
	Accept float64
	// Launch: graph (default) or eager.
	Launch hw.LaunchMode
	// Opts are passed to every algorithm that accepts them.
	Opts map[string]string
	// LayerKernels is how many kernels of the model's own a layer launches
	// besides its allreduces (default DefaultLayerKernels). With eager
	// launches the host issues all of them one by one, so an allreduce
	// cannot start before its share of the layer's launches is issued
	// (EagerIssue); in CUDA graphs it does not matter.
	LayerKernels int
	// Planned holds schedules already planned for this configuration's
	// requests (Top, Ranks, bf16, Launch and Opts as here), by algorithm
	// and size, such as those a proof planned and checked: those passes
	// run them instead of planning again. A schedule planned for any other
	// request must not be given.
	Planned map[PlanKey]*algos.Schedule
}

// DefaultLayerKernels is the kernels of one layer of the model besides
// its allreduces in an eager forward pass: norms, the attention
// projections and attention, the router and the expert and shared-expert
// GEMMs, activations and residual adds. An estimate; --layer-kernels
// sets it.
const DefaultLayerKernels = 20

// EagerIssue is the host time to issue what runs from one allreduce to
// the next in an eager pass: the allreduce's launch and its share of the
// layer's own kernels, each one eager launch (gpu.launch_eager).
func EagerIssue(top *topology.Topology, layerKernels int) sim.Duration {
	per := float64(layerKernels)/AllreducesPerLayer + 1
	return sim.Duration(per * float64(sim.Micros(top.Params.Get("gpu.launch_eager"))))
}

// Compute model of the verify pass, per pass (all 61 layers).
const (
	// ComputeFixed is the part that does not grow with tokens: streaming
	// the weights once per pass (decode is memory-bound). Estimate.
	ComputeFixed = 4475 * sim.Microsecond
	// ComputePerToken is the part that grows with each token verified
	// (activations, attention, MoE experts touched). Estimate.
	ComputePerToken = 150 * sim.Microsecond
)

// DefaultCompute is the layer compute of one pass of tokens on
// rtxpro6000x8-2numa: ComputeFixed + tokens × ComputePerToken, which is
// 5 ms at 3.5 tokens (the deployment report: "~30 ms of which ~25 ms all-reduce and ~5 ms
// compute" for 3–4 tokens). The split into a fixed and a per-token part is
// an estimate; pass --compute to use a measured figure.
func DefaultCompute(tokens int) sim.Duration {
	return ComputeFixed + sim.Duration(tokens)*ComputePerToken
}

func (c *VerifyConfig) defaults() error {
	if c.Top == nil {
		return fmt.Errorf("scenarios: verify: no topology")
	}
	c.Opts = WithGraphCalls(c.Opts, c.Launch)
	if c.Ranks == 0 {
		c.Ranks = c.Top.NumGPUs()
	}
	if c.Tokens == 0 {
		c.Tokens = 3
	}
	if c.Tokens < 0 || c.Tokens > 1<<16 {
		return fmt.Errorf("scenarios: verify: tokens must be 1–65536, got %d", c.Tokens)
	}
	if c.Compute == 0 {
		c.Compute = DefaultCompute(c.Tokens)
	}
	if c.Compute < 0 {
		return fmt.Errorf("scenarios: verify: compute must be ≥ 0, got %v", c.Compute)
	}
	if c.Draft == 0 {
		c.Draft = 1500 * sim.Microsecond
	}
	if c.Draft < 0 {
		return fmt.Errorf("scenarios: verify: draft must be ≥ 0, got %v", c.Draft)
	}
	if c.Accept == 0 {
		c.Accept = max(1, 0.8*float64(c.Tokens))
	}
	if c.LayerKernels == 0 {
		c.LayerKernels = DefaultLayerKernels
	}
	if c.LayerKernels < 0 || c.LayerKernels > 10000 {
		return fmt.Errorf("scenarios: verify: kernels per layer must be 0–10000, got %d", c.LayerKernels)
	}
	if !(c.Accept >= 1 && c.Accept <= float64(c.Tokens)) { // NaN fails both
		return fmt.Errorf("scenarios: verify: acceptance length %.2f must lie between 1 and the tokens per pass (%d)", c.Accept, c.Tokens)
	}
	return nil
}

// BytesPerAllreduce is tokens × hidden × 2 (bf16).
func BytesPerAllreduce(tokens int) int64 { return int64(tokens) * Hidden * 2 }

// VerifyResult is one algorithm's outcome.
type VerifyResult struct {
	Algo string
	// UsPerAllreduce is the mean allreduce time within the pass.
	UsPerAllreduce float64
	// PassMs is the whole verify pass: 122 allreduces and the compute.
	PassMs float64
	// PlainTokS is plain decoding: one token per step, a 1-token pass.
	PlainTokS float64
	// SpecTokS is speculative decoding: Accept tokens per (draft + pass).
	SpecTokS float64
	Notes    []string
	// Mechanisms are the parts of the machine's physics the pass's
	// allreduce schedule rests on as the pass ran it (algos.RanMechanisms).
	Mechanisms []algos.Mechanism
	Err        error // the algorithm could not run here (and why)
}

// Pass simulates one verify pass of tokens with algo: 122 allreduces back
// to back on every rank, with compute/122 between consecutive ones.
func Pass(top *topology.Topology, ranks int, algo string, tokens int, compute sim.Duration, launch hw.LaunchMode, opts map[string]string) (passMs, usPerAR float64, notes []string, err error) {
	p, err := pass(top, ranks, algo, tokens, compute, launch, opts, 0, nil)
	return p.ms, p.usPerAR, p.notes, err
}

// passOut is what pass finds: the pass's time, the mean allreduce's, the
// plan's notes and the schedule timed.
type passOut struct {
	ms, usPerAR float64
	notes       []string
	sched       *algos.Schedule
	res         *algos.Result // the run, nil where it did not finish
}

// pass is Pass with the host's issue interval per allreduce in eager mode
// (0: one eager launch, gpu.launch_eager) and the schedules already
// planned for this request (VerifyConfig.Planned; nil: none).
func pass(top *topology.Topology, ranks int, algo string, tokens int, compute sim.Duration, launch hw.LaunchMode, opts map[string]string, issue sim.Duration, planned map[PlanKey]*algos.Schedule) (passOut, error) {
	s := planned[PlanKey{Algo: algo, Bytes: BytesPerAllreduce(tokens)}]
	if s == nil {
		req := algos.Request{Top: top, Ranks: ranks, Bytes: BytesPerAllreduce(tokens), DType: algos.BF16, Launch: launch, Opts: optsFor(algo, opts)}
		var err error
		if s, err = algos.Plan(algo, req); err != nil {
			return passOut{}, err
		}
	}
	out := passOut{notes: s.Notes, sched: s}
	m, err := hw.New(top)
	if err != nil {
		return out, err
	}
	n := Layers * AllreducesPerLayer
	gap := compute / sim.Duration(n)
	res, err := algos.Run(m, s, algos.RunOptions{Iterations: n, Launch: launch, Gap: gap, IssueInterval: issue})
	if err != nil {
		return out, err
	}
	out.res = res
	pass := sim.Duration(res.Time) + gap
	commUs := (pass - gap*sim.Duration(n)).Micros()
	out.ms, out.usPerAR = float64(pass)/float64(sim.Millisecond), commUs/float64(n)
	return out, nil
}

// WithGraphCalls returns opts with graph_calls (the NCCL calls one CUDA
// graph holds) set to a verify pass's allreduces when the pass is a CUDA
// graph and opts do not set it: the whole pass is one graph.
func WithGraphCalls(opts map[string]string, launch hw.LaunchMode) map[string]string {
	if launch != hw.Graph {
		return opts
	}
	if _, set := opts["graph_calls"]; set {
		return opts
	}
	out := maps.Clone(opts)
	if out == nil {
		out = map[string]string{}
	}
	out["graph_calls"] = strconv.Itoa(Layers * AllreducesPerLayer)
	return out
}

// UserOpts is opts less what WithGraphCalls adds: the options a user set.
func UserOpts(opts map[string]string) map[string]string {
	if opts["graph_calls"] != strconv.Itoa(Layers*AllreducesPerLayer) {
		return opts
	}
	out := maps.Clone(opts)
	delete(out, "graph_calls")
	return out
}

// optsFor keeps the options an algorithm accepts.
func optsFor(algo string, opts map[string]string) map[string]string {
	return algos.OptionsFor(algo, opts)
}

// Verify simulates the verify pass for each algorithm. An algorithm that
// cannot run on this machine gets a result with Err set, not a failure of
// the whole call; a panic in the simulator is returned as a *crash.Error.
// Algorithms run in parallel (each on its own engine); the
// results do not depend on it.
func Verify(c VerifyConfig, names []string) ([]VerifyResult, error) {
	if err := c.defaults(); err != nil {
		return nil, err
	}
	out := make([]VerifyResult, len(names))
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, name := range names {
		g.Go(func() (err error) {
			defer crash.Recover(&err)
			out[i] = c.one(name)
			return nil
		})
	}
	// Errors are per algorithm, in the results; only a panic (a bug) ends
	// the call.
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

func (c VerifyConfig) one(name string) VerifyResult {
	r := VerifyResult{Algo: name}
	issue := EagerIssue(c.Top, c.LayerKernels)
	p, err := pass(c.Top, c.Ranks, name, c.Tokens, c.Compute, c.Launch, c.Opts, issue, c.Planned)
	passMs, us := p.ms, p.usPerAR
	r.Notes = p.notes
	if p.sched != nil {
		r.Mechanisms = algos.RanMechanisms(p.sched, c.Top, p.res)
	}
	if err != nil {
		r.Err = err
		return r
	}
	plainMs := passMs
	if c.Tokens != 1 {
		var plain passOut
		plain, err = pass(c.Top, c.Ranks, name, 1, c.computeFor(1), c.Launch, c.Opts, issue, c.Planned)
		plainMs = plain.ms
		if err != nil {
			r.Err = err
			return r
		}
	}
	r.UsPerAllreduce = us
	r.PassMs = passMs
	r.PlainTokS = 1000 / plainMs
	r.SpecTokS = c.Accept * 1000 / (passMs + c.Draft.Micros()/1000)
	return r
}

// computeFor scales the configured compute to another token count the way
// DefaultCompute scales: the fixed part stays, the per-token part follows.
func (c VerifyConfig) computeFor(tokens int) sim.Duration {
	d := c.Compute + sim.Duration(tokens-c.Tokens)*ComputePerToken
	return max(d, 0)
}
