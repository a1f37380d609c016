package validate

import (
	"maps"
	"slices"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// Twin is a measured record mapped onto the simulator: what to run and how
// to report it. A kind's TwinFunc fills the exported fields; Run adds the
// record, its preset and its measured value.
type Twin struct {
	// Group is the record's group in the summary, e.g. "allreduce
	// nccl/ring ll shm cudagraph" or "sm_access read peer".
	Group string
	// Note says how the record is modelled, where that is not obvious.
	Note string
	// Sim simulates the record on top and returns its primary value, in
	// the record's unit (trace.Record.Primary), and whether that value is
	// the host's issue interval (an eager call the host, not the device,
	// paces) rather than the machine model's.
	Sim func(top *topology.Topology) (value float64, hostPaced bool, err error)
	// Model, when set, is NCCL's own analytic estimate of the same value
	// (Us), whether NCCL's ring search fell back to its 0.1 GB/s graph,
	// and what NCCL chose, which the simulated schedule runs.
	Model func(top *topology.Topology) (algos.NCCLEstimateInfo, error)
	// Ends, when set, says whether Sim's value on top is the kernel's end
	// (every block ending together, as the model shares a resource they
	// are bound by) rather than a typical block's; EndValue is then the
	// measured value compared, the record's slowest block.
	Ends     func(top *topology.Topology) (bool, error)
	EndValue float64

	rec trace.Record
	// mechs, where set, are the mechanisms the record times on top
	// (mechanismsOf otherwise).
	mechs    func(top *topology.Topology) []algos.Mechanism
	preset   *topology.Preset
	unit     string
	measured float64
}

// TwinFunc maps a record of one kind onto its twin, or returns why it has
// none: a *SkipError wrapping ErrNotModelled or ErrBadRecord.
type TwinFunc func(r trace.Record) (*Twin, error)

var twins = map[trace.Kind]TwinFunc{}

// Register adds the twin of a record kind; each kind registers itself in
// its own file. It panics on a kind registered twice (a bug caught at
// init).
func Register(kind trace.Kind, f TwinFunc) {
	if _, dup := twins[kind]; dup {
		panic("validate: twin of kind " + string(kind) + " registered twice")
	}
	twins[kind] = f
}

// Kinds returns the record kinds that have a twin, sorted.
func Kinds() []trace.Kind { return slices.Sorted(maps.Keys(twins)) }

// device wraps a simulation whose value the machine model sets.
func device(f func(*topology.Topology) (float64, error)) func(*topology.Topology) (float64, bool, error) {
	return func(top *topology.Topology) (float64, bool, error) {
		v, err := f(top)
		return v, false, err
	}
}

// hostPaced wraps a simulation whose value is a host cost parameter.
func hostPaced(f func(*topology.Topology) (float64, error)) func(*topology.Topology) (float64, bool, error) {
	return func(top *topology.Topology) (float64, bool, error) {
		v, err := f(top)
		return v, true, err
	}
}
