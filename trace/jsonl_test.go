package trace

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const h200x2 = "../testdata/h200x2/measurements.jsonl"

func TestReadJSONLH200x2(t *testing.T) {
	recs, bad, err := ReadJSONLFile(h200x2, ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, bad)
	require.Len(t, recs, 423)

	counts := map[Kind]int{}
	for i, r := range recs {
		assert.Equal(t, i+1, r.Line, "the file has no blank lines")
		assert.Equal(t, "h200x2-vm", r.System)
		assert.Empty(t, r.Extra, "line %d has unknown fields", r.Line)
		require.NoError(t, r.Validate())
		_, _, err := r.Primary()
		require.NoError(t, err, "line %d", r.Line)
		counts[r.Kind]++
	}
	assert.Equal(t, map[Kind]int{
		KindAllreduce: 300, KindAllreduceSequence: 14, KindMemcpy: 81, KindSMAccess: 12,
		KindPointerChase: 3, KindFlagPingpong: 2, KindEmptyKernel: 1, KindHostLinkConcurrency: 10,
	}, counts)
}

func TestReadJSONLH200x2Fields(t *testing.T) {
	recs, _, err := ReadJSONLFile(h200x2, ReadOptions{})
	require.NoError(t, err)
	line := func(n int) Record { return recs[n-1] }

	m := line(1)
	assert.Equal(t, Record{Line: 1, System: "h200x2-vm", Kind: KindMemcpy, Clock: ClockDeviceEvents, Launch: "eager",
		Engine: "copy_engine", Dir: "h2d", Bytes: 4, Us: 6.514, UsMin: 6.364, UsMax: 6.584,
		NCCLRelease: "2.28.9"}, m, "the release from system/versions.txt beside it")

	ar := line(302)
	assert.Equal(t, KindAllreduce, ar.Kind)
	assert.Equal(t, LaunchCUDAGraph, ar.Launch)
	assert.Equal(t, 2, ar.World)
	assert.Equal(t, "bf16", ar.Dtype)
	assert.Equal(t, int64(8388608), ar.Bytes)
	assert.Equal(t, ImplNCCL, ar.Impl)
	assert.Equal(t, "ring", ar.Algo)
	assert.Equal(t, "ll", ar.Proto)
	assert.Equal(t, TransportP2P, ar.Transport)

	seq := line(244)
	assert.Equal(t, KindAllreduceSequence, seq.Kind)
	assert.Equal(t, 122, seq.Count)
	assert.Equal(t, 1, seq.Tokens)
	assert.Equal(t, 7168, seq.Hidden)
	assert.Equal(t, int64(14336), seq.Bytes)

	sm := line(396)
	assert.Equal(t, "read", sm.Op)
	assert.Equal(t, "host", sm.Target)
	assert.Equal(t, 1, sm.Blocks)
	assert.Equal(t, 512, sm.Threads)
	assert.Equal(t, 16, sm.BytesPerAccess)
	assert.Equal(t, 13.703, sm.Gbps)

	fp := line(412)
	assert.Equal(t, "host", fp.Via)
	assert.Equal(t, 1.551, fp.OneWayUsMin)
	assert.Contains(t, fp.Note, "round trip / 2")

	hl := line(423)
	assert.Equal(t, "ce_bidir", hl.What)
	assert.Equal(t, 2, hl.GPUs)
	assert.Equal(t, int64(268435456), hl.BytesPerGPU)
	assert.Equal(t, 78.155, hl.GbpsPerGPU)
	assert.Equal(t, ClockHost, hl.Clock)
}

func TestPrimaryH200x2(t *testing.T) {
	recs, _, err := ReadJSONLFile(h200x2, ReadOptions{})
	require.NoError(t, err)
	for _, tc := range []struct {
		line  int
		value float64
		unit  string
	}{
		{1, 6.514, "us"},      // memcpy h2d 4 B
		{150, 159.656, "us"},  // allreduce eager ring simple 8 MiB
		{302, 70.231, "us"},   // allreduce cudagraph ring ll 8 MiB
		{244, 4807.936, "us"}, // allreduce_sequence: the whole sequence of 122
		{397, 1340.768, "us"}, // sm_access write host
		{404, 1094.295, "ns"}, // pointer_chase host
		{405, 145.726, "ns"},  // pointer_chase local
		{406, 8.4, "us"},      // empty_kernel
		{413, 0.637, "us"},    // flag_pingpong peer
		{415, 101.404, "GB/s"},
		{422, 99.125, "GB/s"},
	} {
		v, unit, err := recs[tc.line-1].Primary()
		require.NoError(t, err, "line %d", tc.line)
		assert.Equal(t, tc.value, v, "line %d", tc.line)
		assert.Equal(t, tc.unit, unit, "line %d", tc.line)
	}
	_, _, err = Record{Kind: "bogus"}.Primary()
	assert.ErrorContains(t, err, `field "kind"`)
	_, _, err = Record{Kind: KindMemcpy, Line: 3}.Primary()
	assert.ErrorContains(t, err, `line 3: field "us": missing`)
}

