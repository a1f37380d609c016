package scenarios

import (
	"testing"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/topology"
)

// BenchmarkVerifyPass simulates one full verify pass (122 allreduces of
// 43,008 B with layer compute between them) on rtxpro6000x8-2numa per
// algorithm, reporting wall time per pass and simulated events per second.
func BenchmarkVerifyPass(b *testing.B) {
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
			for b.Loop() {
				m, err := hw.New(top)
				if err != nil {
					b.Fatal(err)
				}
				res, err := algos.Run(m, s, algos.RunOptions{Iterations: n, Launch: hw.Graph, Gap: DefaultCompute(3) / 122})
				if err != nil {
					b.Fatal(err)
				}
				events += res.Events
			}
			b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
