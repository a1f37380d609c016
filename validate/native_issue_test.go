package validate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// What testdata/h200x1-arsim/native_issue_2.jsonl shows, held against
// the file: NCCL calls issued from C++ in groups, as nccl-tests -g G
// issues an iteration (one-rank allreduces, a communicator and a stream
// each), cost the host more per call than one ungrouped call, at every
// G from 1 to 8, and the cost does not fall with G (the reading written
// down before the run, that a group's start and end are paid once and
// amortised, failed). nccl-tests' eager pacing charges a GPU one such
// grouped call (host.nccl_group_call_issue, the median of these and
// native_issue_clock.jsonl's grouped calls), at the host's core clock.
func TestNativeGroupedCallsCostMoreThanOne(t *testing.T) {
	recs := readOneGPU(t, "native_issue_2.jsonl")
	one := 0.0
	group := map[int]float64{}
	for _, r := range recs {
		if r.Kind != trace.KindNCCLKernel || r.Issuer != "native" || r.Mode != "queued" {
			continue
		}
		switch r.NCCLOp {
		case "allreduce_one_rank":
			one = r.Us
		case "allreduce_group":
			group[r.GroupCalls] = r.Us
		}
	}
	require.Positive(t, one)
	require.Len(t, group, 4, "groups of 1, 2, 4 and 8 calls")
	for _, g := range []int{1, 2, 4, 8} {
		assert.Greater(t, group[g], 1.1*one, "a call in a group of %d against one ungrouped call", g)
	}
	assert.Greater(t, group[8], 0.9*group[2], "the cost a call does not fall from 2 to 8 calls a group")
	top, err := topology.Load("h200x2")
	require.NoError(t, err)
	pace := top.Params.Get("host.nccl_group_call_issue")
	assert.Greater(t, pace, one, "nccl-tests' pacing per GPU lies above this host's ungrouped native call")
	assert.InDelta(t, group[4], pace, 0.1*group[4], "and near a grouped one")
}
