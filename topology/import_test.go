package topology

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func td(name string) string { return filepath.Join("testdata", name) }

func importTD(t *testing.T, name string, opts ImportOptions) (*Topology, Format) {
	t.Helper()
	top, f, err := ImportFile(td(name), opts)
	require.NoError(t, err)
	return top, f
}

// classes checks the path class of GPU pairs by rank.
func classes(t *testing.T, top *Topology, want map[[2]int]string) {
	t.Helper()
	for pair, w := range want {
		c, err := top.PathClass(top.GPUs()[pair[0]], top.GPUs()[pair[1]])
		require.NoError(t, err)
		assert.Equal(t, w, c.String(), "GPU%d–GPU%d", pair[0], pair[1])
	}
}

func countKind(top *Topology, k Kind) int {
	n := 0
	for _, x := range top.Nodes() {
		if x.Kind == k {
			n++
		}
	}
	return n
}

func hasNote(t *testing.T, top *Topology, sub string) {
	t.Helper()
	for _, n := range top.Notes {
		if strings.Contains(n, sub) {
			return
		}
	}
	assert.Failf(t, "missing note", "no note contains %q; notes:\n%s", sub, strings.Join(top.Notes, "\n"))
}

func classStrings(t *testing.T, top *Topology) [][]string {
	t.Helper()
	m, err := top.ClassMatrix()
	require.NoError(t, err)
	out := make([][]string, len(m))
	for i := range m {
		out[i] = make([]string, len(m))
		for j := range m[i] {
			if i == j {
				out[i][j] = "X"
			} else {
				out[i][j] = m[i][j].String()
			}
		}
	}
	return out
}

func TestImportH200x2BothFormatsMatchThePreset(t *testing.T) {
	pre, err := Load("h200x2")
	require.NoError(t, err)
	want := classStrings(t, pre)
	for _, file := range []string{"h200x2_topo_m.txt", "h200x2_nccl_topo.xml"} {
		t.Run(file, func(t *testing.T) {
			top, _ := importTD(t, file, ImportOptions{})
			require.Equal(t, 2, top.NumGPUs())
			assert.Equal(t, want, classStrings(t, top))
			assert.Equal(t, []int{0}, top.Sockets())
			assert.Equal(t, 1, countKind(top, NVSwitch))
			assert.Equal(t, 2, countKind(top, HostBridge), "each GPU on its own host link, as in the preset")
			pcie, err := top.PCIePathClass(top.GPUs()[0], top.GPUs()[1])
			require.NoError(t, err)
			assert.Equal(t, "NODE", pcie.String())
			for _, l := range top.Links() {
				switch l.Type {
				case PCIe:
					assert.Equal(t, 5, l.Gen)
					assert.Equal(t, 16, l.Width)
				case NVLink:
					assert.Equal(t, 18, l.Count)
					assert.InDelta(t, 18*26.562, l.Bandwidth.GB(), 1e-6)
				}
			}
			assert.Equal(t, 18.0, top.Params.Get("nvlink.count"))
			hasNote(t, top, "--params FILE to change them")
		})
	}
	smi, _ := importTD(t, "h200x2_topo_m.txt", ImportOptions{})
	assert.Equal(t, "h200x2_topo_m", smi.Name)
	hasNote(t, smi, "assumed PCIe Gen5 x16 for every GPU link: the matrix gives no link speeds")
	hasNote(t, smi, "every GPU pair is NV18: GPUs joined by one NVSwitch")
	hasNote(t, smi, "26.562 GB/s per NVLink")
	hasNote(t, smi, "1 socket(s) from the NUMA Affinity column")
	xml, _ := importTD(t, "h200x2_nccl_topo.xml", ImportOptions{})
	hasNote(t, xml, `numaid="-1"`)
	hasNote(t, xml, "link_width 0 or missing on 0000:00:06.0, 0000:00:07.0: taken as x16")
	hasNote(t, xml, "ignored <nic>")
	hasNote(t, xml, "NVLink 4, 26.562 GB/s")
	hasNote(t, xml, "one per target busid")
}

