package trace

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadKineto(t *testing.T) {
	tr, bad, err := ReadKinetoFile("testdata/kineto/rank0_allreduce.json", ReadOptions{})
	require.NoError(t, err)
	assert.Empty(t, bad)
	require.Len(t, tr.Collectives, 6)
	for _, c := range tr.Collectives {
		require.NoError(t, c.Validate())
		assert.Equal(t, 0, c.Device)
	}
	c := tr.Collectives

	// Linked by External id: 3 tokens × 7168 bf16 = 43,008 B.
	assert.Equal(t, KinetoCollective{Line: 17, Kernel: "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
		Name: "allreduce", Algo: "ring", Proto: "ll", Dtype: "bf16", Op: "sum", Bytes: 43008, GroupSize: 2,
		ProcessGroup: "0", Seq: 1, Channels: 2, Threads: 640, StartUs: 1020, DurationUs: 12.5, Device: 0,
		Match: "external_id"}, c[0])
	// Linked by correlation: the launch lies inside the record_param_comms.
	assert.Equal(t, "correlation", c[1].Match)
	assert.Equal(t, int64(43008), c[1].Bytes)
	assert.Equal(t, int64(2), c[1].Seq)
	// Linked by an ac2g flow to a launch that carries an External id.
	assert.Equal(t, "external_id", c[2].Match)
	assert.Equal(t, "tree", c[2].Algo)
	assert.Equal(t, int64(7340032*2), c[2].Bytes)
	assert.Equal(t, 16, c[2].Channels)
	// Matched by order; all-gather size is the output buffer.
	assert.Equal(t, "order", c[3].Match)
	assert.Equal(t, "allgather", c[3].Name)
	assert.Equal(t, "", c[3].Op)
	assert.Equal(t, "f32", c[3].Dtype)
	assert.Equal(t, int64(2048*4), c[3].Bytes)
	// Metadata copied onto the kernel.
	assert.Equal(t, "kernel_args", c[4].Match)
	assert.Equal(t, "reducescatter", c[4].Name)
	assert.Equal(t, int64(4096*4), c[4].Bytes)
	// Nothing left to match.
	assert.Equal(t, "", c[5].Match)
	assert.Equal(t, int64(0), c[5].Bytes)
	assert.Equal(t, int64(-1), c[5].Seq)
	require.Len(t, tr.Warnings, 1)
	assert.Contains(t, tr.Warnings[0], "line 61")
	assert.Contains(t, tr.Warnings[0], "no record_param_comms")
}

func TestParseKernelName(t *testing.T) {
	for in, want := range map[string]kernelName{
		"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)":             {"allreduce", "sum", "bf16", "ring", "ll"},
		"ncclDevKernel_AllReduce_Sum_f32_TREE_LL(ncclDevKernelArgsStorage<(unsigned long)4096>)": {"allreduce", "sum", "f32", "tree", "ll"},
		"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)":                      {"allgather", "", "", "ring", "ll"},
		"ncclDevKernel_AllReduce_Sum_bf16_COLLNET_DIRECT_SIMPLE":                                 {"allreduce", "sum", "bf16", "collnet_direct", "simple"},
		"ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)":                                   {"allreduce", "sum", "f32", "ring", "ll"},
		"ncclKernel_AllReduce_TREE_LL128_Sum___nv_bfloat16(ncclWorkElem)":                        {"allreduce", "sum", "bf16", "tree", "ll128"},
		"void ncclKernel_ReduceScatter_RING_SIMPLE_Sum_half(ncclWorkElem)":                       {"reducescatter", "sum", "f16", "ring", "simple"},
		"ncclSymkDevKernel_AllReduce_RSxLD_AGxST_sum_bf16":                                       {"allreduce", "sum", "bf16", "rsxld_agxst", ""},
		"ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)":                                {},
		"ncclDevKernel_": {},
	} {
		assert.Equal(t, want, parseKernelName(in), in)
	}
}

func TestReadKinetoErrors(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"bad JSON", "{\"traceEvents\": [\n{\"ph\": \"X\",}\n]}", "k.json line 2: bad JSON"},
		{"no events", `{"schemaVersion": 1}`, `field "traceEvents": missing`},
		{"ts string", "{\"traceEvents\": [\n  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclDevKernel_AllReduce_Sum_bf16_RING_LL\", \"ts\": \"12\", \"dur\": 1}\n]}",
			`k.json line 2: field "ts": want number, got string`},
		{"grid", "[{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclDevKernel_AllReduce_Sum_bf16_RING_LL\", \"ts\": 12, \"dur\": 1, \"args\": {\"grid\": \"2\"}}]",
			`line 1: field "args.grid": want array of integers, got string`},
		{"nelems", "[{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"record_param_comms\", \"ts\": 12, \"dur\": 1, \"args\": {\"In msg nelems\": \"2\"}}]",
			`field "args.In msg nelems": want integer, got string`},
		{"not an object", "[1]", "line 1: event: want a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ReadKineto(strings.NewReader(tc.in), "k.json", ReadOptions{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "trace: k.json")
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestReadKinetoSkipBad(t *testing.T) {
	in := `[
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "ts": "bad", "dur": 1},
  {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "pid": 3, "tid": "stream 16", "ts": 162, "dur": 1556, "args": {"device": 3, "correlation": 33218, "external id": 2513}},
  {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 9, "tid": 9, "ts": 100, "dur": 70, "args": {"External id": 2513, "Collective name": "all_reduce", "dtype": "float32", "In msg nelems": 1000, "Out msg nelems": 1000}}
]`
	tr, bad, err := ReadKineto(strings.NewReader(in), "k.json", ReadOptions{SkipBad: true})
	require.NoError(t, err)
	require.Len(t, bad, 1)
	assert.Equal(t, 2, bad[0].Line)
	require.Len(t, tr.Collectives, 1)
	c := tr.Collectives[0]
	assert.Equal(t, 3, c.Device)
	assert.Equal(t, "external_id", c.Match)
	assert.Equal(t, int64(4000), c.Bytes)
	assert.Equal(t, "f32", c.Dtype)
	assert.Empty(t, tr.Warnings)
}
