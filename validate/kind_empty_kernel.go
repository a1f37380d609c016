package validate

import (
	"strings"

	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// empty_kernel: the gap per kernel of a replayed CUDA graph (a device
// cost), or eager launches, which are host costs: one launch between two
// events (gpu.launch_eager) or launches back to back through the CUDA
// driver API (host.cuda_launch_issue).
func init() { Register(trace.KindEmptyKernel, emptyKernelTwin) }

// graphGapNote says what a graph's gap per kernel is modelled by, and what
// the model leaves out: a process's gap steps up once it has made about
// five graphs (testdata/h200x1-arsim/graph_gap_state.jsonl);
// gpu.launch_graph is the fresh process's, gpu.launch_graph_settled the
// gap after the step, taken where the record's state says the process is
// past it (settledProcess).
const graphGapNote = "per kernel of a replayed CUDA graph (gpu.launch_graph, a fresh process's; " +
	"after about five graphs a process's gap steps up, 0.51–0.55 → 0.67–0.81 µs on the H200s: taken only where the record's state says the process is past it)"

// settledGapNote is graphGapNote for a record measured in a settled
// process.
const settledGapNote = "per kernel of a replayed CUDA graph in a process past the step of its graph gap " +
	"(gpu.launch_graph_settled; the record's state: the end of a capture phase that replayed graphs, or the last of graph_gap_state's sequence)"

// settledProcess reports whether a graph-gap record says it was measured
// in a process whose gap has stepped up: at the end of a capture phase
// that replayed graphs (tools/capture's states "…: end") or after the whole
// sequence of graph_gap_state.jsonl ("three long kernels run"; every one
// of its processes had stepped by its sixth measurement). Other states,
// and none, are taken as a fresh process's: where in a process the step
// comes (the fourth to sixth graph made) no state tells.
func settledProcess(r trace.Record) bool {
	return strings.HasSuffix(r.State, ": end") || r.State == "three long kernels run"
}

// graphGap returns the twin's note and value for a graph-gap record.
func graphGap(r trace.Record) (string, func(*topology.Topology) (float64, bool, error)) {
	if settledProcess(r) {
		return settledGapNote, device(SettledGraphKernelGapUs)
	}
	return graphGapNote, device(GraphKernelGapUs)
}

func emptyKernelTwin(r trace.Record) (*Twin, error) {
	t := &Twin{Group: "empty_kernel"}
	if r.Launch == trace.LaunchCUDAGraph {
		t.Group += " cudagraph"
		t.Note, t.Sim = graphGap(r)
		return t, nil
	}
	if r.Mode == "back_to_back" || r.Mode == "queued" {
		// tools/capture launches through CuPy, not PyTorch, or from C++
		// (issuer native).
		t.Group += " driver API"
		t.Note = "back-to-back eager launches through the CUDA driver API (host.cuda_launch_issue)"
		if r.Issuer == "native" {
			t.Group += " native"
			t.Note = "eager launches issued from C++ (host.cuda_launch_issue, measured through CuPy)"
		}
		if r.Mode == "back_to_back" && r.PrefillUs > 0 {
			return nil, notModelled("eager launches queued behind a device-side spin measure the device gap, not the host; not modelled")
		}
		t.Sim = hostPaced(RawLaunchIntervalUs)
		return t, nil
	}
	switch r.Mode {
	case "", "single":
		// One launch between two events (the shared set's method, and
		// tools/capture's mode single).
		t.Note = "one eager launch between two events (gpu.launch_eager)"
	default:
		t.Note = "capture mode " + r.Mode + "; modelled as one eager launch (gpu.launch_eager)"
	}
	t.Sim = hostPaced(EmptyKernelUs)
	return t, nil
}
