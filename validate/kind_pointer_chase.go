package validate

import (
	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// pointer_chase: one dependent load of local, peer or host memory, a read
// round trip.
func init() { Register(trace.KindPointerChase, pointerChaseTwin) }

func pointerChaseTwin(r trace.Record) (*Twin, error) {
	return &Twin{
		Group: "pointer_chase " + r.Target,
		Sim:   device(func(top *topology.Topology) (float64, error) { return PointerChaseNs(top, r.Target) }),
	}, nil
}
