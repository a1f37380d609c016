package trace

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadNCCLTests8GPU(t *testing.T) {
	run, bad, err := ReadNCCLTestsFile("testdata/nccltests/all_reduce_perf_8gpu.txt", ReadOptions{})
	require.NoError(t, err)
	assert.Empty(t, bad)
	assert.Equal(t, "all_reduce", run.Collective)
	assert.Equal(t, "2.17.1", run.Version)
	assert.Equal(t, "2.27.3", run.NCCLLibrary, "nccl-library=22703")
	assert.Equal(t, 1, run.NThread)
	assert.Equal(t, 1, run.NGpus)
	assert.Equal(t, int64(1024), run.MinBytes)
	assert.Equal(t, int64(134217728), run.MaxBytes)
	assert.Equal(t, 5, run.WarmupIters)
	assert.Equal(t, 20, run.Iters)
	require.Len(t, run.Ranks, 8)
	assert.Equal(t, NCCLTestsRank{Rank: 7, Group: 0, Pid: 41214, Host: "gpu-node-07", Device: 7,
		BusID: "0000:df:00", Name: "NVIDIA H100 80GB HBM3"}, run.Ranks[7])
	require.Len(t, run.Rows, 18)
	assert.Equal(t, NCCLTestsRow{Line: 20, Bytes: 1024, Count: 256, Type: "float", RedOp: "sum", Root: -1,
		OutOfPlace: NCCLTestsTiming{TimeUs: 24.24, AlgBwGBs: 0.04, BusBwGBs: 0.07, Wrong: 0},
		InPlace:    NCCLTestsTiming{TimeUs: 24.72, AlgBwGBs: 0.04, BusBwGBs: 0.07, Wrong: 0}}, run.Rows[0])
	last := run.Rows[17]
	assert.Equal(t, int64(134217728), last.Bytes)
	assert.Equal(t, 397.31, last.OutOfPlace.TimeUs)
	assert.Equal(t, 590.47, last.InPlace.BusBwGBs)
	assert.Equal(t, 157.136, run.AvgBusBw)
	assert.Equal(t, int64(0), run.OutOfBounds)
	for _, row := range run.Rows {
		require.NoError(t, row.Validate())
		// busbw = algbw × 2(n−1)/n for an allreduce on 8 ranks, to print precision.
		assert.InDelta(t, row.OutOfPlace.AlgBwGBs*1.75, row.OutOfPlace.BusBwGBs, 0.02, "line %d", row.Line)
	}
}

func TestReadNCCLTestsG2NotChecked(t *testing.T) {
	run, _, err := ReadNCCLTestsFile("testdata/nccltests/all_gather_perf_g2.txt", ReadOptions{})
	require.NoError(t, err)
	assert.Equal(t, "all_gather", run.Collective, "from the echoed command line")
	assert.Equal(t, "", run.Version)
	assert.Equal(t, "", run.NCCLLibrary)
	assert.Equal(t, 2, run.NGpus)
	require.Len(t, run.Ranks, 2)
	assert.Equal(t, "0x81", run.Ranks[1].BusID)
	assert.Equal(t, "NVIDIA RTX PRO 6000 Blackwell Workstation Edition", run.Ranks[1].Name)
	require.Len(t, run.Rows, 11)
	for _, row := range run.Rows {
		assert.Equal(t, int64(-1), row.OutOfPlace.Wrong)
		assert.Equal(t, int64(-1), row.InPlace.Wrong)
		assert.Equal(t, "none", row.RedOp)
	}
	assert.Equal(t, 3.21, run.AvgBusBw)
}

