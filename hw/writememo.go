package hw

import (
	"unsafe"

	"github.com/arsim/arsim/sim"
)

// writeMemo is the flow of a write (writeSpec) kept for the next write
// of the rank to the same destination with the same kernel: a rank's
// writes mostly repeat them (a ring's every write of a rank goes to the
// same peer with the same kernel, a push allreduce's to the same few).
type writeMemo struct {
	ok     bool
	fenced bool
	dst    Mem
	k      Kernel
	spec   sim.FlowSpec
}

// memoWays is how many writes a rank keeps (the newest replaces the
// oldest).
const memoWays = 8

// writeMemos are a rank's kept writes and the next to replace.
type writeMemos struct {
	e    [memoWays]writeMemo
	next int
}

// writeFlow returns writeSpec(r, dst, *k, label, fenced), from rank r's
// memo when it holds a write with the same destination, kernel and
// fencing. writeSpec depends on its arguments and on the machine's fixed
// state only (its cap and loop groups, made by a group's first transfer,
// are the same thereafter), so the memo gives what computing it again
// would; the route it holds is shared, which is safe since the network
// copies a flow's route when the flow starts.
func (m *Machine) writeFlow(r int, dst Mem, k *Kernel, label string, fenced bool) (sim.FlowSpec, error) {
	if r < 0 || r >= m.Top.NumGPUs() {
		return m.writeSpec(r, dst, *k, label, fenced)
	}
	if m.wmemo == nil {
		m.wmemo = make([]*writeMemos, m.Top.NumGPUs())
	}
	w := m.wmemo[r]
	if w == nil {
		w = new(writeMemos)
		m.wmemo[r] = w
	}
	for i := range w.e {
		if e := &w.e[i]; e.ok && e.dst == dst && e.fenced == fenced && sameKernel(&e.k, k) {
			return e.spec, nil
		}
	}
	spec, err := m.writeSpec(r, dst, *k, label, fenced)
	if err != nil {
		return spec, err
	}
	w.e[w.next] = writeMemo{ok: true, fenced: fenced, dst: dst, k: *k, spec: spec}
	w.next = (w.next + 1) % memoWays
	return spec, nil
}

// kernelBytes is a Kernel's memory.
type kernelBytes = [unsafe.Sizeof(Kernel{})]byte

// sameKernel reports whether a and b are the same bytes: then they are
// equal (strings of the same address and length have the same contents).
// Equal kernels whose strings are stored apart compare unequal, which
// only costs writeFlow a miss; a field by field comparison costs about
// five times as much.
func sameKernel(a, b *Kernel) bool {
	return *(*kernelBytes)(unsafe.Pointer(a)) == *(*kernelBytes)(unsafe.Pointer(b))
}
