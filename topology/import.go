package topology

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/arsim/arsim/sim"
)

// ImportOptions chooses the defaults an importer uses for what its input
// does not say.
type ImportOptions struct {
	// PCIeGen and PCIeWidth are the PCIe links assumed where the input gives
	// no speeds (the nvidia-smi matrix): GPU links and switch uplinks.
	// Zero means Gen5 x16. NCCL XML carries its own link speeds.
	PCIeGen, PCIeWidth int
	// Params are the machine parameters; nil means the preset defaults of a
	// PCIe Gen5 GPU on an AMD EPYC host. The importer works on a copy.
	Params *Params
	// GPU is the GPU class to build with (the GPU table, GPUs): its
	// parameters are set over Params, and its PCIe link is the matrix's
	// assumed one. nil: the class the file names (NCCL XML <gpu sm>: the
	// first class of that compute capability in the table), else Params'
	// own GPU values. Topology.Notes says which.
	GPU *GPUClass
	// Overrides are set last, over the GPU class and what the file says
	// (a --params file): they win. OverridesFile names them in errors.
	Overrides     []Override
	OverridesFile string
}

// Format is a topology file format the importers read.
type Format uint8

// Formats.
const (
	FormatUnknown Format = iota
	FormatSMI            // the matrix printed by `nvidia-smi topo -m`
	FormatNCCLXML        // NCCL's topology XML (NCCL_TOPO_DUMP_FILE)
)

// String returns the format's name as messages print it.
func (f Format) String() string {
	switch f {
	case FormatSMI:
		return "nvidia-smi topo -m"
	case FormatNCCLXML:
		return "NCCL topology XML"
	}
	return "unknown format"
}

// maxImportBytes bounds what the importers read: real files are a few KiB.
const maxImportBytes = 16 << 20

// maxImportGPUs bounds the machine size an importer accepts.
const maxImportGPUs = 256

// Import reads a topology in either format, telling them apart by content:
// XML whose root is <system> is NCCL's topology XML; a matrix with a GPU0
// header line is `nvidia-smi topo -m`. name is the file name for error
// messages.
func Import(r io.Reader, name string, opts ImportOptions) (*Topology, Format, error) {
	data, err := readAllLimited(r, name)
	if err != nil {
		return nil, FormatUnknown, err
	}
	f := DetectFormat(data)
	switch f {
	case FormatNCCLXML:
		t, err := ImportNCCLXML(bytes.NewReader(data), name, opts)
		return t, f, err
	case FormatSMI:
		t, err := ImportSMI(bytes.NewReader(data), name, opts)
		return t, f, err
	}
	return nil, FormatUnknown, fmt.Errorf("topology: %s: not a topology file: want NCCL topology XML (root element <system version=\"1\">, as NCCL_TOPO_DUMP_FILE writes) or the matrix of `nvidia-smi topo -m` (a header line starting with GPU0)", name)
}

// ImportFile imports the topology file at path (either format).
func ImportFile(path string, opts ImportOptions) (*Topology, Format, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, FormatUnknown, fmt.Errorf("topology: %w", err)
	}
	defer f.Close()
	return Import(f, path, opts)
}

// DetectFormat tells which topology format data is in, or FormatUnknown.
func DetectFormat(data []byte) Format {
	s := bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	for {
		s = bytes.TrimLeft(s, " \t\r\n")
		switch {
		case bytes.HasPrefix(s, []byte("<?")):
			i := bytes.Index(s, []byte("?>"))
			if i < 0 {
				return FormatUnknown
			}
			s = s[i+2:]
			continue
		case bytes.HasPrefix(s, []byte("<!--")):
			i := bytes.Index(s[4:], []byte("-->"))
			if i < 0 {
				return FormatUnknown
			}
			s = s[4+i+3:]
			continue
		}
		break
	}
	if bytes.HasPrefix(s, []byte("<system")) {
		rest := s[len("<system"):]
		if len(rest) == 0 || strings.ContainsRune(" \t\r\n/>", rune(rest[0])) {
			return FormatNCCLXML
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, maxImportBytes)
	for sc.Scan() {
		f := strings.Fields(stripANSI(sc.Text()))
		if len(f) > 0 && f[0] == "GPU0" && (len(f) == 1 || f[1] != "X") {
			return FormatSMI
		}
	}
	return FormatUnknown
}

func readAllLimited(r io.Reader, name string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxImportBytes+1))
	if err != nil {
		return nil, fmt.Errorf("topology: %s: %w", name, err)
	}
	if len(data) > maxImportBytes {
		return nil, fmt.Errorf("topology: %s: larger than %d MiB; not a topology file", name, maxImportBytes>>20)
	}
	return data, nil
}