func TestReadNCCLTestsTruncated(t *testing.T) {
	const path = "testdata/nccltests/all_reduce_perf.truncated.txt"
	_, _, err := ReadNCCLTestsFile(path, ReadOptions{})
	var pe *ParseError
	require.True(t, errors.As(err, &pe), "%v", err)
	assert.Equal(t, 15, pe.Line)
	assert.Equal(t, "out-of-place time", pe.Field)
	assert.Contains(t, err.Error(), path+" line 15")
	assert.Contains(t, err.Error(), `"2x.41"`)

	run, bad, err := ReadNCCLTestsFile(path, ReadOptions{SkipBad: true})
	require.NoError(t, err)
	require.Len(t, bad, 2)
	assert.Equal(t, 15, bad[0].Line)
	assert.Equal(t, 17, bad[1].Line)
	assert.Contains(t, bad[1].Err.Error(), "result row has 7 columns, want 13")
	assert.Len(t, run.Rows, 4)
	assert.Equal(t, "all_reduce", run.Collective, "from the file name")
	assert.Equal(t, int64(-1), run.OutOfBounds)
	assert.Equal(t, 0.0, run.AvgBusBw)
}

func TestReadNCCLTestsOldLayout(t *testing.T) {
	// Old builds: no root column and a float "error" column.
	const in = `# nThread 1 nGpus 8 minBytes 1073741824 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 validation: 1
#                                                       out-of-place                       in-place
#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                       (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
  1073741824     268435456     float     sum    79012   13.59   23.78  2e-06    78930   13.60   23.80  2e-06
`
	run, _, err := ReadNCCLTests(strings.NewReader(in), "old.log", ReadOptions{})
	require.NoError(t, err)
	require.Len(t, run.Rows, 1)
	row := run.Rows[0]
	assert.Equal(t, -1, row.Root)
	assert.Equal(t, 79012.0, row.OutOfPlace.TimeUs)
	assert.Equal(t, int64(-1), row.OutOfPlace.Wrong)
	assert.Equal(t, 2e-06, row.InPlace.MaxError)
	assert.Equal(t, "", run.Collective)
}

func TestReadNCCLTestsErrors(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"no rows", "# nThread 1 nGpus 1 minBytes 8 maxBytes 8\n", "no nccl-tests result rows"},
		{"bad wrong", "   8   2   float   sum   -1   9.1   0.00   0.00   x   9.0   0.00   0.00   0\n",
			`line 1: field "out-of-place #wrong": want an integer or N/A, got "x"`},
		{"negative time", "   8   2   float   sum   -1   -9.1   0.00   0.00   0   9.0   0.00   0.00   0\n",
			`line 1: field "out-of-place time": must be a finite number >= 0`},
		{"bad rank", "#  Rank  x Group 0\n   8   2   float   sum   -1   9.1   0.00   0.00   0   9.0   0.00   0.00   0\n",
			`line 1: field "Rank"`},
		{"bad avg", "   8   2   float   sum   -1   9.1   0.00   0.00   0   9.0   0.00   0.00   0\n# Avg bus bandwidth    : lots\n",
			`line 2: field "Avg bus bandwidth"`},
		{"second run", "# nThread 1 nGpus 1\n   8   2   float   sum   -1   9.1   0.00   0.00   0   9.0   0.00   0.00   0\n# nThread 1 nGpus 2\n",
			"line 3: a second run starts here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ReadNCCLTests(strings.NewReader(tc.in), "x.txt", ReadOptions{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "trace: x.txt")
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestCollectiveFromProgram(t *testing.T) {
	for in, want := range map[string]string{
		"all_reduce_perf":                     "all_reduce",
		"/opt/nccl-tests/build/alltoall_perf": "alltoall",
		"reduce_scatter_perf_mpi":             "reduce_scatter",
		"h200_all_gather_perf.log":            "all_gather",
		"results.txt":                         "",
	} {
		assert.Equal(t, want, collectiveFromProgram(in), in)
	}
}

func TestNCCLVersionFromCode(t *testing.T) {
	for code, want := range map[string]string{"22907": "2.29.7", "22703": "2.27.3", "21805": "2.18.5", "30001": "3.0.1",
		"2907": "", "x": "", "": "", "-22907": "", "100000": ""} {
		assert.Equal(t, want, ncclVersionFromCode(code), code)
	}
}
