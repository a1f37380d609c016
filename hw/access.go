package hw

import (
	"fmt"
	"math"

	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
)

// Transfers: SM stores (Write) and loads (Read) and copy-engine copies
// (Copy), each a flow on the machine's network.

// Write streams bytes of SM stores from rank r to memory dst and calls done
// when the last byte has landed.
func (m *Machine) Write(r int, dst Mem, bytes sim.Bytes, k Kernel, label string, done func()) error {
	return m.write(r, dst, bytes, &k, label, done, false)
}

// WriteFenced streams bytes of SM stores from rank r to memory dst, the
// storing threads then fence (system scope), and calls done when the fence
// ends: FenceCost after the last store leaves the SM. Where the fence
// waits for the stores' round trip that is after they land, as Write and a
// fence; where it does not (gpu.fence_pcie_round_trip 0), the threads go on
// before the data lands, which it does one route latency after its last
// byte leaves.
func (m *Machine) WriteFenced(r int, dst Mem, bytes sim.Bytes, k Kernel, label string, done func()) error {
	return m.write(r, dst, bytes, &k, label, done, true)
}

// write is Write, or WriteFenced when fenced: then done runs the fence's
// cost after the last byte leaves instead of the route's latency.
func (m *Machine) write(r int, dst Mem, bytes sim.Bytes, k *Kernel, label string, done func(), fenced bool) error {
	spec, pr, err := m.writeFlow(r, dst, k, label, fenced)
	if err != nil {
		return err
	}
	if m.streamsToHost(dst, k) && bytes > 0 {
		done = m.storing(r, k, bytes, done)
		if m.hostShareOn() {
			spec.Started = m.trackHostWrite(r)
		}
	}
	return m.launchWrite(r, spec, pr, k, bytes, label, done)
}

// launchWrite starts a write of rank r whose flow is spec but for its
// label, bytes and callback (on prepared route pr, when not nil).
func (m *Machine) launchWrite(r int, spec sim.FlowSpec, pr *sim.PreparedRoute, k *Kernel, bytes sim.Bytes, label string, done func()) error {
	spec.Label, spec.Bytes, spec.Done = label, bytes, done
	if k.Loop == LoopSimple {
		// A copy loop's first stores wait for its first loads: a copy
		// takes at least one iteration (of as many loads as its bytes
		// need), however few bytes it moves.
		d, err := m.firstIteration(r, *k, bytes)
		if err != nil {
			return err
		}
		return m.launchInOrder(r, k, d, spec, pr, false)
	}
	return m.launchInOrder(r, k, 0, spec, pr, true)
}

// writeSpec is a write's flow but for its label, bytes and callback: a
// function of its arguments and the machine only (writeFlow keeps them per
// rank). label is for error messages.
func (m *Machine) writeSpec(r int, dst Mem, k Kernel, label string, fenced bool) (sim.FlowSpec, error) {
	if err := k.check("write", label); err != nil {
		return sim.FlowSpec{}, err
	}
	p, err := m.path(GPUMem(r), dst)
	if err != nil {
		return sim.FlowSpec{}, err
	}
	if err := m.p2pOn(p, r, dst, "write"); err != nil {
		return sim.FlowSpec{}, err
	}
	sms := min(k.Blocks, m.Phys.SMs)
	capr := sim.Rate(float64(sms)*k.share()) * m.Phys.SMStoreRate
	if k.Loop == LoopLL || k.Loop == LoopLL128 || k.Loop == LoopSimple {
		capr /= sim.Rate(k.wire()) // the SMs store wire bytes (LL's flags, LL128's flag words)
	}
	if p.smp && !dst.Host {
		capr = min(capr, m.Phys.SMPFlowCap)
	}
	route, capr, err := m.capped(m.route(p, smStore, k.wire(), false), capr, k)
	if err != nil {
		return sim.FlowSpec{}, err
	}
	if dst.Host {
		route = m.withSMHost(r, route)
	}
	if k.Loop != LoopRanks { // a pull loop bounds its loads, not the kernel's stores
		k.StoresOut = dst.Host || dst.Rank != r
		k.StoresToHost = dst.Host
		route, capr, err = m.loopBound(r, route, capr, k)
		if err != nil {
			return sim.FlowSpec{}, err
		}
	}
	class := 0
	if !dst.Host {
		class = p.destHB
	}
	spec := sim.FlowSpec{
		Kind: sim.Write, Class: class,
		Route: route, Cap: capr,
		Latency: p.latency + m.memLatency(dst),
	}
	if fenced {
		if spec.Latency, err = m.FenceCost(r, dst); err != nil {
			return sim.FlowSpec{}, err
		}
		// the kernel's other blocks keep loads of host memory in flight
		// (polling its barrier's flags, or pulling) while each fences; a
		// push to a peer's memory is not known to load it
		loads := GPUMem(r)
		if dst.Host {
			loads = dst
		}
		w, err := m.FenceBesidePolls(r, loads, max(k.Blocks, 1)-1)
		if err != nil {
			return sim.FlowSpec{}, err
		}
		spec.Latency += w
	}
	return spec, nil
}

