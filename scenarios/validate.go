package scenarios

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// ValidateOptions control Validate.
type ValidateOptions struct {
	// Params are the parameter sets to build presets with, by preset name
	// (the preset's defaults with overrides applied). A preset not named
	// here is built from its defaults.
	Params map[string]*topology.Params
	// Parallel records simulated at once (default GOMAXPROCS). The result
	// does not depend on it.
	Parallel int
	// File names the trace in the result (ValidatedRecord.File); optional.
	File string
	// Progress, if set, is called after each record with (done, total).
	Progress func(done, total int)
	// Preset, if set, names the preset every record is simulated on,
	// whatever its system id (for a capture of a machine that no preset
	// declares; arsim validate --topology).
	Preset string
}

// ValidatedRecord is one measured record beside its simulated twin.
type ValidatedRecord struct {
	File   string `json:"file,omitempty"`
	Line   int    `json:"line"`
	Kind   string `json:"kind"`
	System string `json:"system"`
	// Group is kind × implementation/algorithm × protocol × transport ×
	// launch for allreduces, kind × direction/target/operation for the
	// micro kinds, e.g. "allreduce nccl/ring ll shm cudagraph".
	Group string `json:"group"`
	// Unit is the unit of Measured and Predicted (Record.Primary).
	Unit      string  `json:"unit"`
	Measured  float64 `json:"measured"`
	Predicted float64 `json:"predicted"`
	// ErrorPct is (Predicted − Measured) / Measured × 100.
	ErrorPct float64 `json:"error_pct"`
	// ModelPredicted and ModelErrorPct are NCCL's own analytic estimate
	// (algos.NCCLModel) for NCCL records; nil otherwise.
	ModelPredicted *float64 `json:"nccl_model,omitempty"`
	ModelErrorPct  *float64 `json:"nccl_model_error_pct,omitempty"`
	// Note says how the record was modelled, where that is not obvious.
	Note string `json:"note,omitempty"`
	// HostPaced: the simulated value is the host's issue interval (an
	// eager call the device finished before the host issued the next), so
	// it rests on a host-cost parameter, not on the machine model.
	HostPaced bool `json:"host_paced,omitempty"`
}

// Skipped is a record that could not be simulated, and why.
type Skipped struct {
	File   string `json:"file,omitempty"`
	Line   int    `json:"line"`
	Kind   string `json:"kind,omitempty"`
	Reason string `json:"reason"`
}

// Summary sums up a validation.
type Summary struct {
	Count             int     `json:"count"`
	Skipped           int     `json:"skipped"`
	MedianAbsErrorPct float64 `json:"median_abs_error_pct"`
	P95AbsErrorPct    float64 `json:"p95_abs_error_pct"`
	// ModelCount, ModelMedianAbs and ModelP95Abs are over the NCCL
	// records that have both a simulated time and NCCL's own estimate;
	// OursOnModelRecords* are arsim's errors over the same records.
	ModelCount               int           `json:"nccl_model_count"`
	ModelMedianAbs           *float64      `json:"nccl_model_median_abs_error_pct,omitempty"`
	ModelP95Abs              *float64      `json:"nccl_model_p95_abs_error_pct,omitempty"`
	OursOnModelRecordsMedian *float64      `json:"arsim_median_abs_error_pct_on_nccl_records,omitempty"`
	OursOnModelRecordsP95    *float64      `json:"arsim_p95_abs_error_pct_on_nccl_records,omitempty"`
	SkippedByReason          []ReasonCount `json:"skipped_by_reason,omitempty"`
	// HostPaced* are over the records whose simulated value is a host
	// issue interval (ValidatedRecord.HostPaced); DevicePaced* over the
	// rest, whose value the machine model sets.
	HostPacedCount       int     `json:"host_paced_count"`
	HostPacedMedianAbs   float64 `json:"host_paced_median_abs_error_pct"`
	HostPacedP95Abs      float64 `json:"host_paced_p95_abs_error_pct"`
	DevicePacedCount     int     `json:"device_paced_count"`
	DevicePacedMedianAbs float64 `json:"device_paced_median_abs_error_pct"`
	DevicePacedP95Abs    float64 `json:"device_paced_p95_abs_error_pct"`
}

