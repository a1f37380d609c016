package topology

import (
	"bytes"
	"testing"
)

// FuzzImport: Import's format detection, both branches. Whatever the
// bytes, Import gives an error or a machine whose every GPU pair has a
// class and reaches host memory; the format it reports is DetectFormat's,
// and it gives what that format's own importer gives.
func FuzzImport(f *testing.F) {
	addSeeds(f, "*topo_m.txt")
	addSeeds(f, "*.xml")
	for _, s := range []string{
		"\xef\xbb\xbf<?xml version=\"1.0\"?>\n<!-- dump -->\n<system version=\"1\"><cpu numaid=\"0\"><pci busid=\"a\" class=\"0x030200\" link_speed=\"16 GT/s\" link_width=\"16\"><gpu rank=\"0\" sm=\"90\"/></pci><pci busid=\"b\" class=\"0x030200\" link_speed=\"16 GT/s\" link_width=\"16\"><gpu rank=\"1\" sm=\"90\"/></pci></cpu></system>",
		"\xef\xbb\xbf\tGPU0\tGPU1\nGPU0\t X \tPIX\nGPU1\tPIX\t X \n",
		"\x1b[4m\tGPU0\tGPU1\x1b[0m\nGPU0\t X \tSYS\nGPU1\tSYS\t X \n",
		"<systemx/>\n\tGPU0\nGPU0\t X\n",
		"<!-- never closed",
		"GPU0 X\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		top, format, err := Import(bytes.NewReader(data), "fuzz", ImportOptions{})
		if want := DetectFormat(data); err == nil && format != want {
			t.Fatalf("Import read %v, DetectFormat says %v", format, want)
		}
		var direct *Topology
		var derr error
		switch format {
		case FormatNCCLXML:
			direct, derr = ImportNCCLXML(bytes.NewReader(data), "fuzz", ImportOptions{})
		case FormatSMI:
			direct, derr = ImportSMI(bytes.NewReader(data), "fuzz", ImportOptions{})
		default:
			if err == nil {
				t.Fatal("imported a machine from an unknown format")
			}
			return
		}
		if (err == nil) != (derr == nil) {
			t.Fatalf("Import: %v; the %v importer: %v", err, format, derr)
		}
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if top.NumGPUs() == 0 || top.NumGPUs() != direct.NumGPUs() {
			t.Fatalf("%d GPUs, the %v importer %d", top.NumGPUs(), format, direct.NumGPUs())
		}
		if _, err := top.ClassMatrix(); err != nil {
			t.Fatal(err)
		}
		for _, g := range top.GPUs() {
			if _, err := top.HostRoute(g); err != nil {
				t.Fatal(err)
			}
		}
	})
}