func TestImportSMITwoSocketsPIXNodeSYSWithNICs(t *testing.T) {
	top, f := importTD(t, "pcie8_2socket_topo_m.txt", ImportOptions{})
	assert.Equal(t, FormatSMI, f)
	require.Equal(t, 8, top.NumGPUs())
	classes(t, top, map[[2]int]string{{0, 1}: "PIX", {0, 2}: "NODE", {0, 4}: "SYS", {2, 3}: "PIX", {4, 5}: "PIX", {5, 6}: "NODE", {7, 3}: "SYS"})
	assert.Equal(t, []int{0, 1}, top.Sockets())
	assert.Equal(t, 4, countKind(top, PCIeSwitch))
	assert.Equal(t, 4, countKind(top, HostBridge))
	assert.Equal(t, 0, countKind(top, NVSwitch))
	for r := 0; r < 8; r++ {
		assert.Equal(t, r/4, top.GPU(r).Socket, "gpu%d", r)
	}
	hasNote(t, top, "ignored NIC rows and columns (NIC0, NIC1)")
	hasNote(t, top, "2 socket(s) from the NUMA Affinity column")
	hasNote(t, top, "PIX groups behind one PCIe switch each (4)")
	hasNote(t, top, "smp.bandwidth 95 GB/s")
	// The host route of GPU5 goes through its switch, host bridge and socket 1.
	r, err := top.HostRoute(top.GPUs()[5])
	require.NoError(t, err)
	var names []string
	for _, id := range r.Nodes() {
		names = append(names, top.Node(id).Kind.String())
	}
	assert.Equal(t, "gpu switch hostbridge cpu hostmem", strings.Join(names, " "))
}

func TestImportSMIOldPXBAndSocketsFromSYS(t *testing.T) {
	top, _ := importTD(t, "pxb8_old_topo_m.txt", ImportOptions{})
	require.Equal(t, 8, top.NumGPUs())
	classes(t, top, map[[2]int]string{{0, 1}: "PIX", {0, 2}: "PXB", {1, 3}: "PXB", {2, 3}: "PIX", {0, 4}: "PHB", {4, 5}: "PHB", {3, 5}: "PHB", {5, 6}: "SYS", {6, 7}: "NODE"})
	assert.Equal(t, []int{0, 1}, top.Sockets())
	assert.Equal(t, 3, countKind(top, PCIeSwitch), "two PIX switches under one upper switch")
	assert.Equal(t, 3, countKind(top, HostBridge), "one for GPUs 0–5, one each for GPU6 and GPU7")
	hasNote(t, top, "derived from the SYS structure")
	hasNote(t, top, "PXB groups under an upper switch (1)")
}

func TestImportSMIDirectNVLinksOfDifferentCounts(t *testing.T) {
	top, _ := importTD(t, "nvmix4_topo_m.txt", ImportOptions{})
	require.Equal(t, 4, top.NumGPUs())
	classes(t, top, map[[2]int]string{{0, 1}: "NV2", {0, 2}: "NV1", {0, 3}: "SYS", {1, 2}: "SYS", {2, 3}: "NV2"})
	assert.Equal(t, 0, countKind(top, NVSwitch))
	assert.Equal(t, []int{0, 1}, top.Sockets())
	n := 0
	for _, l := range top.Links() {
		if l.Type == NVLink {
			n++
			assert.Equal(t, GPU, top.Node(l.A).Kind)
			assert.Equal(t, GPU, top.Node(l.B).Kind)
		}
	}
	assert.Equal(t, 4, n)
	hasNote(t, top, "direct GPU–GPU NVLinks")
}

func TestImportSMIOptionsChooseTheLinks(t *testing.T) {
	ps := commonParams()
	require.NoError(t, ps.Set("smp.bandwidth", 40, "test"))
	top, _ := importTD(t, "pcie8_2socket_topo_m.txt", ImportOptions{PCIeGen: 4, PCIeWidth: 8, Params: ps})
	for _, l := range top.Links() {
		if l.Type == PCIe {
			assert.Equal(t, 4, l.Gen)
			assert.Equal(t, 8, l.Width)
		}
		if l.Type == SMP {
			assert.InDelta(t, 40, l.Bandwidth.GB(), 1e-9)
		}
	}
	hasNote(t, top, "assumed PCIe Gen4 x8 for every GPU link")
	hasNote(t, top, "parameters are the ones given")
	_, _, err := ImportFile(td("pcie8_2socket_topo_m.txt"), ImportOptions{PCIeGen: 9})
	assert.ErrorContains(t, err, "pcie8_2socket_topo_m.txt: import options: PCIe generation 9")
}