// topoName turns a file name into a topology name: "dir/topo_m.txt" → "topo_m".
func topoName(file string) string {
	b := filepath.Base(file)
	if e := filepath.Ext(b); e != "" && e != b {
		b = strings.TrimSuffix(b, e)
	}
	if b == "" || b == "." || b == string(filepath.Separator) {
		return "imported"
	}
	return b
}

// importParams returns the parameters to build with (a copy) and a note on
// where they come from.
func importParams(opts ImportOptions) (*Params, string, error) {
	if opts.Params == nil {
		ps := commonParams()
		return ps, fmt.Sprintf("host parameters (latencies, socket link, host memory) are the defaults of a two-socket AMD EPYC host, and its eager calls cost what they cost on the %.3g-GHz core arsim measured them on (host.core_clock: give your CPU's boost clock, or fit it with calibrate --fit host.core_clock) (topology/params/base.txt); --params FILE to change them", ps.Get("host.issue_core_clock")), nil
	}
	ps := opts.Params.Clone()
	if err := ps.validate(); err != nil {
		return nil, "", err
	}
	for _, n := range importParamNames {
		if _, ok := ps.Lookup(n); !ok {
			return nil, "", fmt.Errorf("the parameters given have no %s", n)
		}
	}
	return ps, "parameters are the ones given (not the preset defaults)", nil
}

// importGPU sets the GPU class's parameters in ps: opts.GPU, else the class
// of compute capability sm (0: the file names none), and notes which.
func importGPU(ps *Params, opts ImportOptions, sm int, where string, notes *noteList) (*GPUClass, error) {
	g := opts.GPU
	switch {
	case g != nil:
		notes.add(fmt.Sprintf("GPU class %s (given; the GPU table's values, each with its source)", g.Name))
	case sm > 0:
		cands := GPUClassesWithSM(sm)
		if len(cands) == 0 {
			notes.add(fmt.Sprintf("%s is in no class of the GPU table (%s): GPU parameters are the defaults' but for its compute capability; --gpu NAME to choose", where, strings.Join(GPUClassNames(), ", ")))
			if _, ok := ps.Lookup(ComputeCapability); ok {
				if err := ps.Set(ComputeCapability, float64(sm), "the file: "+where); err != nil {
					notes.add(fmt.Sprintf("%s: %v; the default's kept", where, err))
				}
			}
			return nil, nil
		}
		g = &cands[0]
		if len(cands) == 1 {
			notes.add(fmt.Sprintf("GPU class %s from %s", g.Name, where))
		} else {
			var names []string
			for _, c := range cands {
				names = append(names, c.Name)
			}
			notes.add(fmt.Sprintf("GPU class %s from %s, which is also %s: --gpu NAME to choose", g.Name, where, strings.Join(names[1:], ", ")))
		}
	default:
		if opts.Params == nil {
			notes.add(fmt.Sprintf("the file names no GPU: GPU parameters are RTX PRO 6000's (the defaults); --gpu NAME to choose one of %s", strings.Join(GPUClassNames(), ", ")))
		}
		return nil, nil
	}
	if err := g.Apply(ps); err != nil {
		return nil, err
	}
	return g, nil
}

