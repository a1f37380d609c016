package topology

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func addSeeds(f *testing.F, pattern string) {
	files, err := filepath.Glob(filepath.Join("testdata", pattern))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// FuzzImportSMI: the matrix importer never panics, and whatever it accepts
// it reproduces exactly.
func FuzzImportSMI(f *testing.F) {
	addSeeds(f, "*topo_m.txt")
	f.Add([]byte("\tGPU0\tGPU1\tGPU2\nGPU0\t X \tNV4\tPIX\nGPU1\tNV4\t X \tPIX\nGPU2\tPIX\tPIX\t X \n"))
	f.Add([]byte("\tGPU0\tGPU1\tGPU2\tGPU3\nGPU0\t X \tPXB\tPIX\tPHB\nGPU1\tPXB\t X \tPXB\tPHB\nGPU2\tPIX\tPXB\t X \tPHB\nGPU3\tPHB\tPHB\tPHB\t X \n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		top, err := ImportSMI(bytes.NewReader(data), "fuzz.txt", ImportOptions{})
		m, _, perr := parseSMI(bytes.NewReader(data), "fuzz.txt")
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if perr != nil {
			t.Fatalf("import succeeded but the parser failed: %v", perr)
		}
		if top.NumGPUs() != m.n {
			t.Fatalf("%d GPUs, the matrix has %d", top.NumGPUs(), m.n)
		}
		got, cerr := top.ClassMatrix()
		if cerr != nil {
			t.Fatal(cerr)
		}
		for i := range got {
			for j := range got[i] {
				if i != j && got[i][j] != m.cells[i][j] {
					t.Fatalf("GPU%d–GPU%d: imported %v, matrix %v", i, j, got[i][j], m.cells[i][j])
				}
			}
		}
	})
}

// FuzzImportNCCLXML: the XML importer never panics, and what it accepts is
// a machine whose GPUs all reach each other and host memory.
func FuzzImportNCCLXML(f *testing.F) {
	addSeeds(f, "*.xml")
	for _, s := range []string{
		`<system version="1"><cpu numaid="0"><pci busid="0000:01:00.0" class="0x030200" link_speed="8 GT/s" link_width="16"><gpu sm="80" rank="0"><nvlink target="0000:02:00.0" count="4" tclass="0x030200"/></gpu></pci><pci busid="0000:02:00.0" class="0x030200"><gpu sm="80" rank="1"><nvlink target="0000:01:00.0" count="4" tclass="0x030200"/></gpu></pci></cpu></system>`,
		`<system version="1"><cpu numaid="1"><pci busid="a" class="0x060400" link_speed="16 GT/s" link_width="8"><pci busid="b" class="0x060400"><pci busid="c" class="0x030000"><gpu rank="0"/></pci></pci><pci busid="d" class="0x020000"><nic><net name="x"/></nic></pci></pci></cpu><cpu numaid="-1"><pci busid="e" class="0x030200" link_speed="64.0 GT/s PCIe" link_width="4"><gpu rank="1" sm="100"><nvlink target="f" count="18" tclass="0x068000"/><c2c/></gpu></pci></cpu></system>`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		top, err := ImportNCCLXML(bytes.NewReader(data), "fuzz.xml", ImportOptions{})
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if top.NumGPUs() == 0 {
			t.Fatal("accepted a machine with no GPUs")
		}
		if _, err := top.ClassMatrix(); err != nil {
			t.Fatal(err)
		}
		for _, g := range top.GPUs() {
			if _, err := top.HostRoute(g); err != nil {
				t.Fatal(err)
			}
		}
		// Detection agrees when the document starts as NCCL writes it.
		if DetectFormat(data) == FormatNCCLXML {
			if _, f, err := Import(bytes.NewReader(data), "fuzz.xml", ImportOptions{}); err != nil || f != FormatNCCLXML {
				t.Fatalf("Import: %v, %v", f, err)
			}
		}
	})
}