// Every preset's matrix, printed as nvidia-smi would, imports back to a
// machine with the same matrix.
func TestImportSMIRoundTripsEveryPreset(t *testing.T) {
	for _, name := range Presets() {
		t.Run(name, func(t *testing.T) {
			pre, err := Load(name)
			require.NoError(t, err)
			m := classStrings(t, pre)
			var b strings.Builder
			for i := range m {
				fmt.Fprintf(&b, "\tGPU%d", i)
			}
			b.WriteString("\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n")
			for i, row := range m {
				fmt.Fprintf(&b, "GPU%d\t%s\t0-7\t%d\t\tN/A\n", i, strings.Join(row, "\t"), pre.GPU(i).Socket)
			}
			top, err := ImportSMI(strings.NewReader(b.String()), name+".txt", ImportOptions{})
			require.NoError(t, err, b.String())
			assert.Equal(t, m, classStrings(t, top))
			assert.Equal(t, pre.Sockets(), top.Sockets())
		})
	}
}

func TestImportNCCLXMLTwoSocketPCIeAMD(t *testing.T) {
	top, f := importTD(t, "pcie8_amd_nccl_topo.xml", ImportOptions{})
	assert.Equal(t, FormatNCCLXML, f)
	require.Equal(t, 8, top.NumGPUs())
	classes(t, top, map[[2]int]string{{0, 1}: "PIX", {0, 3}: "PIX", {0, 4}: "SYS", {4, 7}: "PIX", {3, 4}: "SYS"})
	assert.Equal(t, []int{0, 1}, top.Sockets())
	assert.Equal(t, 2, countKind(top, PCIeSwitch))
	assert.Equal(t, 2, countKind(top, HostBridge), "NICs on their own root ports are dropped")
	for r := 0; r < 8; r++ {
		assert.Equal(t, r/4, top.GPU(r).Socket)
	}
	for _, l := range top.Links() {
		if l.Type == PCIe {
			assert.Equal(t, 5, l.Gen)
			assert.Equal(t, 16, l.Width)
		}
	}
	hasNote(t, top, "AMD_BW = 16 GB/s")
	hasNote(t, top, "own host bridge")
	hasNote(t, top, "ignored <nic>")
	assert.Contains(t, top.Description, "NCCL topology XML")
}

func TestImportNCCLXMLDirectNVLinksAndIgnoredRank(t *testing.T) {
	top, _ := importTD(t, "dgx1v4_nccl_topo.xml", ImportOptions{})
	require.Equal(t, 3, top.NumGPUs(), "the rank -1 GPU is ignored")
	classes(t, top, map[[2]int]string{{0, 1}: "NV1", {0, 2}: "NV2", {1, 2}: "NV2"})
	pcie, err := top.PCIePathClass(top.GPUs()[0], top.GPUs()[1])
	require.NoError(t, err)
	assert.Equal(t, "PIX", pcie.String())
	pcie, err = top.PCIePathClass(top.GPUs()[0], top.GPUs()[2])
	require.NoError(t, err)
	assert.Equal(t, "NODE", pcie.String())
	for _, l := range top.Links() {
		switch l.Type {
		case PCIe:
			assert.Equal(t, 3, l.Gen)
		case NVLink:
			assert.InDelta(t, float64(l.Count)*25, l.Bandwidth.GB(), 1e-9)
		}
	}
	hasNote(t, top, "rank -1 ignored")
	hasNote(t, top, "NVLink 2, 25 GB/s")
}

