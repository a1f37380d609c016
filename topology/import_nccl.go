package topology

import (
	"bytes"
	"cmp"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/arsim/arsim/sim"
)

// xnode is one element of the XML tree.
type xnode struct {
	name  string
	attrs []xml.Attr
	kids  []*xnode
	line  int
}

func (n *xnode) attr(k string) (string, bool) {
	for _, a := range n.attrs {
		if a.Name.Local == k {
			return a.Value, true
		}
	}
	return "", false
}

// label names the element in errors: <pci busid="0000:3b:00.0">.
func (n *xnode) label() string {
	for _, k := range []string{"busid", "numaid", "rank", "target", "name", "dev"} {
		if v, ok := n.attr(k); ok {
			return fmt.Sprintf("<%s %s=%q>", n.name, k, v)
		}
	}
	return "<" + n.name + ">"
}

// maxXMLDepth bounds element nesting (real files nest a few levels).
const maxXMLDepth = 64

// xmlSyntaxError is encoding/xml's syntax error told as this reader's other
// errors are ("line N: …"), still matchable with errors.As.
type xmlSyntaxError struct{ *xml.SyntaxError }

func (e xmlSyntaxError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

func (e xmlSyntaxError) Unwrap() error { return e.SyntaxError }

// parseXMLTree reads the document into a tree, keeping line numbers.
func parseXMLTree(data []byte) (*xnode, error) {
	d := xml.NewDecoder(bytes.NewReader(data))
	var root *xnode
	var stack []*xnode
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if se, ok := errors.AsType[*xml.SyntaxError](err); ok {
			return nil, xmlSyntaxError{se}
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			line, _ := d.InputPos()
			n := &xnode{name: t.Name.Local, attrs: append([]xml.Attr(nil), t.Attr...), line: line}
			if len(stack) == 0 {
				if root != nil {
					return nil, fmt.Errorf("line %d: a second root element <%s> after </%s>", line, n.name, root.name)
				}
				root = n
			} else {
				p := stack[len(stack)-1]
				p.kids = append(p.kids, n)
			}
			stack = append(stack, n)
			if len(stack) > maxXMLDepth {
				return nil, fmt.Errorf("line %d: elements nested deeper than %d", line, maxXMLDepth)
			}
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		}
	}
	if root == nil {
		return nil, errors.New("no root element")
	}
	return root, nil
}

// xmlGPU is a <gpu> found in the file.
type xmlGPU struct {
	el      *xnode // the <gpu>
	pci     *xnode // its <pci>
	busid   string
	rank    int
	sm      int // 0 when absent
	idx     int // index in rank order
	nvlinks []*xnode
	dev     *devSpec
}

// ncclImport holds the state of one XML import.
type ncclImport struct {
	file    string
	notes   *noteList
	busids  map[string]*xnode
	gpus    []*xmlGPU
	ignored map[string]*xmlGPU // rank -1 GPUs by busid
}

func (im *ncclImport) errf(n *xnode, format string, a ...any) error {
	return fmt.Errorf("topology: %s: %s (line %d): %s", im.file, n.label(), n.line, fmt.Sprintf(format, a...))
}

// ImportNCCLXML reads NCCL's topology XML (what NCCL_TOPO_DUMP_FILE
// writes) and builds the machine it describes: each <cpu> a socket with
// host memory, each top-level <pci> under it a host bridge (CPU root port)
// with the device or switch on it, nested <pci> bridges PCIe switches, GPUs
// in rank order, NVLinks to GPUs direct and to NVSwitches through one
// NVSwitch node per target. What the file does not say (socket
// interconnect, latencies, GPU parameters) comes from opts.Params or the
// preset defaults, and Topology.Notes lists it. name is the file name, used
// in errors and (without directory and extension) as the topology name.
func ImportNCCLXML(r io.Reader, name string, opts ImportOptions) (*Topology, error) {
	data, err := readAllLimited(r, name)
	if err != nil {
		return nil, err
	}
	root, err := parseXMLTree(data)
	if err != nil {
		return nil, fmt.Errorf("topology: %s: malformed XML: %w", name, err)
	}
	im := &ncclImport{file: name, notes: &noteList{}, busids: map[string]*xnode{}, ignored: map[string]*xmlGPU{}}
	return im.build(root, opts)
}

