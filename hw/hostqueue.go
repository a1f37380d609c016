package hw

import (
	"math"

	"github.com/arsim/arsim/sim"
)

// SM loads of host memory wait behind the stores that the GPU's SMs have
// queued towards the host (measured on one H200, testdata/h200x1-arsim
// read_depth*.jsonl and read_span*.jsonl): while two or more blocks stream
// stores to host memory, a load's round trip grows by
// pcie.posted_wait_per_doubling for each doubling of the storing blocks
// counted from one, times the share that the bytes the stores sweep give
// (PostedWaitSpanShare: 1.2 µs alone; about 12, 24, 36 and 49 µs beside 2,
// 8, 32 and 131 blocks whose stores sweep 117 MiB or more; at 52.6 GB/s
// of stores either way, 2 SMs rewriting 16 KiB each kept a load waiting
// 1.6 µs, 131 striding across 1 MiB 27 µs), and while any block streams such stores
// a block keeps at most gpu.host_loads_beside_stores bytes of loads of
// host memory in flight (fitted beside 131; beside one storing block the
// loads keep 18–20 KB, read_depth_2.jsonl and _3). Beside one storing
// block a load waits pcie.posted_wait_one (0.17 µs, read_depth_2.jsonl's
// one-load block against itself alone): one block's stores keep the link
// busy without a queue building up behind them. A read under way takes its new
// rate cap when the storing blocks change (their stores start, or land):
// readSpec's cap with the blocks storing then, without the whole-iteration
// window (windowCap) that its first cap had.
//
// Streaming stores are Write and WriteFenced flows of plain loops
// (Kernel.Loop LoopNone) with no rate cap of their own and no fences
// among them (Kernel.StoresPerFence): a protocol loop's
// stores (NCCL's LL, LL128, Simple) are paced by its own steps, and small
// flag stores queue in the flag model (gpu.host_store_service).

// streamsToHost reports whether a write of kernel k to dst counts among
// the storing blocks.
func (m *Machine) streamsToHost(dst Mem, k *Kernel) bool {
	return dst.Host && m.Phys.PostedWaitPerDoubling > 0 && k.Streams()
}

// Streams reports whether k's stores stream: a plain loop's (LoopNone)
// with no rate cap of its own, no fences among them and not paced by its
// loads (PacedStores), the stores that SM loads of host memory queue
// behind when they go there.
func (k *Kernel) Streams() bool {
	return k.Loop == LoopNone && k.RateCap == 0 && k.StoresPerFence == 0 && !k.PacedStores && k.Blocks > 0
}

// storing adds GPU r's blocks of a streaming write of bytes to host
// memory, and the bytes their stores sweep (k.StoreSpan, else bytes),
// until done runs, and returns the done to use instead.
func (m *Machine) storing(r int, k *Kernel, bytes sim.Bytes, done func()) func() {
	if r < 0 || r >= m.Top.NumGPUs() {
		return done
	}
	if m.hostStoring == nil {
		m.hostStoring = make([]float64, m.Top.NumGPUs())
		m.hostStoreSpan = make([]sim.Bytes, m.Top.NumGPUs())
	}
	n := float64(min(k.Blocks, m.Phys.SMs)) * k.share()
	span := bytes
	if k.StoreSpan > 0 {
		span = k.StoreSpan
	}
	m.hostStoring[r] += n
	m.hostStoreSpan[r] += span
	m.recapHostReads(r)
	return func() {
		m.hostStoring[r] -= n
		m.hostStoreSpan[r] -= span
		if m.hostStoring[r] < 1e-9 {
			m.hostStoring[r] = 0
		}
		m.recapHostReads(r)
		if done != nil {
			done()
		}
	}
}