// ReasonCount is how many records were skipped for one reason.
type ReasonCount struct {
	Reason string `json:"reason"`
	Count  int    `json:"count"`
}

// GroupSummary sums up the records of one group.
type GroupSummary struct {
	Group             string   `json:"group"`
	Count             int      `json:"count"`
	MedianErrorPct    float64  `json:"median_error_pct"`
	MedianAbsErrorPct float64  `json:"median_abs_error_pct"`
	MaxAbsErrorPct    float64  `json:"max_abs_error_pct"`
	ModelMedianAbs    *float64 `json:"nccl_model_median_abs_error_pct,omitempty"`
}

// Validation is the outcome of Validate: every record either in Records or
// in Skipped, both in line order.
type Validation struct {
	Records []ValidatedRecord `json:"records"`
	Skipped []Skipped         `json:"skipped"`
	Summary Summary           `json:"summary"`
	// Groups, worst median |error| first.
	Groups []GroupSummary `json:"groups"`
}

// twin is a record mapped onto the simulator: what to run and how to
// compare it.
type twin struct {
	rec      trace.Record
	preset   *topology.Preset
	group    string
	unit     string
	measured float64
	note     string
	// sim returns the simulated value of the record's primary quantity on
	// top; model NCCL's own estimate (nil when there is none).
	sim   func(top *topology.Topology) (float64, error)
	model func(top *topology.Topology) (float64, error)
	// paced, when set, replaces sim and also says whether the simulated
	// value is the host's issue interval (an eager call that the host,
	// not the device, paces).
	paced func(top *topology.Topology) (float64, bool, error)
}

// Iterations of back-to-back allreduces whose mean is compared with one
// allreduce record (the capture's `us` is a mean over back-to-back ops).
const validateIterations = 3

