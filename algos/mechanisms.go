package algos

import (
	"slices"
	"strings"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/topology"
)

// Mechanism names a part of the machine's physics that a schedule's time
// rests on, in the terms package validate sorts its evidence by: which
// memory a schedule's flags and polled lines live in, which way SMs move
// data to and from pinned host memory, and which links carry data between
// GPUs. A prediction is as good as the model of the mechanisms it uses;
// validate.Evidence says how well arsim predicts each on captured
// hardware it was not fitted on.
type Mechanism string

const (
	// MechHostFlags: a flag (a signal and the polls that wait for it) in
	// pinned host memory.
	MechHostFlags Mechanism = "flags in pinned host memory"
	// MechGPUFlags: a flag in GPU memory (the waiter's own, or a peer's).
	MechGPUFlags Mechanism = "flags in GPU memory"
	// MechFlagAtomics: a flag set or polled by atomics (compare-and-swap
	// or add, Op.Atomic) rather than plain stores and loads.
	MechFlagAtomics Mechanism = "atomics on flags"
	// MechHostLines: a data-carried wait (NCCL's LL and LL128 lines,
	// Lamport sentinels) polling pinned host memory.
	MechHostLines Mechanism = "lines polled in pinned host memory"
	// MechGPULines: a data-carried wait polling GPU memory.
	MechGPULines Mechanism = "lines polled in GPU memory"
	// MechHostLoads: SMs load pinned host memory into the GPU.
	MechHostLoads Mechanism = "SM loads of pinned host memory"
	// MechHostStores: SMs store to pinned host memory.
	MechHostStores Mechanism = "SM stores to pinned host memory"
	// MechLoadsBesideStores: one GPU's SMs load pinned host memory while
	// the same GPU's SMs may be streaming stores to it (the two ops are not
	// ordered by the rank's program; the stores stream, hw.Kernel.Streams,
	// and queue towards the host: hw's hostqueue.go): loads share the
	// GPU's host link with its stores.
	MechLoadsBesideStores Mechanism = "SM loads of host memory beside the GPU's streaming stores to it"
	// MechLoopsBesideStores: the same with the stores paced: a protocol
	// loop's (NCCL's LL and LL128 lines), or with a rate cap or fences
	// among them.
	MechLoopsBesideStores Mechanism = "SM loads of host memory beside the GPU's paced stores to it (LL, LL128 lines, fenced stores)"
	// MechPeerPCIe: data or flags move between two GPUs over PCIe (P2P).
	MechPeerPCIe Mechanism = "GPU to GPU over PCIe"
	// MechPeerNVLink: data or flags move between two GPUs over NVLink.
	MechPeerNVLink Mechanism = "GPU to GPU over NVLink"
	// MechWhole: whole allreduces, the schedule's algorithm over the same
	// route measured as it runs (its variants, Whole), where the parts
	// above are measured one by one.
	MechWhole Mechanism = "allreduces measured whole"
	// MechPass: verify passes measured whole, many allreduces back to back
	// as a model's forward pass issues them (trace kind
	// allreduce_sequence: 122 in one CUDA graph, or eager calls), the
	// algorithm over its route (its variants, PassOf): what the verify
	// command simulates, where the records of MechWhole time one
	// allreduce at a time.
	MechPass Mechanism = "verify passes measured whole"
)

// Routes of Whole: how an allreduce's data travels.
const (
	RouteNVLink = "over NVLink"
	RoutePCIe   = "over PCIe"
	RouteHost   = "through host memory"
)

// Whole is MechWhole for one algorithm over one route (RouteNVLink,
// RoutePCIe, RouteHost).
func Whole(algo, route string) Mechanism {
	return MechWhole + wholeMark + Mechanism(algo+" "+route)
}

const wholeMark = ": "

// PassOf is the MechPass variant of a Whole variant (the same algorithm
// over the same route); "" for any other mechanism.
func PassOf(m Mechanism) Mechanism {
	if m.Family() != MechWhole || m == MechWhole {
		return ""
	}
	return MechPass + m[len(MechWhole):]
}