// hostRead is an SM read of host memory under way: its flow (while the
// record still has ID id) and what its cap is computed from. Records are
// reused (hostReadFree), each with its Started callback made once.
type hostRead struct {
	f       *sim.Flow
	id      sim.FlowID
	r       int
	src     Mem
	k       Kernel
	label   string
	started func(*sim.Flow)
	// storing: StoringBlocks(r) when the read's cap was computed; a read
	// whose flow starts after the storing blocks changed (it waited its
	// first request's way there) takes the cap they give then
	storing float64
	// own: the read's cap before it shares the GPU's host traffic with
	// streaming stores (hostshare.go)
	own sim.Rate
	// queued: the rate, bytes a second, its blocks keep while they queue
	// with the other reads' for the way to the host (queueHostReads)
	queued float64
	// window: its bytes in flight (loadWindow) when queued was set
	window float64
	// what queueHostReads needs of the read that does not change while it
	// runs, kept as it starts: the rate its route allows it alone
	// (routeRate), its resident blocks (their share of k's), its window
	// with no stores streaming beside it and the most it keeps while they
	// do (loadWindowFree, loadWindowBeside)
	route, blocks, winFree, winBeside float64
	// done: the read's Done where it shares (hostshare.go), made once:
	// the stores beside it take their share back, then userDone runs;
	// pending while it is still to run, dropped once pruned (the record
	// is reused when both hold)
	done     func()
	userDone func()
	pending  bool
	dropped  bool
}

// trackHostRead returns the record that keeps rank r's read of src by
// kernel k among the reads whose caps follow the storing blocks: its
// Started callback, and its Done where the read shares the GPU's host
// traffic (userDone, called from it).
func (m *Machine) trackHostRead(r int, src Mem, k Kernel, label string, userDone func()) *hostRead {
	var h *hostRead
	if n := len(m.hostReadFree); n > 0 {
		h = m.hostReadFree[n-1]
		m.hostReadFree = m.hostReadFree[:n-1]
	} else {
		h = new(hostRead)
		h.done = func() {
			ud := h.userDone
			h.userDone = nil
			m.shareHost(h.r)
			h.pending = false
			if h.dropped {
				h.f = nil
				m.hostReadFree = append(m.hostReadFree, h)
			}
			if ud != nil {
				ud()
			}
		}
		h.started = func(f *sim.Flow) {
			h.f, h.id = f, f.ID
			h.route = float64(m.routeRate(f.Spec.Route))
			th := max(h.k.Threads, 1)
			h.blocks = math.Max(1, math.Round(float64(m.ResidentThreads(h.k.Blocks, th)/th)*h.k.share()))
			h.winFree, h.winBeside = m.loadWindowFree(h.k), m.loadWindowBeside(h.k)
			if len(m.hostReads) >= 32 && len(m.hostReads)%32 == 0 {
				m.pruneHostReads()
			}
			m.hostReads = append(m.hostReads, h)
			h.own = f.Spec.Cap
			if m.StoringBlocks(h.r) != h.storing {
				m.recapHostRead(h)
			}
			m.shareHost(h.r)
		}
	}
	h.f, h.r, h.src, h.k, h.label, h.storing = nil, r, src, k, label, m.StoringBlocks(r)
	h.userDone, h.pending, h.dropped = userDone, m.hostShareOn(), false
	return h
}

// pruneHostReads drops the reads that have finished, their records kept
// for reuse.
func (m *Machine) pruneHostReads() {
	live := m.hostReads[:0]
	for _, h := range m.hostReads {
		switch {
		case h.f.ID == h.id && h.f.Active():
			live = append(live, h)
		case h.pending:
			h.dropped = true // reused once its Done has run
		default:
			h.f = nil
			m.hostReadFree = append(m.hostReadFree, h)
		}
	}
	clear(m.hostReads[len(live):])
	m.hostReads = live
}

// recapHostReads gives rank r's reads of host memory under way the caps
// that the blocks storing now give them.
func (m *Machine) recapHostReads(r int) {
	m.pruneHostReads()
	for _, h := range m.hostReads {
		if h.r == r {
			m.recapHostRead(h)
		}
	}
	m.shareHost(r)
}

// recapHostRead gives read h the cap that the blocks storing now give it.
func (m *Machine) recapHostRead(h *hostRead) {
	h.storing = m.StoringBlocks(h.r)
	// readSpec succeeded for this read when it started, and its caps are
	// finite rates, which SetCap takes
	if spec, _, _, err := m.readSpec(h.r, h.src, h.k, h.label); err == nil {
		h.own = spec.Cap
		_, _ = m.Net.SetCap(h.f, h.id, spec.Cap)
	}
}

