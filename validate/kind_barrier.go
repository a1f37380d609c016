package validate

import (
	"fmt"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// barrier: a kernel whose blocks meet their peers in barriers_per_launch
// barriers in a row, replayed in a CUDA graph: the time per launch.
func init() { Register(trace.KindBarrier, barrierTwin) }

func barrierTwin(r trace.Record) (*Twin, error) {
	t := &Twin{Group: fmt.Sprintf("barrier %s stride %d", r.Barrier, r.StrideWords)}
	if r.World < 2 {
		return nil, badRecord("a barrier needs two ranks or more")
	}
	if r.Launch != "" && r.Launch != trace.LaunchCUDAGraph {
		return nil, notModelled("only barrier kernels replayed in CUDA graphs are modelled")
	}
	atomic := r.Barrier == "cas"
	t.Note = "per launch: the graph gap, the kernel prologue and barriers_per_launch block barriers; where the signal slots lie is not modelled"
	t.Sim = device(func(top *topology.Topology) (float64, error) {
		return BarrierKernelUs(top, r.World, r.Blocks, r.Threads, r.BarriersPerLaunch, atomic)
	})
	return t, nil
}

// BarrierKernelUs is the time per launch, in µs, of back-to-back graph
// launches of a kernel of blocks × threads on world GPUs whose blocks meet
// their peers in nb barriers in a row (tools/capture barrier):
// compare-and-swap tokens when atomic, epoch flags otherwise.
func BarrierKernelUs(top *topology.Topology, world, blocks, threads, nb int, atomic bool) (float64, error) {
	if world < 2 || world > top.NumGPUs() {
		return 0, fmt.Errorf("validate: barrier of %d ranks: %s has %d GPUs", world, top.Name, top.NumGPUs())
	}
	b := algos.NewBuilder("barrier", world, 0, 1)
	deps := b.Launches()
	k := hw.Kernel{Blocks: blocks, Threads: threads}
	for i := 0; i < nb; i++ {
		name := fmt.Sprintf("barrier%d", i)
		if atomic {
			deps = b.AtomicBarrier(name, 1, k, "barrier", deps)
		} else {
			deps = b.Barrier(name, 1, k, "barrier", deps)
		}
	}
	m, err := hw.New(top)
	if err != nil {
		return 0, err
	}
	res, err := algos.Run(m, b.Schedule(), algos.RunOptions{Iterations: iterations, Launch: hw.Graph})
	if err != nil {
		return 0, err
	}
	return res.SteadyUs(), nil
}
