package algos

import (
	"fmt"

	"github.com/arsim/arsim/topology"
)

// The limits on what a request may ask for, each grounded in the hardware
// or in memory. Validate refuses a request beyond one, naming the field,
// the value and the limit, before any plan is made.
const (
	// MaxThreadsPerBlock is CUDA's limit on the threads of one thread
	// block (every compute capability since 2.0).
	MaxThreadsPerBlock = 1024
	// MaxChannels is NCCL's MAXCHANNELS (src/include/device.h): a
	// communicator has at most 64 channels, each a thread block.
	MaxChannels = 64
	// MaxBytes is the largest message: 1 TiB, more than any GPU holds
	// (the largest have 288 GB), so no allreduce of a model is larger.
	MaxBytes = 1 << 40
	// MaxCheckRanks is the most ranks Check handles: its symbolic data
	// records which ranks' inputs a byte holds in one 64-bit word.
	MaxCheckRanks = 64
	// MaxHidden is the largest hidden size the Lamport kernel's launch
	// configuration is computed for: 64 Ki elements, more than twice the
	// widest published model (25 600).
	MaxHidden = 1 << 16
)

// MaxBlocks returns the most thread blocks one kernel may ask for on top's
// GPUs: the blocks that run at once, gpu.sms × gpu.max_blocks_per_sm. The
// kernels here wait on each other's blocks (barriers, flags), which only
// works when every block is resident; a grid beyond it would deadlock.
func MaxBlocks(top *topology.Topology) int {
	return int(top.Params.Get("gpu.sms")) * int(top.Params.Get("gpu.max_blocks_per_sm"))
}

// IntRange bounds an integer option: Min ≤ v ≤ Max, v a multiple of Step
// when Step > 1. Every integer option has one (TestEveryIntegerOptionIsBounded).
type IntRange struct {
	Min, Max int
	Step     int
	// Why says what Max is, for the error ("CUDA's limit of threads per
	// block").
	Why string
	// PerMachine, when set, gives Max and Why for a machine instead (the
	// thread blocks its GPUs run at once), and MaxName names that maximum
	// where no machine is at hand (`arsim algos`: "SMs×blocks/SM").
	PerMachine func(top *topology.Topology) (max int, why string)
	MaxName    string
}

// bounds returns the range on top (nil: the static Max).
func (r IntRange) bounds(top *topology.Topology) (lo, hi int, why string) {
	lo, hi, why = max(r.Min, 1), r.Max, r.Why
	if r.PerMachine != nil && top != nil {
		hi, why = r.PerMachine(top)
	}
	return lo, hi, why
}

// check reports why v is outside the range on top, or nil.
func (r IntRange) check(v int, top *topology.Topology) error {
	lo, hi, why := r.bounds(top)
	switch {
	case hi <= 0:
		return fmt.Errorf("has no upper limit (a bug in its OptionSpec)")
	case v < lo:
		return fmt.Errorf("%d is below the minimum %d", v, lo)
	case v > hi:
		return fmt.Errorf("%d is above the limit %d (%s)", v, hi, why)
	case r.Step > 1 && v%r.Step != 0:
		return fmt.Errorf("%d is not a multiple of %d", v, r.Step)
	}
	return nil
}

// The ranges of the integer options several algorithms share.
var (
	blocksRange = IntRange{Min: 1, PerMachine: func(top *topology.Topology) (int, string) {
		return MaxBlocks(top), fmt.Sprintf("the blocks %s's GPUs run at once: gpu.sms %d × gpu.max_blocks_per_sm %d; a kernel whose blocks wait on each other needs all of them resident",
			top.Name, int(top.Params.Get("gpu.sms")), int(top.Params.Get("gpu.max_blocks_per_sm")))
	}, Max: 1024 * 64, Why: "the largest gpu.sms × gpu.max_blocks_per_sm the parameters' ranges allow", MaxName: "SMs×blocks/SM"}
	threadsRange  = IntRange{Min: 1, Max: MaxThreadsPerBlock, Why: "CUDA's limit of threads per block"}
	channelsRange = IntRange{Min: 1, Max: MaxChannels, Why: "NCCL's MAXCHANNELS"}
	bytesRange    = IntRange{Min: 1, Max: MaxBytes, Why: "1 TiB, more than any GPU's memory"}
)

// BlocksOption and ThreadsOption are a kernel's launch configuration, with
// their limits (the blocks the machine runs at once, CUDA's threads per
// block); loaders of algorithms (msccl) use them too.
func BlocksOption(doc string) OptionSpec {
	return OptionSpec{Name: "blocks", Int: blocksRange, Doc: doc}
}

func ThreadsOption(doc string) OptionSpec {
	return OptionSpec{Name: "threads", Int: threadsRange, Doc: doc}
}
