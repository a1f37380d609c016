// Package topology describes a multi-GPU machine as a graph of devices (GPUs,
// PCIe switches, host bridges, CPU sockets, host memories, NVSwitches) and
// links (PCIe Gen × width, NVLink, socket interconnect, memory), with the
// named physical parameters everything is built from.
//
// Get a machine from a named preset or import one:
//
//	t, err := topology.Load("rtxpro6000x8-2numa")
//	c, _ := t.PathClass(t.GPUs()[0], t.GPUs()[4]) // SYS
//
// Every number comes from a [Param]: a name, a unit, a value, a physical
// range and a source (spec, published measurement, our capture, or an
// estimate said to be one). The presets' tables are text files compiled
// into the package, one parameter per line (params/base.txt, read by
// [ReadTable]; a800.txt, v100.txt and h200.txt change values in the form of
// a parameter file, [ReadOverrides]). [Preset.BuildWith] rebuilds a machine
// with overridden parameters (calibration, what-ifs); [Params.WriteTable]
// prints them with their ranges and sources.
//
// Routes are deterministic: least one-way latency, then fewest hops, ties
// broken by lower device IDs. GPU pairs get nvidia-smi's path classes (NV#,
// PIX, PXB, PHB, NODE, SYS) and NCCL's names for them ([PathClass.NCCL]).
//
// The importers read the two formats users have at hand: the matrix printed
// by `nvidia-smi topo -m` and NCCL's topology XML (NCCL_TOPO_DUMP_FILE).
package topology
