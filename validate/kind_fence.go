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
	case "store+fence_sys", "st_release_sys":
		t.Sim = device(func(top *topology.Topology) (float64, error) { return FenceNs(top, r.Target) })
	case "16x16B+fence_sys":
		// The fence waits for the burst's stores to issue: the fence after
		// one store (FenceNs, that store's issue included) and the other 15.
		t.Sim = device(func(top *topology.Topology) (float64, error) {
			f, err := FenceNs(top, r.Target)
			if err != nil {
				return 0, err
			}
			b, err := StoreBurstNs(top, r.Target, 16, r.Threads)
			return f + b*15/16, err
		})
	case "16x16B":
		t.Sim = device(func(top *topology.Topology) (float64, error) { return StoreBurstNs(top, r.Target, 16, r.Threads) })
	default:
		return nil, notModelled("fence variant %q is not modelled (only system-scope fences and the 16-store bursts are)", r.Variant)
	}
	return t, nil
}
