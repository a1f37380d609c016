package validate

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/algos/ncclmodel"
	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// allreduce and allreduce_sequence: the implementation measured is mapped
// onto the algorithm that models it (implChoices, one per impl) and run
// back to back, iterations times, or count times for a sequence, whose
// whole time is compared. Eager calls are paced by the host API that
// issues them. NCCL records also get NCCL's own estimate.
func init() {
	Register(trace.KindAllreduce, allreduceTwin)
	Register(trace.KindAllreduceSequence, allreduceTwin)
}

// iterations of back-to-back allreduces whose mean is compared with one
// allreduce record (the capture's `us` is a mean over back-to-back ops).
const iterations = 3

// choice is how an allreduce record is simulated.
type choice struct {
	algo  string
	opts  map[string]string
	note  string
	group string // added to the record's group, e.g. " nthreads=128"
}

// implChoices map each implementation onto the algorithm that models it,
// or say why there is none.
var implChoices = map[trace.Impl]func(trace.Record) (choice, error){
	trace.ImplNCCL:              ncclChoice,
	trace.ImplTorchSymmMem:      symmMemChoice,
	trace.ImplFlagOneShot:       flagKernelChoice,
	trace.ImplFlagTwoShot:       flagKernelChoice,
	trace.ImplHostStagedOneShot: flagKernelChoice,
}

func allreduceTwin(r trace.Record) (*Twin, error) {
	t := &Twin{Group: fmt.Sprintf("%s %s/%s", r.Kind, r.Impl, r.Algo)}
	if r.Proto != "" {
		t.Group += " " + r.Proto
	}
	t.Group += " " + r.Transport.String() + " " + r.Launch.String()
	switch r.API { // another format's records: transport by NCCL's rule, not measured
	case APINCCLTests:
		if r.System == "" { // an nccl-tests row (trace.ReadNCCLTests); a JSON record keeps its fields' group
			t.Group = strings.TrimSpace("all_reduce_perf " + r.Launch.String() + " " + r.Note)
		}
	case APIKernel:
		t.Group = "allreduce kernel (profiler)"
	}
	launch, ok := map[trace.Launch]hw.LaunchMode{trace.LaunchCUDAGraph: hw.Graph, trace.LaunchEager: hw.Eager}[r.Launch]
	if !ok {
		return nil, badRecord("launch %q is not one of cudagraph, eager", r.Launch)
	}
	dt := algos.DType(r.Dtype)
	if dt.Size() == 0 {
		return nil, notModelled("dtype %q is not simulated (bf16, fp16, fp32)", r.Dtype)
	}
	if r.GPUs > 0 && r.GPUs < r.World {
		// tools/capture's flag kernels with FLAGAR_ONE_GPU: the ranks'
		// kernels side by side on one GPU, "peer" memory its own
		return nil, notModelled("%d ranks on %d GPU(s): arsim's machines give each rank a GPU of its own", r.World, r.GPUs)
	}
	iters := iterations
	if r.Kind == trace.KindAllreduceSequence {
		if r.Impl != trace.ImplNCCL {
			return nil, notModelled("allreduce_sequence of impl %q is not simulated (nccl only)", r.Impl)
		}
		iters = r.Count
	}
	pick, ok := implChoices[r.Impl]
	if !ok {
		return nil, notModelled("allreduce impl %q is not simulated (nccl, torch_symm_mem, arsim_flag_one_shot, arsim_flag_two_shot, host_staged_one_shot)", r.Impl)
	}
	c, err := pick(r)
	if err != nil {
		return nil, err
	}
	t.Group += c.group
	t.Note = c.note
	if err := c.launchConfig(r, t); err != nil {
		return nil, err
	}
	if c.algo == "nccl" && r.Launch == trace.LaunchCUDAGraph {
		// the NCCL calls of the record's CUDA graph (graphCallsOption)
		switch {
		case r.Kind == trace.KindAllreduceSequence && r.Count > 0:
			c.opts["graph_calls"] = strconv.Itoa(r.Count)
		case r.OpsPerGraph > 0:
			c.opts["graph_calls"] = strconv.Itoa(r.OpsPerGraph)
		}
	}
	req := func(top *topology.Topology) algos.Request {
		return algos.Request{Top: top, Ranks: r.World, Bytes: r.Bytes, DType: dt, Launch: launch, Opts: c.opts}
	}
	t.Sim = c.simulate(r, req, launch, iters)
	t.mechs = func(top *topology.Topology) []algos.Mechanism {
		ms := routeMechanisms(c.algo, req(top))
		if r.Kind == trace.KindAllreduceSequence {
			ms = withPasses(ms)
		}
		return ms
	}
	if c.algo == "nccl" {
		count := 1.0
		if r.Kind == trace.KindAllreduceSequence {
			count = float64(r.Count)
		}
		t.Model = func(top *topology.Topology) (algos.NCCLEstimateInfo, error) {
			e, err := algos.NCCLEstimate(req(top))
			e.Us *= count
			return e, err
		}
	}
	return t, nil
}

