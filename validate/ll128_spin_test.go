package validate

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/trace"
)

// spinRecords are tools/capture ll128_spin's records for P spinning blocks
// beside R readers (R 0: the spinning alone), values left at 1 GB/s: the
// twins' predictions, not the data, are under test.
func spinRecords(t *testing.T, ps, rs []int) []trace.Record {
	t.Helper()
	var b strings.Builder
	for _, r := range rs {
		for _, p := range ps {
			if p+r == 0 {
				continue
			}
			if r == 0 {
				fmt.Fprintf(&b, `{"system": "h200x1-vm", "kind": "host_link_concurrency", "what": "sm_ll128_spin", "clock": "sm_clock64", "gpus": 1, "spin_blocks": %d, "spin_threads": 640, "gbps_total": 1, "gbps_per_gpu": 1}`+"\n", p)
				continue
			}
			fmt.Fprintf(&b, `{"system": "h200x1-vm", "kind": "host_link_concurrency", "what": "sm_read_beside_ll128_spin", "clock": "sm_clock64", "gpus": 1, "spin_blocks": %d, "spin_threads": 640, "blocks": %d, "threads": 640, "bytes_per_block": 4194304, "gbps_total": 1, "gbps_per_gpu": 1}`+"\n", p, r)
		}
	}
	recs, bad, err := trace.ReadJSONL(strings.NewReader(b.String()), "ll128_spin.jsonl", trace.ReadOptions{})
	require.NoError(t, err)
	require.Empty(t, bad)
	return recs
}

// The twins of tools/capture's ll128_spin (not yet captured): spinning
// LL128 receives load their lines of host memory again each round, and the
// readers beside them lose what those reloads take of the way to the host.
// The predictions are logged; the capture will say whether the hardware's
// spinning costs the readers that much (docs/VALIDATION.md: on two H200s a
// waiting receive's reloads at its loop's rate made NCCL over SHM far too
// slow).
func TestLL128SpinTwinsPredict(t *testing.T) {
	recs := spinRecords(t, []int{0, 1, 2, 4, 8, 16}, []int{0, 4, 16})
	v, err := Run(recs, Options{File: "ll128_spin.jsonl"})
	require.NoError(t, err)
	require.Len(t, v.Records, len(recs))
	alone, beside := map[int]float64{}, map[[2]int]float64{}
	byLine := recordsByLine(recs)
	for _, rr := range v.Records {
		r := byLine[rr.Line]
		require.Positive(t, rr.Predicted, "line %d", rr.Line)
		p := int(extraNumber(r, "spin_blocks"))
		if r.What == "sm_ll128_spin" {
			alone[p] = rr.Predicted
		} else {
			beside[[2]int{p, r.Blocks}] = rr.Predicted
		}
		t.Logf("%s: %d spinning, %d reading: %.1f GB/s", r.What, p, r.Blocks, rr.Predicted)
	}
	// more spinning blocks reload more, up to the way to the host
	assert.Greater(t, alone[2], alone[1])
	// the readers lose to the spinning blocks' reloads
	assert.Less(t, beside[[2]int{8, 16}], beside[[2]int{0, 16}])
	assert.Less(t, beside[[2]int{16, 4}], beside[[2]int{0, 4}])
}
