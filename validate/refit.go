package validate

import (
	"bytes"
	_ "embed"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// A chip of its own. The per-block costs of the one-GPU machines were
// fitted on one capture of tools/capture's perblock part on one H200
// (testdata/h200x1-arsim/perblock.jsonl: its fitted side, Fits, and its
// micro2 and pointer-chase records). RefitPerBlock takes the same
// kernels captured on another GPU and recomputes those costs from them
// by the same rules, so that a user with another chip fits on one
// capture and predicts every other: TestFitsComeFromTheirFittedSide
// holds that the H200's capture gives the H200's table back, and
// TestRefitH100 reports what it does on the H100's.

// Refitted is one parameter recomputed from a capture.
type Refitted struct {
	Name     string
	Unit     string
	Old, New float64
	// Clamped: the rule gave a value outside the parameter's range (Raw),
	// and New is the nearest bound.
	Clamped bool
	// Kept: the capture holds no record of the rule's fitted side; New is
	// the machine's value.
	Kept bool
	// Captures is how many captures gave the value (RefitPerBlockMedian).
	Captures int
	Raw      float64
	How      string
}

// RefitPerBlock recomputes the per-block parameters from recs, a capture
// of the perblock part (its micro2, pointer_chase, poll, loop and
// sm_access records), on the machine of preset p starting from ps, which
// it changes in place: each rule reads the values the rules before it
// set. A rule reads only the records of recs whose configuration (its
// system aside) is one that its fitted side has in ref, the capture the
// table was fitted on: later captures of the part add configurations
// that the fits' selections would take in. file names the capture in
// each parameter's new source. It fails when a record the micro rules
// need is missing; a rule whose records are missing keeps the machine's
// value (Refitted.Kept).
func RefitPerBlock(recs, ref []trace.Record, p *topology.Preset, ps *topology.Params, file string) ([]Refitted, error) {
	r := refitter{recs: recs, ref: ref, ps: ps, file: file}
	if err := r.micro(); err != nil {
		return nil, err
	}
	r.set("gpu.mem_latency", r.chaseLocal, "pointer_chase local, one thread")
	r.set("gpu.fence_sys_local", r.fenceLocal, "micro2 fence: a store and fence.sc.sys to local memory, one thread")
	r.set("gpu.fence_posted_extra", r.fenceHost-r.fenceLocal, "micro2 fence: the same to pinned host memory minus to local memory")
	r.portLatency(p)
	r.loops()
	r.polls()
	r.set("gpu.vector_load_extra_pcie", r.readOnlyHost-r.chaseHost, "block 0's ns per iteration of read_only_loop from host memory (1 × 32 threads) minus pointer_chase host")
	r.graphGap()
	return r.out, r.err
}

// A Capture is one capture's records and the name its sources cite.
type Capture struct {
	Recs []trace.Record
	File string
}

// RefitPerBlockMedian runs RefitPerBlock on each capture from the same
// starting values (ps's) and gives each parameter the median of the
// values of the captures that hold its rule's records, which it sets in
// ps: runs on several instances of one machine type differ (the fence
// alone 627–729 ns over six H100s), and their median is what a table for
// the type should hold.
func RefitPerBlockMedian(caps []Capture, ref []trace.Record, p *topology.Preset, ps *topology.Params) ([]Refitted, error) {
	if len(caps) == 0 {
		return nil, fmt.Errorf("refit: no capture")
	}
	var order []string
	byName := map[string][]Refitted{}
	for _, c := range caps {
		got, err := RefitPerBlock(c.Recs, ref, p, ps.Clone(), c.File)
		if err != nil {
			return nil, err
		}
		for _, r := range got {
			if _, ok := byName[r.Name]; !ok {
				order = append(order, r.Name)
			}
			byName[r.Name] = append(byName[r.Name], r)
		}
	}
	out := make([]Refitted, 0, len(order))
	for _, name := range order {
		rs := byName[name]
		var news, raws []float64
		for _, r := range rs {
			if !r.Kept {
				news, raws = append(news, r.New), append(raws, r.Raw)
			}
		}
		m := rs[0]
		m.Captures = len(news)
		if len(news) == 0 {
			out = append(out, m)
			continue
		}
		m.Kept, m.New, m.Raw = false, median(news), median(raws)
		m.Clamped = m.Raw != m.New
		if len(caps) > 1 {
			m.How = fmt.Sprintf("the median over %d captures of %s", len(news), m.How)
		}
		src := "refitted on " + caps[0].File + ": " + m.How
		if len(caps) > 1 {
			src = fmt.Sprintf("refitted: %s (%d captures)", m.How, len(news))
		}
		if m.Clamped {
			src += fmt.Sprintf(" (gave %.4g, outside its range)", m.Raw)
		}
		if err := ps.Set(name, m.New, src); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

type refitter struct {
	recs, ref []trace.Record
	ps        *topology.Params
	file      string
	out       []Refitted
	err       error

	chaseLocal, chaseHost, readOnlyHost, fenceLocal, fenceHost float64
}

// micro reads the capture's own round trips and fences, which the other
// rules are relative to.
func (r *refitter) micro() error {
	for _, x := range r.recs {
		switch {
		case x.Kind == trace.KindPointerChase && x.Target == "local" && x.WriteBlocks == 0 && x.ReadBlocks == 0:
			r.chaseLocal = x.NsPerStep
		case x.Kind == trace.KindPointerChase && x.Target == "host" && x.WriteBlocks == 0 && x.ReadBlocks == 0:
			r.chaseHost = x.NsPerStep
		case x.Kind == trace.KindSMAccess && x.Op == "read_only_loop" && x.Target == "host" && x.Blocks == 1 && x.Threads == 32:
			if raw, ok := x.Extra["ns_per_iter_kernel"]; ok {
				if v, err := strconv.ParseFloat(string(raw), 64); err == nil {
					r.readOnlyHost = v
				}
			}
		case x.Kind == trace.KindFence && x.Variant == "store+fence_sys" && x.Threads == 1 && x.Target == "local":
			r.fenceLocal = x.NsPerIter
		case x.Kind == trace.KindFence && x.Variant == "store+fence_sys" && x.Threads == 1 && x.Target == "host":
			r.fenceHost = x.NsPerIter
		}
	}
	for _, m := range []struct {
		v    float64
		what string
	}{{r.chaseLocal, "pointer_chase of local memory"}, {r.chaseHost, "pointer_chase of host memory"},
		{r.readOnlyHost, "sm_access read_only_loop of host memory, 1 block × 32 threads, with ns_per_iter_kernel"},
		{r.fenceLocal, "fence store+fence_sys to local memory, 1 thread"}, {r.fenceHost, "fence store+fence_sys to host memory, 1 thread"}} {
		if m.v <= 0 {
			return fmt.Errorf("refit: %s has no %s record (capture the perblock part: tools/capture)", r.file, m.what)
		}
	}
	return nil
}

// side returns the records of the fitted side of param (Fits' On and
// kinds), failing if there are none.
func (r *refitter) side(param string) []trace.Record {
	for _, f := range Fits {
		for _, q := range f.Params {
			if q != param {
				continue
			}
			on := func(x trace.Record) bool { return f.On(x) && slices.Contains(f.Kinds, x.Kind) }
			configs := map[string]bool{}
			for _, x := range r.ref {
				if on(x) {
					configs[configurationAside(x)] = true
				}
			}
			var out []trace.Record
			for _, x := range r.recs {
				if on(x) && configs[configurationAside(x)] {
					out = append(out, x)
				}
			}
			if len(out) == 0 {
				r.keep(f)
			}
			return out
		}
	}
	if r.err == nil {
		r.err = fmt.Errorf("refit: no fit names %s", param)
	}
	return nil
}

// configurationAside is r's configuration without its system, a poll's
// iteration count (the capture sizes it to its time) and a kernel name
// that its other fields imply (later captures name the kernel); with a
// graph replay's node count, which the format leaves to its extras.
func configurationAside(r trace.Record) string {
	r.System = ""
	if r.Kind == trace.KindPoll {
		r.Iters = 0
	}
	if name := r.KernelName; name != "" {
		r.KernelName = ""
		if copyKernel(r) != name {
			r.KernelName = name
		}
	}
	if graphReplay(r) {
		if strings.HasPrefix(r.State, micro2StatePrefix) {
			r.State = "" // micro2's own state, which the reference's records do not carry
		}
		return r.Configuration() + " graph_nodes=" + string(r.Extra["graph_nodes"])
	}
	return r.Configuration()
}

// keep records the parameters of a fit whose fitted side the capture
// lacks: they keep the machine's values.
func (r *refitter) keep(f Fit) {
	for _, q := range f.Params {
		par, _ := r.ps.Lookup(q)
		r.out = append(r.out, Refitted{Name: q, Unit: par.Unit, Old: par.Value, New: par.Value, Raw: par.Value, Kept: true,
			How: "the capture has no record of its fitted side (" + f.How + "): the machine's value"})
	}
}

// set records and applies one value, clamped to the parameter's range.
func (r *refitter) set(name string, v float64, how string) {
	if r.err != nil {
		return
	}
	par, ok := r.ps.Lookup(name)
	if !ok {
		r.err = fmt.Errorf("refit: the machine has no parameter %s", name)
		return
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		r.err = fmt.Errorf("refit: %s from %s is not a number (%s)", name, r.file, how)
		return
	}
	out := Refitted{Name: name, Unit: par.Unit, Old: par.Value, New: v, Raw: v, How: how}
	if v < par.Min {
		out.New, out.Clamped = par.Min, true
	}
	if par.Max != 0 && v > par.Max {
		out.New, out.Clamped = par.Max, true
	}
	src := "refitted on " + r.file + ": " + how
	if out.Clamped {
		src += fmt.Sprintf(" (gave %.4g, outside its range)", v)
	}
	if err := r.ps.Set(name, out.New, src); err != nil {
		r.err = err
		return
	}
	r.out = append(r.out, out)
}

// portLatency sets pcie.gpu_port_latency so that the machine's host
// round trip is the capture's pointer chase of host memory: it crosses
// the GPU's port twice.
func (r *refitter) portLatency(p *topology.Preset) {
	if r.err != nil {
		return
	}
	top, err := p.BuildWith(r.ps)
	if err != nil {
		r.err = err
		return
	}
	sim, err := PointerChaseNs(top, "host")
	if err != nil {
		r.err = err
		return
	}
	old := r.ps.Get("pcie.gpu_port_latency")
	r.set("pcie.gpu_port_latency", old+(r.chaseHost-sim)/2, "pointer_chase host = 2 × (GPU port + host bridge + CPU fabric) + DRAM, the others the machine's")
}

// loops recomputes the loop costs: the copy, LL, vector and memory ones.
func (r *refitter) loops() {
	val := func(x trace.Record) float64 { v, _, _ := x.Primary(); return v }
	oneLoad := math.NaN()
	if s := r.side("gpu.copy_iter_overhead"); len(s) > 0 {
		oneLoad = val(s[0])
		r.set("gpu.copy_iter_overhead", oneLoad-r.chaseLocal, "one block of 128 threads copying local to local, one load: ns per iteration minus pointer_chase local")
	}
	if s := r.side("gpu.ll_iter_overhead"); len(s) > 1 {
		a, b := lineFit(s, func(x trace.Record) (float64, float64) { return float64((x.Threads + 31) / 32), val(x) })
		r.set("gpu.ll_iter_overhead", a-r.chaseLocal-r.ps.Get("capture.ll_runtime_op"), "LL recv_reduce_send, one block: the intercept over warps minus pointer_chase local and capture.ll_runtime_op")
		r.set("gpu.ll_iter_per_warp", b, "LL recv_reduce_send, one block: the slope over warps")
	}
	if s := r.side("gpu.vector_issue"); len(s) > 1 && !math.IsNaN(oneLoad) {
		a, b := lineFit(s, func(x trace.Record) (float64, float64) {
			return float64(x.Threads / 32), (val(x) - oneLoad) / float64(x.Unroll-1)
		})
		r.set("gpu.vector_issue", a, "local copies of one block, several loads in flight: per further load, the intercept over warps")
		r.set("gpu.vector_issue_per_warp", b, "the same: the slope over warps")
	}
	if s := r.side("gpu.host_store_issue_per_warp"); len(s) > 0 {
		r.set("gpu.host_store_issue_per_warp", hostStoreSlope(s, val), "one block's copies to host memory minus the same to local memory, over (loads in flight − 1) × warps, least squares through 0")
	}
	if s := r.side("gpu.mem_efficiency"); len(s) > 0 {
		x := s[0]
		bytes := float64(x.Blocks) * float64(x.Threads) * 16 * float64(max(x.Unroll, 1)) * 2
		r.set("gpu.mem_efficiency", bytes/x.NsPerIterSlowestBlock/r.ps.Get("gpu.mem_bandwidth"), "the full-GPU local copy: bytes read and written per ns over gpu.mem_bandwidth")
	}
	if s := r.side("gpu.mem_loaded_latency"); len(s) > 0 {
		t, base := val(s[0]), r.ps.Get("gpu.mem_latency")+r.ps.Get("gpu.copy_iter_overhead")
		rate := r.ps.Get("gpu.mem_bandwidth") * r.ps.Get("gpu.mem_efficiency")
		r.set("gpu.mem_loaded_latency", (t-base)*t*rate/(32*512*16), "solved from t = base + k × loads / (t × rate), 32 blocks × 512 threads")
	}
	if s := r.side("nccl.simple_step_overhead"); len(s) > 0 {
		r.set("nccl.simple_step_overhead", val(s[0]), "loop simple_step, one block × 512 threads, no data, no fence")
	}
}

// polls recomputes the costs of polls and atomics, local and to host
// memory.
func (r *refitter) polls() {
	val := func(x trace.Record) float64 { v, _, _ := x.Primary(); return v }
	throughOrigin := func(s []trace.Record) float64 {
		var xy, xx float64
		for _, x := range s {
			xy += float64(x.Blocks) * val(x)
			xx += float64(x.Blocks * x.Blocks)
		}
		return xy / xx
	}
	load := r.ps.Get("gpu.host_poll_load")
	if s := r.side("hostmem.poll_service"); len(s) > 0 {
		r.set("hostmem.poll_service", throughOrigin(s)-load, "slope of ns per load over 8–132 blocks polling one host word, least squares through 0, less gpu.host_poll_load")
	}
	if s := r.side("hostmem.atomic_service"); len(s) > 0 {
		r.set("hostmem.atomic_service", throughOrigin(s), "slope of ns per atomic over 8–132 blocks on one host word, least squares through 0")
	}
	if s := r.side("hostmem.atomic_service_lines"); len(s) > 0 {
		var xy, xx float64
		for _, x := range s {
			words := float64(min(x.Blocks, 128/x.SpacingBytes))
			xy += words * val(x)
			xx += words * words
		}
		r.set("hostmem.atomic_service_lines", xy/xx, "ns per atomic over the words on a line, least squares through 0, words 4–32 B apart, spanning more than one line")
	}
	if s := r.side("hostmem.line_contention"); len(s) > 0 {
		var xy, xx float64
		for _, x := range s {
			waiting := float64((min(4, x.Blocks*4/32) - 1) * 7)
			xy += waiting * (val(x) - 8*r.ps.Get("hostmem.poll_service") - float64(x.Blocks)*load)
			xx += waiting * waiting
		}
		r.set("hostmem.line_contention", xy/xx, "ns per load beyond 8 × hostmem.poll_service over the loads waiting at the line's other sectors, least squares through 0")
	}
	if s := r.side("gpu.poll_loop_overhead"); len(s) > 0 {
		volatile := val(s[0])
		r.set("gpu.poll_loop_overhead", volatile-r.chaseLocal, "one block's volatile poll of a local word: ns per load minus pointer_chase local")
		if s := r.side("gpu.poll_relaxed_saving"); len(s) > 0 {
			r.set("gpu.poll_relaxed_saving", volatile-val(s[0]), "the same volatile poll minus the relaxed one")
		}
	}
}

// graphGap scales the graph gaps, fresh and settled, by the median ratio
// of the capture's empty kernels replayed in CUDA graphs to the
// reference capture's, configuration by configuration: the table's
// values were measured elsewhere (micro2 on two H200s, graph_gap_state),
// so the rule carries them over by the chip's ratio on the kernels both
// captures ran (on the reference itself, 1).
func (r *refitter) graphGap() {
	if r.err != nil {
		return
	}
	ref := map[string]float64{}
	for _, x := range r.ref {
		if graphReplay(x) {
			ref[configurationAside(x)] = x.Us
		}
	}
	var ratios []float64
	for _, x := range r.recs {
		if v, ok := ref[configurationAside(x)]; ok && graphReplay(x) && v > 0 {
			ratios = append(ratios, x.Us/v)
		}
	}
	if len(ratios) == 0 {
		r.keep(Fit{Params: []string{"gpu.launch_graph", "gpu.launch_graph_settled"}, How: "the capture's empty kernels replayed in CUDA graphs against the reference's"})
		return
	}
	k := median(ratios)
	how := fmt.Sprintf("the machine's value × %.4g, the median over %d configurations of the capture's empty kernel replayed in a CUDA graph over the reference capture's", k, len(ratios))
	r.set("gpu.launch_graph", r.ps.Get("gpu.launch_graph")*k, how)
	r.set("gpu.launch_graph_settled", r.ps.Get("gpu.launch_graph_settled")*k, how)
}

func graphReplay(x trace.Record) bool {
	return x.Kind == trace.KindEmptyKernel && x.Launch == "cudagraph" && x.Us > 0
}

// hostStoreSlope pairs each copy to host memory with the same copy to
// local memory and fits their difference over (loads in flight − 1) ×
// warps through 0.
func hostStoreSlope(s []trace.Record, val func(trace.Record) float64) float64 {
	local := map[[4]int]float64{}
	for _, x := range s {
		if x.Dst == "local" {
			local[[4]int{x.Unroll, x.Sources, x.Threads, x.Iters}] = val(x)
		}
	}
	var xy, xx float64
	for _, x := range s {
		l, ok := local[[4]int{x.Unroll, x.Sources, x.Threads, x.Iters}]
		if x.Dst != "host" || !ok {
			continue
		}
		w := float64((x.Unroll - 1) * ((x.Threads + 31) / 32))
		xy += w * (val(x) - l)
		xx += w * w
	}
	if xx == 0 {
		return math.NaN()
	}
	return xy / xx
}

// lineFit fits y = a + b·x by least squares over the records.
func lineFit(rs []trace.Record, xy func(trace.Record) (float64, float64)) (a, b float64) {
	xs, ys := make([]float64, len(rs)), make([]float64, len(rs))
	for i, x := range rs {
		xs[i], ys[i] = xy(x)
	}
	return line(xs, ys)
}

// line fits y = a + b·x by least squares.
func line(xs, ys []float64) (a, b float64) {
	var mx, my float64
	for i := range xs {
		mx, my = mx+xs[i], my+ys[i]
	}
	n := float64(len(xs))
	mx, my = mx/n, my/n
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	b = sxy / sxx
	return my - b*mx, b
}

// refitReference holds the records of the capture the table was fitted
// on (testdata/h200x1-arsim/perblock.jsonl) that RefitPerBlock's rules
// read: it tells which configurations a rule takes from another capture.
// TestRefitReferenceIsCurrent holds it to that file
// (go test ./validate -run RefitReference -update-refit rewrites it).
//
//go:embed refit_reference.jsonl
var refitReference []byte

// RefitReference returns the configurations' records (refitReference).
func RefitReference() ([]trace.Record, error) {
	recs, bad, err := trace.ReadJSONL(bytes.NewReader(refitReference), "refit_reference.jsonl", trace.ReadOptions{})
	if err != nil {
		return nil, err
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("refit: refit_reference.jsonl line %d: %s", bad[0].Line, bad[0].Err)
	}
	return recs, nil
}

// refitRules are the parameters whose fitted sides (Fits) RefitPerBlock's
// rules read.
var refitRules = []string{"gpu.copy_iter_overhead", "gpu.ll_iter_overhead", "gpu.vector_issue", "gpu.host_store_issue_per_warp",
	"gpu.mem_efficiency", "gpu.mem_loaded_latency", "nccl.simple_step_overhead", "hostmem.poll_service", "hostmem.atomic_service", "hostmem.atomic_service_lines",
	"hostmem.line_contention", "gpu.poll_loop_overhead", "gpu.poll_relaxed_saving"}

// refitSides returns the records of recs that RefitPerBlock reads: the
// fitted sides of its rules and the micro records.
func refitSides(recs []trace.Record) []trace.Record {
	var out []trace.Record
	for _, x := range recs {
		keep := x.Kind == trace.KindPointerChase || x.Kind == trace.KindFence || graphReplay(x) ||
			(x.Kind == trace.KindSMAccess && x.Op == "read_only_loop" && x.Target == "host" && x.Blocks == 1 && x.Threads == 32)
		for _, f := range Fits {
			for _, q := range f.Params {
				if slices.Contains(refitRules, q) && f.On(x) && slices.Contains(f.Kinds, x.Kind) {
					keep = true
				}
			}
		}
		if keep {
			out = append(out, x)
		}
	}
	return out
}

// RefitChip says whether a refitted parameter is the GPU's own (gpu.*,
// nccl.*) rather than its host's (hostmem.*, pcie.*): calibrate
// --per-block writes the GPU's only, as later fits (the barriers') were
// made on top of the host's (TestRefitH100).
func RefitChip(name string) bool {
	return strings.HasPrefix(name, "gpu.") || strings.HasPrefix(name, "nccl.")
}
