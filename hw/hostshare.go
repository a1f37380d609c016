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
// the reads of plain loops and of NCCL's LL128 loop (sharesHost) take
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

// sharesHost reports whether read h takes part: a plain loop's (LoopNone,
// or LoopRanks over the ranks' buffers), as every capture that shows the
// share loads, and NCCL's LL128 loop's, whose four loads a thread queue
// with the others' (one H100, testdata/h100x1-arsim perblock_rest*.jsonl
// ll128_spin: four reader blocks beside 1–16 blocks reloading LL128 lines
// of host memory move 25.3 down to 4.4 GB/s, where sharing the link
// evenly between the two kernels gave 26.7 and 24.7). NCCL's LL and Simple
// loops keep their own cap beside the stores and queue for nothing: no
// capture shows theirs, and with them queued too the two-H200 captures'
// NCCL over SHM moves by a record or two either way.
func sharesHost(h *hostRead) bool {
	return h.k.Loop == LoopNone || h.k.Loop == LoopRanks || h.k.Loop == LoopLL128
}

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
		m.hostShared = make([]bool, m.Top.NumGPUs())
	}
	m.pruneHostWrites()
	m.pruneHostReads()
	var wOwn, window, rOwn float64
	var first *hostWrite
	for _, w := range m.hostWrites {
		if w.r == r {
			wOwn += float64(m.writeOwn(w))
			if first == nil {
				first = w
			}
		}
	}
	reads := m.queueHostReads(r)
	for _, h := range reads {
		window += h.window
		rOwn += h.queued
	}
	if first == nil || len(reads) == 0 {
		if m.hostShared[r] {
			// nothing to share now: every write back at its own cap
			for _, w := range m.hostWrites {
				if w.r == r {
					_, _ = m.Net.SetCap(w.f, w.id, w.own)
				}
			}
		}
		// the reads at what their blocks' queue leaves them
		m.hostShared[r] = len(reads) > 0
		for _, h := range m.hostReads {
			if h.r == r {
				c := h.own
				if h.f.Active() && sharesHost(h) && h.queued > 0 {
					c = sim.Rate(h.queued)
				}
				_, _ = m.Net.SetCap(h.f, h.id, c)
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
	for _, h := range reads {
		own := h.queued
		_, _ = m.Net.SetCap(h.f, h.id, sim.Rate(max(own*min(1, left/rOwn), own*1e-6)))
	}
}

// queueHostReads lists rank r's plain-loop reads of host memory under way
// (sharesHost) and sets each one's queued rate: what it moves when the
// blocks of all of them queue together for the way to the host. Each
// resident block is a customer of a closed queue (mean value analysis):
// it keeps its share of its read's bytes in flight (the window w), waits
// the read's round trip alone less its own service (the think time Z),
// and is served at the rate its read's route allows alone (C, the
// service D = w / C). One read: exact MVA over its n blocks,
//
//	R(k) = D·(1 + Q(k−1)),  X(k) = k / (Z + R(k)),  Q(k) = X(k)·R(k),
//
// the read's rate w·X(n); several: Schweitzer's approximation of it,
// 64 rounds from an even queue. A lone block keeps its own rate; many
// blocks reach C, as the fluid network gives; between, the blocks' loads
// wait for each other's. Measured on one H200 (testdata/h200x1-arsim
// read_count.jsonl, read_gpcs.jsonl: 1–16 reader blocks of 512 threads, one
// 16-B load a thread, alone): 5.7, 11.4, 22.0, 40.1, 49.1, 50.8 GB/s at 1,
// 2, 4, 8, 12, 16 blocks, where the queue gives 6.2, 12.2, 23.4, 40.9,
// 48.2, 49.7 and the fluid network alone 6.2, 12.4, 24.7, 49.4, 49.8, 49.8.
func (m *Machine) queueHostReads(r int) []*hostRead {
	reads := m.hostReadsOn[:0]
	for _, h := range m.hostReads {
		if h.r == r && h.f.Active() && sharesHost(h) {
			reads = append(reads, h)
		}
	}
	m.hostReadsOn = reads
	if len(reads) == 0 {
		return reads
	}
	// a class per read: n blocks, each a window of w bytes served in d
	// and thought over in z; x its blocks' windows a second
	cs := m.mvaScratch[:0]
	var key mvaKey
	for i, h := range reads {
		own, c, n := float64(h.own), h.route, h.blocks
		if own <= 0 {
			own = c // no cap of its own: the rate its route allows it alone
		}
		window := h.winFree // loadWindow, from the parts kept
		if h.src.Host && m.StoringBlocks(h.r) >= 1 {
			window = min(window, h.winBeside)
		}
		h.window = window
		cl := mvaClass{x: own, w: 1}
		if own > 0 && window > 0 && c > 0 && !math.IsInf(c, 1) {
			t := window / own // a block's window turns over alone in t
			w := window / n
			d := min(w/c, t)
			cl = mvaClass{n: n, w: w, d: d, z: t - d}
		}
		cs = append(cs, cl)
		if i < len(key) {
			key[i] = [3]float64{cl.n, cl.d, cl.z}
		}
	}
	m.mvaScratch = cs
	if len(cs) > len(key) {
		mva(cs)
	} else if x, ok := m.mvaRecall(key, len(cs)); ok {
		for i := range cs {
			if cs[i].n > 0 {
				cs[i].x = x[i]
			}
		}
	} else {
		mva(cs)
		m.mvaKeep(key, cs)
	}
	for i, h := range reads {
		h.queued = cs[i].x * cs[i].w
	}
	return reads
}

// writeOwn is a write's own cap, or where it has none the rate its route
// allows it.
func (m *Machine) writeOwn(w *hostWrite) sim.Rate {
	if w.own > 0 {
		return w.own
	}
	return m.routeRate(w.f.Spec.Route)
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

// mvaClass is one read's blocks in the queue for the way to the host
// (queueHostReads): n of them, each a window of w bytes, served in d and
// thought over in z (their round trip alone less d); x, the windows a
// second they turn over (n = 0: not queued, x kept); q, their queue.
type mvaClass struct{ n, w, d, z, x, q float64 }

// mvaKey is up to eight classes' n, d, z: a queue's answer is kept for
// the next time the same reads queue together (mvaRecall).
type mvaKey [8][3]float64

// mvaMemo is one queue's answer: its classes, their count and their x.
type mvaMemo struct {
	k mvaKey
	n int
	x [8]float64
}

// mvaMemos is how many answers a machine keeps, the oldest replaced first.
const mvaMemos = 32

// mvaRecall returns the answer kept for the n classes of k, if any.
func (m *Machine) mvaRecall(k mvaKey, n int) ([8]float64, bool) {
	for i := range m.mvaMemo {
		e := &m.mvaMemo[i]
		if e.n == n && e.k == k {
			return e.x, true
		}
	}
	return [8]float64{}, false
}

// mvaKeep keeps the answer cs for the classes of k.
func (m *Machine) mvaKeep(k mvaKey, cs []mvaClass) {
	e := mvaMemo{k: k, n: len(cs)}
	for i := range cs {
		e.x[i] = cs[i].x
	}
	if len(m.mvaMemo) < mvaMemos {
		m.mvaMemo = append(m.mvaMemo, e)
		return
	}
	m.mvaMemo[m.mvaNext] = e
	m.mvaNext = (m.mvaNext + 1) % mvaMemos
}

// mva sets each class's x: exact mean value analysis for one class,
// Schweitzer's approximation of it, 64 rounds from an even queue, for
// several. The queue is first come, first served: a block's window waits
// for the windows queued ahead of it, each its own class's service (the
// bytes ahead on the link), not for as many of its own. One class, or
// classes of one window, are served the same either way; where blocks
// keep different windows in flight (readers of one load a thread beside
// NCCL's LL128 loop of four), the link splits by their windows: H100
// ll128_spin_threads.jsonl and perblock_rest*.jsonl, readers beside 1–16
// spinning blocks, median 31.6 → 16.0 %, 54 → 27 of 84 beyond 20 %
// (processor sharing, each block served as one customer, gave the readers
// +3…+178 %; this gives −40…+49 %, short where the spinners fill the link).
func mva(cs []mvaClass) {
	if len(cs) == 1 {
		c := &cs[0]
		if c.n == 0 {
			return
		}
		q := 0.0
		for k := 1.0; k <= c.n; k++ {
			rt := c.d * (1 + q)
			c.x = k / (c.z + rt)
			q = c.x * rt
		}
		return
	}
	for i := range cs {
		cs[i].q = cs[i].n / 2
	}
	for range 64 {
		work := 0.0
		for i := range cs {
			work += cs[i].d * cs[i].q
		}
		for i := range cs {
			c := &cs[i]
			if c.n == 0 {
				continue
			}
			rt := c.d + work - c.d*c.q/c.n
			c.x = c.n / (c.z + rt)
			c.q = c.x * rt
		}
	}
}
