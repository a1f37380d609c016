package hw

import (
	"math"

	"github.com/arsim/arsim/sim"
)

// How a GPU's streaming stores to host memory and its SM loads of host
// memory share what its SMs move to and from the host, while both run.
//
// The GPU's SMs move at most pcie.sm_host_bandwidth (S) of loads and
// stores together. Where both want more, S goes to each in proportion to
// the bytes it counts: the stores pcie.store_share_bytes (B_w), the loads
// their bytes in flight (B_r, at most gpu.host_loads_outstanding as
// HostReadQueueWait counts them). A side that needs less than its share
// leaves the rest to the other. So the stores get
//
//	W = min(their own rate, max(S·B_w/(B_w+B_r), S − the loads' own rate))
//
// and the loads what the stores leave of S. Measured on one H200
// (testdata/h200x1-arsim): beside one block storing 49–51 GB/s, 4 to 12
// reader blocks move 13.3–16 GB/s whatever their loads alone could
// (read_count.jsonl, read_gpcs.jsonl, read_beside_write_20.jsonl); a
// writer of 1, 2 or 8 blocks stores 36–39 GB/s while 48 reader blocks run
// beside it and 23–29 beside 96–132, in their launch or beside their
// kernel alike (read_beside_write_20.jsonl, read_count.jsonl); beside 132
// writer blocks, whose queue holds the loads to a few GB/s, the stores
// keep their rate. B_w is fitted on the writer's rate beside reader
// kernels at one writer block (read_beside_write_20.jsonl); S and the
// loads' cap come from other files.
//
// Only streaming stores (Kernel.Streams, the ones loads queue behind) and
// plain loops' reads that follow the storing blocks (trackHostRead) take
// part; a rank without both keeps the caps its flows started with.

// hostWrite is a streaming write to host memory under way: its flow
// (while the record still has ID id), its rank and the cap it started
// with. Records are reused (hostWriteFree), each with its Started
// callback made once.
type hostWrite struct {
	f       *sim.Flow
	id      sim.FlowID
	r       int
	own     sim.Rate
	started func(*sim.Flow)
}

// trackHostWrite returns the Started callback that keeps rank r's
// streaming write among the writes that share the GPU's host traffic with
// its loads, with the cap it starts with as its own.
func (m *Machine) trackHostWrite(r int) func(*sim.Flow) {
	var w *hostWrite
	if n := len(m.hostWriteFree); n > 0 {
		w = m.hostWriteFree[n-1]
		m.hostWriteFree = m.hostWriteFree[:n-1]
	} else {
		w = new(hostWrite)
		w.started = func(f *sim.Flow) {
			w.f, w.id, w.own = f, f.ID, f.Spec.Cap
			m.hostWrites = append(m.hostWrites, w)
			m.shareHost(w.r)
		}
	}
	w.f, w.r = nil, r
	return w.started
}

// sharesHost reports whether read h takes part: a plain loop's (LoopNone),
// as every capture that shows the share loads; a protocol loop's (NCCL's
// LL, LL128, Simple) keeps its own cap beside the stores.
func sharesHost(h *hostRead) bool { return h.k.Loop == LoopNone }

// hostShareOn reports whether the share applies on this machine: it needs
// pcie.sm_host_bandwidth and pcie.store_share_bytes.
func (m *Machine) hostShareOn() bool {
	return m.Phys.SMHostRate > 0 && m.Phys.StoreShareBytes > 0
}

// shareHost gives rank r's streaming writes to host memory and its reads
// of host memory under way the caps their share gives them now (see
// above); with none of either, each flow keeps its own cap.
func (m *Machine) shareHost(r int) {
	if !m.hostShareOn() || r < 0 || r >= m.Top.NumGPUs() {
		return
	}
	if m.hostShared == nil {
		if len(m.hostWrites) == 0 {
			return // no streaming write has started: nothing to share
		}
		m.hostShared = make([]bool, m.Top.NumGPUs())
	}
	if len(m.hostWrites) == 0 && !m.hostShared[r] {
		return
	}
	m.pruneHostWrites()
	m.pruneHostReads()
	var wOwn, window, rOwn float64
	var first *hostWrite
	reads := 0
	for _, w := range m.hostWrites {
		if w.r == r {
			wOwn += float64(m.writeOwn(w))
			if first == nil {
				first = w
			}
		}
	}
	for _, h := range m.hostReads {
		if h.r == r && h.f.Active() && sharesHost(h) {
			window += m.loadWindow(h.r, h.src, h.k)
			rOwn += float64(m.readOwn(h))
			reads++
		}
	}
	if first == nil || reads == 0 {
		if m.hostShared[r] {
			// nothing to share now: every flow back at its own cap
			m.hostShared[r] = false
			for _, w := range m.hostWrites {
				if w.r == r {
					_, _ = m.Net.SetCap(w.f, w.id, w.own)
				}
			}
			for _, h := range m.hostReads {
				if h.r == r {
					_, _ = m.Net.SetCap(h.f, h.id, h.own)
				}
			}
		}
		return
	}
	m.hostShared[r] = true
	// the loads' bytes in flight, at most what the GPU keeps outstanding
	// (gpu.host_loads_outstanding, as HostReadQueueWait counts them)
	out := window
	if n := float64(m.Phys.HostLoadsOutstanding); n > 0 {
		out = n * -math.Expm1(-window/n)
	}
	// the stores: their own rate as their route allows it, at most the
	// larger of their share of S and what the loads' own rate leaves of it
	s := float64(m.Phys.SMHostRate)
	bw := float64(m.Phys.StoreShareBytes)
	w := min(wOwn, float64(m.routeRate(first.f.Spec.Route)), max(s*bw/(bw+out), s-rOwn))
	for _, x := range m.hostWrites {
		if x.r == r {
			_, _ = m.Net.SetCap(x.f, x.id, sim.Rate(float64(m.writeOwn(x))*min(1, w/wOwn)))
		}
	}
	// the loads: what the stores leave of S, in proportion to their own
	left := max(0, s-w)
	for _, h := range m.hostReads {
		if h.r == r && h.f.Active() && sharesHost(h) {
			own := float64(m.readOwn(h))
			_, _ = m.Net.SetCap(h.f, h.id, sim.Rate(max(own*min(1, left/rOwn), own*1e-6)))
		}
	}
}

// writeOwn is a write's own cap, or where it has none the rate its route
// allows it.
func (m *Machine) writeOwn(w *hostWrite) sim.Rate {
	if w.own > 0 {
		return w.own
	}
	return m.routeRate(w.f.Spec.Route)
}

// readOwn is a read's own cap, or where it has none the rate its route
// allows it.
func (m *Machine) readOwn(h *hostRead) sim.Rate {
	if h.own > 0 {
		return h.own
	}
	return m.routeRate(h.f.Spec.Route)
}

// routeRate is the payload rate route's resources allow a flow alone.
func (m *Machine) routeRate(route []sim.Hop) sim.Rate {
	r := math.Inf(1)
	for _, h := range route {
		if h.Weight > 0 {
			r = min(r, float64(m.Net.Resource(h.Res).Capacity)/h.Weight)
		}
	}
	return sim.Rate(r)
}

// pruneHostWrites drops the writes that have finished, their records kept
// for reuse.
func (m *Machine) pruneHostWrites() {
	live := m.hostWrites[:0]
	for _, w := range m.hostWrites {
		if w.f.ID == w.id && w.f.Active() {
			live = append(live, w)
		} else {
			w.f = nil
			m.hostWriteFree = append(m.hostWriteFree, w)
		}
	}
	clear(m.hostWrites[len(live):])
	m.hostWrites = live
}