// prepare maps a record onto its twin, or returns why it cannot be
// simulated.
func prepare(r trace.Record, override *topology.Preset) (*twin, string) {
	measured, unit, err := r.Primary()
	if err != nil {
		return nil, err.Error()
	}
	p, ok := override, override != nil
	if !ok {
		p, ok = topology.ForSystem(r.System)
	}
	if !ok {
		return nil, fmt.Sprintf("no preset models system %q (a preset declares its trace system ids; --topology names one for every record)", r.System)
	}
	t := &twin{rec: r, preset: p, unit: unit, measured: measured}
	switch r.Kind {
	case trace.KindMemcpy:
		return t, t.memcpy()
	case trace.KindSMAccess:
		t.group = fmt.Sprintf("sm_access %s %s", r.Op, r.Target)
		if r.Target == "local" {
			return nil, "local HBM streaming is not modelled"
		}
		write := r.Op == "write"
		t.sim = func(top *topology.Topology) (float64, error) {
			gbps, err := hw.SMAccessGBps(top, write, r.Target, r.Blocks, r.Threads, sim.Bytes(r.Bytes))
			if r.Op == "read_reduce" {
				gbps, err = hw.ReduceLoopGBps(top, r.Target, r.Blocks, r.Threads, sim.Bytes(r.Bytes))
			}
			if err != nil {
				return 0, err
			}
			return float64(r.Bytes) / gbps / 1e3, nil // µs
		}
		return t, ""
	case trace.KindPointerChase:
		t.group = "pointer_chase " + r.Target
		t.sim = func(top *topology.Topology) (float64, error) { return hw.PointerChaseNs(top, r.Target) }
		return t, ""
	case trace.KindFlagPingpong:
		t.group = "flag_pingpong " + r.Via
		rounds := cmp.Or(r.RoundTrips, 2000)
		t.sim = func(top *topology.Topology) (float64, error) { return hw.FlagPingPongUs(top, r.Via, rounds) }
		return t, ""
	case trace.KindFence:
		t.group = "fence " + r.Variant + " " + r.Target
		switch r.Variant {
		case "store+fence_sys", "st_release_sys", "16x16B+fence_sys":
		default:
			return nil, fmt.Sprintf("fence variant %q is not modelled (only system-scope fences are)", r.Variant)
		}
		t.sim = func(top *topology.Topology) (float64, error) { return hw.FenceNs(top, r.Target) }
		return t, ""
	case trace.KindBarrier:
		t.group = fmt.Sprintf("barrier %s stride %d", r.Barrier, r.StrideWords)
		if r.World < 2 {
			return nil, "a barrier needs two ranks or more"
		}
		if r.Launch != "" && r.Launch != "cudagraph" {
			return nil, "only barrier kernels replayed in CUDA graphs are modelled"
		}
		atomic := r.Barrier == "cas"
		t.note = "per launch: the graph gap, the kernel prologue and barriers_per_launch block barriers; where the signal slots lie is not modelled"
		t.sim = func(top *topology.Topology) (float64, error) {
			return barrierKernelUs(top, r.World, r.Blocks, r.Threads, r.BarriersPerLaunch, atomic)
		}
		return t, ""
	case trace.KindEmptyKernel:
		t.group = "empty_kernel"
		if r.Launch == "cudagraph" {
			t.group += " cudagraph"
			t.note = "per kernel of a replayed CUDA graph (gpu.launch_graph)"
			t.sim = func(top *topology.Topology) (float64, error) { return hw.GraphKernelGapUs(top) }
			return t, ""
		}
		// Eager launches are host costs: the value is a host parameter.
		hostPaced := func(f func(*topology.Topology) (float64, error)) func(*topology.Topology) (float64, bool, error) {
			return func(top *topology.Topology) (float64, bool, error) {
				v, err := f(top)
				return v, true, err
			}
		}
		if r.Mode == "back_to_back" {
			// tools/capture launches through CuPy, not PyTorch.
			t.group += " driver API"
			t.note = "back-to-back eager launches through the CUDA driver API (host.cuda_launch_issue)"
			if r.PrefillUs > 0 {
				return nil, "eager launches queued behind a device-side spin measure the device gap, not the host; not modelled"
			}
			t.paced = hostPaced(hw.RawLaunchIntervalUs)
			return t, ""
		}
		switch mode := r.Mode; mode {
		case "", "single":
			// One launch between two events (the shared set's method, and
			// tools/capture's mode single): gpu.launch_eager.
			t.note = "one eager launch between two events (gpu.launch_eager)"
		default:
			t.note = "capture mode " + mode + "; modelled as one eager launch (gpu.launch_eager)"
		}
		t.paced = hostPaced(hw.EmptyKernelUs)
		return t, ""
	case trace.KindHostLinkConcurrency:
		t.group = "host_link_concurrency " + r.What
		per := r.BytesPerGPU
		if per == 0 {
			per = 256 << 20
			t.note = "bytes_per_gpu absent: 256 MiB assumed (FORMAT.md)"
		}
		t.sim = func(top *topology.Topology) (float64, error) {
			return hw.HostLinkGBps(top, r.What, r.GPUs, sim.Bytes(per))
		}
		return t, ""
	case trace.KindAllreduce, trace.KindAllreduceSequence:
		return t, t.allreduce()
	}
	return nil, fmt.Sprintf("kind %q is not simulated", r.Kind)
}

