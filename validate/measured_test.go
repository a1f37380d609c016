package validate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// Every row of all_reduce_perf becomes two records (out-of-place, then
// in-place) on its line, eager, world size from the rank lines, issued by
// one thread for nGpus GPUs.
func TestNCCLTestsRecords(t *testing.T) {
	run, _, err := trace.ReadNCCLTestsFile("../testdata/nccltests/rtx4090x4_p2p.txt", trace.ReadOptions{})
	require.NoError(t, err)
	recs, err := NCCLTestsRecords(run, map[string]string{"NCCL_P2P_LEVEL": "SYS"})
	require.NoError(t, err)
	require.Len(t, recs, 2*len(run.Rows))
	r0, r1 := recs[0], recs[1]
	assert.Equal(t, run.Rows[0].Line, r0.Line)
	assert.Equal(t, r0.Line, r1.Line)
	assert.Equal(t, "out-of-place", r0.Note)
	assert.Equal(t, "in-place", r1.Note)
	assert.Equal(t, 18.46, r0.Us)
	assert.Equal(t, 18.56, r1.Us)
	assert.Equal(t, trace.LaunchEager, r0.Launch)
	assert.Equal(t, 4, r0.World)
	assert.Equal(t, 4, r0.GPUs)
	assert.Equal(t, "fp32", r0.Dtype)
	assert.Equal(t, APINCCLTests, r0.API)

	run.Graph = 1
	recs, err = NCCLTestsRecords(run, nil)
	require.NoError(t, err)
	assert.Equal(t, trace.LaunchCUDAGraph, recs[0].Launch)

	run.Collective = "all_gather"
	_, err = NCCLTestsRecords(run, nil)
	assert.ErrorContains(t, err, "all_gather_perf output: arsim simulates allreduce only")
	run.Collective, run.Ranks = "all_reduce", nil
	_, err = NCCLTestsRecords(run, nil)
	assert.ErrorContains(t, err, "world size is unknown")
}

// nccl-tests records simulate as NCCL under the settings given, paced by
// one host thread's launches when eager.
func TestNCCLTestsRecordsSimulate(t *testing.T) {
	run, _, err := trace.ReadNCCLTestsFile("../testdata/nccltests/rtx5090x8_2socket_p2p_sys.txt", trace.ReadOptions{})
	require.NoError(t, err)
	recs, err := NCCLTestsRecords(run, map[string]string{"NCCL_P2P_LEVEL": "SYS"})
	require.NoError(t, err)
	v, err := Run(recs, Options{Preset: "rtxpro6000x8-2numa"})
	require.NoError(t, err)
	assert.Len(t, v.Records, len(recs))
	assert.Empty(t, v.Skipped)
	top, err := topology.Load("rtxpro6000x8-2numa")
	require.NoError(t, err)
	host := 8 * top.Params.Get("host.nccl_group_call_issue")
	assert.InDelta(t, host, v.Records[0].Predicted, 1e-6, "8 B: the host's 8 grouped calls per iteration pace it")
	assert.True(t, v.Records[0].HostPaced)
	// On a host whose core runs faster, each call costs the host less, by
	// the clocks' ratio.
	ps := top.Params.Clone()
	require.NoError(t, ps.Apply([]topology.Override{{Name: "host.core_clock", Value: 5.0}}, "test"))
	fast, err := Run(recs[:1], Options{Preset: "rtxpro6000x8-2numa", Params: map[string]*topology.Params{"rtxpro6000x8-2numa": ps}})
	require.NoError(t, err)
	require.Len(t, fast.Records, 1)
	assert.InDelta(t, host*top.Params.Get("host.issue_core_clock")/5.0, fast.Records[0].Predicted, 1e-6, "8 B on a 5-GHz host")
	last := v.Records[len(v.Records)-1]
	assert.False(t, last.HostPaced)
	assert.InDelta(t, 0, last.ErrorPct, 10, "128 MiB with P2P at SYS is bandwidth-bound")
}

// Profiler kernels: allreduces become records timed by their duration;
// other collectives and kernels without a size are skipped with the reason.
func TestKinetoRecords(t *testing.T) {
	tr, _, err := trace.ReadKinetoFile("../trace/testdata/kineto/rank0_allreduce.json", trace.ReadOptions{})
	require.NoError(t, err)
	recs, skipped := KinetoRecords(tr, "k.json", nil)
	require.NotEmpty(t, recs)
	for _, r := range recs {
		assert.Equal(t, APIKernel, r.API)
		assert.Positive(t, r.Bytes)
		assert.GreaterOrEqual(t, r.World, 2)
	}
	var reasons []string
	for _, s := range skipped {
		reasons = append(reasons, s.Reason)
	}
	assert.Contains(t, reasons, "allgather kernel: arsim simulates allreduce only")
	v, err := Run(recs, Options{Preset: "h200x2"})
	require.NoError(t, err)
	assert.Len(t, v.Records, len(recs))
}
