package hw

import (
	"github.com/arsim/arsim/sim"
)

// pullTwin: a one-shot's pull-and-reduce over World buffers, rank 0's own
// in local memory and the others in host memory, with the loop over ranks
// bounded at run time (as nvcc compiles it: runtimePullChain) or unrolled
// (its loads in the batches nvcc issues them: PerBlock.LoadWaits, read
// from the kernel's SASS; 0: one);
// the host buffers' loads share the GPU's link as reads. Lines a GPU
// wrote just before (PerBlock.Fresh: a one-shot's staging, host_shot) are
// read hostmem.fresh_line_saving sooner, as an LL loop's are.
func (m *Machine) pullTwin(rec PerBlock) (float64, error) {
	k, per, err := m.pullKernel(rec)
	if err != nil {
		return 0, err
	}
	return m.perIter(rec.Iters, func(done func()) error { return m.startPull(rec, k, per, done) })
}

// startPull starts a pull record's reads of its World − 1 host buffers
// (per bytes each) with kernel k, calling done as each ends.
func (m *Machine) startPull(rec PerBlock, k Kernel, per sim.Bytes, done func()) error {
	for q := 1; q < rec.World; q++ {
		if err := m.Read(0, HostMem(0), per, k, "pull", done); err != nil {
			return err
		}
	}
	return nil
}

// pullKernel is a pull record's kernel and the bytes it reads of each
// host buffer.
func (m *Machine) pullKernel(rec PerBlock) (Kernel, sim.Bytes, error) {
	per := launchBytes(rec, int64(rec.Blocks)*int64(rec.Threads)*16*int64(rec.Iters))
	// Unrolled, the loop is an algorithm's pull (hw.Kernel.ReduceLoop): its
	// first batch a reduce loop's iteration over PCIe, whose overheads
	// include its vector loads' extra, and each later batch another vector
	// load's round trip (Kernel.LoadWaits, readSpec).
	k := Kernel{Blocks: rec.Blocks, Threads: rec.Threads, LoadsInFlight: 1, ReduceLoop: true, LoadWaits: max(rec.LoadWaits, 1), Fresh: rec.Fresh, Ranks: rec.World}
	if rec.Bound == "runtime" {
		v, err := m.vectorRoundTrip(0, HostMem(0))
		if err != nil {
			return Kernel{}, 0, err
		}
		if rec.Fresh {
			v = max(v-m.Phys.FreshLineSaving, 1)
		}
		it := m.Phys.ReduceLoopOverhead + m.Phys.ReduceLoopExtraPCIe + runtimePullChain(rec.World, m.Phys.GPUMemLatency, v)
		k = Kernel{Blocks: rec.Blocks, Threads: rec.Threads, LoadsInFlight: 64,
			RateCap: sim.Rate(float64(rec.Blocks*rec.Threads*16) / it.Seconds()), RateCapIter: it}
	}
	return k, per, nil
}

// runtimePullChain is what one iteration of the capture's pull loop over
// world buffers waits when the loop's bound is known only at run time
// (pb_pull_runtime, rank 0's buffer local, the others in host memory):
// nvcc unrolls that loop by 4 (its SASS: four loads issued before the
// first add, then a remainder loop of one load at a time), so each group
// of 4 loads waits one host round trip v together and each load of the
// remaining world mod 4 waits its own (the local one gpuLat).
func runtimePullChain(world int, gpuLat, v sim.Duration) sim.Duration {
	d := sim.Duration(world/4) * v
	for r := 4 * (world / 4); r < world; r++ {
		if r == 0 {
			d += gpuLat
		} else {
			d += v
		}
	}
	return d
}