func TestImportDetectsTheFormat(t *testing.T) {
	for file, want := range map[string]Format{
		"h200x2_topo_m.txt": FormatSMI, "pxb8_old_topo_m.txt": FormatSMI,
		"h200x2_nccl_topo.xml": FormatNCCLXML, "pcie8_amd_nccl_topo.xml": FormatNCCLXML,
	} {
		data, err := os.ReadFile(td(file))
		require.NoError(t, err)
		assert.Equal(t, want, DetectFormat(data), file)
	}
	assert.Equal(t, FormatNCCLXML, DetectFormat([]byte("\ufeff<?xml version=\"1.0\"?>\n<!-- dumped -->\n<system version=\"1\"></system>")))
	assert.Equal(t, FormatUnknown, DetectFormat([]byte("<systemd/>")))
	_, f, err := Import(strings.NewReader("hello\n"), "x.txt", ImportOptions{})
	assert.Equal(t, FormatUnknown, f)
	assert.ErrorContains(t, err, "x.txt: not a topology file")
	assert.ErrorContains(t, err, "NCCL topology XML")
	assert.ErrorContains(t, err, "nvidia-smi topo -m")
	_, _, err = ImportFile(td("nope.txt"), ImportOptions{})
	assert.ErrorContains(t, err, "nope.txt")
	// Terminal underlining around the header is tolerated.
	top, f, err := Import(strings.NewReader("\x1b[4m\tGPU0\tGPU1\tCPU Affinity\x1b[0m\nGPU0\t X \tPHB\t0-7\nGPU1\tPHB\t X \t0-7\n"), "tty.txt", ImportOptions{})
	require.NoError(t, err)
	assert.Equal(t, FormatSMI, f)
	classes(t, top, map[[2]int]string{{0, 1}: "PHB"})
}

func TestImportErrorsNameFileAndPlace(t *testing.T) {
	cases := []struct {
		file string
		want []string
	}{
		{"bad_asym_topo_m.txt", []string{"bad_asym_topo_m.txt:5:", "GPU3–GPU1 is NODE but GPU1–GPU3 (line 3) is PHB", "symmetric"}},
		{"bad_cell_topo_m.txt", []string{"bad_cell_topo_m.txt:2:", "GPU0–GPU2", `unknown cell value "QPI"`}},
		{"bad_nonsquare_topo_m.txt", []string{"bad_nonsquare_topo_m.txt:4:", "row GPU2", "not square"}},
		{"bad_rowname_topo_m.txt", []string{"bad_rowname_topo_m.txt:4:", "row GPU3 where the row of column GPU2 was expected"}},
		{"bad_xoff_topo_m.txt", []string{"bad_xoff_topo_m.txt:3:", "GPU1–GPU2", "X off the diagonal"}},
		{"bad_pix_topo_m.txt", []string{"bad_pix_topo_m.txt:2:", "GPU0–GPU2 is NODE", "GPU0–GPU1 is PIX and GPU1–GPU2 is PIX", "no PCIe tree gives that"}},
		{"bad_truncated.xml", []string{"bad_truncated.xml: malformed XML", "unexpected EOF"}},
		{"bad_speed.xml", []string{`bad_speed.xml: <pci busid="0000:03:00.0"> (line 5): link_speed "fast"`}},
		{"bad_dup_busid.xml", []string{`bad_dup_busid.xml: <pci busid="0000:83:00.0">`, "used twice (first at line"}},
		{"bad_width.xml", []string{`bad_width.xml: <pci busid="0000:01:00.0">`, "link_width -4 is negative"}},
		{"bad_nvcount.xml", []string{`bad_nvcount.xml: <nvlink target="0000:0a:00.0"> (line 7): count 0`}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			_, _, err := ImportFile(td(c.file), ImportOptions{})
			require.Error(t, err)
			for _, w := range c.want {
				assert.ErrorContains(t, err, w)
			}
			assert.True(t, strings.HasPrefix(err.Error(), "topology: testdata/"+c.file), err.Error())
		})
	}
}