// StoringBlocks is how many blocks of GPU r stream stores to host memory
// now (fractions where a kernel splits its blocks' stores among several
// memories, Kernel.Share).
func (m *Machine) StoringBlocks(r int) float64 {
	if r < 0 || r >= len(m.hostStoring) {
		return 0
	}
	return m.hostStoring[r]
}

// StoreSpan is the bytes that GPU r's streaming stores to host memory
// sweep together now (Kernel.StoreSpan, else each write's bytes).
func (m *Machine) StoreSpan(r int) sim.Bytes {
	if r < 0 || r >= len(m.hostStoreSpan) {
		return 0
	}
	return m.hostStoreSpan[r]
}

// HostLoadWait is what an SM load of host memory by GPU r waits now behind
// the stores queued towards the host, beyond its round trip alone
// (StoringBlocks n): none below one block; pcie.posted_wait_one beside one
// (a block's stores keep the link busy, with no queue building up behind
// them); from two on, pcie.posted_wait_per_doubling for each doubling
// from one block (1 + log2 n of them); either times the share that the
// stores' span gives (PostedWaitSpanShare).
func (m *Machine) HostLoadWait(r int) sim.Duration {
	n := m.StoringBlocks(r)
	if n < 1 {
		return 0
	}
	w := float64(m.Phys.PostedWaitOne)
	if n >= 2 {
		w = float64(m.Phys.PostedWaitPerDoubling) * (1 + math.Log2(n))
	}
	return sim.Duration(math.Round(w * m.PostedWaitSpanShare(m.StoreSpan(r))))
}

// StoreHalves says where a GPU's blocks streaming stores to host memory
// run among its SMs, relative to a block loading host memory
// (StoresBeside.StoresHalf): the zero value, where they run is not known (the
// count of storing blocks decides, HostLoadWait); else Own, the share of
// them in the loading SM's half. An H200's SMs fall in two halves of 66
// by a pattern of TPCs that varies by chip (testdata/h200x1-arsim/
// read_pairs.jsonl, read_halves.jsonl, read_octets.jsonl), and a load waits about twice as long behind stores
// from its own half as behind the other half's (read_readers.jsonl, from
// SMs in either half). Uneven, where all of them run in one half and
// stride together over one buffer: the round-robin shares their TPCs get
// do not interleave evenly in the stride's order, and a lone thread's load
// waits pcie.posted_wait_uneven_stride of its own half's wait, or
// pcie.posted_wait_uneven_stride_other of the other half's (a warp's
// pcie.posted_wait_uneven_stride_warp, _warp_other), where the stores
// span the whole of pcie.posted_wait_span_knee (validate's stride rule,
// from an H200's GPCs, testdata/h200x1-arsim/read_groups*.jsonl; striding
// across 8 MiB and 1 MiB the two levels are gone, read_groups_9.jsonl).
type StoreHalves struct {
	Known bool
	Own   float64
	// OwnTPCs is how many TPCs the storing blocks of the loading SM's half
	// run on (0: not known; their count of blocks stands for it).
	OwnTPCs int
	// StrideLevels: the stride rule speaks for them (whole TPCs of one
	// GPC, not the loading SM's, striding together over one buffer), so
	// that where they span the whole knee the wait is at one of its two
	// levels, the half's wait for two (even) or Uneven's share of it,
	// whatever their count.
	StrideLevels bool
	// StrideTPCs is how many TPCs the set has where StrideLevels: from
	// pcie.uneven_stride_large_tpcs up an uneven set's wait drops only
	// pcie.uneven_stride_large_depth of the way to the uneven level.
	StrideTPCs int
	Uneven     bool
	// Wide: the storing blocks stride together over one buffer.
	Wide bool
}

// StoresInHalves is where own storing blocks of the loading SM's half and
// other of the other half run; not known where there are none.
func StoresInHalves(own, other int) StoreHalves {
	if own < 0 || other < 0 || own+other == 0 {
		return StoreHalves{}
	}
	return StoreHalves{Known: true, Own: float64(own) / float64(own+other)}
}