// routeMechanisms are what a whole allreduce measures, in the terms of
// the schedule that simulates it (algos.MechanismsOf): the link between
// its GPUs, and its algorithm over its route (algos.Whole) in the family
// algos.MechWhole. Its parts (flags, polls, host loads and stores) are left
// to the records that time them one by one. None when it cannot be planned.
func routeMechanisms(algo string, req algos.Request) []algos.Mechanism {
	s, err := algos.Plan(algo, req)
	if err != nil {
		return nil
	}
	var out []algos.Mechanism
	for _, m := range algos.MechanismsOf(s, req.Top) {
		switch {
		case m == algos.MechPeerPCIe, m == algos.MechPeerNVLink:
			out = append(out, m)
		case m.Family() == algos.MechWhole:
			out = append(out, algos.MechWhole, m)
		}
	}
	return out
}

// withPasses adds to a whole allreduce's mechanisms the verify-pass
// variant of each algorithm-over-route one (algos.PassOf), and the
// family: what an allreduce_sequence record measures beyond them.
func withPasses(ms []algos.Mechanism) []algos.Mechanism {
	out := slices.Clone(ms)
	for _, m := range ms {
		if p := algos.PassOf(m); p != "" {
			out = append(out, algos.MechPass, p)
		}
	}
	return algos.UnionMechanisms(out)
}

// launchConfig passes the record's blocks and threads to the algorithm
// where it takes them, and notes where it does not.
func (c *choice) launchConfig(r trace.Record, t *Twin) error {
	a, err := algos.Lookup(c.algo)
	if err != nil {
		return &SkipError{Why: ErrNotModelled, Reason: err.Error(), Cause: err}
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
			c.opts[name] = strconv.Itoa(v)
		} else {
			ignored = append(ignored, name)
		}
	}
	if len(ignored) > 0 {
		slices.Sort(ignored)
		t.Note = strings.TrimSpace(t.Note + "; " + c.algo + " takes no " + strings.Join(ignored, "/") + " option: record's value ignored")
	}
	return nil
}

// simulate runs iters allreduces back to back: the steady-state time per
// allreduce, or the whole sequence's time for a sequence record. An eager
// call is paced by the host's issue interval of the API that made it;
// the value is host-paced when back-to-back calls end exactly one issue
// interval apart (the device finished each before the host issued the
// next).
func (c *choice) simulate(r trace.Record, req func(*topology.Topology) algos.Request, launch hw.LaunchMode, iters int) func(*topology.Topology) (float64, bool, error) {
	issueParam, perCall := "", 1.0
	if launch == hw.Eager {
		switch {
		case r.API == APINCCLTests:
			// nccl-tests calls ncclAllReduce itself: one host thread
			// issues a call for each of its GPUs per iteration, between
			// ncclGroupStart and ncclGroupEnd.
			issueParam, perCall = "host.nccl_group_call_issue", float64(max(r.GPUs, 1))
		case r.Impl == trace.ImplNCCL:
			issueParam = "torch.nccl_eager_issue"
		case r.Impl == trace.ImplTorchSymmMem:
			issueParam = "torch.symm_mem_" + r.Algo + "_eager_issue"
		}
	}
	return func(top *topology.Topology) (float64, bool, error) {
		s, err := algos.Plan(c.algo, req(top))
		if err != nil {
			return 0, false, err
		}
		m, err := hw.New(top)
		if err != nil {
			return 0, false, err
		}
		if r.API == APIKernel {
			// A profiler's kernel: one allreduce's device time, from the
			// kernel's start (after its launch gap) to its end.
			res, err := algos.Run(m, s, algos.RunOptions{Iterations: 1, Launch: hw.Graph})
			if err != nil {
				return 0, false, err
			}
			return res.MeanUs() - top.Params.Get("gpu.launch_graph"), false, nil
		}
		ro := algos.RunOptions{Iterations: iters, Launch: launch}
		if issueParam != "" {
			ro.IssueInterval = sim.Micros(top.Params.HostIssue(issueParam) * perCall)
		}
		res, err := algos.Run(m, s, ro)
		if err != nil {
			return 0, false, err
		}
		host := issueParam != "" && iters > 1 && math.Abs(res.SteadyUs()-ro.IssueInterval.Micros()) <= 1e-6*ro.IssueInterval.Micros()
		if r.Kind == trace.KindAllreduceSequence {
			return sim.Duration(res.Time).Micros(), host, nil
		}
		return res.SteadyUs(), host, nil
	}
}

