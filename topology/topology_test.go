package topology

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/sim"
)

func TestPresetsBuildAndClassify(t *testing.T) {
	cases := []struct {
		name  string
		gpus  int
		pairs map[[2]int]string
	}{
		{"rtxpro6000x8-2numa", 8, map[[2]int]string{{0, 1}: "NODE", {0, 3}: "NODE", {0, 4}: "SYS", {5, 7}: "NODE"}},
		{"rtxpro6000x8-switches", 8, map[[2]int]string{{0, 1}: "PIX", {0, 4}: "SYS", {4, 7}: "PIX"}},
		{"rtxpro6000x4-1numa", 4, map[[2]int]string{{0, 3}: "NODE"}},
		{"a800x8-2islands", 8, map[[2]int]string{{0, 3}: "PIX", {3, 4}: "SYS"}},
		{"v100x4-plx", 4, map[[2]int]string{{0, 3}: "PIX"}},
		{"h100x1", 1, nil},
		{"h200x1", 1, nil},
		{"h200x2", 2, map[[2]int]string{{0, 1}: "NV18"}},
		{"h200x8-nvswitch", 8, map[[2]int]string{{0, 7}: "NV18"}},
	}
	require.Len(t, Presets(), len(cases))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			top, err := Load(c.name)
			require.NoError(t, err)
			require.Equal(t, c.gpus, top.NumGPUs())
			for pair, want := range c.pairs {
				got, err := top.PathClass(top.GPUs()[pair[0]], top.GPUs()[pair[1]])
				require.NoError(t, err)
				assert.Equal(t, want, got.String(), "GPU%d–GPU%d", pair[0], pair[1])
			}
			// Every parameter has a unit and a source.
			for _, p := range top.Params.All() {
				assert.NotEmpty(t, p.Unit, p.Name)
				assert.NotEmpty(t, p.Source, p.Name)
			}
		})
	}
}

func TestH200x2DeclaresItsTraceSystem(t *testing.T) {
	p, ok := ForSystem("h200x2-vm")
	require.True(t, ok)
	assert.Equal(t, "h200x2", p.Name)
}

func TestRouteLatencyMatchesPublishedFlagPaths(t *testing.T) {
	// One-way route latency plus landing in GDDR and one local poll
	// (2 × gpu.mem_latency) is what a GPU-resident flag ping-pong measures:
	// the rtx6kpro wiki's pairs on a Threadripper PRO 7955WX behind c-payne
	// switches (testdata/rtx6kpro/wrx90_pingpong_*.jsonl), within one
	// switch, across two on one root complex and across two on two.
	check := func(machine string, a, b int, lo, hi float64) {
		top, err := Load(machine)
		if err != nil {
			top, _, err = ImportFile(machine, ImportOptions{})
		}
		require.NoError(t, err)
		r, err := top.Route(top.GPUs()[a], top.GPUs()[b], RouteAny)
		require.NoError(t, err)
		oneWay := r.Latency + 2*sim.Nanos(top.Params.Get("gpu.mem_latency"))
		ns := float64(oneWay) / float64(sim.Nanosecond)
		assert.True(t, ns >= lo && ns <= hi, "%s GPU%d→GPU%d one-way flag %.0f ns, published %v–%v", machine, a, b, ns, lo, hi)
	}
	check("rtxpro6000x8-switches", 0, 1, 633, 727)
	check("../testdata/topologies/pcie8_2switch_1root_topo_m.txt", 0, 4, 1057, 1069)
	check("../testdata/topologies/pcie8_2switch_2roots_topo_m.txt", 0, 4, 1068, 1081)
	// A root complex charges its crossing each way: two GPUs on root ports
	// of their own cross it twice and the fabric once, a GPU's load of
	// host memory once.
	top, err := Load("rtxpro6000x8-2numa")
	require.NoError(t, err)
	ps := top.Params
	r, err := top.Route(top.GPUs()[0], top.GPUs()[1], RouteAny)
	require.NoError(t, err)
	want := 2*ps.Get("pcie.gpu_port_latency") + 2*ps.Get("pcie.hostbridge_latency") + ps.Get("cpu.fabric_latency")
	assert.InDelta(t, want, float64(r.Latency)/float64(sim.Nanosecond), 0.01)
	h, err := top.HostRoute(top.GPUs()[1])
	require.NoError(t, err)
	want = ps.Get("pcie.gpu_port_latency") + ps.Get("pcie.hostbridge_latency") + ps.Get("cpu.fabric_latency") + ps.Get("cpu.memory_path_latency")
	assert.InDelta(t, want, float64(h.Latency)/float64(sim.Nanosecond), 0.01)
}

func TestRoutesAreDeterministicAndSymmetric(t *testing.T) {
	top, err := Load("rtxpro6000x8-2numa")
	require.NoError(t, err)
	for _, a := range top.GPUs() {
		for _, b := range top.GPUs() {
			r1, err := top.Route(a, b, RouteAny)
			require.NoError(t, err)
			r2, _ := top.Route(a, b, RouteAny)
			assert.Equal(t, r1, r2)
			back, _ := top.Route(b, a, RouteAny)
			assert.Equal(t, r1.Latency, back.Latency)
			assert.Equal(t, len(r1.Steps), len(back.Steps))
		}
	}
	r, err := top.HostRoute(top.GPUs()[5])
	require.NoError(t, err)
	var names []string
	for _, id := range r.Nodes() {
		names = append(names, top.Node(id).Name)
	}
	assert.Equal(t, "gpu5 hb5 cpu1 mem1", strings.Join(names, " "))
}