// build reads the <system> tree: sockets and their PCIe trees, the GPUs in
// rank order, then their NVLinks.
func (im *ncclImport) build(root *xnode, opts ImportOptions) (*Topology, error) {
	if root.name != "system" {
		return nil, fmt.Errorf("topology: %s: root element is <%s>, want <system version=\"1\">", im.file, root.name)
	}
	if v, ok := root.attr("version"); !ok {
		im.notes.add("<system> has no version: read as version 1")
	} else if strings.TrimSpace(v) != "1" {
		return nil, im.errf(root, "version %q: only version 1 is known", v)
	}
	ps, psNote, err := importParams(opts)
	if err != nil {
		return nil, fmt.Errorf("topology: %s: %w", im.file, err)
	}
	spec, vendors, err := im.sockets(root)
	if err != nil {
		return nil, err
	}
	if err := im.rankOrder(); err != nil {
		return nil, err
	}
	spec.gpus = len(im.gpus)
	sm, where := im.sm()
	gpu, err := importGPU(ps, opts, sm, where, im.notes)
	if err != nil {
		return nil, fmt.Errorf("topology: %s: %w", im.file, err)
	}
	if err := im.nvlinks(spec, ps, opts.Params != nil); err != nil {
		return nil, err
	}
	im.noteHost(spec, ps, vendors)
	im.notes.add(psNote)
	if err := importOverrides(ps, opts, im.notes); err != nil {
		return nil, fmt.Errorf("topology: %s: %w", im.file, err)
	}
	t, err := buildImported(topoName(im.file), ps, spec)
	if err != nil {
		return nil, fmt.Errorf("topology: %s: %w", im.file, err)
	}
	switch {
	case slices.Contains(vendors, "AuthenticAMD"):
		t.HostCPU = "amd"
	case slices.Contains(vendors, "GenuineIntel-SPR"):
		t.HostCPU = "intel-spr"
	case slices.Contains(vendors, "GenuineIntel"):
		t.HostCPU = "intel"
	}
	t.Description = fmt.Sprintf("imported from %s (NCCL topology XML): %d GPUs%s, %d socket(s)", im.file, len(im.gpus), gpuSuffix(gpu), len(spec.sockets))
	t.Notes = im.notes.list()
	return t, nil
}

// sm returns the GPUs' common compute capability and where the file says
// it; 0 when they have none or differ.
func (im *ncclImport) sm() (int, string) {
	sm := 0
	for _, g := range im.gpus {
		if g.sm == 0 || (sm != 0 && g.sm != sm) {
			if g.sm != 0 {
				im.notes.add("GPUs of different compute capabilities: GPU parameters are the defaults'")
			}
			return 0, ""
		}
		sm = g.sm
	}
	return sm, fmt.Sprintf("<gpu sm=\"%d\">", sm)
}

// sockets reads each <cpu> as a socket whose top-level <pci> elements are
// its host bridges; it returns the layout and the CPU vendors named.
func (im *ncclImport) sockets(root *xnode) (*hostSpec, []string, error) {
	spec := &hostSpec{}
	var vendors []string
	for _, c := range root.kids {
		if c.name != "cpu" {
			im.notes.addItem("ignored-sys", "ignored elements under <system> (%s): only <cpu> is read", "<"+c.name+">")
			continue
		}
		s := len(spec.sockets)
		numa := -1
		if v, ok := c.attr("numaid"); ok {
			k, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || k < -1 {
				return nil, nil, im.errf(c, "numaid %q is not a NUMA node number", v)
			}
			numa = k
		}
		if numa < 0 {
			im.notes.addItem("numa", "<cpu numaid=\"-1\"> or no numaid (NUMA node unknown, e.g. in a VM): taken as socket %s", strconv.Itoa(s))
		} else if numa != s {
			im.notes.addItem("numa-map", "sockets numbered in file order: %s", fmt.Sprintf("numaid %d → socket %d", numa, s))
		}
		if v, ok := c.attr("vendor"); ok {
			v = strings.TrimSpace(v)
			if m, _ := c.attr("modelid"); v == "GenuineIntel" && (strings.TrimSpace(m) == "143" || strings.TrimSpace(m) == "207") {
				v = "GenuineIntel-SPR"
			}
			vendors = append(vendors, v)
		}
		var hbs [][]*devSpec
		for _, k := range c.kids {
			switch k.name {
			case "pci":
				d, err := im.pci(k, 0)
				if err != nil {
					return nil, nil, err
				}
				if d != nil {
					hbs = append(hbs, []*devSpec{d})
				}
			case "nic":
				im.notes.add("ignored <nic>/<net> elements: NICs are not simulated")
			default:
				im.notes.addItem("ignored-cpu", "ignored elements under <cpu> (%s)", "<"+k.name+">")
			}
		}
		spec.sockets = append(spec.sockets, hbs)
	}
	if len(spec.sockets) == 0 {
		return nil, nil, fmt.Errorf("topology: %s: no <cpu> elements under <system>", im.file)
	}
	return spec, vendors, nil
}

