package algos

import (
	"github.com/arsim/arsim/algos/ncclmodel"
	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
)

// NCCL's per-call costs and the constants its kernels are built with that
// the ring and tree planners share (nccl_protocol.go).

// ncclLevel maps a path class to NCCL's path type number (graph.h):
// NVL 1, PIX 4, PXB 5, PHB 8 (NODE is PHB in NCCL), SYS 9.
func ncclLevel(c topology.PathClass) int {
	switch c.Kind {
	case topology.PathNV:
		return 1
	case topology.PathPIX:
		return 4
	case topology.PathPXB:
		return 5
	case topology.PathPHB, topology.PathNODE:
		return 8
	}
	return 9
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// simpleUnroll is NCCL Simple's 16-byte loads in flight per thread and
// source: ncclCollUnroll() in src/include/device.h, 4 before sm80, 6 on
// sm12x (GeForce and RTX PRO Blackwell: "cudaArch / 100 == 12", NCCL 2.27
// to 2.30; 2.26 for sm120 alone), 8 on the others from sm80 on
// (ncclmodel.Release.SimpleUnroll: the release's rule).
func simpleUnroll(top *topology.Topology, r ncclmodel.Release) int {
	return r.SimpleUnroll(computeCapability(top))
}

// NCCLKernelOwn is what NCCL's kernel takes per call on one GPU beyond the
// launch every kernel is charged (gpu.launch_graph + gpu.kernel_prologue):
// nccl.kernel_fixed, measured as a one-rank communicator's send to and
// receive from itself in a CUDA graph less an empty kernel node of the
// same run, less the prologue already charged.
func NCCLKernelOwn(ps *topology.Params) sim.Duration {
	return max(0, sim.Micros(ps.Get("nccl.kernel_fixed")-ps.Get("gpu.kernel_prologue")))
}

// graphMixingOption is NCCL_GRAPH_MIXING_SUPPORT: on (NCCL's default), a
// call captured in a CUDA graph is ordered against the communicator's
// calls outside graphs; off leaves that out. On one H200 a one-rank call
// saves nccl.graph_mixing_extra with it off; on two H200s a call in a graph
// of 20 saves 3.1–3.3 µs over NVLink and 4.6–5.8 through host memory
// (testdata/h200x2-arsim/sequences_len.jsonl against
// sequences_len_nomix.jsonl), about what the per-call residual of NCCL's
// pick there, nccl.call_extra.ring.ll (fitted on graphs of 20 with it on),
// holds: off drops the residuals with nccl.graph_mixing_extra, and the
// sequences of 20, 61 and 122 with it off are then predicted within −7…+9 %
// with nothing fitted on them. The other algorithms' and protocols'
// residuals (5.2–13.6 µs) are dropped alike, untested. With it on the
// saving grows with the calls in the graph (8.4 µs over NVLink at 122):
// NCCLGraphLengthCost charges that beyond the graphs of 20
// (graphCallsOption). Eager calls are charged as with it on.
var graphMixingOption = OptionSpec{Name: "graph_mixing", Values: []string{"on", "off"}, Default: "on",
	Doc: "NCCL_GRAPH_MIXING_SUPPORT: off saves each call in a CUDA graph nccl.graph_mixing_extra and the two-GPU per-call residuals nccl.call_extra.* (measured for ring/LL on two H200s; eager calls unchanged)"}

// graphCallsFitted is the NCCL calls to a CUDA graph of the captures
// nccl.call_extra.* were fitted on (tools/capture's allreduce records,
// ops_per_graph 20).
const graphCallsFitted = 20

// graphCallsOption is how many NCCL calls one CUDA graph holds: with graph
// mixing support on, every call costs more the more calls share its graph
// (NCCLGraphLengthCost).
var graphCallsOption = OptionSpec{Name: "graph_calls", Int: IntRange{Min: 1, Max: 1 << 20, Why: "a million calls in one graph"},
	Doc: "NCCL calls captured in one CUDA graph (default 20, the captures' graphs; verify sets its pass's): with graph_mixing on each call costs nccl.graph_mixing_per_call more for every further call in the graph"}

// NCCLGraphLengthCost is what a call in a CUDA graph of calls NCCL calls
// costs beyond one in a graph of graphCallsFitted, with graph mixing
// support on: nccl.graph_mixing_per_call for every call more (less for
// fewer). Measured on two H200s (testdata/h200x2-arsim/sequences_len*.jsonl):
// a call of a graph of 10–244 over NVLink takes about 8.8 µs + 0.05 µs
// for every call in the graph, 6.5–7.0 µs at every length without the
// support.
func NCCLGraphLengthCost(ps *topology.Params, calls int) sim.Duration {
	return sim.Micros(ps.Get("nccl.graph_mixing_per_call") * float64(calls-graphCallsFitted))
}

// NCCLGraphMixingSaving is what NCCL's kernel takes less per call in a
// CUDA graph with NCCL_GRAPH_MIXING_SUPPORT=0: nccl.graph_mixing_extra,
// measured as a one-rank communicator's send to and receive from itself in
// CUDA graphs with NCCL's default against the same with the variable 0.
func NCCLGraphMixingSaving(ps *topology.Params) sim.Duration {
	return sim.Micros(ps.Get("nccl.graph_mixing_extra"))
}

// NCCLCallSetup is NCCL's device time per call before its first step
// beyond the launch: its kernel's own cost on one GPU (NCCLKernelOwn) and
// what two-GPU captures of the protocol need beyond that and the measured
// per-step mechanisms, nccl.call_extra.<algo>.<proto> (fitted; charged
// once per call, since a per-step charge would multiply at eight ranks
// what two ranks cannot tell apart from a fixed cost; per algorithm and
// protocol, as NCCL's own baseLat).
func NCCLCallSetup(ps *topology.Params, algo, proto string) sim.Duration {
	return NCCLKernelOwn(ps) + sim.Micros(ps.Get("nccl.call_extra."+algo+"."+proto))
}