// routeOf is how a schedule that uses mechanisms used moves its data:
// over the link between its GPUs where it has one, else through host
// memory where its SMs load or store there; "" for neither.
func routeOf(used map[Mechanism]bool) string {
	switch {
	case used[MechPeerNVLink]:
		return RouteNVLink
	case used[MechPeerPCIe]:
		return RoutePCIe
	case used[MechHostLoads] || used[MechHostStores]:
		return RouteHost
	}
	return ""
}

// HostFlagsIn is MechHostFlags in one flag layout (hw.FlagLayout's
// names), whose barrier records are the closest evidence for a schedule's
// flags in host memory laid out so; MechHostFlags itself for "".
func HostFlagsIn(layout string) Mechanism {
	if layout == "" {
		return MechHostFlags
	}
	return MechHostFlags + layoutMark + Mechanism(layout)
}

const layoutMark = ", layout "

// Family is the mechanism a variant (HostFlagsIn, Whole, PassOf) belongs
// to; m itself for any other.
func (m Mechanism) Family() Mechanism {
	for _, mark := range []string{layoutMark, wholeMark} {
		if i := strings.Index(string(m), mark); i >= 0 {
			return m[:i]
		}
	}
	return m
}

// Mechanisms are the families of mechanisms, in the order every report
// uses; variants (HostFlagsIn, Whole) follow their family.
var Mechanisms = []Mechanism{MechHostFlags, MechGPUFlags, MechFlagAtomics, MechHostLines, MechGPULines,
	MechHostLoads, MechHostStores, MechLoadsBesideStores, MechLoopsBesideStores, MechPeerPCIe, MechPeerNVLink, MechWhole, MechPass}

// maxBesideBits bounds the bits (ops × the rank's host loads and stores)
// MechanismsOf spends working out whether a rank's host loads and stores
// are ordered; a larger program that both loads and stores host memory is
// taken to do so side by side.
const maxBesideBits = 1 << 24

// MechanismsOf returns the mechanisms s uses on top, in Mechanisms' order:
// its flags' (in host memory, by layout), its data-carried polls', its
// SM loads' and stores' of host memory and whether they run side by side,
// the links between its GPUs, and its algorithm measured whole over its
// route (Whole).
func MechanismsOf(s *Schedule, top *topology.Topology) []Mechanism {
	used := map[Mechanism]bool{}
	peerClass := map[[2]int]Mechanism{}
	peer := func(a, b int) {
		if a == b || a < 0 || b < 0 || a >= top.NumGPUs() || b >= top.NumGPUs() {
			return
		}
		k := [2]int{min(a, b), max(a, b)}
		m, ok := peerClass[k]
		if !ok {
			m = MechPeerPCIe
			if c, err := top.PathClass(top.GPUs()[a], top.GPUs()[b]); err == nil && c.Kind == topology.PathNV {
				m = MechPeerNVLink
			}
			peerClass[k] = m
		}
		used[m] = true
	}
	for r, prog := range s.Programs {
		var loads, stores []int
		for i := range prog {
			op := &prog[i]
			switch op.Kind {
			case Signal, Wait:
				at := op.Flag.At
				if op.Atomic {
					used[MechFlagAtomics] = true
				}
				switch {
				case op.Kind == Wait && op.Src.Len > 0 && op.Src.Buf.At.Host:
					used[MechHostLines] = true
				case op.Kind == Wait && op.Src.Len > 0:
					used[MechGPULines] = true
					peer(r, op.Src.Buf.At.Rank)
				case at.Host:
					// Where flags queue at the memory, their layout
					// matters (hw's host flag model); in GPU memory it
					// does not.
					used[HostFlagsIn(hw.FlagLayout(op.Flag.Sector != "", int(op.Flag.Apart), int(op.Flag.BlockStride)))] = true
				default:
					used[MechGPUFlags] = true
					peer(r, at.Rank)
				}
			case Read, Write, Copy, Reduce:
				src, dst := op.Src.Buf.At, op.Dst.Buf.At
				if k := op.Kernel; k.Loop == hw.LoopLL || k.Loop == hw.LoopLL128 {
					// NCCL's LL and LL128 lines carry their flags: the
					// receiving loop polls them where they lie.
					if k.LoopAt.Host {
						used[MechHostLines] = true
					} else {
						used[MechGPULines] = true
					}
				}
				if src.Host && !dst.Host {
					used[MechHostLoads] = true
					loads = append(loads, i)
				}
				if dst.Host && !src.Host {
					used[MechHostStores] = true
					stores = append(stores, i)
				}
				if !src.Host {
					peer(r, src.Rank)
				}
				if !dst.Host {
					peer(r, dst.Rank)
				}
			}
		}
		if len(loads) > 0 && len(stores) > 0 {
			streaming, loops := unordered(prog, loads, stores)
			used[MechLoadsBesideStores] = used[MechLoadsBesideStores] || streaming
			used[MechLoopsBesideStores] = used[MechLoopsBesideStores] || loops
		}
	}
	if route := routeOf(used); route != "" {
		name := s.Algo
		if s.Runs != "" {
			name = s.Runs // the algorithm whose measurements it shares
		}
		if s.Moves != "" {
			name += " (" + s.Moves + ")" // measured apart from its usual way
		}
		used[Whole(name, route)] = true
	}
	return inOrder(used)
}

