package algos

import (
	"fmt"
	"slices"
	"strings"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
)

// PayloadGBps is the payload rate of GPU 0's widest link, in GB/s: NVLink
// at its SM efficiency, or PCIe after TLP overhead and link efficiency,
// all from the machine's parameters. It prices the bytes through a GPU's
// busiest link direction in Binds.
func PayloadGBps(t *topology.Topology) float64 {
	g := t.GPUs()[0]
	ps := t.Params
	best := 0.0
	for _, l := range t.Links() {
		if l.A != g && l.B != g {
			continue
		}
		r := l.Bandwidth.GB()
		switch l.Type {
		case topology.NVLink:
			r *= ps.Get("nvlink.sm_efficiency")
		case topology.PCIe:
			pl := ps.Get("pcie.read_completion_payload")
			r *= pl / (pl + ps.Get("pcie.tlp_overhead")) * ps.Get("pcie.link_efficiency")
		}
		best = max(best, r)
	}
	return best
}

// Binds says what a schedule pays at least, from its shape: the rounds of
// flag waits one after another (and how many of them the data carries),
// the bytes through the busiest GPU link direction with the time they
// take at rate GB/s, and system-scope fences after stores to other
// memories. It is the text `arsim verify` and `arsim design` print.
func Binds(st ScheduleStats, rate float64) string {
	busiest := max(st.MaxRankIn, st.MaxRankOut)
	rounds := fmt.Sprintf("%d flag rounds", st.ChainWaits)
	if st.ChainWaits == 1 {
		rounds = "1 flag round"
	}
	if st.DataWaits > 0 {
		rounds += fmt.Sprintf(" (%d carried by the data)", st.DataWaits)
	}
	fences := ""
	switch {
	case st.RemoteFences == 1:
		fences = ", and fences its stores to 1 other memory"
	case st.RemoteFences > 1:
		fences = fmt.Sprintf(", and fences its stores to %d other memories", st.RemoteFences)
	}
	return fmt.Sprintf("waits through %s in a row and moves %v through its busiest GPU link direction (≥ %.1f µs, %s)%s",
		rounds, sim.Bytes(busiest), float64(busiest)/rate/1e3, st.Where, fences)
}

// LoopBinds says what the per-block loops of rank 0's program allow on
// machine top (hw.Machine.LoopRate): for each kernel whose transfers a
// loop bounds, its blocks × threads, the loop and the most it moves; ""
// when no transfer runs in a loop. It is the per-block part of what binds
// a schedule.
func LoopBinds(s *Schedule, top *topology.Topology) (string, error) {
	if len(s.Programs) == 0 {
		return "", nil
	}
	m, err := hw.New(top)
	if err != nil {
		return "", err
	}
	seen := map[hw.Kernel]bool{}
	var parts []string
	for _, op := range s.Programs[0] {
		k := op.Kernel
		if k.Loop == hw.LoopNone || seen[k] || (op.Kind != Read && op.Kind != Write && op.Kind != Reduce) {
			continue
		}
		seen[k] = true
		rate, err := m.LoopRate(0, k)
		if err != nil {
			return "", err
		}
		parts = append(parts, fmt.Sprintf("%s loop of %d × %d threads on %s at most %.1f GB/s",
			k.Loop, k.Blocks, k.Threads, k.LoopAt, float64(rate)/1e9))
	}
	if len(parts) == 0 {
		return "", nil
	}
	slices.Sort(parts)
	parts = slices.Compact(parts)
	return "per-block loops: " + strings.Join(parts, "; "), nil
}
