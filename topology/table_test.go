package topology

import (
	"bytes"
	"io/fs"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tables are read as data: every parameter of base.txt has a doc line,
// a known unit and a source, and the files of changes name only
// parameters of base.txt, each with its own source.
func TestParameterTables(t *testing.T) {
	base := mustTable("base.txt")
	units := []string{"B", "ns", "µs", "GB/s", "ratio", "count", "bool", "loads", "doublings", "mask", "sm", "GHz"}
	for _, p := range base.All() {
		assert.NotEmpty(t, p.Doc, "%s has no doc line", p.Name)
		assert.Contains(t, units, p.Unit, p.Name)
		assert.NotEmpty(t, p.Source, p.Name)
		assert.True(t, p.Max > p.Min && !math.IsInf(p.Max, 0), "%s: no finite upper bound", p.Name)
	}
	files, err := fs.Glob(tableFiles, "params/*.txt")
	require.NoError(t, err)
	require.Contains(t, files, "params/base.txt")
	for _, f := range files {
		name := strings.TrimPrefix(f, "params/")
		if name == "base.txt" {
			continue
		}
		for _, o := range mustOverrides(name) {
			_, ok := base.Lookup(o.Name)
			assert.True(t, ok, "%s line %d: %s is not in base.txt", name, o.Line, o.Name)
			assert.NotEmpty(t, o.Source, "%s line %d: %s has no source", name, o.Line, o.Name)
		}
	}
}

// A source says where a value comes from, not how it came to be: no
// history (a former value, a refit, the work period or the tracker's
// number that produced it).
var historyWords = regexp.MustCompile(`(?i)\bwas \d|\brefitted\b|\bsess` + `ion\b|\biss` + `ue #|\bpreviously\b|\bbefore this\b`)

func TestSourcesTellNoHistory(t *testing.T) {
	for _, name := range Presets() {
		pr, err := Lookup(name)
		require.NoError(t, err)
		for _, p := range pr.DefaultParams().All() {
			assert.False(t, historyWords.MatchString(p.Source), "%s: %s: source tells history: %q", name, p.Name, p.Source)
		}
	}
}

// WriteTable prints what ReadTable reads back: the same names, values,
// units, ranges and sources.
func TestWriteTableReadsBack(t *testing.T) {
	ps := mustTable("base.txt")
	var buf bytes.Buffer
	require.NoError(t, ps.WriteTable(&buf))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, len(ps.Names())+1)
	back, err := ReadTable(strings.NewReader(strings.Join(lines[1:], "\n")), "shown")
	require.NoError(t, err)
	for _, p := range ps.All() {
		q, ok := back.Lookup(p.Name)
		require.True(t, ok, p.Name)
		p.Doc = ""
		if p.Value != q.Value { // printed to 6 significant digits
			assert.InEpsilon(t, p.Value, q.Value, 1e-5, p.Name)
			q.Value = p.Value
		}
		assert.Equal(t, p, q)
	}
}

func TestReadTableRefusesMalformedLines(t *testing.T) {
	for line, want := range map[string]string{
		"a.b 1 B":                        `want "name value unit lo..hi source"`,
		"a.b x B 0..1 spec":              `value "x" is not a number`,
		"a.b 1 B 0-1 spec":               `range "0-1" is not lo..hi`,
		"a.b 1 B x..1 spec":              "lower bound is not a number",
		"a.b 1 B 0..0 spec":              "want a finite upper bound above the lower one",
		"a.b 1 B 0.. spec":               "want a finite upper bound above the lower one",
		"a.b 1 B 0..Inf spec":            "want a finite upper bound above the lower one",
		"a.b 1.5 B 0..2 spec":            "must be a whole number",
		"a.b 2 bool 0..1 spec":           "outside its physical range",
		"a.b 1 B 0..1":                   "a.b: no source",
		"a.b 5 B 0..1 spec":              "outside its physical range",
		"a.b 1 B 0..1 s\na.b 1 B 0..2 s": "defined twice",
	} {
		_, err := ReadTable(strings.NewReader(line), "t.txt")
		require.Error(t, err, line)
		assert.ErrorContains(t, err, "topology: t.txt:")
		assert.ErrorContains(t, err, want, line)
	}
}

