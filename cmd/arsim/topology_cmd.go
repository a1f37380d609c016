package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/arsim/arsim/topology"
)

func cmdTopology(ctx context.Context, args []string, out, errOut io.Writer) error {
	usage := "topology list | show NAME [--params FILE] | import FILE"
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintf(errOut, "Usage: arsim %s\n\nExamples:\n  arsim topology list\n  arsim topology show rtxpro6000x8-2numa\n  arsim topology import nccl_topo.xml\n  arsim topology import topo_m.txt\n", usage)
		if len(args) == 0 {
			return badInputf("topology: say list, show NAME or import FILE")
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
		fs := newFlags("topology show", "topology show NAME [--params FILE]", []string{"arsim topology show h200x2", "arsim topology show rtxpro6000x8-2numa --params fitted.params"}, errOut)
		params := fs.String("params", "", "parameter file overriding preset values (name = value per line)")
		if len(args) < 2 {
			return badInputf("topology show: name a preset (valid: %s)", strings.Join(topology.Presets(), ", "))
		}
		if err := parse(fs, args[2:]); err != nil {
			return err
		}
		t, err := loadTopology(args[1], *params)
		if err != nil {
			return err
		}
		return showTopology(out, t)
	case "import":
		if len(args) < 2 {
			return badInputf("topology import: name a file (nvidia-smi topo -m output or NCCL topology XML)")
		}
		if len(args) > 2 {
			return badInputf("topology import: unexpected argument %q (it reads one file)", args[2])
		}
		t, format, err := topology.ImportFile(args[1], topology.ImportOptions{})
		if err != nil {
			return badInput(err)
		}
		fmt.Fprintf(out, "Read %s as %s.\n\n", args[1], format)
		if err := showTopology(out, t); err != nil {
			return err
		}
		fmt.Fprintln(out, "\nAssumed (the file does not say):")
		if len(t.Notes) == 0 {
			fmt.Fprintln(out, "  nothing")
		}
		for _, n := range t.Notes {
			fmt.Fprintln(out, "  - "+n)
		}
		return nil
	}
	return badInputf("topology: unknown subcommand %q (list, show, import)", args[0])
}

// loadTopology builds a preset, applying a parameter file if given.
func loadTopology(name, paramsFile string) (*topology.Topology, error) {
	p, err := topology.Lookup(name)
	if err != nil {
		return nil, badInput(err)
	}
	ps := p.DefaultParams()
	if paramsFile != "" {
		if err := applyParamsFile(ps, paramsFile); err != nil {
			return nil, err
		}
	}
	t, err := p.BuildWith(ps)
	if err != nil {
		return nil, badInput(err)
	}
	return t, nil
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
