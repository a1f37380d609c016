package hw

import (
	"fmt"
	"unsafe"

	"github.com/arsim/arsim/sim"
)

// flowMemo is the flow of a write or read (writeSpec, readSpec) kept for
// the rank's next transfer of the same kind with the same memory, kernel
// and fencing: a rank's transfers mostly repeat them (a ring's every
// write of a rank goes to the same peer with the same kernel, a push
// allreduce's to the same few, NCCL's alternate a few kernels).
type flowMemo struct {
	ok     bool
	fenced bool
	at     Mem // the write's destination, the read's source
	k      Kernel
	spec   sim.FlowSpec
	pr     *sim.PreparedRoute // spec.Route prepared (nil if the network refused it)
	delay  sim.Duration       // a read's wait before its flow starts
	pace   readPace           // a read's window iterations (windowCap)
	// A read's last hunkTail: tail for tailBytes bytes, when tailOK.
	// hunkTail depends on the rank, the kernel, the bytes and the
	// machine's fixed state only, and a rank's reads mostly repeat their
	// size.
	tailOK    bool
	tailBytes sim.Bytes
	tail      sim.Duration
}

// memoWays is how many transfers of each kind a rank keeps (the newest
// replaces the oldest).
const memoWays = 8

// flowMemos are a rank's kept transfers of one kind (as many as it has
// made, up to memoWays) and the next to replace.
type flowMemos struct {
	e    []flowMemo
	next int
	last int // the entry of the rank's last transfer of the kind
}

// The memos hold what writeSpec and readSpec return, which depends on
// their arguments and on the machine's fixed state only (cap and loop
// groups, made by a group's first transfer, are the same thereafter), so
// a memo gives what computing it again would. The route a memo holds is
// shared, which is safe since the network copies a flow's route when the
// flow starts.

// memoGet returns rank r's kept transfer of at, k and fenced among ms,
// or nil.
func memoGet(ms []*flowMemos, r int, at Mem, k *Kernel, fenced bool) *flowMemo {
	if uint(r) >= uint(len(ms)) || ms[r] == nil {
		return nil
	}
	// From the one after the last: a rank's transfers often go round
	// its peers in turn (staged_push's rounds).
	w := ms[r]
	for j, n := 0, len(w.e); j < n; j++ {
		i := w.last + 1 + j
		if i >= n {
			i -= n
		}
		if e := &w.e[i]; e.ok && e.at == at && e.fenced == fenced && sameKernel(&e.k, k) {
			w.last = i
			return e
		}
	}
	return nil
}

// memoPut keeps e among rank r's transfers in *ms (r a GPU rank), its
// route prepared, and returns the entry kept.
func (m *Machine) memoPut(ms *[]*flowMemos, r int, e flowMemo) *flowMemo {
	if pr, err := m.Net.Prepare(e.spec.Route); err == nil {
		e.pr = pr
	}
	if *ms == nil {
		*ms = make([]*flowMemos, m.Top.NumGPUs())
	}
	w := (*ms)[r]
	if w == nil {
		w = new(flowMemos)
		(*ms)[r] = w
	}
	e.ok = true
	if len(w.e) < memoWays {
		w.last = len(w.e)
		w.e = append(w.e, e)
		return &w.e[w.last]
	}
	w.last = w.next
	w.e[w.next] = e
	w.next = (w.next + 1) % memoWays
	return &w.e[w.last]
}

// writeFlow returns writeSpec(r, dst, *k, label, fenced), kept per rank,
// and its route prepared (nil when not kept).
func (m *Machine) writeFlow(r int, dst Mem, k *Kernel, label string, fenced bool) (sim.FlowSpec, *sim.PreparedRoute, error) {
	if e := memoGet(m.wmemo, r, dst, k, fenced); e != nil {
		return e.spec, e.pr, nil
	}
	spec, err := m.writeSpec(r, dst, *k, label, fenced)
	var pr *sim.PreparedRoute
	if err == nil && r >= 0 && r < m.Top.NumGPUs() {
		pr = m.memoPut(&m.wmemo, r, flowMemo{fenced: fenced, at: dst, k: *k, spec: spec}).pr
	}
	return spec, pr, err
}

// WriteAgain is Write (or WriteFenced) of rank r with the destination,
// kernel and fencing of the rank's last successful write: the caller
// knows they repeat (an executor comparing its own names for them), which
// spares comparing them. Without such a write it returns an error. It
// does not count its stores among the blocks streaming to host memory
// (hostqueue.go), where Write does: of a run of like streaming writes
// only the first counts. NCCL's forwarding sends over SHM are such a run
// (plain stores, no protocol loop of their own); counting every one moves
// NCCL over SHM on rtxpro6000x8-2numa from 32 MiB by +29 % and its
// two-H200 records from 6.6 to 12.8 % median |error|, counting none
// changes its time by 0.2 % at most: which is right is open.
func (m *Machine) WriteAgain(r int, bytes sim.Bytes, label string, done func()) error {
	if uint(r) >= uint(len(m.wmemo)) || m.wmemo[r] == nil {
		return fmt.Errorf("hw: rank %d writes again before a first write", r)
	}
	w := m.wmemo[r]
	e := &w.e[w.last]
	return m.launchWrite(r, e.spec, e.pr, &e.k, bytes, label, done)
}

// readFlow returns readSpec(r, src, *k, label), kept per rank, its route
// prepared and the entry that keeps it (both nil when not kept).
func (m *Machine) readFlow(r int, src Mem, k *Kernel, label string) (sim.FlowSpec, sim.Duration, readPace, *sim.PreparedRoute, *flowMemo, error) {
	if src.Host && m.StoringBlocks(r) >= 1 {
		// beside streaming stores to host memory (hostqueue.go): not kept
		spec, delay, pace, err := m.readSpec(r, src, *k, label)
		return spec, delay, pace, nil, nil, err
	}
	if e := memoGet(m.rmemo, r, src, k, false); e != nil {
		return e.spec, e.delay, e.pace, e.pr, e, nil
	}
	spec, delay, pace, err := m.readSpec(r, src, *k, label)
	if err == nil && r >= 0 && r < m.Top.NumGPUs() {
		e := m.memoPut(&m.rmemo, r, flowMemo{at: src, k: *k, spec: spec, delay: delay, pace: pace})
		return spec, delay, pace, e.pr, e, nil
	}
	return spec, delay, pace, nil, nil, err
}

// readTail is hunkTail(r, *k, bytes) for a read whose flow e keeps (nil:
// not kept), kept with e for its next read of as many bytes.
func (m *Machine) readTail(e *flowMemo, r int, k *Kernel, bytes sim.Bytes) (sim.Duration, error) {
	if e != nil && e.tailOK && e.tailBytes == bytes {
		return e.tail, nil
	}
	tail, _, _, err := m.hunkTail(r, *k, bytes)
	if err == nil && e != nil {
		e.tailOK, e.tailBytes, e.tail = true, bytes, tail
	}
	return tail, err
}

// kernelBytes is a Kernel's memory.
type kernelBytes = [unsafe.Sizeof(Kernel{})]byte

// sameKernel reports whether a and b are the same bytes: then they are
// equal (strings of the same address and length have the same contents).
// Equal kernels whose strings are stored apart compare unequal, which
// only costs the memo a miss; a field by field comparison costs about
// five times as much.
func sameKernel(a, b *Kernel) bool {
	return *(*kernelBytes)(unsafe.Pointer(a)) == *(*kernelBytes)(unsafe.Pointer(b))
}