func FuzzReadTable(f *testing.F) {
	seed, err := tableFiles.ReadFile("params/base.txt")
	require.NoError(f, err)
	f.Add(string(seed))
	f.Add("# doc\na.b 1 B 0..4 source\n")
	f.Fuzz(func(t *testing.T, in string) {
		ps, err := ReadTable(strings.NewReader(in), "fuzz")
		if err != nil {
			require.True(t, strings.HasPrefix(err.Error(), "topology: fuzz"), err.Error())
			return
		}
		require.NoError(t, ps.Validate())
		names := ps.Names()
		require.Len(t, slices.Compact(slices.Sorted(slices.Values(names))), len(names))
	})
}

// A value outside what the hardware can be is refused when it is set, not
// found later when every algorithm fails: fractions of whole things,
// bandwidths beyond any machine, NaN and infinities.
func TestSetRefusesWhatNoMachineHas(t *testing.T) {
	ps := mustTable("base.txt")
	for _, c := range []struct {
		name string
		v    float64
		want string
	}{
		{"gpu.sms", 1.5, "must be a whole number"},
		{"pcie.tlp_overhead", 24.5, "must be a whole number"},
		{"p2p.across_sockets", 0.5, "must be a whole number (a switch: 0 or 1)"},
		{"hostmem.bandwidth", 1e308, "outside its physical range [1, 100000]"},
		{"gpu.sms", 1e9, "outside its physical range [1, 1024]"},
		{"hostmem.latency", math.NaN(), "outside its physical range"},
		{"hostmem.latency", math.Inf(1), "outside its physical range"},
	} {
		assert.ErrorContains(t, ps.Set(c.name, c.v, "test"), c.want, "%s = %v", c.name, c.v)
	}
	require.NoError(t, ps.Set("gpu.loads_in_flight", 1.5, "test"), "a mean, not a count")
}

// A residual fitted on the H200 machine that no measured mechanism explains
// holds there only: base.txt gives it 0 with a source saying so, and
// h200.txt its fitted value with the capture it comes from. The H200
// presets carry the value; every other preset has 0.
func TestUnexplainedResidualsStayOnTheH200Machines(t *testing.T) {
	h200 := map[string]float64{}
	for _, o := range mustOverrides("h200.txt") {
		h200[o.Name] = o.Value
	}
	var residuals []string
	for _, p := range mustTable("base.txt").All() {
		if strings.HasPrefix(p.Source, "estimate: 0 off the H200 machine it was fitted on") {
			residuals = append(residuals, p.Name)
			assert.Zero(t, p.Value, p.Name)
			assert.Positive(t, h200[p.Name], "%s: h200.txt gives it no fitted value", p.Name)
		}
		assert.NotContains(t, p.Source, "not explained", "%s: an unexplained residual carried to every machine", p.Name)
	}
	require.GreaterOrEqual(t, len(residuals), 9)
	for _, name := range Presets() {
		pr, err := Lookup(name)
		require.NoError(t, err)
		ps := pr.DefaultParams()
		for _, r := range residuals {
			if strings.HasPrefix(name, "h200") {
				assert.Equal(t, h200[r], ps.Get(r), "%s: %s", name, r)
			} else {
				assert.Zero(t, ps.Get(r), "%s: %s", name, r)
			}
		}
	}
}

// h100x1 is a chip held out: its table is h200x1's changed only where the
// H100's spec sheet differs and where an H200 residual stays on the H200s,
// never by a value read from an H100 capture, so validate's H100 figures
// are predictions (validate.HeldOutChips).
func TestH100ChangesOnlyWhatItsSpecSheetSays(t *testing.T) {
	ovs := mustOverrides("h100x1.txt")
	changed := map[string]bool{}
	for _, o := range ovs {
		changed[o.Name] = true
		assert.True(t, strings.HasPrefix(o.Source, "spec: ") || strings.HasPrefix(o.Source, "estimate: 0 off the H200 machine it was fitted on"),
			"%s: %q is neither the spec sheet nor an H200 residual left behind", o.Name, o.Source)
		assert.NotContains(t, o.Source, "h100x1-arsim", o.Name)
	}
	require.True(t, changed["gpu.mem_bandwidth"])
	h100, err := Lookup("h100x1")
	require.NoError(t, err)
	h200, err := Lookup("h200x1")
	require.NoError(t, err)
	a := h100.DefaultParams()
	for _, p := range h200.DefaultParams().All() {
		if !changed[p.Name] {
			assert.Equal(t, p.Value, a.Get(p.Name), "%s: h100x1 holds another value than h200x1 without saying why", p.Name)
		}
	}
	assert.Equal(t, 3350.0, a.Get("gpu.mem_bandwidth"))
}