// ncclChoice: NCCL, with the capture's algorithm, protocol, channel limit
// and NCCL variables as options; SHM by NCCL's P2P level.
func ncclChoice(r trace.Record) (choice, error) {
	c := choice{algo: "nccl", opts: map[string]string{}}
	switch r.Transport {
	case trace.TransportSHM:
		c.opts["p2p_level"] = "loc"
	case trace.TransportP2P:
	default:
		return c, notModelled("nccl over transport %q is not simulated (p2p, shm)", r.Transport)
	}
	if r.Algo == "ring" || r.Algo == "tree" {
		c.opts["algo"] = r.Algo
	} else if r.Algo != "auto" {
		return c, notModelled("nccl algo %q is not simulated (ring, tree, auto)", r.Algo)
	}
	switch r.Proto {
	case "ll", "ll128", "simple":
		c.opts["proto"] = r.Proto
	case "auto", "":
	default:
		return c, notModelled("nccl proto %q is not simulated", r.Proto)
	}
	if r.MaxChannels > 0 {
		c.opts["max_channels"] = strconv.Itoa(r.MaxChannels) // NCCL_MAX_NCHANNELS: a cap, not a forced count
	}
	// NCCL variables the capture set beyond ALGO/PROTO (tools/capture --env,
	// or arsim validate --opts for nccl-tests), in NCCL's spelling.
	env := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(r.NCCLEnv)) {
		if k == "NCCL_MAX_NCHANNELS" && r.MaxChannels > 0 {
			continue // max_channels carries it
		}
		env[k] = r.NCCLEnv[k]
	}
	o, err := algos.TranslateNCCLEnv(env)
	if err != nil {
		return c, notModelled("%s", strings.TrimPrefix(err.Error(), "algos: "))
	}
	for _, k := range slices.Sorted(maps.Keys(o)) {
		if prev, ok := c.opts[k]; ok && prev != o[k] {
			return c, notModelled("the record's %s=%s and its NCCL settings (%s=%s) disagree", k, prev, k, o[k])
		}
		c.opts[k] = o[k]
	}
	if _, ok := c.opts["nccl_version"]; !ok && r.NCCLRelease != "" {
		// the release its capture ran (system/versions.json beside it),
		// where arsim's nccl knows it: its channel split and rules
		if rel, err := ncclmodel.ParseRelease(r.NCCLRelease); err == nil {
			c.opts["nccl_version"] = fmt.Sprintf("2.%d", rel.Minor)
		}
	}
	if o["p2p_read"] == "on" && string(r.Extra["p2p_read_logged"]) == "false" {
		// tools/capture: the run set NCCL_P2P_READ_ENABLE=1, yet rank 0's
		// NCCL log shows no connection reading
		return c, notModelled("the run set NCCL_P2P_READ_ENABLE=1 but its NCCL log shows no connection in P2P read mode (p2p_read_logged false): what ran is not what the record names")
	}
	if o["p2p_read"] != "" {
		c.group += " p2p_read=" + o["p2p_read"]
	}
	if v, ok := r.NCCLEnv["NCCL_NTHREADS"]; ok {
		c.group += " nthreads=" + v
	}
	if _, ok := r.NCCLEnv["NCCL_GRAPH_FILE"]; ok {
		c.group += " with NCCL_GRAPH_FILE"
	}
	switch r.API {
	case APINCCLTests:
		c.note = "nccl-tests: eager calls paced by host.nccl_group_call_issue × " + strconv.Itoa(max(r.GPUs, 1)) + " GPU(s) per host thread, at the host's core clock (× host.issue_core_clock / host.core_clock); P2P or SHM by NCCL's own rule"
	case APIKernel:
		c.note = "profiler kernel: one allreduce's device time"
	}
	return c, nil
}