// rankOrder numbers the GPUs found in rank order, refusing a rank used twice.
func (im *ncclImport) rankOrder() error {
	if len(im.gpus) == 0 {
		return fmt.Errorf("topology: %s: no GPUs (no <gpu> with a rank ≥ 0 under a <pci> of a <cpu>)", im.file)
	}
	if len(im.gpus) > maxImportGPUs {
		return fmt.Errorf("topology: %s: %d GPUs; at most %d are supported", im.file, len(im.gpus), maxImportGPUs)
	}
	sort.SliceStable(im.gpus, func(a, b int) bool { return im.gpus[a].rank < im.gpus[b].rank })
	for i, g := range im.gpus {
		if i > 0 && im.gpus[i-1].rank == g.rank {
			return im.errf(g.el, "rank %d is also the rank of the GPU at %s", g.rank, im.gpus[i-1].pci.label())
		}
		g.idx = i
		g.dev.gpu = i
		if g.rank != i {
			im.notes.add("GPU ranks are not 0…n-1: GPUs numbered in rank order")
		}
	}
	return nil
}

// noteHost lists what the XML does not say about the host side.
func (im *ncclImport) noteHost(spec *hostSpec, ps *Params, vendors []string) {
	im.notes.add("each top-level <pci> under a <cpu> taken to be on its own host bridge (CPU root port): GPUs under different ones are NODE")
	if len(spec.sockets) > 1 {
		nccl := "NCCL itself assumes 16 GB/s for AMD (AMD_BW) and 6–40 GB/s for Intel QPI/UPI by CPU model"
		if slices.Contains(vendors, "AuthenticAMD") {
			nccl = "NCCL itself assumes AMD_BW = 16 GB/s for AMD xGMI"
		}
		im.notes.add(fmt.Sprintf("the XML gives no socket interconnect speed: sockets joined in a chain at smp.bandwidth %s GB/s, latency %s ns from the parameters (%s)",
			gbString(ps.Get("smp.bandwidth")), gbString(ps.Get("smp.latency")), nccl))
	}
	im.notes.add("latencies, host memory and CPU fabric are not in the XML: taken from the parameters")
}

// pci reads a <pci> element; it returns nil for a subtree with no GPUs.
func (im *ncclImport) pci(n *xnode, depth int) (*devSpec, error) {
	busid, ok := n.attr("busid")
	busid = strings.ToLower(strings.TrimSpace(busid))
	if !ok || busid == "" {
		return nil, im.errf(n, "no busid")
	}
	if prev, dup := im.busids[busid]; dup {
		return nil, im.errf(n, "busid %s used twice (first at line %d)", busid, prev.line)
	}
	im.busids[busid] = n
	cv, ok := n.attr("class")
	if !ok {
		return nil, im.errf(n, "no class attribute")
	}
	class, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(strings.TrimSpace(cv)), "0x"), 16, 32)
	if err != nil || !strings.HasPrefix(strings.ToLower(strings.TrimSpace(cv)), "0x") {
		return nil, im.errf(n, "class %q is not a hex PCI class like 0x060400", cv)
	}
	gen, width, err := im.pciLink(n)
	if err != nil {
		return nil, err
	}
	switch {
	case class>>16 == 0x03:
		return im.gpuPCI(n, busid, &devSpec{gpu: -1, gen: gen, width: width})
	case class == 0x068000:
		im.notes.addItem("nvs-pci", "NVSwitch <pci> devices ignored (%s): NVSwitches come from the GPUs' <nvlink> elements", busid)
		return nil, nil
	}
	sw := &devSpec{gpu: -1, gen: gen, width: width}
	hasPCI := false
	for _, k := range n.kids {
		switch k.name {
		case "pci":
			hasPCI = true
			d, err := im.pci(k, depth+1)
			if err != nil {
				return nil, err
			}
			if d != nil {
				sw.children = append(sw.children, d)
			}
		case "nic":
			im.notes.add("ignored <nic>/<net> elements: NICs are not simulated")
		case "pcilink":
			im.notes.add("ignored <pcilink> (switch peer links)")
		default:
			im.notes.addItem("ignored-pci", "ignored elements under <pci> (%s)", "<"+k.name+">")
		}
	}
	if len(sw.children) == 0 {
		if !hasPCI && class>>16 != 0x02 && class>>8 != 0x0604 {
			im.notes.addItem("other-pci", "<pci> devices with no GPU below ignored (%s)", busid+" class "+cv)
		}
		return nil, nil
	}
	return sw, nil
}