func (t *twin) memcpy() string {
	r := t.rec
	streams := cmp.Or(r.Streams, 1)
	t.group = "memcpy " + r.Dir
	if streams > 1 {
		t.group += " multi-stream"
	}
	if r.Launch == "cudagraph" {
		return "copy-engine memcpy inside a CUDA graph is not modelled (only eager issue)"
	}
	if r.Dir == "bidir" {
		n := max(cmp.Or(r.Transfers, 2), 2)
		dirs := make([]hw.CopyDir, n)
		for i := range dirs {
			dirs[i] = hw.CopyDir(i % 2) // H2D, D2H, H2D, …
		}
		t.note = fmt.Sprintf("%d copies of %d B at once on one GPU, half h2d and half d2h, timed to the last end", n, r.Bytes)
		t.sim = func(top *topology.Topology) (float64, error) { return copiesUs(top, dirs, sim.Bytes(r.Bytes)) }
		return ""
	}
	dirs := map[string]hw.CopyDir{"h2d": hw.H2D, "d2h": hw.D2H, "p2p": hw.P2P}
	dir, ok := dirs[r.Dir]
	if !ok {
		return fmt.Sprintf("memcpy dir %q is not modelled (h2d, d2h, p2p, bidir)", r.Dir)
	}
	if streams <= 1 {
		api := hw.TorchCopy
		if r.API == "cudaMemcpyAsync" {
			api = hw.CUDAMemcpy
			t.group += " cudaMemcpyAsync"
		} else {
			t.group += " tensor.copy_"
		}
		t.paced = func(top *topology.Topology) (float64, bool, error) {
			us, err := hw.MemcpyEager(top, dir, sim.Bytes(r.Bytes), api)
			if err != nil {
				return 0, false, err
			}
			issue, err := hw.MemcpyIssueUs(top, dir, api)
			return us, math.Abs(us-issue) <= 1e-6*issue, err
		}
		return ""
	}
	transfers := cmp.Or(r.Transfers, streams)
	t.note = fmt.Sprintf("%d concurrent copies of %d B on one GPU, timed from first start to last end", transfers, r.Bytes)
	t.sim = func(top *topology.Topology) (float64, error) {
		dirs := make([]hw.CopyDir, transfers)
		for i := range dirs {
			dirs[i] = dir
		}
		return copiesUs(top, dirs, sim.Bytes(r.Bytes))
	}
	return ""
}

// copiesUs runs copy-engine transfers of bytes each, one per direction
// listed, on rank 0 at once (one per stream; their issue cost is far below
// their duration at the sizes captured) and returns the time until the last
// ends, in µs.
func copiesUs(top *topology.Topology, dirs []hw.CopyDir, bytes sim.Bytes) (float64, error) {
	m, err := hw.New(top)
	if err != nil {
		return 0, err
	}
	var end sim.Time
	for i, dir := range dirs {
		if dir == hw.P2P && m.NumRanks() < 2 {
			return 0, fmt.Errorf("hw: %s: p2p memcpy needs two GPUs", top.Name)
		}
		if err := m.Copy(0, dir, 1, bytes, fmt.Sprintf("memcpy%d", i), func() { end = max(end, m.Eng.Now()) }); err != nil {
			return 0, err
		}
	}
	if err := m.Eng.Run(); err != nil {
		return 0, err
	}
	return sim.Duration(end).Micros(), nil
}