const goodLine = `{"system": "s", "clock": "device_events", "kind": "memcpy", "dir": "h2d", "bytes": 4, "us": 6.5}`

func TestReadJSONLMalformed(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       []string
	}{
		{"bad JSON", `{"system": "s", "kind": `, []string{"bad JSON"}},
		{"not an object", `[1, 2]`, []string{"want a JSON object"}},
		{"missing us", `{"system": "s", "clock": "device_events", "kind": "memcpy", "dir": "h2d", "bytes": 4}`,
			[]string{`field "us": missing`}},
		{"unknown kind", `{"system": "s", "clock": "host", "kind": "allgather", "us": 3}`,
			[]string{`field "kind": unknown value "allgather"; allowed: allreduce, allreduce_sequence, barrier, block_pingpong, empty_kernel`}},
		{"negative bytes", `{"system": "s", "clock": "device_events", "kind": "memcpy", "dir": "h2d", "bytes": -4, "us": 6.5}`,
			[]string{`field "bytes": must be > 0, got -4`}},
		{"wrong type", `{"system": "s", "clock": "device_events", "kind": "memcpy", "dir": "h2d", "bytes": 4, "us": "6.5"}`,
			[]string{`field "us": want number, got string`}},
		{"fractional integer", `{"system": "s", "clock": "device_events", "kind": "memcpy", "dir": "h2d", "bytes": 4.5, "us": 6.5}`,
			[]string{`field "bytes": want integer, got 4.5`}},
		{"unknown dir", `{"system": "s", "clock": "device_events", "kind": "memcpy", "dir": "x2y", "bytes": 4, "us": 6.5}`,
			[]string{`field "dir": unknown value "x2y"; allowed: bidir, d2h, h2d, p2p`}},
		{"unknown clock", `{"system": "s", "clock": "wall", "kind": "empty_kernel", "us": 6.5}`,
			[]string{`field "clock"`, "device_events, host, sm_clock64"}},
		{"nccl without proto", `{"system": "s", "clock": "device_events", "kind": "allreduce", "launch": "eager", "world": 2, "dtype": "bf16", "bytes": 8, "impl": "nccl", "algo": "ring", "transport": "p2p", "us": 9}`,
			[]string{`field "proto": missing`}},
		{"min above median", `{"system": "s", "clock": "device_events", "kind": "empty_kernel", "us": 6.5, "us_min": 7}`,
			[]string{`field "us_min"`}},
		{"slowest block below the median one", `{"system": "s", "clock": "sm_clock64", "kind": "loop", "loop": "copy", "blocks": 2, "threads": 32, "ns_per_iter": 400, "ns_per_iter_slowest_block": 390}`,
			[]string{`field "ns_per_iter_slowest_block"`, "below ns_per_iter"}},
		{"zero time", `{"system": "s", "clock": "device_events", "kind": "empty_kernel", "us": 0}`,
			[]string{`field "us": must be > 0, got 0`}},
		{"null", `{"system": "s", "clock": "device_events", "kind": "empty_kernel", "us": null}`,
			[]string{`field "us": want number, got null`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			input := goodLine + "\n\n" + tc.line + "\n" + goodLine + "\n"
			_, _, err := ReadJSONL(strings.NewReader(input), "bad.jsonl", ReadOptions{})
			require.Error(t, err)
			var pe *ParseError
			require.True(t, errors.As(err, &pe))
			assert.Equal(t, 3, pe.Line)
			assert.Contains(t, err.Error(), "trace: bad.jsonl line 3: ")
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}

			recs, bad, err := ReadJSONL(strings.NewReader(input), "bad.jsonl", ReadOptions{SkipBad: true})
			require.NoError(t, err)
			require.Len(t, recs, 2)
			assert.Equal(t, []int{1, 4}, []int{recs[0].Line, recs[1].Line})
			require.Len(t, bad, 1)
			assert.Equal(t, 3, bad[0].Line)
			assert.Contains(t, bad[0].Err.Error(), "bad.jsonl line 3")
		})
	}
}