// AllOwn, AllOther and Both say whether the storing blocks all run in the
// loading SM's half, all in the other, or in both.
func (h StoreHalves) AllOwn() bool   { return h.Known && h.Own >= 1 }
func (h StoreHalves) AllOther() bool { return h.Known && h.Own <= 0 }
func (h StoreHalves) Both() bool     { return h.Known && h.Own > 0 && h.Own < 1 }

// HostLoadWaitIn is HostLoadWait for a load whose GPU's storing blocks
// run where h says, relative to the loading SM, times the stores' span
// share: behind blocks of its own half on T TPCs (StoreHalves.OwnTPCs)
// pcie.posted_wait_own_half and pcie.posted_wait_own_half_per_doubling for
// each doubling of T from two, none below (read_halves.jsonl: a streaming
// block's round trip as beside two SMs behind both SMs of 2 TPCs, 1.9 µs
// longer behind 4, 6.1 behind 8, 7.5 behind 16; read_halves_4.jsonl: one
// SM of each of k TPCs as both SMs of k TPCs, k = 2 to 24), or of its k
// blocks where their TPCs are not known, behind
// blocks all of the other half pcie.posted_wait_other_half however many
// (8.1–9.0 µs behind 2 to 65 SMs); in both halves its own half's wait and
// then pcie.posted_wait_other_half_beside_own of the other half's (the
// whole of both was 14–19 % long on three chips), or the count's
// (HostLoadWait) where that is longer (beside 131 SMs). Below
// pcie.posted_wait_span_knee the halves' contrast shrinks with the span's
// share s (PostedWaitSpanShare): each half's wait keeps s of its difference
// from the two halves' mean ((own + other) / 2), before the whole is taken
// times s; at small spans both halves wait alike (read_halves_span.jsonl:
// against 128 MiB the other half's wait kept 0.60 of itself at each SM's
// own MiB where the own half's kept 0.42; the form chosen after seeing that
// file and read_groups_5.jsonl, where behind SMs each rewriting its own MiB
// the own half waited 0.8 and the other 1.3 of the model's without it, 2
// to 12 SMs). HostLoadWait where h is not known, below two storing
// blocks, or a half's wait is 0.
func (m *Machine) HostLoadWaitIn(r int, h StoreHalves) sim.Duration {
	w, ok := m.halvesWait(r, h, m.Phys.PostedWaitUnevenStrideWarp, m.Phys.PostedWaitUnevenStrideWarpOther, m.PostedWaitSpanShare(m.StoreSpan(r)))
	if !ok {
		return m.HostLoadWait(r)
	}
	return w
}

// halvesWait is HostLoadWaitIn's wait by the halves, and whether they
// decide it (false: the count's, HostLoadWait).
func (m *Machine) halvesWait(r int, h StoreHalves, uneven, unevenOther, share float64) (sim.Duration, bool) {
	own, other := float64(m.Phys.PostedWaitOwnHalf), float64(m.Phys.PostedWaitOtherHalf)
	n := m.StoringBlocks(r)
	if !h.Known || own <= 0 || other <= 0 || n < 2 {
		return 0, false
	}
	// below the knee the halves' contrast shrinks with the span's share:
	// each half's wait keeps that share of its difference from the two
	// halves' mean (read_halves_span.jsonl: the other half's wait fell less
	// with the span than the own half's)
	mid := (own + other) / 2
	own, other = mid+(own-mid)*share, mid+(other-mid)*share
	var w float64
	if h.Own > 0 {
		w = own + float64(m.Phys.PostedWaitOwnHalfPerDoubling)*m.ownDoublings(r, h)
	}
	// the stride rule's levels hold where the stores span the whole of
	// the streaming knee, whatever share the load takes of the span
	full := m.PostedWaitSpanShare(m.StoreSpan(r)) >= 1
	switch {
	case h.AllOwn() && h.Uneven && full && uneven > 0:
		// stores of share groups that do not interleave evenly in the
		// stride (pcie.posted_wait_uneven_stride, _warp)
		w *= m.unevenDepth(h, uneven)
	case h.AllOther() && h.Uneven && full && unevenOther > 0:
		w = other * m.unevenDepth(h, unevenOther)
	case h.AllOther():
		w = other
	case h.Both():
		// the own half's wait, then a share of the other half's
		// (pcie.posted_wait_other_half_beside_own)
		w += m.Phys.PostedWaitOtherHalfBesideOwn * other
	}
	hw := sim.Duration(math.Round(w * share))
	if h.Both() && m.HostLoadWait(r) >= hw {
		return 0, false
	}
	return hw, true
}

