package topology

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The GPU table names every class the importers and --gpu need, each value
// with a source, in its parameter's range.
func TestGPUTableCoversTheClasses(t *testing.T) {
	want := []string{"H200", "H100", "A100", "A800", "RTX PRO 6000", "RTX 5090", "RTX 4090", "L40S", "V100"}
	for _, name := range want {
		g, err := LookupGPUClass(name)
		require.NoError(t, err, name)
		assert.NotZero(t, g.SM, name)
		assert.NotEmpty(t, g.SMSource, name)
		assert.NotEmpty(t, g.PCIeSource, name)
		ps := commonParams()
		require.NoError(t, g.Apply(ps), name)
		for _, p := range []string{"gpu.sms", "gpu.mem_bandwidth"} {
			got, _ := ps.Lookup(p)
			assert.True(t, strings.HasPrefix(got.Source, "GPU table, "+g.Name+": "), "%s %s: %s", name, p, got.Source)
		}
	}
}

// Drivers' names find their class; the longest pattern wins (H100 PCIe is
// not H100 SXM).
func TestMatchGPUClass(t *testing.T) {
	for full, want := range map[string]string{
		"NVIDIA GeForce RTX 5090":                           "RTX 5090",
		"NVIDIA GeForce RTX 4090":                           "RTX 4090",
		"NVIDIA RTX PRO 6000 Blackwell Workstation Edition": "RTX PRO 6000",
		"NVIDIA H100 80GB HBM3":                             "H100",
		"NVIDIA H100 PCIe":                                  "H100 PCIe",
		"NVIDIA H200":                                       "H200",
		"NVIDIA A100-SXM4-80GB":                             "A100",
		"NVIDIA A800 80GB PCIe":                             "A800",
		"NVIDIA L40S":                                       "L40S",
		"Tesla V100-SXM2-32GB":                              "V100",
	} {
		g, ok := MatchGPUClass(full)
		require.True(t, ok, full)
		assert.Equal(t, want, g.Name, full)
	}
	_, ok := MatchGPUClass("NVIDIA T600")
	assert.False(t, ok)
	g, err := LookupGPUClass("rtx5090")
	require.NoError(t, err)
	assert.Equal(t, "RTX 5090", g.Name)
	_, err = LookupGPUClass("Voodoo 2")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "RTX PRO 6000")
}

// A machine's architecture is a parameter of its own, set by its preset,
// by the GPU class given or named, or by the file's sm where no class has
// it: not inferred from how many SMs it has.
func TestComputeCapability(t *testing.T) {
	for _, name := range GPUClassNames() {
		g, err := LookupGPUClass(name)
		require.NoError(t, err)
		ps := baseTable().Clone()
		require.NoError(t, g.Apply(ps))
		p, ok := ps.Lookup(ComputeCapability)
		require.True(t, ok)
		assert.Equal(t, float64(g.SM), p.Value, name)
		assert.Contains(t, p.Source, "GPU table, "+g.Name, name)
	}
	want := map[string]float64{"a800x8-2islands": 80, "h100x1": 90, "h200x1": 90, "h200x2": 90, "h200x8-nvswitch": 90,
		"rtxpro6000x4-1numa": 120, "rtxpro6000x8-2numa": 120, "rtxpro6000x8-switches": 120, "v100x4-plx": 70}
	assert.ElementsMatch(t, Presets(), slices.Collect(maps.Keys(want)), "every preset checked")
	for preset, sm := range want {
		p, err := Lookup(preset)
		require.NoError(t, err)
		assert.Equal(t, sm, p.DefaultParams().Get(ComputeCapability), preset)
	}
	xml := `<system version="1"><cpu numaid="0"><pci busid="0000:01:00.0" class="0x030200" link_speed="32.0 GT/s PCIe" link_width="16"><gpu rank="0" sm="100"/></pci><pci busid="0000:02:00.0" class="0x030200" link_speed="32.0 GT/s PCIe" link_width="16"><gpu rank="1" sm="100"/></pci></cpu></system>`
	top, _, err := Import(strings.NewReader(xml), "b200.xml", ImportOptions{})
	require.NoError(t, err)
	assert.Equal(t, 100.0, top.Params.Get(ComputeCapability), "no class of sm100: the file's")
}

