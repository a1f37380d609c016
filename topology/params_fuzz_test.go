package topology

import (
	"math"
	"strings"
	"testing"
)

// FuzzParamsFile: a parameter file (--params) never panics the reader or
// Apply; what Apply accepts leaves every parameter finite, within its
// range and whole where its unit says so, and the machine still builds.
func FuzzParamsFile(f *testing.F) {
	for _, file := range []string{"h200.txt", "a800.txt", "v100.txt"} {
		data, err := tableFiles.ReadFile("params/" + file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
	for _, s := range []string{
		"gpu.sms = 1.5\n", "hostmem.bandwidth = 1e308\n", "hostmem.latency = NaN\n", "gpu.sms = +Inf\n",
		"pcie.tlp_overhead = 0x18  # hex\n", "nvlink.count = 18 # NV18\n", "= 3\n", "a.b = \n", "gpu.sms 188\n",
		"p2p.across_sockets = 0\ncollapse.enabled = 1\ncollapse.bandwidth = 0.1\n", "gpu.sms = 1_0\n",
	} {
		f.Add(s)
	}
	preset, err := Lookup("rtxpro6000x8-2numa")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in string) {
		ovs, err := ReadOverrides(strings.NewReader(in), "fuzz.params")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "topology: fuzz.params") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		ps := preset.DefaultParams()
		if err := ps.Apply(ovs, "fuzz.params"); err != nil {
			return
		}
		if err := ps.Validate(); err != nil {
			t.Fatalf("Apply accepted what Validate refuses: %v", err)
		}
		for _, p := range ps.All() {
			if math.IsNaN(p.Value) || math.IsInf(p.Value, 0) || p.Value < p.Min || p.Value > p.Max || (p.Integer() && p.Value != math.Trunc(p.Value)) {
				t.Fatalf("%s = %v accepted", p.Name, p.Value)
			}
		}
		if _, err := preset.BuildWith(ps); err != nil {
			t.Fatalf("values in range, but the machine does not build: %v", err)
		}
	})
}