// Read pulls bytes from memory src into rank r with SM loads and calls done
// when the last completion is back. The rate is capped at bytes in flight /
// round trip (Little's law).
func (m *Machine) Read(r int, src Mem, bytes sim.Bytes, k Kernel, label string, done func()) error {
	spec, delay, pace, pr, memo, err := m.readFlow(r, src, &k, label)
	if err != nil {
		return err
	}
	spec.Label, spec.Bytes, spec.Done = label, bytes, done
	spec.Cap = windowCap(spec.Cap, delay+spec.Latency, pace.iter, bytes)
	if src.Host && m.Phys.PostedWaitPerDoubling > 0 && r >= 0 && r < m.Top.NumGPUs() {
		h := m.trackHostRead(r, src, k, label, done)
		spec.Started = h.started
		if h.pending {
			// the stores beside it take their share back when it ends
			spec.Done = h.done
		}
	}
	if pace.chain > 0 {
		// Where a bandwidth sets the pace, the loads' chain still bounds
		// the read from below: each window of them takes the chain.
		f := windowCap(sim.Rate(float64(pace.window)/pace.chain.Seconds()), delay+spec.Latency, pace.chain, bytes)
		if f > 0 && (spec.Cap <= 0 || f < spec.Cap) {
			spec.Cap = f
		}
	}
	tail, err := m.readTail(memo, r, &k, bytes) // NCCL's reduceCopy's uneven passes
	if err != nil {
		return err
	}
	if k.LoopGroup != "" {
		// the group paces the bytes after the read's round trip, which
		// the busiest warp's first pass holds too
		tail = max(0, tail-delay-spec.Latency)
	}
	return m.launchInOrder(r, &k, delay+tail+m.loopStart(k, bytes), spec, pr, false)
}

// windowCap is the cap of a read of bytes whose rate cap is set by its
// loads in flight: each iteration of the reading loop waits, iter long,
// for a window of capr × iter bytes, so the read takes as many whole
// iterations as its bytes fill windows (a partial last one included), not
// the path's round trip rtt (its first window's wait, which the engine
// adds as latency) plus bytes at the cap. The flow's own cap is the one
// that, after rtt, moves bytes in what those iterations take beyond it; a
// read that rtt covers is not capped (the links still are). iter 0: the
// cap is not a window's (a bandwidth), kept as it is.
func windowCap(capr sim.Rate, rtt, iter sim.Duration, bytes sim.Bytes) sim.Rate {
	if iter <= 0 || capr <= 0 || bytes <= 0 {
		return capr
	}
	window := float64(capr) * iter.Seconds()
	// Whole iterations (less 1e-9: a whole window whose rate was rounded).
	left := math.Ceil(float64(bytes)/window-1e-9)*float64(iter) - float64(rtt)
	if left <= 0 {
		return 0
	}
	return sim.Rate(float64(bytes) / left * float64(sim.Second))
}

