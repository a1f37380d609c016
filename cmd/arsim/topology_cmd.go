package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
)

func cmdTopology(ctx context.Context, args []string, out, errOut io.Writer) error {
	usage := "topology list | gpus | show NAME|FILE [--gpu NAME] [--params FILE] | import FILE [--gpu NAME] [--params FILE]"
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintf(errOut, "Usage: arsim %s\n\nExamples:\n  arsim topology list\n  arsim topology show rtxpro6000x8-2numa\n  arsim topology import nccl_topo.xml\n  arsim topology import topo_m.txt --gpu \"RTX 5090\"\n  arsim topology gpus\n", usage)
		if len(args) == 0 {
			return badInputf("topology: say list, gpus, show NAME or import FILE")
		}
		return errHelpShown
	}
	switch args[0] {
	case "list":
		if len(args) > 1 {
			return badInputf("topology list: unexpected argument %q (it takes none)", args[1])
		}
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tGPUS\tDESCRIPTION")
		for _, n := range topology.Presets() {
			p, _ := topology.Lookup(n)
			t, err := p.Build()
			if err != nil {
				return err
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\n", n, t.NumGPUs(), p.Description)
		}
		return tw.Flush()
	case "show":
		fs := newFlags("topology show", "topology show NAME|FILE [--gpu NAME] [--params FILE]", []string{"arsim topology show h200x2", "arsim topology show rtxpro6000x8-2numa --gpu \"RTX 5090\" --params fitted.params"}, errOut)
		gpu := fs.String("gpu", "", gpuUsage)
		params := fs.String("params", "", paramsUsage)
		if len(args) < 2 || strings.HasPrefix(args[1], "-") {
			if err := parse(fs, args[1:]); err != nil {
				return err
			}
			return badInputf("topology show: name a preset (valid: %s) or a topology file", strings.Join(topology.Presets(), ", "))
		}
		if err := parse(fs, args[2:]); err != nil {
			return err
		}
		t, err := loadMachine(machineSpec{topo: args[1], gpu: *gpu, params: *params}, errOut)
		if err != nil {
			return err
		}
		return showTopology(out, t)
	case "gpus":
		return showGPUs(out)
	case "import":
		fs := newFlags("topology import", "topology import FILE [--gpu NAME] [--params FILE]", []string{"arsim topology import topo_m.txt --gpu \"RTX 5090\"", "arsim topology import nccl_topo.xml --params my.params"}, errOut)
		gpu := fs.String("gpu", "", gpuUsage)
		params := fs.String("params", "", paramsUsage)
		if len(args) < 2 || strings.HasPrefix(args[1], "-") {
			if err := parse(fs, args[1:]); err != nil {
				return err
			}
			return badInputf("topology import: name a file (nvidia-smi topo -m output or NCCL topology XML)")
		}
		if err := parse(fs, args[2:]); err != nil {
			return err
		}
		if !isTopologyFile(args[1]) {
			return badInputf("topology import: %s is a preset name; `arsim topology show %s` prints it", args[1], args[1])
		}
		m, err := resolveMachine(machineSpec{topo: args[1], gpu: *gpu, params: *params})
		if err != nil {
			return err
		}
		t, err := m.build()
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "Read %s.\n\n", m.notes[0])
		if err := showTopology(out, t); err != nil {
			return err
		}
		fmt.Fprintln(out, "\nAssumed (the file does not say):")
		if len(m.notes) < 2 {
			fmt.Fprintln(out, "  nothing")
		}
		for _, n := range m.notes[1:] {
			fmt.Fprintln(out, "  - "+n)
		}
		return nil
	}
	return badInputf("topology: unknown subcommand %q (list, gpus, show, import)", args[0])
}

func showTopology(out io.Writer, t *topology.Topology) error {
	fmt.Fprintf(out, "%s: %s\n", t.Name, t.Description)
	if len(t.SystemIDs) > 0 {
		fmt.Fprintf(out, "Models trace system ids: %s\n", strings.Join(t.SystemIDs, ", "))
	}
	fmt.Fprintln(out, "\nDevices and links:")
	for _, l := range t.Links() {
		detail := ""
		switch l.Type {
		case topology.PCIe:
			detail = fmt.Sprintf("Gen%d x%d", l.Gen, l.Width)
		case topology.NVLink:
			detail = fmt.Sprintf("%d links", l.Count)
		}
		fmt.Fprintf(out, "  %-22s %-7s %-10s %8.2f GB/s  %v\n", t.LinkName(l), l.Type, detail, l.Bandwidth.GB(), l.Latency)
	}
	// the devices a path passes through, alike ones together
	type transit struct {
		kind    topology.Kind
		latency sim.Duration
	}
	var order []transit
	names := map[transit][]string{}
	for _, n := range t.Nodes() {
		if n.Latency == 0 {
			continue
		}
		k := transit{n.Kind, n.Latency}
		if names[k] == nil {
			order = append(order, k)
		}
		names[k] = append(names[k], n.Name)
	}
	var parts []string
	for _, k := range order {
		ns := names[k]
		who := strings.Join(ns, ", ")
		if len(ns) > 4 {
			who = fmt.Sprintf("%s … %s (%d)", ns[0], ns[len(ns)-1], len(ns))
		}
		each := ""
		if k.kind == topology.HostBridge {
			each = " each way across its PCIe side"
		}
		parts = append(parts, fmt.Sprintf("%s %v%s", who, k.latency, each))
	}
	if len(parts) > 0 {
		fmt.Fprintf(out, "Devices passed through, one way: %s\n", strings.Join(parts, "; "))
	}
	m, err := t.ClassMatrix()
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "\nPath classes (nvidia-smi topo -m):")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "\t")
	for i := range m {
		fmt.Fprintf(tw, "GPU%d\t", i)
	}
	fmt.Fprintln(tw)
	for i, row := range m {
		fmt.Fprintf(tw, "GPU%d\t", i)
		for j, c := range row {
			if i == j {
				fmt.Fprint(tw, "X\t")
			} else {
				fmt.Fprintf(tw, "%s\t", c)
			}
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	p := t.Platform
	fmt.Fprintf(out, "\nPlatform: P2P through host bridges %v, across sockets %v, posted-write collapse %v\n", p.P2PThroughHostBridge, p.P2PAcrossSockets, p.WriteCollapse)
	fmt.Fprintln(out, "\nParameters:")
	return t.Params.WriteTable(out)
}

// showGPUs prints the GPU table: each class with its compute capability,
// PCIe link and parameters, each with its source.
func showGPUs(out io.Writer) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GPU\tSM\tPCIE\tPARAMETER\tVALUE\tSOURCE")
	for _, g := range topology.GPUClasses() {
		fmt.Fprintf(tw, "%s\tsm%d\tGen%d x%d\t\t\t%s\n", g.Name, g.SM, g.PCIeGen, g.PCIeWidth, g.PCIeSource)
		for _, o := range g.Params {
			fmt.Fprintf(tw, "\t\t\t%s\t%s\t%s\n", o.Name, strconv.FormatFloat(o.Value, 'g', -1, 64), o.Source)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(out, "\n--gpu NAME sets a class's values over a machine's; the importers set it where the file names the GPU (NCCL XML sm, nccl-tests rank lines).")
	return nil
}
