package validate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// hostmem.changing_flag_wait and hostmem.changing_flag_cap from their
// fitted sides: each record's further pollers are what the model adds at
// a wait of 1 µs less what it adds at 0 (the cap out of reach); the wait
// is the least-squares slope through 0 of the measured less the model's
// without it over them (pingpong_sector.jsonl, 1–4 pairs), the cap the
// median of that excess where the line is full (pingpong_line.jsonl, 16–32
// pairs).
func TestChangingFlagWaitFromItsFittedSide(t *testing.T) {
	p, err := topology.Lookup("h200x1")
	require.NoError(t, err)
	model := func(recs []trace.Record, wait float64) []float64 {
		ps := p.DefaultParams()
		require.NoError(t, ps.Set("hostmem.changing_flag_wait", wait, "fit"))
		require.NoError(t, ps.Set("hostmem.changing_flag_cap", 1e6, "out of reach"))
		v, err := Run(recs, Options{Params: map[string]*topology.Params{"h200x1": ps}})
		require.NoError(t, err)
		require.Len(t, v.Records, len(recs))
		out := make([]float64, len(recs))
		for i, c := range v.Records {
			out[i] = c.Predicted
		}
		return out
	}
	sector := fittedOn(t, "pingpong_sector.jsonl", "hostmem.changing_flag_wait")
	require.Len(t, sector, 4)
	without, per := model(sector, 0), model(sector, 1000)
	var sxy, sxx float64
	for i, r := range sector {
		x := (per[i] - without[i]) / 1000 // further pollers
		sxy += x * (r.OneWayNs - without[i])
		sxx += x * x
	}
	want := p.DefaultParams()
	t.Logf("a further poller of changing flags: %.1f ns", sxy/sxx)
	assert.InDelta(t, sxy/sxx, want.Get("hostmem.changing_flag_wait"), 0.05)

	line := fittedOn(t, "pingpong_line.jsonl", "hostmem.changing_flag_cap")
	require.Len(t, line, 4)
	without = model(line, 0)
	excess := make([]float64, len(line))
	for i, r := range line {
		excess[i] = r.OneWayNs - without[i]
	}
	t.Logf("a full line's changing flags: %.0f ns (%v)", median(excess), excess)
	assert.InDelta(t, median(excess), want.Get("hostmem.changing_flag_cap"), 0.5)
}
