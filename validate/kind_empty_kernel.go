package validate

import (
	"github.com/arsim/arsim/trace"
)

// empty_kernel: the gap per kernel of a replayed CUDA graph (a device
// cost), or eager launches, which are host costs: one launch between two
// events (gpu.launch_eager) or launches back to back through the CUDA
// driver API (host.cuda_launch_issue).
func init() { Register(trace.KindEmptyKernel, emptyKernelTwin) }

// graphGapNote says what a graph's gap per kernel is modelled by, and what
// the model leaves out: a process's gap steps up once it has made about
// five graphs (testdata/h200x1-arsim/graph_gap_state.jsonl), and
// gpu.launch_graph is the fresh process's.
const graphGapNote = "per kernel of a replayed CUDA graph (gpu.launch_graph, a fresh process's; " +
	"after about five graphs a process's gap steps up, 0.51–0.55 → 0.67–0.81 µs on the H200s, not modelled)"

func emptyKernelTwin(r trace.Record) (*Twin, error) {
	t := &Twin{Group: "empty_kernel"}
	if r.Launch == trace.LaunchCUDAGraph {
		t.Group += " cudagraph"
		t.Note = graphGapNote
		t.Sim = device(GraphKernelGapUs)
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