func TestImportSMIInlineErrors(t *testing.T) {
	hdr := "\tGPU0\tGPU1\tGPU2\tCPU Affinity\tNUMA Affinity\n"
	cases := map[string]struct{ in, want string }{
		"zero NVLinks":    {hdr + "GPU0\t X \tNV0\tSYS\t0\t0\nGPU1\tNV0\t X \tSYS\t0\t0\nGPU2\tSYS\tSYS\t X \t1\t1\n", "m.txt:2: GPU0–GPU1: NV0: the NVLink count must be 1–64"},
		"truncated":       {hdr + "GPU0\t X \tPIX\tSYS\t0\t0\nGPU1\tPIX\t X \tSYS\t0\t0\n", "m.txt:3: the matrix has 2 GPU rows for 3 GPU columns (truncated?): no row for GPU2"},
		"extra row":       {"\tGPU0\tCPU Affinity\nGPU0\t X \t0\nGPU1\t X \t0\n", "m.txt:3: row GPU1 after the last column's row (GPU0)"},
		"SYS in a socket": {hdr + "GPU0\t X \tNODE\tSYS\t0\t0\nGPU1\tNODE\t X \tNODE\t0\t0\nGPU2\tSYS\tNODE\t X \t0\t0\n", "m.txt:2: GPU0–GPU2 is SYS, but a chain of non-SYS entries (GPU0–GPU1 is NODE and GPU1–GPU2 is NODE)"},
		"bad header":      {"\tGPU0\tGPU2\tCPU Affinity\n", "m.txt:1: header: column GPU2 where GPU1 was expected"},
		"odd column":      {"\tGPU0\tGPU1\tCPU Affinity\tColour\n", `m.txt:1: header: unexpected column "Colour"`},
		"diagonal":        {"\tGPU0\tGPU1\nGPU0\tPIX\tPIX\nGPU1\tPIX\t X \n", `m.txt:2: GPU0–GPU0 is "PIX": the diagonal must be X`},
		"no header":       {"GPU0 X\n", "m.txt: no `nvidia-smi topo -m` header line"},
		"PXB without PIX": {"\tGPU0\tGPU1\tGPU2\nGPU0\t X \tPXB\tPHB\nGPU1\tPXB\t X \tPXB\nGPU2\tPHB\tPXB\t X \n", "m.txt:2: GPU0–GPU2 is PHB, but GPU0–GPU1 is PXB and GPU1–GPU2 is PXB"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ImportSMI(strings.NewReader(c.in), "m.txt", ImportOptions{})
			require.Error(t, err)
			assert.ErrorContains(t, err, "topology: "+c.want)
		})
	}
}

func TestImportNCCLXMLInlineErrors(t *testing.T) {
	gpu := func(bus, rank, extra string) string {
		return `<pci busid="` + bus + `" class="0x030200" link_speed="32.0 GT/s PCIe" link_width="16"><gpu dev="0" sm="90" rank="` + rank + `">` + extra + `</gpu></pci>`
	}
	sys := func(body string) string { return `<system version="1"><cpu numaid="0">` + body + `</cpu></system>` }
	cases := map[string]struct{ in, want string }{
		"root":         {`<machine/>`, "h.xml: root element is <machine>"},
		"version":      {`<system version="2"/>`, `h.xml: <system> (line 1): version "2"`},
		"no cpu":       {`<system version="1"/>`, "h.xml: no <cpu> elements"},
		"no gpus":      {sys(""), "h.xml: no GPUs"},
		"dup rank":     {sys(gpu("0000:01:00.0", "0", "") + gpu("0000:02:00.0", "0", "")), `h.xml: <gpu rank="0"> (line 1): rank 0 is also the rank of the GPU at <pci busid="0000:01:00.0">`},
		"bad rank":     {sys(gpu("0000:01:00.0", "x", "")), `<gpu rank="x"> (line 1): rank "x" is not a rank`},
		"bad target":   {sys(gpu("0000:01:00.0", "0", `<nvlink target="0000:09:00.0" count="2" tclass="0x030200"/>`)), `<nvlink target="0000:09:00.0"> (line 1): target 0000:09:00.0 is not a GPU in the file`},
		"neg count":    {sys(gpu("0000:01:00.0", "0", `<nvlink target="fffffff:ff:ff.0" count="-3" tclass="0x068000"/>`)), `count -3: an NVLink count must be 1–64`},
		"asymmetric":   {sys(gpu("0000:01:00.0", "0", `<nvlink target="0000:02:00.0" count="2" tclass="0x030200"/>`) + gpu("0000:02:00.0", "1", `<nvlink target="0000:01:00.0" count="4" tclass="0x030200"/>`)), `lists 2 NVLinks the other way`},
		"self":         {sys(gpu("0000:01:00.0", "0", `<nvlink target="0000:01:00.0" count="2" tclass="0x030200"/>`)), `an NVLink from a GPU to itself`},
		"class":        {sys(`<pci busid="0000:01:00.0" class="bridge"/>`), `<pci busid="0000:01:00.0"> (line 1): class "bridge" is not a hex PCI class`},
		"no busid":     {sys(`<pci class="0x060400"/>`), `h.xml: <pci> (line 1): no busid`},
		"width 3":      {sys(`<pci busid="0000:01:00.0" class="0x030200" link_speed="8 GT/s" link_width="3"><gpu rank="0"/></pci>`), "link_width 3 is not one of 1, 2, 4, 8, 16, 32"},
		"numaid":       {`<system version="1"><cpu numaid="zero"/></system>`, `<cpu numaid="zero"> (line 1): numaid "zero"`},
		"mismatched":   {`<system version="1"><cpu></system>`, "h.xml: malformed XML: line 1: element <cpu> closed by </system>"},
		"second root":  {`<system version="1"/><system version="1"/>`, "a second root element"},
		"deep nesting": {`<system version="1"><cpu numaid="0">` + strings.Repeat(`<pci busid="x" class="0x060400">`, 70), "nested deeper than 64"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ImportNCCLXML(strings.NewReader(c.in), "h.xml", ImportOptions{})
			require.Error(t, err)
			assert.ErrorContains(t, err, "topology: ")
			assert.ErrorContains(t, err, c.want)
		})
	}
}

