package validate

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// spanPoint is one streaming block's round trip beside n storing SMs whose
// stores sweep span bytes together, and the same block's round trip alone
// in the same run (ns).
type spanPoint struct {
	n          int
	span       sim.Bytes
	rtt, alone float64
}

// spanPoints are the one-load streaming blocks of a read_span file that
// sel takes, each with the round trip alone that precedes it in the file
// (the capture measures each span's n = 0 first).
func spanPoints(t *testing.T, file string, sel func(trace.Record) bool) []spanPoint {
	t.Helper()
	var out []spanPoint
	alone := 0.0
	for _, r := range readOneGPU(t, file) {
		if r.Kind != trace.KindHostLinkConcurrency || r.Placement != "by_sm" || r.LoadsInFlight != 1 {
			continue
		}
		rtt := float64(r.Threads*16) / r.GbpsTotal // one 16-B load a thread in flight: a turn of threads × 16 B
		if r.WriteBlocks == 0 {
			alone = rtt
			continue
		}
		if sel(r) {
			require.Positive(t, alone, "%s line %d: no round trip alone before it", file, r.Line)
			out = append(out, spanPoint{n: r.WriteBlocks, span: writerSpan(r), rtt: rtt, alone: alone})
		}
	}
	return out
}

// postedWaitSpanFit is the least-squares fit of pcie.posted_wait_per_doubling
// (ns), pcie.posted_wait_span_knee (bytes) and pcie.posted_wait_span_doublings
// to points: the relative error of alone + b (1 + log2 n) share(span) against
// the measured round trip, b in closed form at each knee (2^(k/16) MiB,
// 1 MiB to 1 GiB) and doublings (4 to 20 in eighths) of a grid.
func postedWaitSpanFit(points []spanPoint) (b, knee, doublings float64) {
	best := math.Inf(1)
	for k := 0; k <= 160; k++ {
		kn := math.Exp2(float64(k)/16) * (1 << 20)
		for j := 0; j <= 128; j++ {
			d := 4 + float64(j)/8
			m := &hw.Machine{Phys: hw.Physics{PostedWaitSpanKnee: sim.Bytes(kn), PostedWaitSpanDoublings: d}}
			var num, den float64
			g := make([]float64, len(points))
			for i, p := range points {
				g[i] = (1 + math.Log2(float64(p.n))) * m.PostedWaitSpanShare(p.span)
				num += g[i] * (p.rtt - p.alone) / (p.rtt * p.rtt)
				den += g[i] * g[i] / (p.rtt * p.rtt)
			}
			bb := num / den
			var ss float64
			for i, p := range points {
				e := (p.alone+bb*g[i])/p.rtt - 1
				ss += e * e
			}
			if ss < best {
				best, b, knee, doublings = ss, bb, kn, d
			}
		}
	}
	return b, knee, doublings
}

// readSpanFitted: a record on the span parameters' fitted side
// (validate.Fits, read_span.jsonl's entry).
func readSpanFitted(r trace.Record) bool {
	f, _ := fitOf("h200x1-arsim/read_span.jsonl", r)
	return f != nil && f.Params[0] == "pcie.posted_wait_per_doubling"
}

// pcie.posted_wait_per_doubling, pcie.posted_wait_span_knee and
// pcie.posted_wait_span_doublings come from their fitted side
// (readSpanFitted: 24 streaming blocks), by postedWaitSpanFit, and cite
// it; the predicted side's errors are validate's to report.
func TestPostedWaitFollowsTheStoresSpan(t *testing.T) {
	p, err := topology.Lookup("h200x1")
	require.NoError(t, err)
	ps := p.DefaultParams()
	pts := spanPoints(t, "read_span.jsonl", readSpanFitted)
	require.Len(t, pts, 24)
	b, knee, d := postedWaitSpanFit(pts)
	t.Logf("posted_wait_per_doubling %.1f ns, knee %.0f B (%.1f MiB), doublings %.3f", b, knee, knee/(1<<20), d)
	for name, v := range map[string]float64{"pcie.posted_wait_per_doubling": b, "pcie.posted_wait_span_knee": knee, "pcie.posted_wait_span_doublings": d} {
		assert.InEpsilon(t, v, ps.Get(name), 0.001, "%s: its fitted side gives %.6g", name, v)
		par, _ := ps.Lookup(name)
		assert.Contains(t, par.Source, "testdata/h200x1-arsim/read_span.jsonl", name)
	}
}