func (t *twin) allreduce() string {
	r := t.rec
	t.group = fmt.Sprintf("%s %s/%s", r.Kind, r.Impl, r.Algo)
	if r.Proto != "" {
		t.group += " " + r.Proto
	}
	t.group += " " + r.Transport.String() + " " + r.Launch.String()
	var launch hw.LaunchMode
	switch r.Launch {
	case "cudagraph":
		launch = hw.Graph
	case "eager":
		launch = hw.Eager
	default:
		return fmt.Sprintf("launch %q is not one of cudagraph, eager", r.Launch)
	}
	dt := algos.DType(r.Dtype)
	if dt.Size() == 0 {
		return fmt.Sprintf("dtype %q is not simulated (bf16, fp16, fp32)", r.Dtype)
	}
	iters := validateIterations
	if r.Kind == trace.KindAllreduceSequence {
		if r.Impl != "nccl" {
			return fmt.Sprintf("allreduce_sequence of impl %q is not simulated (nccl only)", r.Impl)
		}
		iters = r.Count
	}
	algo := ""
	opts := map[string]string{}
	switch r.Impl {
	case "nccl":
		algo = "nccl"
		switch r.Transport {
		case "shm":
			opts["p2p_level"] = "loc"
		case "p2p":
		default:
			return fmt.Sprintf("nccl over transport %q is not simulated (p2p, shm)", r.Transport)
		}
		if r.Algo == "ring" || r.Algo == "tree" {
			opts["algo"] = r.Algo
		} else if r.Algo != "auto" {
			return fmt.Sprintf("nccl algo %q is not simulated (ring, tree, auto)", r.Algo)
		}
		switch r.Proto {
		case "ll", "ll128", "simple":
			opts["proto"] = r.Proto
		case "auto", "":
		default:
			return fmt.Sprintf("nccl proto %q is not simulated", r.Proto)
		}
		if r.MaxChannels > 0 {
			opts["channels"] = strconv.Itoa(r.MaxChannels)
		}
		// NCCL variables the capture set beyond ALGO/PROTO (tools/capture --env).
		if env := r.NCCLEnv; env != nil {
			keys := slices.Sorted(maps.Keys(env))
			for _, k := range keys {
				switch k {
				case "NCCL_NTHREADS":
					opts["nthreads"] = env[k]
					t.group += " nthreads=" + env[k]
				case "NCCL_MAX_NCHANNELS": // max_channels carries it
				default:
					return fmt.Sprintf("NCCL setting %s=%s is not modelled", k, env[k])
				}
			}
		}
	case "torch_symm_mem":
		if r.Transport != "p2p" {
			return fmt.Sprintf("torch_symm_mem over %q is not simulated (p2p)", r.Transport)
		}
		switch r.Algo {
		case "one_shot":
			algo = "one_stage"
		case "two_shot":
			algo = "two_shot_push"
		default:
			return fmt.Sprintf("torch_symm_mem algo %q is not simulated (one_shot, two_shot)", r.Algo)
		}
		t.note = map[string]string{"one_stage": "modelled as vLLM 1-stage", "two_shot_push": "modelled as two_shot_push (PyTorch's in-place kernel)"}[algo] + " with PyTorch's launch configuration"
		if algo == "one_stage" {
			// two_shot_push has PyTorch's launch and barriers by default.
			blocks, threads := algos.TorchSymmMemLaunch(r.Bytes, r.World, false)
			opts["blocks"], opts["threads"] = strconv.Itoa(blocks), strconv.Itoa(threads)
			opts["barrier"] = "atomic" // put_signal / wait_signal are compare-and-swap loops
			// Its end barrier is sync_remote_blocks<acq_rel>: the release
			// waits for the output stores. The start barrier's release has no
			// stores of the kernel before it.
			opts["end_release"] = "true"
		}
	case "arsim_flag_one_shot", "arsim_flag_two_shot", "host_staged_one_shot":
		shot := "one"
		if r.Impl == "arsim_flag_two_shot" {
			shot = "two"
		}
		switch r.Transport {
		case "p2p":
			algo = map[string]string{"one": "one_stage", "two": "two_stage"}[shot]
			if shot == "two" && r.Impl == "arsim_flag_two_shot" {
				opts["end_barrier"] = "yes" // tools/capture's two-shot ends with a barrier
			}
		case "host_memory":
			algo = "host_" + shot + "_shot"
			if _, err := algos.Lookup(algo); err != nil {
				return fmt.Sprintf("algorithm %s (a flag kernel exchanging through host memory) is not registered", algo)
			}
		default:
			return fmt.Sprintf("%s over %q is not simulated (p2p, host_memory)", r.Impl, r.Transport)
		}
		t.note = "modelled as " + algo
	default:
		return fmt.Sprintf("allreduce impl %q is not simulated (nccl, torch_symm_mem, arsim_flag_one_shot, arsim_flag_two_shot, host_staged_one_shot)", r.Impl)
	}
	a, err := algos.Lookup(algo)
	if err != nil {
		return err.Error()
	}
	accepts := map[string]bool{}
	for _, o := range a.Options() {
		accepts[o.Name] = true
	}
	var ignored []string
	for name, v := range map[string]int{"blocks": r.Blocks, "threads": r.Threads} {
		if v <= 0 {
			continue
		}
		if accepts[name] {
			opts[name] = strconv.Itoa(v)
		} else {
			ignored = append(ignored, name)
		}
	}
	if len(ignored) > 0 {
		sort.Strings(ignored)
		t.note = strings.TrimSpace(t.note + "; " + algo + " takes no " + strings.Join(ignored, "/") + " option: record's value ignored")
	}
	// Eager calls are paced by the host API that issues them.
	issueParam := ""
	if launch == hw.Eager {
		switch r.Impl {
		case "nccl":
			issueParam = "torch.nccl_eager_issue"
		case "torch_symm_mem":
			issueParam = "torch.symm_mem_" + r.Algo + "_eager_issue"
		}
	}
	world, bytes := r.World, r.Bytes
	req := func(top *topology.Topology) algos.Request {
		return algos.Request{Top: top, Ranks: world, Bytes: bytes, DType: dt, Launch: launch, Opts: opts}
	}
	t.paced = func(top *topology.Topology) (float64, bool, error) {
		s, err := algos.Plan(algo, req(top))
		if err != nil {
			return 0, false, err
		}
		m, err := hw.New(top)
		if err != nil {
			return 0, false, err
		}
		ro := algos.RunOptions{Iterations: iters, Launch: launch}
		if issueParam != "" {
			ro.IssueInterval = sim.Micros(top.Params.Get(issueParam))
		}
		res, err := algos.Run(m, s, ro)
		if err != nil {
			return 0, false, err
		}
		// Host-paced: back-to-back calls end exactly one issue interval
		// apart (the device finished each before the host issued the next).
		host := issueParam != "" && iters > 1 && math.Abs(res.SteadyUs()-ro.IssueInterval.Micros()) <= 1e-6*ro.IssueInterval.Micros()
		if r.Kind == trace.KindAllreduceSequence {
			return sim.Duration(res.Time).Micros(), host, nil
		}
		return res.SteadyUs(), host, nil
	}
	if algo == "nccl" {
		count := 1.0
		if r.Kind == trace.KindAllreduceSequence {
			count = float64(r.Count)
		}
		t.model = func(top *topology.Topology) (float64, error) {
			us, _, err := algos.NCCLModel(req(top))
			return us * count, err
		}
	}
	return ""
}

