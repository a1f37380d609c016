package scenarios

import (
	"testing"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/topology"
)

// BenchmarkVerifyPass simulates one full verify pass (122 allreduces of
// 43,008 B with layer compute between them) on rtxpro6000x8-2numa per
// algorithm, reporting wall time per pass, events per second (the events
// of the periods advanced over in steady state counted as if they ran,
// see algos.RunOptions.EveryEvent) and skipped/op, the allreduces whose
// events did not run.
func BenchmarkVerifyPass(b *testing.B) { benchVerifyPass(b, false) }

// BenchmarkVerifyPassEveryEvent is BenchmarkVerifyPass running every
// event (no steady state advanced over): the engine's own speed.
func BenchmarkVerifyPassEveryEvent(b *testing.B) { benchVerifyPass(b, true) }

func benchVerifyPass(b *testing.B, every bool) {
	top, err := topology.Load("rtxpro6000x8-2numa")
	if err != nil {
		b.Fatal(err)
	}
	n := Layers * AllreducesPerLayer
	for _, name := range algos.Names() {
		s, err := algos.Plan(name, algos.Request{Top: top, Ranks: 8, Bytes: BytesPerAllreduce(3), DType: algos.BF16, Launch: hw.Graph})
		if err != nil {
			continue // cannot run on this machine
		}
		b.Run(name, func(b *testing.B) {
			var events uint64
			skipped := 0
			for b.Loop() {
				m, err := hw.New(top)
				if err != nil {
					b.Fatal(err)
				}
				res, err := algos.Run(m, s, algos.RunOptions{Iterations: n, Launch: hw.Graph, Gap: DefaultCompute(3) / 122, EveryEvent: every})
				if err != nil {
					b.Fatal(err)
				}
				events += res.Events
				skipped += res.Skipped
			}
			b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(skipped)/float64(b.N), "skipped/op")
		})
	}
}
