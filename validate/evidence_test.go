package validate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// What each kind of captured record times, in the schedules' terms.
func TestMechanismsOfRecords(t *testing.T) {
	for _, c := range []struct {
		r    trace.Record
		want []algos.Mechanism
	}{
		{trace.Record{Kind: trace.KindLoop, Loop: "group_barrier", Target: "host"}, []algos.Mechanism{algos.MechHostFlags}},
		{trace.Record{Kind: trace.KindLoop, Loop: "group_barrier", Target: "host", Layout: "packed_128"}, []algos.Mechanism{algos.MechHostFlags, algos.HostFlagsIn("packed_128")}},
		{trace.Record{Kind: trace.KindLoop, Loop: "group_barrier", Target: "host", Layout: "rank_stride"}, []algos.Mechanism{algos.MechHostFlags}},
		{trace.Record{Kind: trace.KindLoop, Loop: "group_barrier", Target: "local"}, []algos.Mechanism{algos.MechGPUFlags}},
		{trace.Record{Kind: trace.KindPoll, Target: "host", Request: "load_volatile"}, []algos.Mechanism{algos.MechHostFlags}},
		{trace.Record{Kind: trace.KindPoll, Target: "local", Request: "atomic_cas"}, []algos.Mechanism{algos.MechFlagAtomics}},
		{trace.Record{Kind: trace.KindBarrier, System: "no-such-system", Barrier: "cas"}, []algos.Mechanism{algos.MechGPUFlags, algos.MechFlagAtomics, algos.MechPeerPCIe}},
		{trace.Record{Kind: trace.KindLoop, Loop: "copy", Src: "host", Dst: "local"}, []algos.Mechanism{algos.MechHostLoads}},
		{trace.Record{Kind: trace.KindLoop, Loop: "copy", Src: "local", Dst: "host"}, []algos.Mechanism{algos.MechHostStores}},
		{trace.Record{Kind: trace.KindLoop, Loop: "pull", Src: "local+host", Dst: "local"}, []algos.Mechanism{algos.MechHostLoads}},
		{trace.Record{Kind: trace.KindLoop, Loop: "ll128", Recv: "host", Dst: "host"},
			[]algos.Mechanism{algos.MechHostLines, algos.MechHostStores, algos.MechLoopsBesideStores}},
		{trace.Record{Kind: trace.KindLoop, Loop: "copy", Src: "host", Dst: "host"},
			[]algos.Mechanism{algos.MechHostLoads, algos.MechHostStores, algos.MechLoadsBesideStores}},
		{trace.Record{Kind: trace.KindLoop, Loop: "ll", Recv: "local", Dst: "local"}, []algos.Mechanism{algos.MechGPULines}},
		{trace.Record{Kind: trace.KindLoop, Loop: "host_shot", Phases: 7}, []algos.Mechanism{algos.MechHostFlags, algos.HostFlagsIn("vllm"), algos.MechHostLoads, algos.MechHostStores}},
		{trace.Record{Kind: trace.KindLoop, Loop: "host_shot", Phases: 2}, []algos.Mechanism{algos.MechHostFlags, algos.HostFlagsIn("vllm")}},
		{trace.Record{Kind: trace.KindLoop, Loop: "host_shot", Phases: 5}, []algos.Mechanism{algos.MechHostLoads, algos.MechHostStores}},
		{trace.Record{Kind: trace.KindHostLinkConcurrency, What: "sm_read_beside_write"}, []algos.Mechanism{algos.MechLoadsBesideStores}},
		{trace.Record{Kind: trace.KindHostLinkConcurrency, What: "ce_h2d"}, nil},
		{trace.Record{Kind: trace.KindPointerChase, Target: "host", WriteBlocks: 8}, []algos.Mechanism{algos.MechLoadsBesideStores}},
		{trace.Record{Kind: trace.KindPointerChase, Target: "host"}, []algos.Mechanism{algos.MechHostLoads}},
		{trace.Record{Kind: trace.KindPointerChase, Target: "local"}, nil},
		{trace.Record{Kind: trace.KindSMAccess, Target: "host", Op: "write"}, []algos.Mechanism{algos.MechHostStores}},
		{trace.Record{Kind: trace.KindEmptyKernel}, nil},
		// Two GPUs: the link is the system's.
		{trace.Record{Kind: trace.KindNCCLKernel, System: "h200x2-vm", Transport: trace.TransportP2P}, []algos.Mechanism{algos.MechPeerNVLink}},
		{trace.Record{Kind: trace.KindNCCLKernel, System: "h200x2-vm", Transport: trace.TransportSHM}, nil},
		{trace.Record{Kind: trace.KindFlagPingpong, System: "no-such-system", Via: "peer"}, []algos.Mechanism{algos.MechGPUFlags, algos.MechPeerPCIe}},
	} {
		peer := algos.MechPeerPCIe
		if c.r.System == "h200x2-vm" {
			peer = algos.MechPeerNVLink
		}
		assert.Equal(t, c.want, mechanismsOf(c.r, peer), "%+v", c.r)
	}
	// A whole allreduce: its schedule's link and route.
	h2, err := topology.Load("h200x2")
	require.NoError(t, err)
	req := algos.Request{Top: h2, Ranks: 2, Bytes: 1 << 20, DType: algos.BF16, Launch: hw.Graph}
	assert.Equal(t, []algos.Mechanism{algos.MechPeerNVLink, algos.MechWhole, algos.Whole("nccl", algos.RouteNVLink)}, routeMechanisms("nccl", req))
	req.Opts = map[string]string{"p2p_level": "loc"}
	assert.Equal(t, []algos.Mechanism{algos.MechWhole, algos.Whole("nccl", algos.RouteHost)}, routeMechanisms("nccl", req))
	assert.Nil(t, routeMechanisms("no_such_algorithm", req))
	assert.Empty(t, mechanismsOf(trace.Record{Kind: trace.KindNCCLKernel, Transport: trace.TransportP2P}, ""), "one GPU: no link")
	for preset, want := range map[string]algos.Mechanism{"h200x2": algos.MechPeerNVLink, "rtxpro6000x8-2numa": algos.MechPeerPCIe, "h200x1": ""} {
		top, err := topology.Load(preset)
		require.NoError(t, err)
		assert.Equal(t, want, peerOf(top), preset)
	}
}