// pullChain is what an unrolled pull's iteration (Kernel.ReduceLoop over
// LoopNone) of rank r from src waits beyond the reduce loop's round trip:
// each buffer beyond two (Kernel.Ranks) costs gpu.vector_issue, as each
// further load costs a copy loop; and the compiled loop waits for its
// loads LoadWaits times, each wait after the first one more vector load's
// round trip to src (hostmem.fresh_line_saving less for lines written
// just before, as the pull twin's batches). 0 for other reads.
func (m *Machine) pullChain(r int, src Mem, k Kernel) (sim.Duration, error) {
	if !k.ReduceLoop || k.Loop != LoopNone {
		return 0, nil
	}
	var d sim.Duration
	if k.Ranks > 2 {
		d += sim.Duration(k.Ranks-2) * m.Phys.VectorIssue
	}
	if k.LoadWaits > 1 {
		v, err := m.vectorRoundTrip(r, src)
		if err != nil {
			return 0, err
		}
		if k.Fresh && src.Host {
			v = max(v-m.Phys.FreshLineSaving, 1)
		}
		d += sim.Duration(k.LoadWaits-1) * v
	}
	return d, nil
}

// readPace is how a read's loop paces it by windows of loads (windowCap):
// iter, the iteration whose window sets its cap (0: a bandwidth does);
// and where a bandwidth does although the loop waits for its loads more
// than once an iteration (Kernel.LoadWaits), the window of loads in
// flight and the chain of round trips each takes, a floor on the read.
type readPace struct {
	iter, chain sim.Duration
	window      sim.Bytes
}

// readSpec is a read's flow but for its label, bytes and callback, and
// the wait before it starts: a function of its arguments and the machine
// only (readFlow keeps them); it notes a read beside streaming stores
// (LoadedBesideStreams), which changes no result. label is for error
// messages.
func (m *Machine) readSpec(r int, src Mem, k Kernel, label string) (sim.FlowSpec, sim.Duration, readPace, error) {
	if err := k.check("read", label); err != nil {
		return sim.FlowSpec{}, 0, readPace{}, err
	}
	p, err := m.path(src, GPUMem(r))
	if err != nil {
		return sim.FlowSpec{}, 0, readPace{}, err
	}
	if err := m.p2pOn(p, r, src, "read"); err != nil {
		return sim.FlowSpec{}, 0, readPace{}, err
	}
	inflight := m.loadWindow(r, src, k)
	if src.Host && m.StoringBlocks(r) >= 1 {
		m.loadedBesideStreams = true
	}
	rtt, err := m.readRoundTrip(r, src, k, p)
	if err != nil {
		return sim.FlowSpec{}, 0, readPace{}, err
	}
	if k.beside().WriterOnItsSMs && src.Host && m.StoringBlocks(r) >= 1 {
		rtt = m.writerOnSMRoundTrip(r, k, rtt, inflight)
	}
	little := sim.Rate(inflight / rtt.Seconds())
	capr := little
	if p.smp && !src.Host {
		capr = min(capr, m.Phys.SMPFlowCap)
	}
	route, capr, err := m.capped(m.route(p, smLoad, k.wire(), true), capr, k)
	if err != nil {
		return sim.FlowSpec{}, 0, readPace{}, err
	}
	if src.Host {
		route = m.withSMHost(r, route)
		if k.OwnStoresHost > 0 {
			route = m.withOwnStores(route, p, k.OwnStoresHost)
		}
	}
	bound := capr
	route, capr, err = m.loopBound(r, route, capr, k)
	if err != nil {
		return sim.FlowSpec{}, 0, readPace{}, err
	}
	// The iteration whose window of loads sets the cap (windowCap): the
	// round trip of Little's law, or the loop's iteration; none when a
	// bandwidth sets it.
	var iter sim.Duration
	switch {
	case k.LoopGroup != "" && k.Loop != LoopNone: // the group's resource paces it
	case k.RateCapIter > 0 && k.CapGroup == "" && capr == k.RateCap:
		iter = k.RateCapIter
	case capr < bound:
		iter = sim.Duration(float64(m.loopWindow(k)) / float64(capr) * float64(sim.Second))
	case capr == little:
		iter = rtt
	}
	spec := sim.FlowSpec{
		Kind:  sim.Read,
		Route: route, Cap: capr,
		Latency: p.latency,
	}
	if k.Polled {
		spec.Latency = 0
		return spec, 0, readPace{}, nil
	}
	pace := readPace{iter: iter}
	if iter == 0 && k.ReduceLoop && k.LoadWaits > 1 && k.Loop == LoopNone {
		pace.chain, pace.window = rtt, sim.Bytes(inflight)
	}
	// The first request reaches the data one way plus a memory access in.
	return spec, p.latency + m.memLatency(src), pace, nil
}

