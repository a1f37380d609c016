package validate

import (
	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// fence: a system-scope fence after stores to local, peer or host memory.
// Only system-scope fences are modelled.
func init() { Register(trace.KindFence, fenceTwin) }

func fenceTwin(r trace.Record) (*Twin, error) {
	t := &Twin{Group: "fence " + r.Variant + " " + r.Target}
	switch r.Variant {
	case "store+fence_sys", "st_release_sys", "16x16B+fence_sys":
	default:
		return nil, notModelled("fence variant %q is not modelled (only system-scope fences are)", r.Variant)
	}
	t.Sim = device(func(top *topology.Topology) (float64, error) { return FenceNs(top, r.Target) })
	return t, nil
}