// An NCCL XML with sm="90" is built with the first sm90 class (H200), not
// with RTX PRO 6000 values, and says so; --gpu overrides it; a parameter
// file goes over both.
func TestImportTakesTheGPUClassFromTheFile(t *testing.T) {
	top, _, err := ImportFile("testdata/h200x2_nccl_topo.xml", ImportOptions{})
	require.NoError(t, err)
	assert.Equal(t, 132.0, top.Params.Get("gpu.sms"))
	assert.Equal(t, 4800.0, top.Params.Get("gpu.mem_bandwidth"))
	assert.Contains(t, strings.Join(top.Notes, "\n"), `GPU class H200 from <gpu sm="90">, which is also H100`)
	assert.Contains(t, top.Description, "(H200)")

	h100, err := LookupGPUClass("H100")
	require.NoError(t, err)
	top, _, err = ImportFile("testdata/h200x2_nccl_topo.xml", ImportOptions{GPU: &h100,
		Overrides: []Override{{Name: "gpu.mem_bandwidth", Value: 3000, Source: "mine", Line: 1}}, OverridesFile: "mine.params"})
	require.NoError(t, err)
	assert.Equal(t, 3000.0, top.Params.Get("gpu.mem_bandwidth"), "the parameter file wins")
	assert.Equal(t, 132.0, top.Params.Get("gpu.sms"))
	assert.Contains(t, strings.Join(top.Notes, "\n"), "set from mine.params")
}

// The matrix names no GPU: --gpu sets the class and the assumed PCIe link.
func TestImportSMIWithGPUClass(t *testing.T) {
	top, _, err := ImportFile("testdata/pcie8_2socket_topo_m.txt", ImportOptions{})
	require.NoError(t, err)
	assert.Contains(t, strings.Join(top.Notes, "\n"), "the file names no GPU")
	assert.Equal(t, 188.0, top.Params.Get("gpu.sms"))

	g4090, err := LookupGPUClass("RTX 4090")
	require.NoError(t, err)
	top, _, err = ImportFile("testdata/pcie8_2socket_topo_m.txt", ImportOptions{GPU: &g4090})
	require.NoError(t, err)
	assert.Equal(t, 128.0, top.Params.Get("gpu.sms"))
	for _, l := range top.Links() {
		if l.Type == PCIe {
			assert.Equal(t, 4, l.Gen, top.LinkName(l))
		}
	}
	assert.Contains(t, strings.Join(top.Notes, "\n"), "assumed PCIe Gen4 x16")
}

func TestReadGPUTableRefusesValuesWithoutSource(t *testing.T) {
	for text, want := range map[string]string{
		"[X]\nnames = x\nsm = 90\npcie = Gen5 x16  # s\n":                     "sm of GPU X has no source",
		"[X]\nnames = x\nsm = 90 # s\npcie = Gen5 x16  # s\ngpu.sms = 3\n":    "gpu.sms of GPU X has no source",
		"[X]\nnames = x\nsm = 90 # s\npcie = Gen9 x16  # s\n":                 "pcie",
		"[X]\nnames = x\nsm = 90 # s\n":                                       "has no pcie",
		"[X]\nnames = x\nsm = 90 # s\npcie = Gen5 x16 # s\nfoo.bar = 1 # s\n": "not a machine parameter",
		"sm = 90 # s\n": "before the first",
		"":              "no GPU",
	} {
		_, err := ReadGPUTable(strings.NewReader(text), "t.txt")
		require.Error(t, err, text)
		assert.Contains(t, err.Error(), want, text)
	}
}

// FuzzReadGPUTable: the table parser never panics.
func FuzzReadGPUTable(f *testing.F) {
	f.Add(gpuTableText)
	f.Add("[X]\nnames = x\nsm = 90 # s\npcie = Gen5 x16 # s\n")
	f.Fuzz(func(t *testing.T, text string) {
		gs, err := ReadGPUTable(strings.NewReader(text), "fuzz.txt")
		if err != nil {
			return
		}
		for _, g := range gs {
			if g.SM == 0 || len(g.Names) == 0 || g.PCIeGen == 0 {
				t.Fatalf("accepted an incomplete class %+v", g)
			}
		}
	})
}

// An imported file is a preset: rebuilt with its own parameters it is the
// same machine, with others it changes.
func TestImportPresetRebuilds(t *testing.T) {
	for _, f := range []string{"testdata/pcie8_2socket_topo_m.txt", "testdata/h200x2_nccl_topo.xml"} {
		p, first, _, err := ImportPreset(f, ImportOptions{})
		require.NoError(t, err, f)
		again, err := p.BuildWith(p.DefaultParams())
		require.NoError(t, err, f)
		assert.Equal(t, len(first.Links()), len(again.Links()), f)
		for i, l := range first.Links() {
			assert.Equal(t, l.Bandwidth, again.Links()[i].Bandwidth, f)
		}
		assert.Equal(t, first.HostCPU, again.HostCPU, f)
		assert.Equal(t, first.Notes, again.Notes, f)
		ps := p.DefaultParams()
		require.NoError(t, ps.Set("smp.bandwidth", 40, "test"))
		changed, err := p.BuildWith(ps)
		require.NoError(t, err)
		assert.Equal(t, 40.0, changed.Params.Get("smp.bandwidth"))
	}
	_, _, _, err := ImportPreset("testdata/nope.txt", ImportOptions{})
	assert.Error(t, err)
}