// Every mechanism a schedule can rest on has a row, and the rows count
// only predicted, device-paced records.
func TestEvidenceOfCountsThePredictedSide(t *testing.T) {
	v := &Validation{Records: []Compared{
		{File: "a", source: "s", ErrorPct: 10, Dimensions: []string{"x"}, Mechanisms: []algos.Mechanism{algos.MechHostFlags}},
		{File: "b", source: "s", ErrorPct: -30, Dimensions: []string{"x"}, Mechanisms: []algos.Mechanism{algos.MechHostFlags, algos.MechHostLoads}},
		{File: "a", System: "s", ErrorPct: 90, FittedFor: "p", Mechanisms: []algos.Mechanism{algos.MechHostFlags}},
		{File: "a", System: "s", ErrorPct: 90, HostPaced: true, Dimensions: []string{"x"}, Mechanisms: []algos.Mechanism{algos.MechHostFlags}},
	}}
	rows := EvidenceOf(v)
	require.Len(t, rows, len(algos.Mechanisms), "no layout's variant without its records")
	by := map[algos.Mechanism]EvidenceRow{}
	for _, r := range rows {
		by[r.Mechanism] = r
	}
	assert.Equal(t, EvidenceRow{Mechanism: algos.MechHostFlags, Records: 2, Files: 2, MedianAbsErrorPct: 20, P95AbsErrorPct: 30, Beyond: 1, Systems: []string{"s"}}, by[algos.MechHostFlags])
	assert.Equal(t, 1, by[algos.MechHostLoads].Records)
	assert.Zero(t, by[algos.MechPeerPCIe].Records)
	assert.Equal(t, "no record times it", by[algos.MechPeerPCIe].String())
	assert.Equal(t, "2 records in 2 files (s): median 20.0 %, p95 30.0 %, 1 beyond 20 %", by[algos.MechHostFlags].String())
}

// A file some fit or parameter names may have given the model a value;
// every record of any other file is a prediction.
func TestCitedCaptures(t *testing.T) {
	assert.True(t, cited("../testdata/h200x1-arsim/perblock.jsonl", nil), "a fit's file")
	assert.True(t, cited("testdata/h200x2-arsim/host_costs_c.jsonl", nil), "named by a pattern in a source")
	assert.False(t, cited("testdata/h200x2/measurements.jsonl", nil), "the held-out set")
	assert.False(t, cited("/home/me/box/all_reduce_perf.txt", nil))
	assert.True(t, cited("", nil), "a file of no name")
	ps := &topology.Params{}
	ps.Add(topology.Param{Name: "host.cuda_launch_issue", Unit: "µs", Value: 3.1, Max: 10000,
		Source: "fitted by arsim calibrate on 34 records of /home/me/box/all_reduce_perf.txt (held-out median |err| 3.2%)"})
	assert.True(t, cited("/home/me/box/all_reduce_perf.txt", map[string]*topology.Params{"m": ps}), "calibrated on it")
}

func TestPredictedOn(t *testing.T) {
	v := &Validation{Records: []Compared{
		{ErrorPct: 10, Dimensions: []string{"x"}, Mechanisms: []algos.Mechanism{algos.MechHostFlags}},
		{ErrorPct: -30, Dimensions: []string{"x"}, Mechanisms: []algos.Mechanism{algos.HostFlagsIn("packed_128")}},
		{ErrorPct: 50, Mechanisms: []algos.Mechanism{algos.HostFlagsIn("packed_128")}}, // not on the predicted side of a fit
		{ErrorPct: 70, Dimensions: []string{"x"}, HostPaced: true, Mechanisms: []algos.Mechanism{algos.HostFlagsIn("packed_128")}},
	}}
	st, n := v.PredictedOn(func(m algos.Mechanism) bool { return m == algos.HostFlagsIn("packed_128") })
	assert.Equal(t, ErrorStats{Count: 1, MedianAbsPct: 30, P95AbsPct: 30}, st)
	assert.Equal(t, 1, n)
}