func TestImportNCCLXMLFallbacksAreNoted(t *testing.T) {
	in := `<?xml version="1.0"?>
<system version="1">
  <cpu numaid="0" vendor="GenuineIntel">
    <pci busid="0000:01:00.0" class="0x030200" link_speed="Unknown" link_width="16"><gpu rank="1" sm="100"/></pci>
    <pci busid="0000:02:00.0" class="0x030200" link_speed="4 GT/s" link_width="8"><gpu rank="0" sm="100"/></pci>
  </cpu>
  <cpu numaid="1" vendor="GenuineIntel">
    <pci busid="0000:81:00.0" class="0x030200" link_speed="16.0 GT/s PCIe"><gpu rank="2" sm="100"/></pci>
  </cpu>
</system>`
	top, err := ImportNCCLXML(strings.NewReader(in), "f.xml", ImportOptions{})
	require.NoError(t, err)
	require.Equal(t, 3, top.NumGPUs())
	classes(t, top, map[[2]int]string{{0, 1}: "NODE", {0, 2}: "SYS"})
	hasNote(t, top, "link_speed missing or unknown on 0000:01:00.0: taken as Gen3")
	hasNote(t, top, `taken as Gen3, NCCL's fallback (0000:02:00.0 "4 GT/s")`)
	hasNote(t, top, "link_width 0 or missing on 0000:81:00.0")
	hasNote(t, top, "Intel QPI/UPI")
	// Rank order: rank 0 is the GPU at 0000:02:00.0 (x8).
	for _, l := range top.Links() {
		if l.Type == PCIe && (l.A == top.GPUs()[0] || l.B == top.GPUs()[0]) {
			assert.Equal(t, 8, l.Width)
		}
		if l.Type == PCIe && (l.A == top.GPUs()[2] || l.B == top.GPUs()[2]) {
			assert.Equal(t, 4, l.Gen)
		}
	}
}

func smiText(cells [][]string, numa []string) string {
	var b strings.Builder
	for i := range cells {
		fmt.Fprintf(&b, "\tGPU%d", i)
	}
	b.WriteString("\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n")
	for i, row := range cells {
		fmt.Fprintf(&b, "GPU%d\t%s\t0-7\t%s\t\tN/A\n", i, strings.Join(row, "\t"), numa[i])
	}
	return b.String()
}

func uniformMatrix(n int, class func(i, j int) string) [][]string {
	m := make([][]string, n)
	for i := range m {
		m[i] = make([]string, n)
		for j := range m[i] {
			if i == j {
				m[i][j] = " X "
			} else {
				m[i][j] = class(i, j)
			}
		}
	}
	return m
}