// writerOnSMRoundTrip is the round trip of the loads of kernel k, whose
// blocks (all, or WriterOnSMBlocks of them) share their SMs with a writer
// kernel's blocks streaming stores to host memory, given their round trip
// rtt (readRoundTrip) and the kernel's bytes in flight: loads from such
// SMs are served one after another at gpu.host_loads_writer_on_sm_rate,
// each behind the shared blocks' other loads in flight. Where only some
// blocks share an SM, those wait pcie.posted_wait_writer_on_sm of the wait
// behind the stores and the others all of it (rtt), and the kernel, each
// block loading an equal share, goes at its slower blocks' pace.
func (m *Machine) writerOnSMRoundTrip(r int, k Kernel, rtt sim.Duration, inflight float64) sim.Duration {
	c := float64(m.Phys.HostLoadsWriterOnSMRate)
	on := k.beside().WriterOnSMBlocks
	if on <= 0 || on >= k.Blocks {
		if c > 0 {
			rtt += sim.Duration(math.Round(inflight / c * float64(sim.Second)))
		}
		return rtt
	}
	wait := m.kernelHostLoadWait(r, k)
	shared := rtt - wait + m.WriterOnSMShare(wait)
	if c > 0 {
		co := inflight * float64(on) / float64(k.Blocks)
		shared += sim.Duration(math.Round(co / c * float64(sim.Second)))
	}
	return max(rtt, shared)
}

// kernelHostLoadWait is what kernel k's loads of host memory on GPU r
// wait behind the stores queued towards the host: where its blocks lie in
// several places beside the storing SMs (StoresBeside.StoresHalfSlowest), the longest
// of their waits (HostLoadWaitIn).
func (m *Machine) kernelHostLoadWait(r int, k Kernel) sim.Duration {
	b := k.beside()
	wait := m.HostLoadWaitIn(r, b.StoresHalf)
	for _, h := range b.StoresHalfSlowest {
		if h.Known {
			wait = max(wait, m.HostLoadWaitIn(r, h))
		}
	}
	return wait
}

// readRoundTrip is how long one of kernel k's loads of src, over path p
// to rank r, takes to come back, the round trip of its window in Little's
// law: there and back and the memory's access, a vector load's extra over
// PCIe, the wait behind stores queued towards the host (hostqueue.go), a
// reduce loop's overhead and its chain of waits (pullChain).
func (m *Machine) readRoundTrip(r int, src Mem, k Kernel, p *path) (sim.Duration, error) {
	rtt := 2*p.latency + m.memLatency(src) + m.vectorLoadExtra(r, src, k, p)
	if src.Host && m.StoringBlocks(r) >= 1 {
		// behind the stores queued towards the host (hostqueue.go)
		wait := m.kernelHostLoadWait(r, k)
		b := k.beside()
		if b.WriterOnItsSMs && b.WriterOnSMBlocks == 0 {
			wait = m.WriterOnSMShare(wait)
		}
		rtt += wait
		if b.StoresOnItsSMs {
			rtt += m.OwnSMStoreWait(r)
		}
	}
	if k.ReduceLoop {
		rtt += m.Phys.ReduceLoopOverhead
		if !p.nvlink() {
			rtt += m.Phys.ReduceLoopExtraPCIe
		}
	}
	waits, err := m.pullChain(r, src, k)
	if err != nil {
		return 0, err
	}
	return rtt + waits, nil
}