// topologies builds each preset once, from opts' parameters or defaults.
type topoCache struct {
	params map[string]*topology.Params
	mu     sync.Mutex
	built  map[string]*topology.Topology
	errs   map[string]error
}

func (c *topoCache) get(p *topology.Preset) (*topology.Topology, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.built[p.Name]; ok {
		return t, nil
	}
	if err, ok := c.errs[p.Name]; ok {
		return nil, err
	}
	ps := c.params[p.Name]
	if ps == nil {
		ps = p.DefaultParams()
	}
	t, err := p.BuildWith(ps)
	if c.built == nil {
		c.built, c.errs = map[string]*topology.Topology{}, map[string]error{}
	}
	if err != nil {
		c.errs[p.Name] = err
		return nil, err
	}
	c.built[p.Name] = t
	return t, nil
}

// outcome is the simulation of one twin.
type outcome struct {
	pred      float64
	hostPaced bool
	err       error
	model     *float64
}

// simulateOne runs one twin. A panic inside the simulator becomes the
// record's error, so that one bad record cannot end a whole validation.
func simulateOne(tw *twin, t *topology.Topology, withModel bool) (o outcome) {
	defer func() {
		if p := recover(); p != nil {
			o = outcome{err: fmt.Errorf("simulator panic: %v", p)}
		}
	}()
	if tw.paced != nil {
		o.pred, o.hostPaced, o.err = tw.paced(t)
	} else {
		o.pred, o.err = tw.sim(t)
	}
	if o.err == nil && (o.pred <= 0 || math.IsNaN(o.pred) || math.IsInf(o.pred, 0)) {
		o.err = fmt.Errorf("simulated value %v is not a positive number", o.pred)
	}
	if withModel && tw.model != nil && o.err == nil {
		if us, err := tw.model(t); err == nil && us > 0 {
			o.model = &us
		}
	}
	return o
}

