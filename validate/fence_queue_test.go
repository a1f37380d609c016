package validate

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// The pollers of fence_queue*.jsonl timed their own polls: from 4,096
// pollers on, the first instance's period is the queue's drain
// (hw.Machine.PollDrain: the link's rate a sector each, 768 requests
// outstanding a line each; nothing fitted on them) within −10…+1 %, held
// at 11 %. The second and third instances' hosts serve their requests more
// slowly: the drain is −10…−56 % of their pollers' period; they are
// logged, not held. The fourth's GPU has 10-bit tags not enabled
// (gpu.host_requests_outstanding_8bit): its period, 2.2 times the others'
// a line each, is the drain with 256 requests outstanding +4…+35 % (the
// model slower: as if about 300 were outstanding), held at 36 %. The
// suite's part on a twenty-ninth instance (perblock_5.jsonl, 10-bit tags)
// is held at 11 % as the first: −11…+1 %.
func TestPollersPeriodIsTheQueuesDrain(t *testing.T) {
	p, err := topology.Lookup("h100x1")
	require.NoError(t, err)
	top, err := p.Build()
	require.NoError(t, err)
	m, err := hw.New(top)
	require.NoError(t, err)
	for _, file := range []string{"fence_queue.jsonl", "fence_queue_2.jsonl", "fence_queue_3.jsonl", "fence_queue_4.jsonl", "perblock_5.jsonl"} {
		recs, bad, err := trace.ReadJSONLFile("../testdata/h100x1-arsim/"+file, trace.ReadOptions{})
		require.NoError(t, err)
		require.Empty(t, bad)
		n := 0
		for _, r := range recs {
			pollers := r.Neighbours * r.NeighbourThreads
			if r.NeighbourPollNs == 0 || pollers < 4096 {
				continue
			}
			d, err := m.PollDrain(0, hw.HostMem(0), pollers, r.NeighbourSpacingBytes, r.PCIeTags == trace.TagsEightBit)
			require.NoError(t, err)
			rel := float64(d)/1e3/r.NeighbourPollNs - 1
			t.Logf("%s: %d × %d pollers %d B apart: period %.0f ns, drain %.0f (%+.0f %%)", file, r.Neighbours, r.NeighbourThreads,
				r.NeighbourSpacingBytes, r.NeighbourPollNs, float64(d)/1e3, rel*100)
			switch file {
			case "fence_queue.jsonl", "perblock_5.jsonl":
				assert.Less(t, math.Abs(rel), 0.11, "%s line %d", file, r.Line)
			case "fence_queue_4.jsonl": // 8-bit tags: 256 requests outstanding
				require.Equal(t, trace.TagsEightBit, r.PCIeTags)
				assert.Less(t, math.Abs(rel), 0.36, "%s line %d", file, r.Line)
			}
			n++
		}
		assert.Positive(t, n, file)
	}
}

// The GPU's 10-bit tags bound its requests outstanding. The H100 instance
// whose registers show them not enabled as a requester
// (system/perblock_refit.pcie_tags.txt) held a fence beside 4,096 and
// 16,384 polling threads 1.3–1.8 times as long as the instances with them
// (fence_queue.jsonl, the H200s' fence_threads.jsonl and h100_parts.jsonl):
// with gpu.host_requests_outstanding_8bit (256, the PCIe spec's) the model
// is within 5 % of those fences, with 768 −38…−41 %.
func TestEightBitTagsBoundTheQueue(t *testing.T) {
	const file = "../testdata/h100x1-arsim/perblock_refit.jsonl"
	recs, bad, err := trace.ReadJSONLFile(file, trace.ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, bad)
	require.Equal(t, trace.TagsEightBit, recs[0].PCIeTags, "its tags file says 10-bit tags are not enabled")
	var many []trace.Record
	for _, r := range recs {
		if r.Kind == trace.KindLoop && r.Loop == "fence" && r.NeighbourOp == "poll" && r.Neighbours*r.NeighbourThreads >= 4096 {
			many = append(many, r)
		}
	}
	require.Len(t, many, 3)
	for _, tags := range []trace.Tags{trace.TagsEightBit, trace.TagsTenBit} {
		for i := range many {
			many[i].PCIeTags = tags
		}
		v, err := Run(many, Options{File: file})
		require.NoError(t, err)
		for i, c := range v.Records {
			t.Logf("tags %d: %d × %d pollers: measured %.0f ns, simulated %.0f (%+.1f %%)", tags, many[i].Neighbours, many[i].NeighbourThreads, c.Measured, c.Predicted, c.ErrorPct)
			if tags == trace.TagsEightBit {
				assert.Less(t, math.Abs(c.ErrorPct), 5.0, "line %d", c.Line)
			} else {
				assert.Less(t, c.ErrorPct, -35.0, "line %d: with 768 the model is far too fast", c.Line)
			}
		}
	}
}