// vectorLoadExtra is what splitting a warp's 512 bytes into read
// completions adds to the round trip of kernel k's loads of src over path
// p to rank r (gpu.vector_load_extra_pcie, over PCIe only), where each
// thread waits for its 16-byte loads before it issues the next ones: a
// volatile load's, or a plain loop's that sets the loads a thread keeps in
// flight (LoadsInFlight: each wait of the loop waits for the last of its
// loads' completions). Measured so on one H200: a block of 32, 128 or 512
// threads loading host memory one load a thread at a time turns an
// iteration over in 1.33 µs against a lone 8-byte load's 1.12
// (read_depth_6.jsonl), on every instance captured (5.0–6.3 GB/s a block
// of 512 threads alone, 23 files). With four and 3.2 loads a thread in
// flight (place_rw's compiled batches) one block of 512 threads moves
// 21.4–22.4 and 17.7–18.3 GB/s (read_depth_*.jsonl, chase_forms.jsonl):
// the round trip with the split, not without it (29.3 and 23.4). A reduce
// loop's overheads were measured with it included; NCCL's and the copy
// loops' (LoopSimple, LoopLL, LoopLL128) hold their own round trips.
func (m *Machine) vectorLoadExtra(r int, src Mem, k Kernel, p *path) sim.Duration {
	if !src.Host && src.Rank == r || p.nvlink() {
		return 0
	}
	if k.Volatile || (k.Loop == LoopNone && !k.ReduceLoop && k.LoadsInFlight >= 1) {
		return m.Phys.VectorLoadExtraPCIe
	}
	return 0
}

// loadWindow is the bytes of loads of src that kernel k on rank r keeps
// in flight: each resident thread's 16-byte loads (one for volatile
// loads, k.LoadsInFlight where set, an LL128 thread's four, an unrolled
// Simple copy's Unroll, else gpu.loads_in_flight), at most
// gpu.host_loads_beside_stores a block while loads of host memory wait
// behind the GPU's streaming stores (hostqueue.go).
func (m *Machine) loadWindow(r int, src Mem, k Kernel) float64 {
	inflight := m.loadWindowFree(k)
	if src.Host && m.StoringBlocks(r) >= 1 {
		inflight = min(inflight, m.loadWindowBeside(k))
	}
	return inflight
}

// loadWindowFree is loadWindow where no stores stream beside the loads.
func (m *Machine) loadWindowFree(k Kernel) float64 {
	loads := m.Phys.LoadsInFlight
	switch {
	case k.Volatile:
		loads = 1
	case k.LoadsInFlight > 0:
		loads = k.LoadsInFlight
	case k.Loop == LoopLL128:
		// Each thread loads its 64 bytes of the warp's 128-byte lines at
		// once: four 16-byte loads in flight (prims_ll128.h).
		loads = ll128DataPerThread * 128 / 120 / 16
	case k.Loop == LoopSimple && k.Unroll > 0:
		// An unrolled copy issues its Unroll loads per source before it
		// uses them (NCCL's reduceCopy): Unroll 16-byte loads in flight.
		loads = float64(k.Unroll)
	}
	return float64(m.ResidentThreads(k.Blocks, k.Threads)) * 16 * loads * k.share()
}

// loadWindowBeside is the most that kernel k's blocks keep in flight of
// loads of host memory while blocks of their GPU stream stores there
// (gpu.host_loads_beside_stores; +Inf where that is 0: no limit).
func (m *Machine) loadWindowBeside(k Kernel) float64 {
	if c := m.Phys.HostLoadsBesideStores; c > 0 {
		return float64(min(k.Blocks, m.Phys.SMs)) * float64(c) * k.share()
	}
	return math.Inf(1)
}

// loopWindow is what kernel k's loop moves per iteration, payload bytes
// over its resident blocks: each thread's 16-byte loads (Unroll of them
// in a Simple loop), an LL line's 8 bytes, an LL128 thread's share of
// its warp's lines.
func (m *Machine) loopWindow(k Kernel) sim.Bytes {
	per := 16.0
	switch k.Loop {
	case LoopSimple:
		per *= float64(max(k.Unroll, 1))
	case LoopLL:
		per = 8
	case LoopLL128:
		per = ll128DataPerThread
	}
	return sim.Bytes(float64(m.ResidentThreads(k.Blocks, k.Threads)) * k.share() * per)
}