// simulateAll runs every twin on the topology top(twin) in parallel, keeping
// order.
func simulateAll(twins []*twin, top func(*twin) (*topology.Topology, error), parallel int, withModel bool, progress func(done, total int)) []outcome {
	if parallel <= 0 {
		parallel = runtime.GOMAXPROCS(0)
	}
	out := make([]outcome, len(twins))
	var g errgroup.Group
	g.SetLimit(parallel)
	var mu sync.Mutex
	done := 0
	for i, tw := range twins {
		g.Go(func() error {
			o := &out[i]
			t, err := top(tw)
			if err != nil {
				o.err = err
			} else {
				*o = simulateOne(tw, t, withModel)
			}
			if progress != nil {
				mu.Lock()
				done++
				progress(done, len(twins))
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait()
	return out
}

// Validate simulates the twin of every record and compares it with the
// measured value (Record.Primary). Each record's system id picks the preset
// that declares it (topology.ForSystem). A record that cannot be simulated
// is listed in Skipped with the reason, never dropped. Records are run in
// parallel; the result is the same for any Parallel and in line order.
func Validate(recs []trace.Record, opts ValidateOptions) (*Validation, error) {
	override, err := overridePreset(opts.Preset)
	if err != nil {
		return nil, err
	}
	for name, ps := range opts.Params {
		if ps == nil {
			continue
		}
		if _, err := topology.Lookup(name); err != nil {
			return nil, fmt.Errorf("scenarios: validate: parameters for %w", err)
		}
	}
	recs = append([]trace.Record(nil), recs...)
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Line < recs[j].Line })
	cache := &topoCache{params: opts.Params}
	var (
		twins   []*twin
		skipped []Skipped
	)
	for _, r := range recs {
		t, why := prepare(r, override)
		if why != "" {
			skipped = append(skipped, Skipped{File: opts.File, Line: r.Line, Kind: string(r.Kind), Reason: why})
			continue
		}
		twins = append(twins, t)
	}
	outs := simulateAll(twins, func(t *twin) (*topology.Topology, error) { return cache.get(t.preset) }, opts.Parallel, true, opts.Progress)
	v := &Validation{}
	for i, t := range twins {
		o := outs[i]
		if o.err != nil {
			skipped = append(skipped, Skipped{File: opts.File, Line: t.rec.Line, Kind: string(t.rec.Kind), Reason: "simulation failed: " + o.err.Error()})
			continue
		}
		vr := ValidatedRecord{File: opts.File, Line: t.rec.Line, Kind: string(t.rec.Kind), System: t.rec.System, Group: t.group,
			Unit: t.unit, Measured: t.measured, Predicted: o.pred, ErrorPct: errPct(o.pred, t.measured), Note: t.note, HostPaced: o.hostPaced}
		if o.model != nil {
			e := errPct(*o.model, t.measured)
			vr.ModelPredicted, vr.ModelErrorPct = o.model, &e
		}
		v.Records = append(v.Records, vr)
	}
	sort.SliceStable(skipped, func(i, j int) bool { return skipped[i].Line < skipped[j].Line })
	v.Skipped = skipped
	v.summarize()
	return v, nil
}

// MergeValidations joins validations of several files (records and skipped
// in the order given) and recomputes the summary and groups.
func MergeValidations(vs ...*Validation) *Validation {
	out := &Validation{}
	for _, v := range vs {
		out.Records = append(out.Records, v.Records...)
		out.Skipped = append(out.Skipped, v.Skipped...)
	}
	out.summarize()
	return out
}

func errPct(pred, meas float64) float64 { return (pred - meas) / meas * 100 }

// summarize fills Summary and Groups from Records and Skipped.
func (v *Validation) summarize() {
	if v.Records == nil {
		v.Records = []ValidatedRecord{}
	}
	if v.Skipped == nil {
		v.Skipped = []Skipped{}
	}
	s := Summary{Count: len(v.Records), Skipped: len(v.Skipped)}
	var abs, modelAbs, oursOnModel, hostAbs, devAbs []float64
	groups := map[string]*struct{ errs, abs, model []float64 }{}
	var order []string
	for _, r := range v.Records {
		a := math.Abs(r.ErrorPct)
		abs = append(abs, a)
		if r.HostPaced {
			hostAbs = append(hostAbs, a)
		} else {
			devAbs = append(devAbs, a)
		}
		g, ok := groups[r.Group]
		if !ok {
			g = &struct{ errs, abs, model []float64 }{}
			groups[r.Group] = g
			order = append(order, r.Group)
		}
		g.errs = append(g.errs, r.ErrorPct)
		g.abs = append(g.abs, a)
		if r.ModelErrorPct != nil {
			m := math.Abs(*r.ModelErrorPct)
			modelAbs = append(modelAbs, m)
			oursOnModel = append(oursOnModel, a)
			g.model = append(g.model, m)
		}
	}
	s.MedianAbsErrorPct, s.P95AbsErrorPct = median(abs), nearestRank(abs, 95)
	s.HostPacedCount, s.HostPacedMedianAbs, s.HostPacedP95Abs = len(hostAbs), median(hostAbs), nearestRank(hostAbs, 95)
	s.DevicePacedCount, s.DevicePacedMedianAbs, s.DevicePacedP95Abs = len(devAbs), median(devAbs), nearestRank(devAbs, 95)
	s.ModelCount = len(modelAbs)
	if len(modelAbs) > 0 {
		s.ModelMedianAbs, s.ModelP95Abs = ptrTo(median(modelAbs)), ptrTo(nearestRank(modelAbs, 95))
		s.OursOnModelRecordsMedian, s.OursOnModelRecordsP95 = ptrTo(median(oursOnModel)), ptrTo(nearestRank(oursOnModel, 95))
	}
	reasons := map[string]int{}
	for _, sk := range v.Skipped {
		reasons[reasonClass(sk.Reason)]++
	}
	for reason, n := range reasons {
		s.SkippedByReason = append(s.SkippedByReason, ReasonCount{Reason: reason, Count: n})
	}
	sort.Slice(s.SkippedByReason, func(i, j int) bool {
		a, b := s.SkippedByReason[i], s.SkippedByReason[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return a.Reason < b.Reason
	})
	v.Summary = s
	v.Groups = v.Groups[:0]
	for _, name := range order {
		g := groups[name]
		gs := GroupSummary{Group: name, Count: len(g.errs), MedianErrorPct: median(g.errs), MedianAbsErrorPct: median(g.abs), MaxAbsErrorPct: maxOf(g.abs)}
		if len(g.model) > 0 {
			gs.ModelMedianAbs = ptrTo(median(g.model))
		}
		v.Groups = append(v.Groups, gs)
	}
	sort.SliceStable(v.Groups, func(i, j int) bool {
		a, b := v.Groups[i], v.Groups[j]
		if a.MedianAbsErrorPct != b.MedianAbsErrorPct {
			return a.MedianAbsErrorPct > b.MedianAbsErrorPct
		}
		return a.Group < b.Group
	})
}

// reasonClass shortens a skip reason for counting: the text before the
// first colon of a simulation failure, else the whole reason.
func reasonClass(reason string) string {
	if rest, ok := strings.CutPrefix(reason, "simulation failed: "); ok {
		if i := strings.Index(rest, ":"); i > 0 {
			return "simulation failed: " + rest[:i]
		}
	}
	return reason
}

func ptrTo(v float64) *float64 { return &v }

// median returns the median of xs (the mean of the middle two for an even
// count), 0 for none. xs is not modified.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// nearestRank returns the p-th percentile of xs by the nearest-rank
// method: the ⌈p/100 × n⌉-th smallest value; 0 for none.
func nearestRank(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	k := int(math.Ceil(p / 100 * float64(len(s))))
	k = min(max(k, 1), len(s))
	return s[k-1]
}

func maxOf(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// overridePreset looks up the preset named by a --topology override; nil
// for none.
func overridePreset(name string) (*topology.Preset, error) {
	if name == "" {
		return nil, nil
	}
	p, err := topology.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("scenarios: %w", err)
	}
	return p, nil
}

// barrierKernelUs is the time per launch, in µs, of back-to-back graph
// launches of a kernel whose blocks meet their peers in nb barriers in a
// row (tools/capture barrier): compare-and-swap tokens when atomic, epoch
// flags otherwise.
func barrierKernelUs(top *topology.Topology, world, blocks, threads, nb int, atomic bool) (float64, error) {
	b := algos.NewBuilder("barrier", world, 0, 1)
	deps := b.Launches()
	k := hw.Kernel{Blocks: blocks, Threads: threads}
	for i := 0; i < nb; i++ {
		name := fmt.Sprintf("barrier%d", i)
		if atomic {
			deps = b.AtomicBarrier(name, 1, k, "barrier", deps)
		} else {
			deps = b.Barrier(name, 1, k, "barrier", deps)
		}
	}
	m, err := hw.New(top)
	if err != nil {
		return 0, err
	}
	res, err := algos.Run(m, b.Schedule(), algos.RunOptions{Iterations: validateIterations, Launch: hw.Graph})
	if err != nil {
		return 0, err
	}
	return res.SteadyUs(), nil
}
