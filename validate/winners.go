package validate

import (
	"fmt"
	"slices"

	"github.com/arsim/arsim/trace"
)

// The question users ask of a validation: which implementation wins. A bin
// holds the allreduce records of one system, launch, world size, dtype and
// size; where it compares two implementations or more (NCCL's
// algorithm/protocol/transport choices, custom kernels), the simulation
// picks the one it finds fastest, and the pick is right when that
// implementation's measured time is within WinnerTolerancePct of the
// measured fastest. Implementations the simulation times identically (NCCL
// with its own choice and the same choice forced: one schedule) are one
// pick: it is right when the measured fastest of them is within the
// tolerance.

// WinnerTolerancePct is how far above the measured fastest the simulated
// winner's measured time may be for the pick to count as right.
const WinnerTolerancePct = 5.0

// WinnerBins counts the bins whose simulated winner is right.
type WinnerBins struct {
	Bins  int `json:"bins"`
	Right int `json:"right"`
	// Wrong lists the bins where the pick is wrong: what was picked and
	// what was fastest.
	Wrong []WrongWinner `json:"wrong,omitempty"`
}

// WrongWinner is a bin whose simulated winner is not the measured fastest.
type WrongWinner struct {
	Bin       string  `json:"bin"`
	Picked    string  `json:"picked"`
	Fastest   string  `json:"fastest"`
	SlowerPct float64 `json:"picked_measured_slower_pct"`
}

// winnerBin places an allreduce record: its bin and its implementation.
func winnerBin(r trace.Record) (bin, impl string) {
	if r.Kind != trace.KindAllreduce || r.Impl == "" {
		return "", ""
	}
	bin = fmt.Sprintf("%s %s world %d %s %d B", r.System, r.Launch, r.World, r.Dtype, r.Bytes)
	impl = fmt.Sprintf("%s/%s %s %s", r.Impl, r.Algo, r.Proto, r.Transport)
	if r.Blocks > 0 {
		impl += fmt.Sprintf(" %d×%d", r.Blocks, r.Threads)
	}
	if r.MaxChannels > 0 {
		impl += fmt.Sprintf(" max_channels %d", r.MaxChannels)
	}
	return bin, impl
}

// winnerBins judges every bin of two implementations or more; nil when
// there is none. An implementation measured more than once in a bin takes
// its first record.
func winnerBins(recs []Compared) *WinnerBins {
	type entry struct {
		impl            string
		measured, simul float64
	}
	bins := map[string][]entry{}
	var order []string
	for _, r := range recs {
		if r.bin == "" {
			continue
		}
		if _, ok := bins[r.bin]; !ok {
			order = append(order, r.bin)
		}
		if slices.ContainsFunc(bins[r.bin], func(e entry) bool { return e.impl == r.impl }) {
			continue
		}
		bins[r.bin] = append(bins[r.bin], entry{r.impl, r.Measured, r.Predicted})
	}
	w := &WinnerBins{}
	for _, b := range order {
		es := bins[b]
		if len(es) < 2 {
			continue
		}
		w.Bins++
		fast := slices.MinFunc(es, func(a, b entry) int { return cmpFloat(a.measured, b.measured) })
		best := slices.MinFunc(es, func(a, b entry) int { return cmpFloat(a.simul, b.simul) })
		pick := best
		for _, e := range es { // ties: the fastest measured of the identically timed
			if e.simul == best.simul && e.measured < pick.measured {
				pick = e
			}
		}
		slower := (pick.measured/fast.measured - 1) * 100
		if slower <= WinnerTolerancePct {
			w.Right++
			continue
		}
		w.Wrong = append(w.Wrong, WrongWinner{Bin: b, Picked: pick.impl, Fastest: fast.impl, SlowerPct: slower})
	}
	if w.Bins == 0 {
		return nil
	}
	return w
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