// CopyDir is the direction of a copy-engine transfer.
type CopyDir uint8

// Copy directions.
const (
	H2D CopyDir = iota
	D2H
	P2P
)

// String returns h2d, d2h or p2p.
func (d CopyDir) String() string { return [...]string{"h2d", "d2h", "p2p"}[d] }

// Copy runs a copy-engine transfer of bytes owned by rank r: H2D reads the
// rank's NUMA-local host memory, D2H writes it, P2P writes to peer. done
// runs when the last byte has landed.
func (m *Machine) Copy(r int, dir CopyDir, peer int, bytes sim.Bytes, label string, done func()) error {
	ph := &m.Phys
	host := HostMem(m.LocalSocket(r))
	switch dir {
	case H2D:
		p, err := m.path(host, GPUMem(r))
		if err != nil {
			return err
		}
		rtt := 2*p.latency + ph.HostMemLatency
		spec := sim.FlowSpec{Label: label, Kind: sim.Copy, Route: m.route(p, ceXfer, 1, true), Bytes: bytes,
			Cap: sim.Rate(ph.CEWindow / rtt.Seconds()), Latency: p.latency, Done: done}
		return m.startAfter(ph.CESetup+p.latency+ph.HostMemLatency, spec, nil)
	case D2H:
		p, err := m.path(GPUMem(r), host)
		if err != nil {
			return err
		}
		spec := sim.FlowSpec{Label: label, Kind: sim.Copy, Route: m.route(p, ceXfer, 1, false), Bytes: bytes,
			Latency: p.latency + ph.HostMemLatency, Done: done}
		return m.startAfter(ph.CESetup, spec, nil)
	case P2P:
		if err := m.p2pCheck(r, GPUMem(peer), "copy to"); err != nil {
			return err
		}
		p, err := m.path(GPUMem(r), GPUMem(peer))
		if err != nil {
			return err
		}
		setup := ph.CEP2PSetup
		spec := sim.FlowSpec{Label: label, Kind: sim.Copy, Route: m.route(p, ceXfer, 1, false), Bytes: bytes,
			Latency: p.latency + ph.GPUMemLatency, Done: done}
		if p.smp {
			spec.Cap = ph.SMPFlowCap
		}
		return m.startAfter(setup, spec, nil)
	}
	return fmt.Errorf("hw: copy %s: unknown direction %d", label, dir)
}

// startAfter starts spec's flow d from now (on prepared route pr, when
// not nil).
func (m *Machine) startAfter(d sim.Duration, spec sim.FlowSpec, pr *sim.PreparedRoute) error {
	if spec.Bytes < 0 {
		return fmt.Errorf("hw: %s: bytes must be ≥ 0, got %d", spec.Label, spec.Bytes)
	}
	m.launchAfter(d, &spec, pr)
	return nil
}

// LoadBatches is, for each GPU r, how many bytes of kernel k's loads of
// memory at[r] come back to it together: the loads it keeps in flight
// (their window), at most what its rate alone returns in one of their
// round trips (each read runs alone on one fresh machine, one after
// another). A loop that stores each loaded element in the iteration that
// loads it (algos' fused writes) has the stores of its last batch still to
// issue when its loads end: the rest went out while it loaded.
func LoadBatches(top *topology.Topology, at []Mem, k Kernel) ([]sim.Bytes, error) {
	m, err := New(top)
	if err != nil {
		return nil, err
	}
	out := make([]sim.Bytes, len(at))
	for r, a := range at {
		p, err := m.path(a, GPUMem(r))
		if err != nil {
			return nil, err
		}
		rtt, err := m.readRoundTrip(r, a, k, p)
		if err != nil {
			return nil, err
		}
		perPs, err := m.readAlone(r, a, k)
		if err != nil {
			return nil, err
		}
		out[r] = sim.Bytes(min(m.loadWindow(r, a, k), perPs*float64(rtt)))
	}
	return out, nil
}