// ownDoublings is how many doublings from two the storing blocks of the
// loading SM's own half count (h.Own > 0): of the TPCs they run on, or
// where those are not known of the blocks; none below two, and none at the
// stride rule's levels (StoreHalves.StrideLevels, the stores spanning the
// whole knee).
func (m *Machine) ownDoublings(r int, h StoreHalves) float64 {
	k := h.Own * m.StoringBlocks(r)
	if h.OwnTPCs > 0 {
		k = float64(h.OwnTPCs)
	}
	if h.StrideLevels && m.PostedWaitSpanShare(m.StoreSpan(r)) >= 1 {
		k = 2
	}
	return math.Log2(max(k, 2) / 2)
}

// unevenDepth is the share f of the even level's wait that an uneven
// set's load waits (pcie.posted_wait_uneven_stride and its kin), or,
// from pcie.uneven_stride_large_tpcs TPCs up, the share that drops
// pcie.uneven_stride_large_depth of the way from 1 to f
// (read_groups_8.jsonl, read_groups_10.jsonl: uneven sets of five, six and
// seven TPCs wait near the levels' midpoint, of three and four at f).
func (m *Machine) unevenDepth(h StoreHalves, f float64) float64 {
	if n := m.Phys.UnevenStrideLargeTPCs; n > 0 && h.StrideTPCs >= n {
		return 1 - m.Phys.UnevenStrideLargeDepth*(1-f)
	}
	return f
}

// HostLoneLoadWaitIn is HostLoneLoadWait where the halves decide the wait
// (HostLoadWaitIn): a share of the warp's wait there,
// pcie.posted_wait_lone_load_halves where the stores span the whole of
// pcie.posted_wait_span_knee (a lone thread's chase waited 0.8–0.95 of a
// streaming block's wait beside 2 to 8 storing SMs of one half, and
// 0.83–0.87 beside a pair across the halves on three chips,
// read_groups*.jsonl), falling in proportion to the span's share
// (PostedWaitSpanShare) to pcie.posted_wait_lone_load_halves_span0 where
// that share is 0 (read_halves_span.jsonl: 0.98 of it at 128 MiB, 0.64 at
// 1 MiB, 0.54 at 32 KiB). Behind stores striding together the span's
// share, of the halves' wait and of this one, is the chase's own
// (chaseSpanShare): a chase's wait is full by 32–64 MiB where a streaming
// block's still grows (read_span_4.jsonl).
func (m *Machine) HostLoneLoadWaitIn(r int, h StoreHalves) sim.Duration {
	span := m.chaseSpanShare(r, h)
	w, ok := m.halvesWait(r, h, m.Phys.PostedWaitUnevenStride, m.Phys.PostedWaitUnevenStrideOther, span)
	if !ok {
		return m.HostLoneLoadWait(r)
	}
	full, none := m.Phys.PostedWaitLoneLoadHalves, m.Phys.PostedWaitLoneLoadHalvesSpan0
	if h.AllOther() && m.Phys.PostedWaitLoneLoadHalvesOther > 0 {
		// behind the other half's stores alone its own share
		// (pcie.posted_wait_lone_load_halves_other)
		full = m.Phys.PostedWaitLoneLoadHalvesOther
	}
	share := none + (full-none)*span
	if h.Own > 0 {
		// less of it for each doubling of its own half's storing TPCs
		// (pcie.posted_wait_lone_load_halves_per_doubling)
		share = max(0, share-m.Phys.PostedWaitLoneLoadHalvesPerDoubling*m.ownDoublings(r, h))
	}
	return sim.Duration(math.Round(share * float64(w)))
}