// The API field of an allreduce record made from another format says how
// the operation was issued and timed.
const (
	// APINCCLTests: a row of nccl-tests (all_reduce_perf): ncclAllReduce
	// called from one host thread for each of GPUs GPUs, timed as the mean
	// over back-to-back iterations.
	APINCCLTests = "ncclAllReduce"
	// APIKernel: one NCCL kernel of a profiler trace, timed by its
	// duration on the device.
	APIKernel = "kernel"
)

// symmMemChoice: PyTorch's symmetric-memory kernels. Its one-shot is
// vLLM's one-stage with PyTorch's launch configuration and barriers; its
// two-shot is two_shot_push, which has both by default.
func symmMemChoice(r trace.Record) (choice, error) {
	if r.Transport != trace.TransportP2P {
		return choice{}, notModelled("torch_symm_mem over %q is not simulated (p2p)", r.Transport)
	}
	c := choice{opts: map[string]string{}}
	switch r.Algo {
	case "one_shot":
		c.algo = "one_stage"
		c.note = "modelled as vLLM 1-stage with PyTorch's launch configuration"
		blocks, threads := algos.TorchSymmMemLaunch(r.Bytes, r.World, false)
		c.opts["blocks"], c.opts["threads"] = strconv.Itoa(blocks), strconv.Itoa(threads)
		c.opts["barrier"] = "atomic" // put_signal / wait_signal are compare-and-swap loops
		// Both its barriers are sync_remote_blocks of acquire-release
		// order (PyTorch's one_shot_all_reduce_kernel): each release signal
		// is a system fence; the end one's waits for the output stores.
		c.opts["start_release"] = "true"
		c.opts["end_release"] = "true"
	case "two_shot":
		c.algo = "two_shot_push"
		c.note = "modelled as two_shot_push (PyTorch's in-place kernel) with PyTorch's launch configuration"
	default:
		return c, notModelled("torch_symm_mem algo %q is not simulated (one_shot, two_shot)", r.Algo)
	}
	return c, nil
}

// flagKernelChoice: the project's own flag kernels (tools/capture), GPU to
// GPU or through host memory.
func flagKernelChoice(r trace.Record) (choice, error) {
	shot := "one"
	if r.Impl == trace.ImplFlagTwoShot {
		shot = "two"
	}
	c := choice{opts: map[string]string{}}
	switch r.Transport {
	case trace.TransportP2P:
		c.algo = map[string]string{"one": "one_stage", "two": "two_stage"}[shot]
		if shot == "two" {
			c.opts["end_barrier"] = "yes" // tools/capture's two-shot ends with a barrier
		}
	case trace.TransportHostMemory:
		c.algo = "host_" + shot + "_shot"
		if _, err := algos.Lookup(c.algo); err != nil {
			return c, notModelled("algorithm %s (a flag kernel exchanging through host memory) is not registered", c.algo)
		}
	default:
		return c, notModelled("%s over %q is not simulated (p2p, host_memory)", r.Impl, r.Transport)
	}
	if shot == "two" {
		switch r.MidBarrier {
		case "volatile":
			return c, notModelled("the two-shot with a volatile mid barrier (no fence) is not simulated: two_stage's mid barrier fences (release, fence_release)")
		case "release", "fence_volatile":
			c.opts["mid_barrier"] = "release" // block_barrier mode 2 or 3: one system fence (st.release.sys's, or __threadfence_system before volatile flags)
		default:
			c.opts["mid_barrier"] = "fence_release" // block_barrier mode 1: __threadfence_system, then st.release.sys
		}
	}
	if r.Impl != trace.ImplHostStagedOneShot {
		c.opts["rank_loop"] = "runtime" // tools/capture's kernels loop over ranks with a run-time bound
		if r.Transport == trace.TransportHostMemory {
			c.opts["flag_layout"] = "vllm" // tools/capture's signal arrays: sig[rank] + block × 8 + peer (kernels.py block_barrier)
		}
	}
	c.note = "modelled as " + c.algo
	return c, nil
}
