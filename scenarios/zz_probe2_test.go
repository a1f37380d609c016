package scenarios

import (
	"fmt"
	"testing"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/topology"
)

func TestZZProbe3(t *testing.T) {
	p, _ := topology.Lookup("a800x8-2islands")
	top, _ := p.Build()
	s, err := algos.Plan("nccl", algos.Request{Top: top, Ranks: 8, Bytes: 8 << 10, DType: algos.BF16, Launch: hw.Graph, Opts: optsFor("nccl", nil)})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := hw.New(top)
	res, err := algos.Run(m, s, algos.RunOptions{Iterations: 6, Launch: hw.Graph, EveryEvent: true, Spans: true})
	if err != nil {
		t.Fatal(err)
	}
	// per rank: start of first op and end of last op per iteration
	type k struct{ r, it int }
	first := map[k]float64{}
	last := map[k]float64{}
	for _, sp := range res.Spans {
		kk := k{sp.Rank, sp.Iter}
		st, en := sp.Start.Sub(0).Micros(), sp.End.Sub(0).Micros()
		if v, ok := first[kk]; !ok || st < v {
			first[kk] = st
		}
		if en > last[kk] {
			last[kk] = en
		}
	}
	for it := 0; it < 6; it++ {
		out := ""
		for r := 0; r < 8; r++ {
			out += fmt.Sprintf(" r%d %.1f–%.1f", r, first[k{r, it}], last[k{r, it}])
		}
		fmt.Println("iter", it, out)
	}
	for _, it := range []int{0, 5} {
		for _, sp := range res.Spans {
			if sp.Rank != 4 || sp.Iter != it {
				continue
			}
			op := s.Programs[4][sp.Op]
			if op.Kind.String() == "signal" || op.Kind.String() == "reduce" {
				continue
			}
			base := first[k{4, it}]
			fmt.Printf("it %d op %3d %-8v %6.2f–%6.2f src %v dst %v\n", it, sp.Op, op.Kind, sp.Start.Sub(0).Micros()-base, sp.End.Sub(0).Micros()-base, op.Src, op.Dst)
		}
	}
}