// importOverrides sets opts.Overrides in ps, last.
func importOverrides(ps *Params, opts ImportOptions, notes *noteList) error {
	if len(opts.Overrides) == 0 {
		return nil
	}
	file := opts.OverridesFile
	if file == "" {
		file = "the overrides given"
	}
	if err := ps.Apply(opts.Overrides, file); err != nil {
		return err
	}
	notes.add(fmt.Sprintf("%d parameter(s) set from %s, over everything else", len(opts.Overrides), file))
	return nil
}

// importParamNames are the parameters the importers read.
var importParamNames = []string{
	"pcie.gpu_port_latency", "pcie.switch_latency", "pcie.hostbridge_latency",
	"cpu.fabric_latency", "cpu.memory_path_latency", "cpu.fabric_bandwidth", "smp.latency", "smp.bandwidth",
	"hostmem.bandwidth", "nvlink.link_bandwidth", "nvlink.latency", "nvlink.count",
	"p2p.through_host_bridge", "p2p.across_sockets", "collapse.enabled", "collapse.bandwidth",
}

// noteList collects notes, merging repeated ones: add(key, item) gathers
// items under a key whose text is given once by the first call.
type noteList struct {
	order []string
	text  map[string]string
	items map[string][]string
}

func (n *noteList) add(s string) { n.addItem(s, s, "") }

// addItem records item under key; the note reads format with %s replaced
// by the items joined with ", ".
func (n *noteList) addItem(key, format, item string) {
	if n.text == nil {
		n.text, n.items = map[string]string{}, map[string][]string{}
	}
	if _, ok := n.text[key]; !ok {
		n.order = append(n.order, key)
		n.text[key] = format
	}
	if item != "" {
		for _, have := range n.items[key] {
			if have == item {
				return
			}
		}
		n.items[key] = append(n.items[key], item)
	}
}

func (n *noteList) list() []string {
	var out []string
	for _, k := range n.order {
		t := n.text[k]
		if strings.Contains(t, "%s") {
			items := n.items[k]
			if len(items) > 8 {
				items = append(items[:8:8], fmt.Sprintf("and %d more", len(n.items[k])-8))
			}
			t = strings.Replace(t, "%s", strings.Join(items, ", "), 1)
		}
		out = append(out, t)
	}
	return out
}

// The importers describe a machine as a host tree (sockets → host bridges
// → switches → GPUs) plus NVLinks, then build it with buildImported.

// devSpec is a PCIe device below a host bridge: a GPU (gpu ≥ 0) or a switch.
type devSpec struct {
	gpu        int // GPU index in rank order, -1 for a switch
	gen, width int // the link to the parent
	children   []*devSpec
}

// hostSpec is the whole machine.
type hostSpec struct {
	gpus    int
	sockets [][][]*devSpec // socket → host bridge → devices on it
	direct  []nvPair       // GPU–GPU NVLinks
	nvsw    [][]nvPort     // NVSwitches: the GPUs on each
}

type nvPair struct {
	a, b    int
	count   int
	perLink sim.Rate
}

type nvPort struct {
	gpu     int
	count   int
	perLink sim.Rate
}

// gpuSockets returns each GPU's socket, refusing a GPU placed twice or on
// no host bridge.
func (spec *hostSpec) gpuSockets() ([]int, error) {
	gpuSocket := make([]int, spec.gpus)
	for i := range gpuSocket {
		gpuSocket[i] = -1
	}
	var mark func(d *devSpec, s int) error
	mark = func(d *devSpec, s int) error {
		if d.gpu >= 0 {
			if d.gpu >= spec.gpus || gpuSocket[d.gpu] >= 0 {
				return fmt.Errorf("GPU %d placed twice", d.gpu)
			}
			gpuSocket[d.gpu] = s
		}
		for _, c := range d.children {
			if err := mark(c, s); err != nil {
				return err
			}
		}
		return nil
	}
	for s, hbs := range spec.sockets {
		for _, devs := range hbs {
			for _, d := range devs {
				if err := mark(d, s); err != nil {
					return nil, err
				}
			}
		}
	}
	for i, s := range gpuSocket {
		if s < 0 {
			return nil, fmt.Errorf("gpu%d is on no host bridge", i)
		}
	}
	return gpuSocket, nil
}

