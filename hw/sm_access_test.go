package hw

import (
	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
)

// SMAccessGBps is a test helper: the rate, in GB/s, of one kernel of
// blocks × threads on rank 0 reading or writing bytes of target memory
// ("host": NUMA-local pinned memory) with 16-byte accesses. (Package
// validate holds the twins of the measurement kinds.)
func SMAccessGBps(top *topology.Topology, write bool, target string, blocks, threads int, bytes sim.Bytes) (float64, error) {
	m, err := New(top)
	if err != nil {
		return 0, err
	}
	at := HostMem(m.LocalSocket(0))
	if target == "peer" {
		at = GPUMem(1)
	}
	var end sim.Time
	k := Kernel{Blocks: blocks, Threads: threads}
	if write {
		err = m.Write(0, at, bytes, k, "sm_write", func() { end = m.Eng.Now() })
	} else {
		err = m.Read(0, at, bytes, k, "sm_read", func() { end = m.Eng.Now() })
	}
	if err != nil {
		return 0, err
	}
	if err := m.Eng.Run(); err != nil {
		return 0, err
	}
	return float64(bytes) / sim.Duration(end).Seconds() / 1e9, nil
}
