package validate

import (
	"maps"
	"slices"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// nccl_kernel: NCCL's own kernel on one GPU with no peer. A one-rank
// communicator's send to and receive from itself in a CUDA graph is the
// launch every kernel pays and NCCL's kernel's own cost
// (algos.NCCLKernelOwn); only calls of at most 4 KiB are modelled, where
// the copy itself is a few nanoseconds (larger ones copy with as many
// blocks as NCCL picks, which the model of this record does not say).
// The empty kernel node of the same run is a graph's kernel gap; the
// one-rank allreduce and the device-to-device copy are references of the
// capture, not NCCL kernels the model runs.
func init() { Register(trace.KindNCCLKernel, ncclKernelTwin) }

func ncclKernelTwin(r trace.Record) (*Twin, error) {
	t := &Twin{Group: "nccl_kernel " + r.NCCLOp + " " + string(r.Launch)}
	if r.Launch != trace.LaunchCUDAGraph {
		if r.Issuer == "native" && r.NCCLOp == "allreduce_one_rank" {
			// One NCCL call issued from C++ outside a group: the model
			// has no parameter of its own for it and charges a launch.
			t.Group += " native"
			t.Note = "one NCCL call issued from C++ outside a group, charged one launch (host.cuda_launch_issue)"
			t.Sim = hostPaced(RawLaunchIntervalUs)
			return t, nil
		}
		if r.Issuer == "native" && r.NCCLOp == "allreduce_group" && r.Mode == "queued" {
			// NCCL calls issued from C++ in groups, as nccl-tests -g G
			// issues one per GPU: what its eager pacing charges a GPU.
			t.Group += " native"
			t.Note = "one NCCL call of a group issued from C++, as nccl-tests' eager pacing charges it per GPU (host.nccl_group_call_issue)"
			t.Sim = hostPaced(GroupedNCCLCallUs)
			return t, nil
		}
		if r.Issuer == "native" {
			return nil, notModelled("eager %s from C++ (%s): no parameter models its host cost", r.NCCLOp, r.Mode)
		}
		return nil, notModelled("eager %s: the issuing host's cost through PyTorch and ctypes, not modelled", r.NCCLOp)
	}
	// NCCL's variables read as --opts reads them; of their settings only
	// graph mixing bears on NCCL's kernel alone
	opts, err := algos.TranslateNCCLEnv(r.NCCLEnv)
	if err != nil {
		return nil, notModelled("%v", err)
	}
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		if k != "graph_mixing" {
			return nil, notModelled("NCCL setting %s=%s on NCCL's kernel alone (arsim reads NCCL_GRAPH_MIXING_SUPPORT here)", k, opts[k])
		}
	}
	mixing := opts["graph_mixing"] != "off"
	switch r.NCCLOp {
	case "empty_kernel":
		t.Note, t.Sim = graphGap(r)
	case "self_sendrecv":
		if r.Bytes > 4<<10 {
			return nil, notModelled("self_sendrecv of %d B: NCCL's copy with the blocks it picks is not modelled (only ≤ 4 KiB)", r.Bytes)
		}
		t.Note = "NCCL's kernel on one GPU: launch + nccl.kernel_fixed"
		t.Sim = device(NCCLSelfKernelUs)
		if !mixing {
			t.Group += " graph_mixing=off"
			t.Note += " − nccl.graph_mixing_extra (NCCL_GRAPH_MIXING_SUPPORT=0)"
			t.Sim = device(func(top *topology.Topology) (float64, error) {
				us, err := NCCLSelfKernelUs(top)
				return us - algos.NCCLGraphMixingSaving(top.Params).Micros(), err
			})
		}
	default:
		return nil, notModelled("%s: a reference of the capture, not an NCCL kernel the model runs", r.NCCLOp)
	}
	return t, nil
}

// NCCLSelfKernelUs is NCCL's kernel per call on one GPU with no peer, in
// µs: the launch every kernel is charged and NCCL's kernel's own cost.
func NCCLSelfKernelUs(top *topology.Topology) (float64, error) {
	m, err := hw.New(top)
	if err != nil {
		return 0, err
	}
	return (m.LaunchCost(hw.Graph) + algos.NCCLKernelOwn(top.Params)).Micros(), nil
}