func TestReadJSONLExtraAndOptional(t *testing.T) {
	in := `{"system": "s", "clock": "device_events", "kind": "allreduce", "launch": "eager", "world": 2, "dtype": "bf16", "bytes": 43008, "impl": "host_staged_one_shot", "algo": "one_shot", "transport": "host_memory", "blocks": 8, "threads": 512, "us": 21.5, "gpu": "H200", "trials": [1, 2]}` + "\r\n"
	recs, _, err := ReadJSONL(strings.NewReader(in), "x.jsonl", ReadOptions{})
	require.NoError(t, err)
	require.Len(t, recs, 1)
	r := recs[0]
	assert.Equal(t, "", r.Proto)
	assert.Equal(t, 8, r.Blocks)
	assert.Equal(t, 0, r.MaxChannels)
	require.Len(t, r.Extra, 2)
	assert.JSONEq(t, `"H200"`, string(r.Extra["gpu"]))
	assert.JSONEq(t, `[1, 2]`, string(r.Extra["trials"]))
}

func TestRecordValidate(t *testing.T) {
	r := Record{Line: 7, System: "s", Kind: KindMemcpy, Clock: ClockHost, Dir: "h2d", Bytes: 8, Us: 2}
	require.NoError(t, r.Validate())
	r.Bytes = -1
	assert.ErrorContains(t, r.Validate(), `trace: record line 7: field "bytes": must be > 0, got -1`)
	assert.ErrorContains(t, Record{}.Validate(), `field "system": missing`)
}

func TestReadJSONLFileMissing(t *testing.T) {
	_, _, err := ReadJSONLFile("testdata/does-not-exist.jsonl", ReadOptions{})
	assert.ErrorContains(t, err, "trace: ")
}

// Two records of one configuration have the same Configuration whatever
// they measured; another configuration differs.
func TestConfiguration(t *testing.T) {
	in := `{"system": "s", "kind": "poll", "clock": "sm_clock64", "target": "host", "request": "load_volatile", "spacing_bytes": 4, "blocks": 8, "ns_per_op": 1200, "note": "in-place"}
{"system": "s", "kind": "poll", "clock": "sm_clock64", "target": "host", "request": "load_volatile", "spacing_bytes": 4, "blocks": 8, "ns_per_op": 1300, "note": "in-place"}
{"system": "s", "kind": "poll", "clock": "sm_clock64", "target": "host", "request": "load_volatile", "spacing_bytes": 8, "blocks": 8, "ns_per_op": 1200}
{"system": "s", "kind": "allreduce", "clock": "device_events", "world": 2, "dtype": "bf16", "bytes": 8, "impl": "nccl", "algo": "ring", "proto": "ll", "transport": "p2p", "launch": "eager", "us": 10, "us_min": 9, "us_max": 11, "nccl_env": {"NCCL_B": "2", "NCCL_A": "1"}}`
	recs, bad, err := ReadJSONL(strings.NewReader(in), "configs", ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, bad)
	require.Len(t, recs, 4)
	assert.Equal(t, recs[0].Configuration(), recs[1].Configuration())
	assert.NotEqual(t, recs[0].Configuration(), recs[2].Configuration())
	assert.Equal(t, "system=s;kind=poll;clock=sm_clock64;blocks=8;target=host;note=in-place;request=load_volatile;spacing_bytes=4", recs[0].Configuration())
	assert.Contains(t, recs[3].Configuration(), "nccl_env=NCCL_A:1,NCCL_B:2,")
	assert.NotContains(t, recs[3].Configuration(), "us=")
}

// The fields of fence_beside.jsonl and write_buffer.jsonl read back.
func TestPerBlockFieldsOfFencesAndPausedBarriers(t *testing.T) {
	in := `{"system": "s", "clock": "sm_clock64", "kind": "loop", "loop": "fence", "dst": "local", "stores_per_thread": 1, "fence": "sc", "blocks": 1, "threads": 32, "ns_per_iter": 12452, "neighbours": 8, "neighbour_op": "stream", "neighbour_place": "host"}
{"system": "s", "clock": "sm_clock64", "kind": "loop", "loop": "group_barrier", "target": "local", "layout": "packed_4k", "world": 4, "groups": 1, "blocks": 4, "threads": 32, "ns_per_iter": 514, "poll_sleep_ns": 300, "ns_per_iter_slowest_block": 515}
{"system": "s", "clock": "sm_clock64", "kind": "loop", "loop": "copy", "src": "local", "dst": "local", "unroll": 4, "sources": 2, "blocks": 1, "threads": 128, "ns_per_iter": 1060, "launch_bound": 512}
`
	recs, bad, err := ReadJSONL(strings.NewReader(in), "t.jsonl", ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, bad)
	require.Len(t, recs, 3)
	assert.Equal(t, 512, recs[2].LaunchBound)
	assert.Equal(t, "stream", recs[0].NeighbourOp)
	assert.Equal(t, "host", recs[0].NeighbourPlace)
	assert.Equal(t, 300, recs[1].PollSleepNs)
	assert.Equal(t, 515.0, recs[1].NsPerIterSlowestBlock)
}