// buildImported builds spec with parameters ps; errors from Builder are
// returned as they are (the caller adds the file name).
func buildImported(name string, ps *Params, spec *hostSpec) (*Topology, error) {
	gpuSocket, err := spec.gpuSockets()
	if err != nil {
		return nil, err
	}
	b := NewBuilder(name, ps)
	ns := sim.Nanos
	gbps := func(n string) sim.Rate { return sim.Rate(ps.Get(n)) * sim.GBps }
	port := ns(ps.Get("pcie.gpu_port_latency"))
	cpus := make([]NodeID, len(spec.sockets))
	for s := range spec.sockets {
		cpus[s] = b.Node(CPU, fmt.Sprintf("cpu%d", s), s, ns(ps.Get("cpu.fabric_latency")))
		mem := b.Node(HostMemory, fmt.Sprintf("mem%d", s), s, 0)
		b.PlainLink(cpus[s], mem, Memory, gbps("hostmem.bandwidth"), ns(ps.Get("cpu.memory_path_latency")))
	}
	gpus := make([]NodeID, spec.gpus)
	for i := range gpus {
		gpus[i] = b.Node(GPU, fmt.Sprintf("gpu%d", i), gpuSocket[i], 0)
	}
	nhb, nsw := 0, 0
	var attach func(d *devSpec, parent NodeID, s int)
	attach = func(d *devSpec, parent NodeID, s int) {
		if d.gpu >= 0 {
			b.PCIeLink(gpus[d.gpu], parent, d.gen, d.width, port)
			return
		}
		sw := b.Node(PCIeSwitch, fmt.Sprintf("sw%d", nsw), s, ns(ps.Get("pcie.switch_latency")))
		nsw++
		b.PCIeLink(sw, parent, d.gen, d.width, 0)
		for _, c := range d.children {
			attach(c, sw, s)
		}
	}
	for s, hbs := range spec.sockets {
		for _, devs := range hbs {
			h := b.Node(HostBridge, fmt.Sprintf("hb%d", nhb), s, ns(ps.Get("pcie.hostbridge_latency")))
			nhb++
			b.PlainLink(h, cpus[s], Fabric, gbps("cpu.fabric_bandwidth"), 0)
			for _, d := range devs {
				attach(d, h, s)
			}
		}
	}
	for s := 1; s < len(cpus); s++ {
		b.PlainLink(cpus[s-1], cpus[s], SMP, gbps("smp.bandwidth"), ns(ps.Get("smp.latency")))
	}
	nvLat := ps.Get("nvlink.latency")
	for i, ports := range spec.nvsw {
		nvs := b.Node(NVSwitch, fmt.Sprintf("nvswitch%d", i), 0, 0)
		for _, p := range ports {
			b.NVLinkLink(gpus[p.gpu], nvs, p.count, p.perLink, ns(nvLat/2))
		}
	}
	for _, p := range spec.direct {
		b.NVLinkLink(gpus[p.a], gpus[p.b], p.count, p.perLink, ns(nvLat))
	}
	t := b.Topology()
	t.Platform = Platform{
		P2PThroughHostBridge: ps.Get("p2p.through_host_bridge") != 0,
		P2PAcrossSockets:     ps.Get("p2p.across_sockets") != 0,
		WriteCollapse:        ps.Get("collapse.enabled") != 0,
		CollapseRate:         gbps("collapse.bandwidth"),
	}
	return b.Build()
}

// gbString prints a GB/s value without trailing zeros.
func gbString(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// stripANSI removes terminal escape sequences (nvidia-smi underlines its
// header on a terminal).
func stripANSI(s string) string {
	if !strings.ContainsRune(s, 0x1b) {
		return s
	}
	var out strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] == ';' || s[j] == '?' || (s[j] >= '0' && s[j] <= '9')) {
				j++
			}
			if j < len(s) {
				i = j
				continue
			}
		}
		if s[i] == 0x1b {
			continue
		}
		out.WriteByte(s[i])
	}
	return out.String()
}
