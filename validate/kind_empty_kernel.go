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
// gap after the step, taken where the record's state or its capture's
// run log says the process is past it (settledProcess).
const graphGapNote = "per kernel of a replayed CUDA graph (gpu.launch_graph, a fresh process's; " +
	"after about five graphs a process's gap steps up, 0.51–0.55 → 0.67–0.81 µs on the H200s: taken where the record's state, or its capture's run log, says the process is past it)"

// settledGapNote is graphGapNote for a record measured in a settled
// process.
const settledGapNote = "per kernel of a replayed CUDA graph in a process past the step of its graph gap " +
	"(gpu.launch_graph_settled; the record's state: the end of a capture phase that replayed graphs, or after long kernels; " +
	"or its capture's run log: micro2 after the perblock or sm phase in one process)"

// settledProcess reports whether a graph-gap record was measured in a
// process whose gap has stepped up: its state says so, at the end of a
// capture phase that replayed graphs (tools/capture's states "…: end") or
// after the whole sequence of graph_gap_state.jsonl ("three long kernels
// run"; every one of its processes had stepped by its sixth
// measurement); or it is micro2's (the graph gaps that phase writes
// without a state) and its capture's run log says the process ran
// micro2 after a phase that launches long kernels of its own
// (micro2AfterKernels). Other states, and none, are taken as a fresh
// process's: where in a process the step comes (the fourth to sixth
// graph made) no state tells. Later captures write micro2's state
// themselves ("micro2 after phases: system,perblock"): the same rule.
func settledProcess(r trace.Record) bool {
	if before, ok := strings.CutPrefix(r.State, micro2StatePrefix); ok {
		return trace.PhasesAfter(append(strings.Split(before, ","), "micro2"), "micro2", kernelPhases...)
	}
	return strings.HasSuffix(r.State, ": end") || r.State == "three long kernels run" || afterCalibration(r.State) ||
		micro2AfterKernels(r)
}

// micro2StatePrefix begins the state tools/capture's micro2 writes on its
// graph gaps when capture.py all runs it: the phases its process ran
// before it, comma separated ("none" for none).
const micro2StatePrefix = "micro2 after phases: "

// kernelPhases are the capture phases that launch long kernels of their
// own, after which a process's graph gap has stepped (micro2AfterKernels).
var kernelPhases = []string{"perblock", "sm"}

// afterCalibration reports whether a state of micro2's launch_state part
// comes after the per-block module's three clock calibration kernels of
// 20 M cycles (tools/capture micro2.py, LAUNCH_STATE_PERBLOCK: set up,
// then those kernels, then the calibration, a part, freed): the same
// three long kernels as graph_gap_state's "three long kernels run".
func afterCalibration(state string) bool {
	return strings.HasPrefix(state, "per-block calibration kernels, ") || state == "per-block clock calibrated" ||
		strings.HasPrefix(state, "per-block part ") || state == "per-block freed"
}

// micro2AfterKernels reports whether a graph-gap record is micro2's
// (tools/capture micro2.py: launch_graph's empty kernels of a replayed
// graph with no state, the only such records a phase writes, and
// launch_state's, which say what the process holds in device_held_bytes;
// their states name what that part did, not what ran before it) and every
// micro2 phase of its run started, in the same process, after the
// perblock or sm phase. Both launch long kernels before any graph of
// micro2's: perblock calibrates the SM clock with three kernels of 20 M
// cycles, after which a process's graph gap has stepped
// (launch_state.jsonl, state "per-block clock calibrated": 0.70–0.72 µs
// against 0.53 fresh), the state gpu.launch_graph_settled was fitted in;
// sm launches 2,000 empty kernels back to back and sweeps of
// milliseconds. The run log (trace.Record.RunPhases) says the order; a
// trace without one is taken as fresh.
func micro2AfterKernels(r trace.Record) bool {
	_, launchState := r.Extra["device_held_bytes"]
	return r.Kind == trace.KindEmptyKernel && r.Mode == "graph_replay" && (r.State == "" || launchState) &&
		trace.PhasesAfter(r.RunPhases, "micro2", kernelPhases...)
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