// gpuPCI reads the <gpu> under a GPU-class <pci> n; it returns dev, the
// GPU's link, or nil for a GPU that is not used (rank -1) or absent.
func (im *ncclImport) gpuPCI(n *xnode, busid string, dev *devSpec) (*devSpec, error) {
	var gpuEl *xnode
	for _, k := range n.kids {
		switch k.name {
		case "gpu":
			if gpuEl != nil {
				return nil, im.errf(n, "two <gpu> elements under one <pci>")
			}
			gpuEl = k
		case "nic":
			im.notes.add("ignored <nic>/<net> elements: NICs are not simulated")
		default:
			im.notes.addItem("ignored-gpu-pci", "ignored elements under a GPU's <pci> (%s)", "<"+k.name+">")
		}
	}
	if gpuEl == nil {
		im.notes.addItem("no-gpu", "GPU-class <pci> without a <gpu> element ignored (%s)", busid)
		return nil, nil
	}
	g := &xmlGPU{el: gpuEl, pci: n, busid: busid}
	rv, ok := gpuEl.attr("rank")
	if !ok {
		return nil, im.errf(gpuEl, "no rank attribute (under %s)", n.label())
	}
	rank, err := strconv.Atoi(strings.TrimSpace(rv))
	if err != nil || rank < -1 {
		return nil, im.errf(gpuEl, "rank %q is not a rank (an integer ≥ 0, or -1 for a GPU not used)", rv)
	}
	g.rank = rank
	if sv, ok := gpuEl.attr("sm"); ok {
		sm, err := strconv.Atoi(strings.TrimSpace(sv))
		if err != nil || sm <= 0 || sm > 10000 {
			return nil, im.errf(gpuEl, "sm %q is not a compute capability like 90", sv)
		}
		g.sm = sm
	}
	for _, k := range gpuEl.kids {
		switch k.name {
		case "nvlink":
			g.nvlinks = append(g.nvlinks, k)
		case "c2c":
			im.notes.add("ignored <c2c> (Grace C2C) links")
		default:
			im.notes.addItem("ignored-gpu", "ignored elements under <gpu> (%s)", "<"+k.name+">")
		}
	}
	if rank == -1 {
		im.notes.addItem("rank-1", "GPUs with rank -1 ignored, as NCCL does (%s)", busid)
		im.ignored[busid] = g
		return nil, nil
	}
	g.dev = dev
	im.gpus = append(im.gpus, g)
	return g.dev, nil
}

// pciLink reads link_speed and link_width.
func (im *ncclImport) pciLink(n *xnode) (gen, width int, err error) {
	busid, _ := n.attr("busid")
	speed, ok := n.attr("link_speed")
	speed = strings.TrimSpace(speed)
	switch {
	case !ok || speed == "" || strings.HasPrefix(strings.ToLower(speed), "unknown"):
		gen = 3
		im.notes.addItem("speed-unknown", "link_speed missing or unknown on %s: taken as Gen3 (8 GT/s), NCCL's fallback", busid)
	default:
		num, rest, _ := strings.Cut(speed, " ")
		rest = strings.TrimSpace(rest)
		if !strings.HasPrefix(rest, "GT/s") {
			if v, ok := strings.CutSuffix(num, "GT/s"); ok {
				num = v
			} else {
				return 0, 0, im.errf(n, "link_speed %q is not a PCIe speed like \"32.0 GT/s PCIe\"", speed)
			}
		}
		f, perr := strconv.ParseFloat(num, 64)
		if perr != nil || !(f > 0) {
			return 0, 0, im.errf(n, "link_speed %q is not a PCIe speed like \"32.0 GT/s PCIe\"", speed)
		}
		switch f {
		case 2.5:
			gen = 1
		case 5:
			gen = 2
		case 8:
			gen = 3
		case 16:
			gen = 4
		case 32:
			gen = 5
		case 64:
			gen = 6
		default:
			gen = 3
			im.notes.addItem("speed-odd", "link_speed of no PCIe generation taken as Gen3, NCCL's fallback (%s)", fmt.Sprintf("%s %q", busid, speed))
		}
	}
	wv, ok := n.attr("link_width")
	wv = strings.TrimSpace(wv)
	if !ok || wv == "" || wv == "0" {
		im.notes.addItem("width0", "link_width 0 or missing on %s: taken as x16, as NCCL does", busid)
		return gen, 16, nil
	}
	w, perr := strconv.Atoi(wv)
	if perr != nil {
		return 0, 0, im.errf(n, "link_width %q is not a number of lanes", wv)
	}
	if w < 0 {
		return 0, 0, im.errf(n, "link_width %d is negative", w)
	}
	if _, rerr := pcieRate(gen, w); rerr != nil {
		return 0, 0, im.errf(n, "link_width %d is not one of 1, 2, 4, 8, 16, 32", w)
	}
	return gen, w, nil
}

