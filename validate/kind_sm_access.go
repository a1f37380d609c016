package validate

import (
	"fmt"

	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// sm_access: one kernel of blocks × threads on GPU 0 reading or writing a
// buffer of host or peer memory, timed end to end. Local HBM streaming is
// not modelled.
func init() { Register(trace.KindSMAccess, smAccessTwin) }

func smAccessTwin(r trace.Record) (*Twin, error) {
	t := &Twin{Group: fmt.Sprintf("sm_access %s %s", r.Op, r.Target)}
	if r.Target == "local" {
		return nil, notModelled("local HBM streaming is not modelled")
	}
	write := r.Op == "write"
	t.Sim = device(func(top *topology.Topology) (float64, error) {
		volatile := r.Op == "read_only_loop" && r.Load == "volatile"
		gbps, err := SMAccessGBps(top, write, volatile, r.Target, r.Blocks, r.Threads, sim.Bytes(r.Bytes))
		if r.Op == "read_reduce" {
			gbps, err = ReduceLoopGBps(top, r.Target, r.Blocks, r.Threads, sim.Bytes(r.Bytes))
		}
		if err != nil {
			return 0, err
		}
		return float64(r.Bytes) / gbps / 1e3, nil // µs
	})
	return t, nil
}