func TestImportSMISocketsWhenNUMADisagreesOrIsUnknown(t *testing.T) {
	// Every pair SYS although NUMA puts GPUs 0–1 and 2–3 together (seen
	// with NPS settings): the matrix wins, one socket per GPU.
	in := smiText(uniformMatrix(4, func(i, j int) string { return "SYS" }), []string{"0", "0", "1", "1"})
	top, err := ImportSMI(strings.NewReader(in), "nps.txt", ImportOptions{})
	require.NoError(t, err)
	assert.Len(t, top.Sockets(), 4)
	hasNote(t, top, "NUMA Affinity disagrees with the SYS entries (GPU0 on node 0 and GPU1 on node 0, GPU2 on node 1 and GPU3 on node 1): sockets follow the matrix")

	// All NV18 with no NUMA: one socket, one NVSwitch.
	in = smiText(uniformMatrix(8, func(i, j int) string { return "NV18" }), []string{"N/A", "N/A", "N/A", "N/A", "N/A", "N/A", "N/A", "N/A"})
	top, err = ImportSMI(strings.NewReader(in), "nv.txt", ImportOptions{})
	require.NoError(t, err)
	assert.Equal(t, []int{0}, top.Sockets())
	assert.Equal(t, 1, countKind(top, NVSwitch))
	hasNote(t, top, "1 socket(s) derived from the SYS structure")

	// All NV18 on two NUMA nodes: two sockets, still one NVSwitch.
	in = smiText(uniformMatrix(8, func(i, j int) string { return "NV18" }), []string{"0", "0", "0", "0", "1", "1", "1", "1"})
	top, err = ImportSMI(strings.NewReader(in), "nv2.txt", ImportOptions{})
	require.NoError(t, err)
	assert.Equal(t, []int{0, 1}, top.Sockets())
	pcie, err := top.PCIePathClass(top.GPUs()[0], top.GPUs()[4])
	require.NoError(t, err)
	assert.Equal(t, "SYS", pcie.String())
	pcie, err = top.PCIePathClass(top.GPUs()[0], top.GPUs()[3])
	require.NoError(t, err)
	assert.Equal(t, "NODE", pcie.String())
}

func TestImportSMIPIXPairsSharingAHostBridge(t *testing.T) {
	// nccl#1439: PIX pairs, PHB between pairs, SYS across sockets.
	in := smiText(uniformMatrix(8, func(i, j int) string {
		switch {
		case i/4 != j/4:
			return "SYS"
		case i/2 == j/2:
			return "PIX"
		}
		return "PHB"
	}), []string{"0", "0", "0", "0", "1", "1", "1", "1"})
	top, err := ImportSMI(strings.NewReader(in), "phb.txt", ImportOptions{})
	require.NoError(t, err)
	classes(t, top, map[[2]int]string{{0, 1}: "PIX", {0, 2}: "PHB", {0, 4}: "SYS", {6, 7}: "PIX"})
	assert.Equal(t, 2, countKind(top, HostBridge))
	assert.Equal(t, 4, countKind(top, PCIeSwitch))
}

// Errors keep their causes: a malformed file's XML error is encoding/xml's
// (errors.As), and the package prefix appears once.
func TestImportErrorsWrapTheirCause(t *testing.T) {
	_, err := ImportNCCLXML(strings.NewReader(`<system version="1"><cpu></system>`), "h.xml", ImportOptions{})
	var se *xml.SyntaxError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 1, se.Line)
	_, _, err = ImportFile(td("pcie8_2socket_topo_m.txt"), ImportOptions{PCIeGen: 9})
	require.Error(t, err)
	assert.Equal(t, 1, strings.Count(err.Error(), "topology: "), err.Error())
	ps := commonParams()
	require.NoError(t, ps.Set("smp.bandwidth", 40, "test"))
	bad := &Params{}
	for _, p := range ps.All() {
		if p.Name != "nvlink.count" {
			bad.Add(p)
		}
	}
	_, _, err = ImportFile(td("pcie8_2socket_topo_m.txt"), ImportOptions{Params: bad})
	assert.EqualError(t, err, "topology: "+td("pcie8_2socket_topo_m.txt")+": the parameters given have no nvlink.count")
}