// nvlinkRate is the per-link, per-direction NVLink rate of a GPU of
// compute capability sm, with the note saying so.
func nvlinkRate(sm int) (float64, string) {
	switch {
	case sm >= 100:
		return 50, "NVLink 5, 50 GB/s per link per direction (sm ≥ 100)"
	case sm >= 90:
		return 26.562, "NVLink 4, 26.562 GB/s per link per direction (sm 90, as nvidia-smi nvlink -s shows on H100/H200)"
	case sm >= 80:
		return 25, "NVLink 3, 25 GB/s per link per direction (sm 80)"
	case sm >= 70:
		return 25, "NVLink 2, 25 GB/s per link per direction (sm 70)"
	case sm > 0:
		return 20, "NVLink 1, 20 GB/s per link per direction (sm 60)"
	}
	return 26.562, "GPU without sm attribute: NVLink taken as 26.562 GB/s per link per direction (NVLink 4)"
}

// gpuPair is an ordered pair of GPU indices (rank order).
type gpuPair struct{ a, b int }

// nvlinkSet is what the GPUs' <nvlink> elements list: links to other GPUs
// by ordered pair (as each GPU lists them), and links to NVSwitches, one
// switch per target busid.
type nvlinkSet struct {
	directed map[gpuPair]int
	pairEl   map[gpuPair]*xnode // the first element listing each pair
	nvsIndex map[string]int
	nvsPorts []map[int]int // switch → GPU → count
}

// nvlinks resolves the GPUs' <nvlink> elements into direct links and
// NVSwitches.
func (im *ncclImport) nvlinks(spec *hostSpec, ps *Params, given bool) error {
	byBus := map[string]*xmlGPU{}
	for _, g := range im.gpus {
		byBus[g.busid] = g
	}
	rate := func(g *xmlGPU) sim.Rate {
		if given {
			return sim.Rate(ps.Get("nvlink.link_bandwidth")) * sim.GBps
		}
		v, note := nvlinkRate(g.sm)
		im.notes.add(note)
		return sim.Rate(v) * sim.GBps
	}
	set := &nvlinkSet{directed: map[gpuPair]int{}, pairEl: map[gpuPair]*xnode{}, nvsIndex: map[string]int{}}
	for _, g := range im.gpus {
		for _, l := range g.nvlinks {
			if err := im.nvlink(set, g, l, byBus); err != nil {
				return err
			}
		}
	}
	if err := im.directLinks(spec, set, rate); err != nil {
		return err
	}
	nvsPorts := set.nvsPorts
	counts := map[int]bool{}
	for _, ports := range nvsPorts {
		var list []nvPort
		for _, g := range slices.Sorted(maps.Keys(ports)) {
			list = append(list, nvPort{gpu: g, count: ports[g], perLink: rate(im.gpus[g])})
			counts[ports[g]] = true
		}
		spec.nvsw = append(spec.nvsw, list)
	}
	if len(nvsPorts) > 0 {
		im.notes.add(fmt.Sprintf("NVLinks to tclass 0x068000 joined through %d NVSwitch node(s), one per target busid", len(nvsPorts)))
	}
	if len(spec.direct)+len(spec.nvsw) > 0 && given {
		im.notes.add(fmt.Sprintf("NVLink rate nvlink.link_bandwidth = %s GB/s per link per direction from the parameters given", gbString(ps.Get("nvlink.link_bandwidth"))))
	}
	if !given && len(counts) == 1 && len(spec.direct) == 0 {
		for c := range counts {
			_ = ps.Set("nvlink.count", float64(c), "imported from "+im.file)
		}
		rates := map[sim.Rate]bool{}
		for _, ports := range spec.nvsw {
			for _, p := range ports {
				rates[p.perLink] = true
			}
		}
		for r := range rates {
			if len(rates) == 1 {
				_ = ps.Set("nvlink.link_bandwidth", float64(r/sim.GBps), "imported from "+im.file+" (NVLink generation of the GPUs' sm)")
			}
		}
	}
	return nil
}