// RanMechanisms is MechanismsOf(s, top) as a run of s timed it (res, from
// Run): MechLoadsBesideStores only where some SM load of host memory took
// its rate beside the GPU's streaming stores (Result.LoadedBesideStreams).
// A program that leaves a rank's host loads and streaming stores
// unordered may still never run them at once, and then its timing does
// not rest on that model. The other mechanisms are the ops' own.
func RanMechanisms(s *Schedule, top *topology.Topology, res *Result) []Mechanism {
	ms := MechanismsOf(s, top)
	if res == nil || res.LoadedBesideStreams {
		return ms
	}
	return slices.DeleteFunc(ms, func(m Mechanism) bool { return m == MechLoadsBesideStores })
}

// inOrder lists the mechanisms of used in Mechanisms' order, each family
// followed by its variants by name.
func inOrder(used map[Mechanism]bool) []Mechanism {
	var out []Mechanism
	for _, m := range Mechanisms {
		if used[m] {
			out = append(out, m)
		}
		var variants []Mechanism
		for v := range used {
			if v != m && v.Family() == m {
				variants = append(variants, v)
			}
		}
		slices.Sort(variants)
		out = append(out, variants...)
	}
	return out
}

// unordered reports whether some op of loads and some op of stores are
// not ordered by the program's dependencies (neither is an ancestor of
// the other), so the rank may run them at once: streaming when such a
// store streams (hw.Kernel.Streams), loops when it is a protocol loop's or
// otherwise paced. It follows, for each op, which of those ops it waits for,
// directly or through others.
func unordered(prog []Op, loads, stores []int) (streaming, loops bool) {
	marked := append(append([]int(nil), loads...), stores...)
	k := len(marked)
	if len(prog)*k > maxBesideBits {
		for _, s := range stores {
			streaming = streaming || prog[s].Kernel.Streams()
			loops = loops || !prog[s].Kernel.Streams()
		}
		return streaming, loops
	}
	bit := make(map[int]int, k) // op index → its bit
	for b, i := range marked {
		bit[i] = b
	}
	words := (k + 63) / 64
	anc := make([]uint64, len(prog)*words) // anc[i*words:]: the marked ops i waits for
	for i := range prog {
		row := anc[i*words : (i+1)*words]
		for _, d := range prog[i].After {
			if d < 0 || d >= i {
				continue
			}
			if b, ok := bit[d]; ok {
				row[b/64] |= 1 << (b % 64)
			}
			for w, x := range anc[d*words : (d+1)*words] {
				row[w] |= x
			}
		}
	}
	waits := func(i, b int) bool { return anc[i*words+b/64]&(1<<(b%64)) != 0 } // op i waits for marked op b
	for bl, l := range loads {
		for bs, s := range stores {
			if !waits(s, bl) && !waits(l, len(loads)+bs) {
				if prog[s].Kernel.Streams() {
					streaming = true
				} else {
					loops = true
				}
			}
		}
	}
	return streaming, loops
}

// UnionMechanisms merges lists of mechanisms into one in Mechanisms'
// order.
func UnionMechanisms(lists ...[]Mechanism) []Mechanism {
	used := map[Mechanism]bool{}
	for _, l := range lists {
		for _, m := range l {
			used[m] = true
		}
	}
	return inOrder(used)
}
