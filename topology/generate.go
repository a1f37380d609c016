package topology

import (
	"fmt"

	"github.com/arsim/arsim/sim"
)

// SwitchFabric generates a machine of n GPUs for scale experiments: leaf
// PCIe switches of perSwitch GPUs each (the last may hold fewer), all leaf
// switches under one root switch on one socket's host bridge, Gen5 x16
// everywhere, with the default parameters of the RTX PRO 6000 presets.
// It is named "fabric-N". n may be up to 4096.
func SwitchFabric(n, perSwitch int) (*Topology, error) {
	if n < 1 || n > 4096 {
		return nil, fmt.Errorf("topology: fabric of %d GPUs: want 1–4096", n)
	}
	if perSwitch < 1 {
		return nil, fmt.Errorf("topology: fabric: GPUs per switch must be ≥ 1, got %d", perSwitch)
	}
	ps := commonParams()
	b := NewBuilder(fmt.Sprintf("fabric-%d", n), ps)
	ns := sim.Nanos
	cpu := b.Node(CPU, "cpu0", 0, ns(ps.Get("cpu.fabric_latency")))
	mem := b.Node(HostMemory, "mem0", 0, 0)
	b.PlainLink(cpu, mem, Memory, sim.Rate(ps.Get("hostmem.bandwidth"))*sim.GBps, 0)
	hb := b.Node(HostBridge, "hb0", 0, ns(ps.Get("pcie.hostbridge_latency")))
	b.PlainLink(hb, cpu, Fabric, sim.Rate(ps.Get("cpu.fabric_bandwidth"))*sim.GBps, 0)
	root := b.Node(PCIeSwitch, "swroot", 0, ns(ps.Get("pcie.switch_latency")))
	b.PCIeLink(root, hb, 5, 16, 0)
	port := ns(ps.Get("pcie.gpu_port_latency"))
	var leaf NodeID
	for g := 0; g < n; g++ {
		if g%perSwitch == 0 {
			leaf = b.Node(PCIeSwitch, fmt.Sprintf("sw%d", g/perSwitch), 0, ns(ps.Get("pcie.switch_latency")))
			b.PCIeLink(leaf, root, 5, 16, 0)
		}
		gpu := b.Node(GPU, fmt.Sprintf("gpu%d", g), 0, 0)
		b.PCIeLink(gpu, leaf, 5, 16, port)
	}
	t := b.Topology()
	t.Description = fmt.Sprintf("generated: %d GPUs in PCIe switches of %d under one root switch, Gen5 x16", n, perSwitch)
	t.Platform = Platform{P2PThroughHostBridge: true, P2PAcrossSockets: true}
	return b.Build()
}