// chaseSpanShare is the span's share (PostedWaitSpanShare) for a lone
// thread's load behind stores that stride together over one buffer
// (StoreHalves.Wide): the streaming curve's up to
// pcie.posted_wait_span_part_chase, then rising in proportion to the
// span's doublings from there to the whole at
// pcie.posted_wait_span_knee_chase (the two set, the first below the
// second; else the streaming curve).
func (m *Machine) chaseSpanShare(r int, h StoreHalves) float64 {
	span := float64(m.StoreSpan(r))
	s := m.PostedWaitSpanShare(m.StoreSpan(r))
	knee, part := float64(m.Phys.PostedWaitSpanKneeChase), float64(m.Phys.PostedWaitSpanPartChase)
	if !h.Wide || part <= 0 || knee <= part || span <= part {
		return s
	}
	if span >= knee {
		return 1
	}
	at := m.PostedWaitSpanShare(sim.Bytes(part))
	return at + (1-at)*math.Log2(span/part)/math.Log2(knee/part)
}

// OwnSMStoreWait is what a load of host memory by GPU r waits, beyond
// HostLoadWait, when its SM also runs a block of the same launch streaming
// stores to host memory (StoresBeside.StoresOnItsSMs): pcie.posted_wait_own_sm for each of the
// GPU's storing blocks, as if each SM's queued stores drained at its share
// of the link (measured on one H200, testdata/h200x1-arsim
// read_cores*.jsonl: in one launch of two blocks an SM, a load from an SM
// whose other block stores waited 37–49 µs more than one from an SM that
// stores nothing beside 66 storing SMs, 56–76 µs more beside 131, a few
// µs beside 2–8, at both spans). None below one storing block.
func (m *Machine) OwnSMStoreWait(r int) sim.Duration {
	n := m.StoringBlocks(r)
	if n < 1 {
		return 0
	}
	return sim.Duration(math.Round(float64(m.Phys.PostedWaitOwnSM) * n))
}

// WriterOnSMShare is what a load of host memory waits behind the stores
// queued towards the host, wait in all, when its SM also runs a block of
// another kernel streaming stores there: pcie.posted_wait_writer_on_sm of
// it (measured on one H200, testdata/h200x1-arsim/chase_forms.jsonl: a
// chase kernel beside a writer kernel of 132 blocks, a block on every SM,
// waited 27.2 µs where beside 131, its SM its own, it waited 35.2; the
// chases beside 132 writer blocks of nine more files, 17–43 µs, are
// predicted). Not so for a block of the same launch on the SM
// (OwnSMStoreWait), which waits more. That the shared SM is the cause is
// not shown: beside 131 writer blocks chases pinned to writers' SMs and to
// the free one waited alike (chase_pinned.jsonl), 10 % below the count's
// form.
func (m *Machine) WriterOnSMShare(wait sim.Duration) sim.Duration {
	return sim.Duration(math.Round(m.Phys.PostedWaitWriterOnSM * float64(wait)))
}

// PostedWaitSpanShare is the share of the whole wait behind streaming
// stores (HostLoadWait) that a load waits when the stores sweep span
// bytes: all of it from pcie.posted_wait_span_knee up; below, each halving
// of the span takes 1 / pcie.posted_wait_span_doublings of it off, none
// left that many halvings down (measured on one H200,
// testdata/h200x1-arsim/read_span*.jsonl: beside 2 storing SMs a load
// waited 1.6 µs behind stores rewriting 32 KiB and 14.5 µs behind stores
// across 128 MiB, beside 131 27 and 43 µs behind 1 and 128 MiB, at the same
// 52.6 GB/s of stores). The knee or doublings 0: the whole wait at every
// span.
func (m *Machine) PostedWaitSpanShare(span sim.Bytes) float64 {
	knee, d := float64(m.Phys.PostedWaitSpanKnee), m.Phys.PostedWaitSpanDoublings
	switch {
	case knee <= 0 || d <= 0 || float64(span) >= knee:
		return 1
	case span <= 0:
		return 0
	}
	return min(1, max(0, 1-math.Log2(knee/float64(span))/d))
}

