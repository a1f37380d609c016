package scenarios

import (
	"fmt"
	"testing"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/topology"
)

func TestZZProbe(t *testing.T) {
	p, _ := topology.Lookup("a800x8-2islands")
	top, _ := p.Build()
	for _, th := range []string{"128", "256"} {
		s, err := algos.Plan("nccl", algos.Request{Top: top, Ranks: 8, Bytes: 8 << 10 << b2i(th == "256"), DType: algos.BF16, Launch: hw.Graph, Opts: optsFor("nccl", map[string]string{"nthreads": th})})
		if err != nil {
			t.Fatal(err)
		}
		m, _ := hw.New(top)
		res, err := algos.Run(m, s, algos.RunOptions{Iterations: 8, Launch: hw.Graph, EveryEvent: true})
		if err != nil {
			t.Fatal(err)
		}
		prev := 0.0
		out := ""
		for _, e := range res.PerIter {
			out += fmt.Sprintf(" %.2f", e.Sub(0).Micros()-prev)
			prev = e.Sub(0).Micros()
		}
		fmt.Println("threads", th, out)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
