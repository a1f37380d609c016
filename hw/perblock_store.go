package hw

import "github.com/arsim/arsim/sim"

// storeLoopTwin runs a loop of kernel k storing data to host memory over
// iters iterations and returns its time per iteration by its blocks'
// clocks (storeLoopEnd).
func (m *Machine) storeLoopTwin(iters int, data sim.Bytes, k Kernel, fence, label string) (float64, error) {
	if _, err := m.perIter(iters, func(done func()) error { return m.Write(0, HostMem(0), data, k, label, done) }); err != nil {
		return 0, err
	}
	end, err := m.storeLoopEnd(sim.Duration(m.Eng.Now()), data, k, fence, m.heldStores(iters))
	return nsOf(end) / float64(iters), err
}

// heldStores is how many bytes of a launch's stores to host memory its
// blocks issue without waiting for the link: pcie.first_burst_held when
// the launch is one iteration (measured on one H200, store_burst.jsonl:
// one iteration of 2 MiB from any number of blocks ends in one
// iteration's time, 4.3 MB waits for what the link moves beyond about
// 2.8 MB), pcie.posted_write_buffer once its blocks loop (a second
// iteration waits for nearly all of it).
func (m *Machine) heldStores(iters int) sim.Bytes {
	if iters == 1 && m.Phys.FirstBurstHeld > 0 {
		return m.Phys.FirstBurstHeld
	}
	return m.Phys.PostedWriteBuffer
}

// storeLoopEnd is when a loop of kernel k storing data to host memory
// ends by its blocks' clocks, its last stores landing at land: the stores
// still held (held bytes: heldStores) are not waited for, so a loop the link
// holds back ends that many bytes (at the loop's landing rate) before its
// last stores land, never before it has issued them all at its own rate;
// a loop ending with a system-scope fence (fence "sc" or "acq_rel") waits
// for them, and the fence once they have landed.
func (m *Machine) storeLoopEnd(land sim.Duration, data sim.Bytes, k Kernel, fence string, held sim.Bytes) (sim.Duration, error) {
	if fence == "sc" || fence == "acq_rel" {
		f, err := m.FenceAfterLanding(0, HostMem(0))
		return land + f, err
	}
	if data <= 0 || held <= 0 {
		return land, nil
	}
	early := sim.Duration(float64(land) * min(1, float64(held)/(float64(data)*max(k.wire(), 1)))) // the buffer holds wire bytes (LL's flags too)
	out := k
	out.StoresOut, out.StoresToHost = true, true // its stores leave the GPU, to host memory (as Write marks them)
	rate, err := m.LoopRate(0, out)
	if err != nil || rate <= 0 {
		return land - early, err
	}
	if m.Phys.SMStoreRate > 0 { // stores that leave the GPU: gpu.sm_store_bandwidth an SM (writeSpec)
		rate = min(rate, sim.Rate(float64(min(max(k.Blocks, 1), m.Phys.SMs))*k.share()*float64(m.Phys.SMStoreRate)/k.wire()))
	}
	issue, err := sim.FromSeconds(float64(data) / float64(rate))
	if err != nil {
		return 0, err
	}
	first, err := m.firstIteration(0, k, data)
	if err != nil {
		return 0, err
	}
	return max(land-early, issue+first), nil
}
