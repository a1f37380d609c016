package scenarios

import (
	"fmt"
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

// BenchmarkSensitivities is explain --sensitivity: one allreduce of the
// verify pass (43,008 B) on rtxpro6000x8-2numa timed with each parameter
// moved alone, per algorithm; reports the runs per op.
func BenchmarkSensitivities(b *testing.B) {
	p, err := topology.Lookup("rtxpro6000x8-2numa")
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"pcie_ipc_islands", "nccl"} {
		b.Run(name, func(b *testing.B) {
			runs := 0
			for b.Loop() {
				_, ss, err := Sensitivities(b.Context(), SensitivityConfig{Preset: p, Params: p.DefaultParams(), Algo: name, Ranks: 8, Bytes: BytesPerAllreduce(3), Launch: hw.Graph})
				if err != nil {
					b.Fatal(err)
				}
				runs = 1
				for _, s := range ss {
					if s.Skipped == "" {
						runs++
					}
				}
			}
			b.ReportMetric(float64(runs), "runs/op")
		})
	}
}

// BenchmarkFirmness is verify --firmness on rtxpro6000x8-2numa at one and
// three tokens: every algorithm, then the contenders under every move.
func BenchmarkFirmness(b *testing.B) {
	p, err := topology.Lookup("rtxpro6000x8-2numa")
	if err != nil {
		b.Fatal(err)
	}
	for _, tokens := range []int{1, 3} {
		b.Run(fmt.Sprintf("tokens=%d", tokens), func(b *testing.B) {
			for b.Loop() {
				if _, err := Firmness(b.Context(), SensitivityConfig{Preset: p, Params: p.DefaultParams(), Ranks: 8, Bytes: BytesPerAllreduce(tokens), Launch: hw.Graph}, algos.Names()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
