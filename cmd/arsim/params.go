package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/topology"
)

const (
	topologyUsage = "machine: a preset (arsim topology list) or a file: nvidia-smi topo -m output or NCCL topology XML"
	gpuUsage      = "GPU class for the machine (arsim topology gpus): H200, H100, A100, A800, RTX PRO 6000, RTX 5090, RTX 4090, L40S, V100; default: what the file names, else the preset's"
	paramsUsage   = "parameter file (name = value per line) set over the machine's values, last"
)

// machineFlags are the flags every simulating command shares: which
// machine, its GPU class, parameter overrides, launch mode and algorithm
// options.
type machineFlags struct {
	topo, gpu, params, launch, opts *string
}

func addMachineFlags(fs *flag.FlagSet) *machineFlags {
	return &machineFlags{
		topo:   fs.String("topology", "rtxpro6000x8-2numa", topologyUsage),
		gpu:    fs.String("gpu", "", gpuUsage),
		params: fs.String("params", "", paramsUsage),
		launch: fs.String("launch", "graph", "kernel launches: graph (CUDA graph replay) or eager"),
		opts:   fs.String("opts", "", "algorithm options key=value,…, in short form (p2p_level=sys,proto=ll) or NCCL's (NCCL_P2P_LEVEL=SYS,NCCL_PROTO=LL,Simple)"),
	}
}

// machine resolves the machine again, for commands that rebuild it with
// other parameter values (its assumptions were printed by resolve).
func (m *machineFlags) machine() (*machine, error) {
	return resolveMachine(machineSpec{topo: *m.topo, gpu: *m.gpu, params: *m.params})
}

// resolve builds the machine (its assumptions on errOut, once) and reads
// the launch mode and options.
func (m *machineFlags) resolve(errOut io.Writer) (*topology.Topology, hw.LaunchMode, map[string]string, error) {
	t, err := loadMachine(machineSpec{topo: *m.topo, gpu: *m.gpu, params: *m.params}, errOut)
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

// machineSpec names a machine as the command line does.
type machineSpec struct {
	topo   string // a preset name or a topology file
	gpu    string // a GPU class; "" for the machine's own
	params string // a parameter file; "" for none
	// gpuFrom says where gpu came from when not from --gpu ("the rank
	// lines (NVIDIA GeForce RTX 5090)").
	gpuFrom string
}

// machine is a machine resolved from the command line: a preset (or an
// imported file as one) and the parameters to build it with.
type machine struct {
	preset *topology.Preset
	params *topology.Params
	// imported: the preset is a file, not a registered preset.
	imported bool
	// notes are the assumptions made (import, GPU class, parameter file).
	notes []string
	// gpu is the GPU class set, if any.
	gpu *topology.GPUClass
}

// build builds the machine.
func (m *machine) build() (*topology.Topology, error) {
	t, err := m.preset.BuildWith(m.params.Clone())
	if err != nil {
		if m.gpu != nil && !m.imported {
			return nil, badInputf("%s with GPU class %s: %v (choose a preset or topology file that fits that GPU)", m.preset.Name, m.gpu.Name, err)
		}
		return nil, badInput(err)
	}
	return t, nil
}

// isTopologyFile says whether name is meant as a file rather than a
// preset: it exists, or it looks like a path.
func isTopologyFile(name string) bool {
	if _, err := topology.Lookup(name); err == nil {
		return false
	}
	if _, err := os.Stat(name); err == nil {
		return true
	}
	return strings.ContainsAny(name, `/\`) || strings.HasSuffix(name, ".xml") || strings.HasSuffix(name, ".txt")
}

// resolveMachine finds the preset or imports the file, with the GPU class
// and the parameter file applied (in that order: the file goes last).
func resolveMachine(s machineSpec) (*machine, error) {
	var gpu *topology.GPUClass
	if s.gpu != "" {
		g, err := topology.LookupGPUClass(s.gpu)
		if err != nil {
			return nil, badInputf("--gpu: %v", strings.TrimPrefix(err.Error(), "topology: "))
		}
		gpu = &g
	}
	var ovs []topology.Override
	if s.params != "" {
		f, err := os.Open(s.params)
		if err != nil {
			return nil, badInput(err)
		}
		ovs, err = topology.ReadOverrides(f, s.params)
		f.Close()
		if err != nil {
			return nil, badInput(err)
		}
	}
	if isTopologyFile(s.topo) {
		p, t, format, err := topology.ImportPreset(s.topo, topology.ImportOptions{GPU: gpu, Overrides: ovs, OverridesFile: s.params})
		if err != nil {
			if _, statErr := os.Stat(s.topo); statErr != nil {
				names := strings.Join(topology.Presets(), ", ")
				return nil, badInputf("--topology %q is neither a preset (%s) nor a readable file: %v", s.topo, names, statErr)
			}
			return nil, badInput(err)
		}
		m := &machine{preset: p, params: p.DefaultParams(), imported: true, gpu: gpu}
		_ = format
		m.notes = append([]string{"machine " + t.Description}, t.Notes...)
		return m, nil
	}
	p, err := topology.Lookup(s.topo)
	if err != nil {
		return nil, badInput(err)
	}
	m := &machine{preset: p, params: p.DefaultParams(), gpu: gpu}
	if gpu != nil {
		if err := gpu.Apply(m.params); err != nil {
			return nil, badInput(err)
		}
		from := ""
		if s.gpuFrom != "" {
			from = " from " + s.gpuFrom
		}
		m.notes = append(m.notes, fmt.Sprintf("GPU class %s%s over %s's GPU values (the GPU table's, each with its source); the preset's PCIe links and host stay", gpu.Name, from, p.Name))
	}
	if len(ovs) > 0 {
		if err := m.params.Apply(ovs, s.params); err != nil {
			return nil, badInput(err)
		}
		m.notes = append(m.notes, fmt.Sprintf("%d parameter(s) set from %s", len(ovs), s.params))
	}
	return m, nil
}

// loadMachine resolves and builds the machine, printing its assumptions
// on errOut once.
func loadMachine(s machineSpec, errOut io.Writer) (*topology.Topology, error) {
	m, err := resolveMachine(s)
	if err != nil {
		return nil, err
	}
	t, err := m.build()
	if err != nil {
		return nil, err
	}
	printAssumptions(errOut, m)
	return t, nil
}

// printAssumptions writes what the machine assumes, once, on errOut (not
// on the output, which stays the result alone).
func printAssumptions(errOut io.Writer, m *machine) {
	notes := m.notes
	if len(notes) == 0 {
		return
	}
	if !m.imported {
		for _, n := range notes {
			fmt.Fprintln(errOut, "arsim: "+n)
		}
		return
	}
	fmt.Fprintln(errOut, "arsim: "+notes[0])
	if len(notes) > 1 {
		fmt.Fprintln(errOut, "arsim: assumed (the file does not say):")
		for _, n := range notes[1:] {
			fmt.Fprintln(errOut, "  - "+n)
		}
	}
}
