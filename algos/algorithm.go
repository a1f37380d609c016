package algos

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/topology"
)

// DType is an element type.
type DType string

// Element types.
const (
	BF16 DType = "bf16"
	FP16 DType = "fp16"
	FP32 DType = "fp32"
)

// Size returns the element size in bytes, or 0 for an unknown type.
func (d DType) Size() int64 {
	switch d {
	case BF16, FP16:
		return 2
	case FP32:
		return 4
	}
	return 0
}

// OptionSpec documents one option an algorithm accepts.
type OptionSpec struct {
	Name   string
	Values []string // allowed values; nil means an integer within Int
	// Int bounds an integer option (Values nil); every one has a limit.
	Int     IntRange
	Default string // "" means chosen by the algorithm
	Doc     string
}

// check reports what is wrong with value v of option o on top (nil: the
// option's static range), or nil.
func (o OptionSpec) check(v string, top *topology.Topology) error {
	if o.Values == nil {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("option %s=%q must be a whole number", o.Name, v)
		}
		if err := o.Int.check(n, top); err != nil {
			return fmt.Errorf("option %s=%s: %w", o.Name, v, err)
		}
		return nil
	}
	if !slices.Contains(o.Values, v) {
		return fmt.Errorf("option %s=%q is not one of %s", o.Name, v, strings.Join(o.Values, ", "))
	}
	return nil
}

// Request is what an algorithm plans for.
type Request struct {
	Top    *topology.Topology
	Ranks  int // GPUs 0…Ranks−1 take part
	Bytes  int64
	DType  DType
	Launch hw.LaunchMode
	// Opts are algorithm options by name (see Algorithm.Options):
	// proto=ll, channels=2, transport=shm, blocks=6 …
	Opts map[string]string
}

// Algorithm plans allreduce schedules.
type Algorithm interface {
	Name() string
	// Describe is one line for `arsim algos`.
	Describe() string
	// Options lists the options the algorithm accepts beyond the common
	// ones (dtype and launch mode live in Request).
	Options() []OptionSpec
	// Plan returns the schedule for req, or an error naming what is wrong.
	Plan(req Request) (*Schedule, error)
	// WorldSizes says whether the algorithm allows a world of n ranks: nil,
	// or an error naming the sizes it takes (embed anyRanks for every size).
	WorldSizes(n int) error
}

var registry = map[string]Algorithm{}

// Register adds an algorithm; it panics on a duplicate name (a bug caught
// at init).
func Register(a Algorithm) {
	if _, dup := registry[a.Name()]; dup {
		panic("algos: algorithm " + a.Name() + " registered twice")
	}
	registry[a.Name()] = a
}

