package main

import (
	"flag"
	"os"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/topology"
)

// machineFlags are the flags every simulating command shares: which
// machine, parameter overrides, launch mode and algorithm options.
type machineFlags struct {
	topo, params, launch, opts *string
}

func addMachineFlags(fs *flag.FlagSet) *machineFlags {
	return &machineFlags{
		topo:   fs.String("topology", "rtxpro6000x8-2numa", "machine preset (arsim topology list)"),
		params: fs.String("params", "", "parameter file overriding preset values (name = value per line)"),
		launch: fs.String("launch", "graph", "kernel launches: graph (CUDA graph replay) or eager"),
		opts:   fs.String("opts", "", "algorithm options key=value,… passed to the algorithms that take them"),
	}
}

// resolve builds the machine and reads the launch mode and options.
func (m *machineFlags) resolve() (*topology.Topology, hw.LaunchMode, map[string]string, error) {
	t, err := loadTopology(*m.topo, *m.params)
	if err != nil {
		return nil, 0, nil, err
	}
	mode, err := parseLaunch(*m.launch)
	if err != nil {
		return nil, 0, nil, err
	}
	o, err := parseOpts(*m.opts)
	if err != nil {
		return nil, 0, nil, err
	}
	return t, mode, o, nil
}

func applyParamsFile(ps *topology.Params, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return badInput(err)
	}
	defer f.Close()
	ovs, err := topology.ReadOverrides(f, path)
	if err != nil {
		return badInput(err)
	}
	return badInput(ps.Apply(ovs, path))
}