// nvlink reads one <nvlink> element l of GPU g into set.
func (im *ncclImport) nvlink(set *nvlinkSet, g *xmlGPU, l *xnode, byBus map[string]*xmlGPU) error {
	cv, ok := l.attr("count")
	if !ok {
		return im.errf(l, "no count attribute (on %s)", g.pci.label())
	}
	count, err := strconv.Atoi(strings.TrimSpace(cv))
	if err != nil {
		return im.errf(l, "count %q is not a number of links", cv)
	}
	if count <= 0 || count > 64 {
		return im.errf(l, "count %d: an NVLink count must be 1–64", count)
	}
	target, _ := l.attr("target")
	target = strings.ToLower(strings.TrimSpace(target))
	if target == "" {
		return im.errf(l, "no target busid")
	}
	tv, ok := l.attr("tclass")
	if !ok {
		return im.errf(l, "no tclass attribute")
	}
	tclass, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(strings.TrimSpace(tv)), "0x"), 16, 32)
	if err != nil {
		return im.errf(l, "tclass %q is not a hex PCI class", tv)
	}
	switch {
	case tclass == 0x068000:
		k, ok := set.nvsIndex[target]
		if !ok {
			k = len(set.nvsPorts)
			set.nvsIndex[target] = k
			set.nvsPorts = append(set.nvsPorts, map[int]int{})
		}
		set.nvsPorts[k][g.idx] += count
		if set.nvsPorts[k][g.idx] > 64 {
			return im.errf(l, "more than 64 NVLinks from %s to one NVSwitch", g.pci.label())
		}
	case tclass>>16 == 0x03:
		if target == g.busid {
			return im.errf(l, "an NVLink from a GPU to itself")
		}
		peer, ok := byBus[target]
		if !ok {
			if _, ig := im.ignored[target]; ig {
				im.notes.add("NVLinks to GPUs with rank -1 ignored")
				return nil
			}
			return im.errf(l, "target %s is not a GPU in the file", target)
		}
		p := gpuPair{g.idx, peer.idx}
		set.directed[p] += count
		if set.directed[p] > 64 {
			return im.errf(l, "more than 64 NVLinks between two GPUs")
		}
		if _, ok := set.pairEl[p]; !ok {
			set.pairEl[p] = l
		}
	case tclass == 0x068001:
		im.notes.add("ignored NVLinks to CPUs (tclass 0x068001)")
	default:
		im.notes.addItem("nv-other", "ignored NVLinks to devices of other classes (%s)", tv)
	}
	return nil
}

// directLinks adds the GPU-to-GPU links, each pair once, in pair order;
// the two GPUs must agree on the count where both list the pair.
func (im *ncclImport) directLinks(spec *hostSpec, set *nvlinkSet, rate func(*xmlGPU) sim.Rate) error {
	var keys []gpuPair
	for p := range set.directed {
		if p.a < p.b || set.directed[gpuPair{p.b, p.a}] == 0 {
			keys = append(keys, p)
		}
	}
	slices.SortFunc(keys, func(x, y gpuPair) int {
		if x.a != y.a {
			return cmp.Compare(x.a, y.a)
		}
		return cmp.Compare(x.b, y.b)
	})
	for _, p := range keys {
		c, back := set.directed[p], set.directed[gpuPair{p.b, p.a}]
		if back != 0 && back != c {
			return im.errf(set.pairEl[gpuPair{p.b, p.a}], "count %d, but the GPU at %s lists %d NVLinks the other way", back, im.gpus[p.a].pci.label(), c)
		}
		if back == 0 {
			im.notes.add("some NVLinks are listed by one GPU only: taken as links both ways")
		}
		a, b := min(p.a, p.b), max(p.a, p.b)
		spec.direct = append(spec.direct, nvPair{a: a, b: b, count: c, perLink: min(rate(im.gpus[a]), rate(im.gpus[b]))})
	}
	return nil
}