// HostLoneLoadWait is what a lone thread's load of host memory by GPU r
// (one 8-B word: a pointer chase) waits now behind the stores queued
// towards the host: pcie.posted_wait_lone_load of a warp's wait
// (HostLoadWait). A warp's 512-B load waits the whole of it
// (read_depth_5.jsonl: a warp's chase waits as a streaming block of 32 to
// 512 threads does, a lone thread's 0.6–0.8 of that).
func (m *Machine) HostLoneLoadWait(r int) sim.Duration {
	return sim.Duration(math.Round(m.Phys.PostedWaitLoneLoad * float64(m.HostLoadWait(r))))
}

// LoadedBesideStreams reports whether, since the machine was made, some
// SM read of host memory ran while its GPU streamed stores to host memory
// (StoringBlocks ≥ 1 as the read took its rate), whether or not the
// model's wait and cap (pcie.posted_wait_per_doubling,
// gpu.host_loads_beside_stores) then slowed it: the hardware's loads slow
// beside a single storing block too, which the model leaves out. A
// schedule whose program leaves its host loads and streaming stores
// unordered may still never run them at once; then no read of its run
// took its rate from this model.
func (m *Machine) LoadedBesideStreams() bool { return m.loadedBesideStreams }

// HostStreamsIdle reports whether no GPU streams stores to host memory
// now (the steady-state detector's snapshot does not hold the count).
func (m *Machine) HostStreamsIdle() bool {
	for _, n := range m.hostStoring {
		if n > 0 {
			return false
		}
	}
	return true
}

// HostReadQueueWait is what a single load of host memory by GPU r, whose
// round trip is alone, waits now behind the GPU's other loads of host
// memory under way, beyond alone: where they fill the link, a load waits
// for the bytes outstanding ahead of it. The reads outstanding are their
// windows (loadWindow), D in all, of which the GPU keeps
// N(1 − exp(−D/N)) at most (N: gpu.host_loads_outstanding; measured on
// one H200, testdata/h200x1-arsim/read_beside_write_11.jsonl: what
// 512 to 135,168 loading threads keep in flight follows their number, not
// their blocks, and stops at about 0.87 MB; read_beside_write_13 to _15:
// at the largest demands it is 447–880 KB by the loop and the address
// ranges its blocks read, which this one value does not follow); they move
// at their rates'
// sum, so they take (outstanding) / (sum of rates) to come back, and a load
// behind them that long. A read bound by its window, not by a link, comes
// back in its own round trip: no wait. Only reads that follow the storing
// blocks are listed (trackHostRead: pcie.posted_wait_per_doubling > 0).
// Beside two or more blocks streaming stores to host memory none: the
// stores fill the link (52.6 GB/s from two SMs, read_span.jsonl) and the
// other loads wait behind them in their own SMs' queues rather than ahead
// of this one on the link, so the load waits the stores' queue
// (HostLoadWait) alone (read_beside_write_9.jsonl: beside 2 to 132 writer
// blocks the chase stays within 0.58–1.58× of its wait with no reader
// while 1 to 132 reader blocks load, where beside one writer block it
// grows 1.75 to 14.7 µs with them, as beside readers alone).
// N is fitted on one chase beside 132 reader blocks
// (read_beside_write_9.jsonl); the dependent loads that take this wait are
// validate's pointer chases beside readers. A schedule's polls and flag
// loads of host memory do not take it yet.
func (m *Machine) HostReadQueueWait(r int, alone sim.Duration) sim.Duration {
	if m.StoringBlocks(r) >= 2 {
		return 0 // behind the stores only (above)
	}
	m.pruneHostReads()
	var window, rate float64
	for _, h := range m.hostReads {
		if h.r != r || !h.f.Active() {
			continue
		}
		window += m.loadWindow(h.r, h.src, h.k)
		rate += float64(h.f.Rate())
	}
	if window <= 0 || rate <= 0 {
		return 0
	}
	if n := float64(m.Phys.HostLoadsOutstanding); n > 0 {
		window = n * -math.Expm1(-window/n)
	}
	back := sim.Duration(math.Round(window / rate * float64(sim.Second)))
	return max(0, back-alone)
}
