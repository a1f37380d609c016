package validate

import (
	"fmt"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// The twins of tools/capture's part ll128_spin (kernel pb_ll128_spin):
// spin_blocks blocks of spin_threads threads reload their four 16-B words
// of host lines a lane each round, as NCCL's LL128 receive does while its
// lines are not written yet (prims_ll128.h), whose flag never comes; beside
// them (what sm_read_beside_ll128_spin) blocks × threads readers each load
// bytes_per_block of host memory, one 16-B load a thread in flight. The
// model takes each spinning block for an LL128 receive loop over host lines
// that loads its lines every iteration (hw.LoopLL128), reading as long as
// the readers run, and the readers for plain loops beside it: both share the
// way to the host as any two reads do.

// spinLinesPerRound is what a spinning thread reloads each round: its four
// 16-B words of the warp's 128-B lines (data and flags), as the capture
// counts them.
const spinLinesPerRound = 64

// ll128SpinTwin is hostLinkTwin's for the two ll128_spin records: the
// spinning blocks' line traffic alone (sm_ll128_spin: gbps_total their
// reloads' bytes a second), or the readers' rate beside them
// (sm_read_beside_ll128_spin: gbps_total the readers').
func ll128SpinTwin(t *Twin, r trace.Record) (*Twin, error) {
	p, pt := int(extraNumber(r, "spin_blocks")), int(extraNumber(r, "spin_threads"))
	if r.GPUs != 1 || p < 0 || (p > 0 && pt <= 0) {
		return nil, notModelled("%s on %d GPUs with %d spinning blocks of %d threads: the capture runs one GPU and names its spinning blocks and their threads", r.What, r.GPUs, p, pt)
	}
	spin := hw.Kernel{Blocks: p, Threads: pt, Wire: 128.0 / 120, Loop: hw.LoopLL128, Sources: 1}
	if r.What == "sm_ll128_spin" {
		if p <= 0 {
			return nil, notModelled("sm_ll128_spin without spinning blocks")
		}
		t.Group += fmt.Sprintf(", %d threads", pt)
		t.Sim = device(func(top *topology.Topology) (float64, error) { return LL128SpinGBps(top, spin) })
		return t, nil
	}
	per := int64(extraNumber(r, "bytes_per_block"))
	if r.Blocks <= 0 || r.Threads <= 0 || per <= 0 {
		return nil, notModelled("sm_read_beside_ll128_spin with %d reader blocks of %d threads, %d bytes a block: the capture names all three", r.Blocks, r.Threads, per)
	}
	reader := hw.Kernel{Blocks: r.Blocks, Threads: r.Threads, LoadsInFlight: 1}
	t.Group += fmt.Sprintf(" beside %d spinning blocks", p)
	t.Sim = device(func(top *topology.Topology) (float64, error) {
		return ReadBesideSpinGBps(top, reader, spin, sim.Bytes(per*int64(r.Blocks)))
	})
	return t, nil
}

// LL128SpinGBps is what spin's blocks, each reloading its lines of host
// memory round after round (an LL128 receive loop over host lines), move
// of those lines a second, in GB/s: 64 bytes a thread a round, as
// tools/capture's ll128_spin counts them.
func LL128SpinGBps(top *topology.Topology, spin hw.Kernel) (float64, error) {
	m, err := hw.New(top)
	if err != nil {
		return 0, err
	}
	host := hw.HostMem(m.LocalSocket(0))
	spin.LoopAt = host
	const rounds = 1000
	lines := float64(spin.Blocks) * float64(spin.Threads) * spinLinesPerRound * rounds
	data := sim.Bytes(lines * 120 / 128) // the lines' data: 120 of every 128 bytes
	var end sim.Time
	if err := m.Read(0, host, data, spin, "ll128 spin", func() { end = m.Eng.Now() }); err != nil {
		return 0, err
	}
	if err := m.Eng.Run(); err != nil {
		return 0, err
	}
	return lines / sim.Duration(end).Seconds() / 1e9, nil
}

// ReadBesideSpinGBps is reader's rate, in GB/s, loading readBytes of host
// memory while spin's blocks (LL128SpinGBps's) reload their lines beside it
// until it is done.
func ReadBesideSpinGBps(top *topology.Topology, reader, spin hw.Kernel, readBytes sim.Bytes) (float64, error) {
	m, err := hw.New(top)
	if err != nil {
		return 0, err
	}
	host := hw.HostMem(m.LocalSocket(0))
	if spin.Blocks > 0 {
		spin.LoopAt = host
		if err := m.Read(0, host, 1<<40, spin, "ll128 spin", func() {}); err != nil {
			return 0, err
		}
	}
	var end sim.Time
	done := func() { end = m.Eng.Now(); m.Eng.Stop() } // the spinning stops with the readers
	if err := m.Read(0, host, readBytes, reader, "sm_read", done); err != nil {
		return 0, err
	}
	if err := m.Eng.Run(); err != nil {
		return 0, err
	}
	if end <= 0 {
		return 0, fmt.Errorf("validate: the readers beside %d spinning blocks did not finish", spin.Blocks)
	}
	return float64(readBytes) / sim.Duration(end).Seconds() / 1e9, nil
}