// Names returns the registered algorithm names, sorted.
func Names() []string {
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Lookup returns the algorithm called name — a registered one, or one a
// loader makes from a prefixed name such as file:ring.xml (RegisterLoader)
// — or an error listing the valid ones.
func Lookup(name string) (Algorithm, error) {
	if a, ok := registry[name]; ok {
		return a, nil
	}
	if a, ok, err := load(name); ok {
		return a, err
	}
	more := ""
	if ps := LoaderPrefixes(); len(ps) > 0 {
		more = "; or " + strings.Join(ps, "…, ") + "…"
	}
	return nil, fmt.Errorf("algos: unknown algorithm %q (valid: %s%s)", name, strings.Join(Names(), ", "), more)
}

// Validate checks the parts of a request every algorithm shares, and the
// options against a's list.
func Validate(a Algorithm, req Request) error {
	name := a.Name()
	if req.Top == nil {
		return fmt.Errorf("algos: %s: no topology", name)
	}
	if req.Ranks < 2 {
		return fmt.Errorf("algos: %s: needs at least 2 ranks, got %d", name, req.Ranks)
	}
	if req.Ranks > req.Top.NumGPUs() {
		return fmt.Errorf("algos: %s: %d ranks but topology %s has %d GPUs", name, req.Ranks, req.Top.Name, req.Top.NumGPUs())
	}
	if err := a.WorldSizes(req.Ranks); err != nil {
		return fmt.Errorf("algos: %s: %w", name, err)
	}
	es := req.DType.Size()
	if es == 0 {
		return fmt.Errorf("algos: %s: dtype %q is not one of bf16, fp16, fp32", name, req.DType)
	}
	if req.Bytes <= 0 {
		return fmt.Errorf("algos: %s: message size must be > 0 bytes, got %d", name, req.Bytes)
	}
	if req.Bytes > MaxBytes {
		return fmt.Errorf("algos: %s: message size %d B is above the limit %d B (%s)", name, req.Bytes, int64(MaxBytes), bytesRange.Why)
	}
	if req.Bytes%es != 0 {
		return fmt.Errorf("algos: %s: %d bytes is not a whole number of %s elements (%d B each)", name, req.Bytes, req.DType, es)
	}
	specs := map[string]OptionSpec{}
	for _, o := range a.Options() {
		specs[o.Name] = o
	}
	for _, k := range sortedKeys(req.Opts) {
		v := req.Opts[k]
		o, ok := specs[k]
		if !ok {
			var names []string
			for _, s := range a.Options() {
				names = append(names, s.Name)
			}
			if len(names) == 0 {
				return fmt.Errorf("algos: %s takes no option %q (it has none)", name, k)
			}
			return fmt.Errorf("algos: %s has no option %q (options: %s)", name, k, strings.Join(names, ", "))
		}
		if err := o.check(v, req.Top); err != nil {
			return fmt.Errorf("algos: %s: %w", name, err)
		}
	}
	return nil
}

// ValidateOptions checks options given to several algorithms at once (a
// command line's --opts) before anything is planned: every key must be an
// option of at least one of the algorithms, and its value valid for each
// that takes it, on top (nil: against the static limits only). Each
// algorithm is then given only the options it takes (OptionsFor).
func ValidateOptions(names []string, top *topology.Topology, opts map[string]string) error {
	if len(opts) == 0 {
		return nil
	}
	specs := map[string][]OptionSpec{}
	owners := map[string][]string{}
	for _, n := range names {
		a, err := Lookup(n)
		if err != nil {
			return err
		}
		for _, o := range a.Options() {
			specs[o.Name] = append(specs[o.Name], o)
			owners[o.Name] = append(owners[o.Name], n)
		}
	}
	run := fmt.Sprintf("the %d algorithms run", len(names))
	if len(names) <= 4 {
		run = "the algorithms run (" + strings.Join(names, ", ") + ")"
	}
	for _, k := range sortedKeys(opts) {
		if len(specs[k]) == 0 {
			known := sortedKeys(specs)
			if len(known) == 0 {
				return fmt.Errorf("algos: option %q: none of %s takes options", k, run)
			}
			return fmt.Errorf("algos: option %q is taken by none of %s; their options: %s", k, run, strings.Join(known, ", "))
		}
		for i, o := range specs[k] {
			if err := o.check(opts[k], top); err != nil {
				return fmt.Errorf("algos: %s: %w", owners[k][i], err)
			}
		}
	}
	return nil
}

// OptionsFor returns the options of opts that algorithm name takes (nil
// for none, or an unknown name).
func OptionsFor(name string, opts map[string]string) map[string]string {
	a, err := Lookup(name)
	if err != nil || len(opts) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, o := range a.Options() {
		if v, ok := opts[o.Name]; ok {
			out[o.Name] = v
		}
	}
	return out
}

// Opt returns option name's value or def.
func (r Request) Opt(name, def string) string {
	if v, ok := r.Opts[name]; ok {
		return v
	}
	return def
}

// IntOpt returns option name as an integer, or def (Validate has checked it).
func (r Request) IntOpt(name string, def int) int {
	if v, ok := r.Opts[name]; ok {
		n, err := strconv.Atoi(v)
		if err == nil {
			return n
		}
	}
	return def
}

// Plan validates req for the named algorithm and plans it.
func Plan(name string, req Request) (*Schedule, error) {
	a, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	if err := Validate(a, req); err != nil {
		return nil, err
	}
	return a.Plan(req)
}

// anyRanks allows every world size ≥ 2.
type anyRanks struct{}

func (anyRanks) WorldSizes(int) error { return nil }

func sortedKeys[V any](m map[string]V) []string {
	k := make([]string, 0, len(m))
	for s := range m {
		k = append(k, s)
	}
	sort.Strings(k)
	return k
}

// barrierOption lets a pull kernel use PyTorch symmetric memory's atomic
// signals instead of vLLM's posted flag stores.
var barrierOption = OptionSpec{Name: "barrier", Values: []string{"flag", "atomic"}, Default: "flag",
	Doc: "flag: vLLM's posted flag stores; atomic: PyTorch symmetric memory's compare-and-swap signals"}

// barrierFunc returns the builder's barrier of the kind req asks for.
func barrierFunc(b *Builder, req Request) func(string, int64, hw.Kernel, string, [][]int) [][]int {
	if req.Opt("barrier", "flag") == "atomic" {
		return b.AtomicBarrier
	}
	return b.Barrier
}

// pullKernel is the vLLM/SGLang custom-allreduce launch configuration:
// 512 threads, blocks = min(36, ceil(packs/512)) with 16-byte packs; the
// round trips its compiled loop waits an iteration (load_waits), when
// given.
func pullKernel(bytes int64, req Request) (hw.Kernel, error) {
	threads := req.IntOpt("threads", 512)
	packs := (bytes + 15) / 16
	blocks := int(min(36, (packs+int64(threads)-1)/int64(threads)))
	blocks = req.IntOpt("blocks", max(blocks, 1))
	k := hw.Kernel{Blocks: blocks, Threads: threads, ReduceLoop: true}
	runtime := req.Opt("rank_loop", "unrolled") == "runtime"
	if runtime {
		k.Loop, k.Ranks = hw.LoopRanks, req.Ranks
	}
	if _, ok := req.Opts["load_waits"]; ok {
		w := req.IntOpt("load_waits", 1)
		switch {
		case runtime:
			return k, fmt.Errorf("option load_waits=%d counts the waits of a loop over ranks unrolled when compiled; with rank_loop=runtime each load is waited in turn", w)
		case w > req.Ranks:
			return k, fmt.Errorf("option load_waits=%d: the pull loads one pack from each of the %d ranks' buffers an iteration, so it waits at most %d times", w, req.Ranks, req.Ranks)
		}
		k.LoadWaits = w
	}
	return k, nil
}

// pullBuffers sets how many buffers an iteration of pull kernel k loads a
// pack from (hw.Kernel.Ranks) and refuses a load_waits the loop cannot
// have: at most one wait per buffer.
func pullBuffers(k hw.Kernel, buffers int, what string) (hw.Kernel, error) {
	k.Ranks = buffers
	if k.LoadWaits > buffers {
		return k, fmt.Errorf("option load_waits=%d: %s loads one pack from each of %d buffers an iteration, so it waits at most %d times", k.LoadWaits, what, buffers, buffers)
	}
	return k, nil
}

// loadWaitsOption: how many round trips a pull kernel's compiled loop
// waits for its loads each iteration (hw.Kernel.LoadWaits), as `arsim
// sass` reads it from the kernel's SASS.
var loadWaitsOption = OptionSpec{Name: "load_waits", Int: IntRange{Min: 1, Max: MaxCheckRanks,
	Why: "one wait per rank's buffer at most, and at most 64 ranks", PerMachine: func(top *topology.Topology) (int, string) {
		return top.NumGPUs(), fmt.Sprintf("one wait per rank's buffer at most: %s has %d GPUs", top.Name, top.NumGPUs())
	}, MaxName: "GPUs"}, Default: "1",
	Doc: "round trips the pull loop waits for its loads each iteration, as `arsim sass` reads them from the kernel's SASS (1: every load in flight at once, vLLM's 1stage)"}

// rankLoopOption: whether a pull kernel's loop over ranks is unrolled at
// compile time (vLLM's packed_reduce<ngpus>, PyTorch's kernels: every
// peer's load in flight at once) or bounded at run time (one load after
// another, as arsim's capture kernels in tools/capture do).
var rankLoopOption = OptionSpec{Name: "rank_loop", Values: []string{"unrolled", "runtime"}, Default: "unrolled",
	Doc: "unrolled: the loop over ranks is compiled for the world size (loads in flight together); runtime: bounded at run time (loads one after another)"}

// fence adds a system-scope fence on rank r after the listed ops, for
// stores that went to memory at, and returns its index: those stores are
// visible system-wide before anything after it, as release.sys flags need.
// When every listed op is a store of rank r (a Write) to another memory,
// the storing threads fence right after issuing them: the writes become
// Fenced (the fence counts from their issue, Op.Fenced) and the fence,
// Fenced too, only joins them. The fence runs in the kernel of the first
// listed op: each of its blocks fences while the others keep loads in
// flight (hw.Machine.FenceBesidePolls).
func fence(b *Builder, r int, at hw.Mem, after ...int) int {
	return AddFence(b, r, at, after...)
}

// AddFence is fence for planners outside this package (design, msccl).
func AddFence(b *Builder, r int, at hw.Mem, after ...int) int {
	prog := b.s.Programs[r]
	stores := len(after) > 0
	for _, i := range after {
		if i < 0 || i >= len(prog) || prog[i].Kind != Write || prog[i].Src.Len == 0 || prog[i].Dst.Buf.At == hw.GPUMem(r) {
			stores = false
			break
		}
	}
	if !stores {
		var k hw.Kernel
		if len(after) > 0 && after[0] >= 0 && after[0] < len(prog) {
			k = prog[after[0]].Kernel
		}
		return b.Add(r, Op{Kind: Fence, Kernel: k, Src: fenceLoads(prog, r, after), Dst: Range{Buf: Buf{At: at}}, Label: "system-scope fence"}, after...)
	}
	// The stores pay for the fence (Fenced); what it waits beside the
	// other blocks' loads of a peer that the kernel pulled from before
	// storing, the fence itself (host memory's loads the stores count).
	var loads Range
	for _, i := range after {
		prog[i].Fenced = true
		if loads.Buf.Name == "" && !at.Host {
			if l := fenceLoads(prog, r, prog[i].After); !l.Buf.At.Host {
				loads = l
			}
		}
	}
	return b.Add(r, Op{Kind: Fence, Fenced: true, Kernel: prog[after[0]].Kernel, Src: loads, Dst: Range{Buf: Buf{At: at}}, Label: "system-scope fence (after the stores' issue)"}, after...)
}

// FenceLoadsName is the buffer name of a Fence's Src when it names the
// memory outside the rank's GPU that the fencing kernel loads (fenceLoads):
// its other blocks keep loads of it in flight while each block fences
// (hw.Machine.FenceBesidePolls). A Fence without it counts the loads of
// its own memory where that is host memory, none otherwise.
const FenceLoadsName = "loads beside the fence"

// fenceLoads is the Src of a fence of rank r after the listed ops: the
// source of the first of them that loads memory outside the rank's GPU (a
// pull from a peer or from host memory), named FenceLoadsName, or the
// loads a fence among them waited for (a second fence right after the
// first, as a __threadfence_system before a release store: the other
// blocks still load); none if none does.
func fenceLoads(prog []Op, r int, after []int) Range {
	for _, i := range after {
		if i < 0 || i >= len(prog) {
			continue
		}
		op := &prog[i]
		switch op.Kind {
		case Fence:
			if op.Src.Buf.Name == FenceLoadsName {
				return op.Src
			}
		case Read, Copy, Reduce:
			if op.Src.Len > 0 && !op.Src.IsSentinel() && op.Src.Buf.At != hw.GPUMem(r) {
				return Range{Buf: Buf{At: op.Src.Buf.At, Name: FenceLoadsName}}
			}
		}
	}
	return Range{}
}
