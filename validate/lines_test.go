package validate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// NCCL records are fitted as a line by file, group and the model's
// choice: the lines are recovered exactly from records on them, each
// side its own; host-paced records, records without a choice and
// choices over fewer than three sizes are left out, and so are records
// without a positive time.
func TestLineFits(t *testing.T) {
	rec := func(group, choice string, bytes int64, measured, simulated float64) Compared {
		return Compared{File: "t.txt", Group: group, NCCLChoice: choice, Unit: "us", bytes: bytes, Measured: measured, Predicted: simulated}
	}
	on := func(fixed, perMiB float64, bytes int64) float64 { return fixed + perMiB*float64(bytes)/(1<<20) }
	var recs []Compared
	for _, b := range []int64{512 << 10, 1 << 20, 4 << 20, 1 << 30} {
		recs = append(recs, rec("g", "ring/simple, 4 channels", b, on(60, 60, b), on(18, 63, b)))
	}
	recs = append(recs,
		rec("g", "ring/simple, 4 channels", 2<<20, 500, 500), // host-paced: left out
		rec("g", "ring/ll, 4 channels", 64<<10, 25, 20),      // two sizes only
		rec("g", "ring/ll, 4 channels", 128<<10, 38, 22),
		rec("g", "", 8<<10, 19, 17),                        // no choice: not NCCL
		rec("g", "ring/simple, 4 channels", 8<<20, 0, 500), // no time measured: no relative distance
	)
	recs[4].HostPaced = true
	got := LineFits(recs)
	require.Len(t, got, 1)
	l := got[0]
	assert.Equal(t, "ring/simple, 4 channels", l.Choice)
	assert.Equal(t, 4, l.Records)
	assert.Equal(t, 4, l.Sizes)
	assert.Equal(t, int64(512<<10), l.MinBytes)
	assert.Equal(t, int64(1<<30), l.MaxBytes)
	assert.InDelta(t, 60, l.MeasuredFixedUs, 1e-6)
	assert.InDelta(t, 60, l.MeasuredPerMiBUs, 1e-9)
	assert.InDelta(t, 18, l.SimulatedFixedUs, 1e-6)
	assert.InDelta(t, 63, l.SimulatedPerMiBUs, 1e-9)
	assert.InDelta(t, 0, l.MaxMeasuredOffPct, 1e-9)
}

// The line weighs records by their relative distance: a size a
// thousand times larger does not decide the fixed cost alone.
func TestRelativeLineWeighsRecordsAlike(t *testing.T) {
	xs := []float64{0.5, 1, 2, 1024}
	ys := []float64{90, 120, 180, 1024*60 + 60}
	ys[3] *= 1.01 // 1 % off at 1 GiB: 630 µs, which would move an unweighted line's fixed cost by hundreds
	a, b := relativeLine(xs, ys)
	assert.InDelta(t, 60, a, 2)
	assert.InDelta(t, 60, b, 1)
}
