package validate

import (
	"fmt"
	"math"
	"slices"
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

// Readers beside blocks that keep reloading LL128 lines of host memory, on
// H100s (ll128_spin_threads.jsonl at 320, 640 and 1,024 threads, the
// perblock_rest runs at 640 on four instances): where both fill the link
// they split it by the bytes each block keeps in flight (a reader's one
// 16-B load a thread against the spinner's four), which the host queue's
// first-come-first-served mean value analysis gives (hw.mva): median
// 16.0 %, 27 of 84 beyond 20 % (each block served as one customer of a
// processor-shared queue: 31.6 %, 54), −40…+49 %, the model short of the
// readers where 8–16 spinners fill the link.
func TestReadersBesideLL128SpinSplitByWindows(t *testing.T) {
	var errs []float64
	for _, f := range []string{"ll128_spin_threads.jsonl", "perblock_rest.jsonl", "perblock_rest_2.jsonl", "perblock_rest_3.jsonl", "perblock_rest_4.jsonl"} {
		recs, _, err := trace.ReadJSONLFile("../testdata/h100x1-arsim/"+f, trace.ReadOptions{SkipBad: true})
		require.NoError(t, err)
		var readers []trace.Record
		for _, r := range recs {
			if r.What == "sm_read_beside_ll128_spin" {
				readers = append(readers, r)
			}
		}
		if len(readers) == 0 {
			continue
		}
		v, err := Run(readers, Options{File: f})
		require.NoError(t, err)
		for _, c := range v.Records {
			errs = append(errs, c.ErrorPct)
		}
	}
	require.Len(t, errs, 84)
	abs := make([]float64, len(errs))
	for i, e := range errs {
		abs[i] = math.Abs(e)
	}
	t.Logf("%d readers: median |error| %.1f %%, %d beyond 20 %%, %.0f…%+.0f %%", len(errs), median(abs), beyond(abs, 20), slices.Min(errs), slices.Max(errs))
	assert.Less(t, median(abs), 17.0)
	assert.LessOrEqual(t, beyond(abs, 20), 27)
}

// ll128_spin_2.jsonl: readers beside LL128 spinners at 256 and 512
// threads, on a thirtieth H100 instance, the model's values written down
// before the run (tools/capture/README.md, W1 and W2): the 20 readers
// beside one or more spinners at median 10.5 %, none beyond 20 %
// (−16…+1 %; the processor-shared queue would have given +5…+145 %), all
// four at 16 spinners short (W2).
func TestReadersBesideLL128SpinPredicted(t *testing.T) {
	const f = "../testdata/h100x1-arsim/ll128_spin_2.jsonl"
	v, recs := runFile(t, f)
	byLine := recordsByLine(recs)
	written := map[[3]int]float64{ // threads, readers, spinners: GB/s
		{256, 4, 1}: 11.4, {256, 4, 2}: 10.5, {256, 4, 4}: 8.4, {256, 4, 8}: 5.3, {256, 4, 16}: 2.8,
		{256, 16, 1}: 35.6, {256, 16, 2}: 30.9, {256, 16, 4}: 24.0, {256, 16, 8}: 16.2, {256, 16, 16}: 9.7,
		{512, 4, 1}: 18.1, {512, 4, 2}: 14.0, {512, 4, 4}: 9.1, {512, 4, 8}: 5.2, {512, 4, 16}: 2.8,
		{512, 16, 1}: 38.9, {512, 16, 2}: 32.4, {512, 16, 4}: 24.2, {512, 16, 8}: 16.1, {512, 16, 16}: 9.6,
	}
	var abs []float64
	for _, c := range v.Records {
		r := byLine[c.Line]
		p := int(extraNumber(r, "spin_blocks"))
		if r.What != "sm_read_beside_ll128_spin" || p == 0 {
			continue
		}
		w, ok := written[[3]int{r.Threads, r.Blocks, p}]
		require.True(t, ok, "line %d", c.Line)
		assert.InDelta(t, w, c.Predicted, 0.05, "line %d: the value written down", c.Line)
		abs = append(abs, math.Abs(c.ErrorPct))
		if p == 16 {
			assert.Negative(t, c.ErrorPct, "line %d: W2", c.Line)
		}
	}
	require.Len(t, abs, 20)
	assert.LessOrEqual(t, median(abs), 20.0, "W1")
	assert.Zero(t, beyond(abs, 20))
}
