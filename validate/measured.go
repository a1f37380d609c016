package validate

import (
	"fmt"
	"strings"

	"github.com/arsim/arsim/trace"
)

// Measurements in the formats users already have, as allreduce records:
// nccl-tests output (every row of all_reduce_perf, out-of-place and
// in-place) and PyTorch profiler traces (every NCCL allreduce kernel).
// The records have no system id: the machine is named by the caller
// (Options.Machine or Options.Preset).

// ncclTestsDtypes maps nccl-tests' type names onto record dtypes.
var ncclTestsDtypes = map[string]string{
	"float": "fp32", "half": "fp16", "bfloat16": "bf16", "double": "fp64",
	"int8": "int8", "uint8": "uint8", "int32": "int32", "uint32": "uint32", "int64": "int64", "uint64": "uint64",
	"f8e4m3": "fp8", "f8e5m2": "fp8", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8",
}

// NCCLTestsRecords maps every row of an all_reduce_perf run onto two
// allreduce records, out-of-place then in-place, on the row's line: NCCL
// (algorithm, protocol and transport by NCCL's own rules, under the NCCL
// variables env, which the output does not print), launched eagerly
// unless the header says graph: 1 or more, one host thread issuing for
// NGpus GPUs (APINCCLTests), the world size from the rank lines. Another
// collective is an error naming it; so is a run without rank lines.
func NCCLTestsRecords(run trace.NCCLTestsRun, env map[string]string) ([]trace.Record, error) {
	if run.Collective != "" && run.Collective != "all_reduce" {
		return nil, fmt.Errorf("validate: nccl-tests %s_perf output: arsim simulates allreduce only (all_reduce_perf)", run.Collective)
	}
	world := len(run.Ranks)
	if world == 0 {
		return nil, fmt.Errorf("validate: nccl-tests output without \"#  Rank …\" lines: the world size is unknown")
	}
	launch := trace.LaunchEager
	if run.Graph > 0 {
		launch = trace.LaunchCUDAGraph
	}
	perThread := run.NGpus
	if perThread <= 0 {
		perThread = 1
	}
	var out []trace.Record
	for _, row := range run.Rows {
		dt, ok := ncclTestsDtypes[strings.ToLower(row.Type)]
		if !ok {
			dt = strings.ToLower(row.Type)
		}
		for _, p := range []struct {
			name string
			t    trace.NCCLTestsTiming
		}{{"out-of-place", row.OutOfPlace}, {"in-place", row.InPlace}} {
			out = append(out, trace.Record{
				Line: row.Line, Kind: trace.KindAllreduce, Clock: trace.ClockHost, Launch: launch,
				Us: p.t.TimeUs, Impl: trace.ImplNCCL, Algo: "auto", Proto: "auto", Transport: trace.TransportP2P,
				World: world, Dtype: dt, Bytes: row.Bytes, NCCLEnv: env, API: APINCCLTests, GPUs: perThread,
				Note: p.name,
			})
		}
	}
	return out, nil
}

// kinetoDtypes maps NCCL's short type names onto record dtypes.
var kinetoDtypes = map[string]string{"bf16": "bf16", "f16": "fp16", "f32": "fp32", "f64": "fp64"}

// KinetoRecords maps every NCCL allreduce kernel of a profiler trace whose
// size was found onto an allreduce record timed by the kernel's duration
// (APIKernel), world size from its process group. Kernels of other
// collectives, and allreduces without a size or group size, are returned
// as skipped with the reason, each on its line.
func KinetoRecords(tr trace.KinetoTrace, file string, env map[string]string) ([]trace.Record, []Skipped) {
	var recs []trace.Record
	var skipped []Skipped
	for _, c := range tr.Collectives {
		sk := func(format string, a ...any) {
			reason := fmt.Sprintf(format, a...)
			skipped = append(skipped, Skipped{File: file, Line: c.Line, Kind: "kernel", Reason: reason, Err: notModelled("%s", reason)})
		}
		switch {
		case c.Name != "allreduce":
			sk("%s kernel: arsim simulates allreduce only", c.Name)
			continue
		case c.Bytes <= 0:
			sk("allreduce kernel without a size (no record_param_comms found for it)")
			continue
		case c.GroupSize < 2:
			sk("allreduce kernel without a group size of 2 or more")
			continue
		}
		dt, ok := kinetoDtypes[c.Dtype]
		if !ok {
			dt = c.Dtype
		}
		recs = append(recs, trace.Record{
			Line: c.Line, Kind: trace.KindAllreduce, Clock: trace.ClockDeviceEvents, Launch: trace.LaunchEager,
			Us: c.DurationUs, Impl: trace.ImplNCCL, Algo: "auto", Proto: "auto", Transport: trace.TransportP2P,
			World: c.GroupSize, Dtype: dt, Bytes: c.Bytes, NCCLEnv: env, API: APIKernel, Note: c.Kernel,
		})
	}
	return recs, skipped
}