func TestPCIeRates(t *testing.T) {
	r, err := PCIeRate(5, 16)
	require.NoError(t, err)
	assert.InDelta(t, 63.0, r.GB(), 0.05, "Gen5 x16 = 32 GT/s × 16 × 128/130 / 8")
	r, _ = PCIeRate(3, 16)
	assert.InDelta(t, 15.75, r.GB(), 0.01)
	_, err = PCIeRate(7, 16)
	assert.ErrorContains(t, err, "generation 7")
	_, err = PCIeRate(5, 3)
	assert.ErrorContains(t, err, "x3")
}

func TestBuilderErrorsNameTheElement(t *testing.T) {
	b := NewBuilder("bad", commonParams())
	g0 := b.Node(GPU, "gpu0", 0, 0)
	g1 := b.Node(GPU, "gpu1", 0, 0)
	b.PlainLink(g0, g1, Fabric, 0, 0)
	_, err := b.Build()
	assert.ErrorContains(t, err, "link gpu0-gpu1: bandwidth must be > 0")

	b = NewBuilder("island", commonParams())
	cpu := b.Node(CPU, "cpu0", 0, 0)
	mem := b.Node(HostMemory, "mem0", 0, 0)
	b.PlainLink(cpu, mem, Memory, 100*sim.GBps, 0)
	g0 = b.Node(GPU, "gpu0", 0, 0)
	b.PCIeLink(g0, cpu, 5, 16, 0)
	b.Node(GPU, "gpu1", 0, 0)
	_, err = b.Build()
	assert.ErrorContains(t, err, "gpu0 has no path to gpu1")

	_, err = Lookup("rtx9000")
	assert.ErrorContains(t, err, `unknown preset "rtx9000" (valid: a800x8-2islands, h100x1, h200x1, h200x2`)
}

func TestParamsOverridesAndRanges(t *testing.T) {
	pre, err := Lookup("rtxpro6000x8-2numa")
	require.NoError(t, err)
	ps := pre.DefaultParams()
	ovs, err := ReadOverrides(strings.NewReader("# fitted\npcie.link_efficiency = 0.9  # fit on run 3\n\nsmp.bandwidth=120\n"), "fit.params")
	require.NoError(t, err)
	require.NoError(t, ps.Apply(ovs, "fit.params"))
	assert.Equal(t, 0.9, ps.Get("pcie.link_efficiency"))
	p, _ := ps.Lookup("smp.bandwidth")
	assert.Equal(t, "override from fit.params", p.Source)
	top, err := pre.BuildWith(ps)
	require.NoError(t, err)
	for _, l := range top.Links() {
		if l.Type == SMP {
			assert.InDelta(t, 120, l.Bandwidth.GB(), 1e-9)
		}
	}
	err = ps.Set("pcie.link_efficiency", 1.2, "")
	assert.ErrorContains(t, err, "pcie.link_efficiency = 1.2 ratio is outside its physical range [0.5, 1]")
	err = ps.Set("nope", 1, "")
	assert.ErrorContains(t, err, `unknown parameter "nope"`)
	_, err = ReadOverrides(strings.NewReader("a = b\n"), "x.params")
	assert.ErrorContains(t, err, "x.params:1")
	_, err = ReadOverrides(strings.NewReader("smp.bandwidth = 120\n# again\nsmp.bandwidth = 95\n"), "x.params")
	assert.ErrorContains(t, err, "x.params:3: smp.bandwidth is set twice, on lines 1 and 3")

	var buf bytes.Buffer
	require.NoError(t, ps.WriteFile(&buf))
	back, err := ReadOverrides(&buf, "round")
	require.NoError(t, err)
	assert.Len(t, back, len(ps.Names()))
}

// A host issue cost is the CPU's work: on a core at twice the clock it
// was measured at, it takes half the time; by default the host is the
// measured one.
func TestHostIssueFollowsTheCoreClock(t *testing.T) {
	top, err := Load("rtxpro6000x8-2numa")
	require.NoError(t, err)
	ps := top.Params.Clone()
	base := ps.Get("host.nccl_group_call_issue")
	assert.Equal(t, ps.Get("host.issue_core_clock"), ps.Get("host.core_clock"))
	assert.InDelta(t, base, ps.HostIssue("host.nccl_group_call_issue"), 1e-12)
	require.NoError(t, ps.Apply([]Override{{Name: "host.core_clock", Value: 2 * ps.Get("host.issue_core_clock")}}, "test"))
	assert.InDelta(t, base/2, ps.HostIssue("host.nccl_group_call_issue"), 1e-12)
	assert.Error(t, ps.Apply([]Override{{Name: "host.core_clock", Value: 0}}, "test"), "a core at 0 GHz")
}
