package validate

import (
	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// host_link_concurrency: several GPUs moving data to or from host memory at
// once, the total rate.
func init() { Register(trace.KindHostLinkConcurrency, hostLinkTwin) }

func hostLinkTwin(r trace.Record) (*Twin, error) {
	t := &Twin{Group: "host_link_concurrency " + r.What}
	per := r.BytesPerGPU
	if per == 0 {
		per = 256 << 20
		t.Note = "bytes_per_gpu absent: 256 MiB assumed (FORMAT.md)"
	}
	t.Sim = device(func(top *topology.Topology) (float64, error) {
		return HostLinkGBpsBlocks(top, r.What, r.GPUs, sim.Bytes(per), r.Blocks)
	})
	return t, nil
}
