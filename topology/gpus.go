package topology

import (
	"bufio"
	_ "embed"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
)

// GPUClass is one class of the GPU table (gpus.txt): how to recognise it by
// name, its compute capability and PCIe link, and the machine parameters
// it sets, each with its source.
type GPUClass struct {
	// Name is the class's name, as --gpu takes it: "H200", "RTX 5090".
	Name string
	// Names are lower-case patterns matched against a GPU's full name
	// ("NVIDIA GeForce RTX 5090"); the longest match wins.
	Names []string
	// SM is the compute capability as NCCL writes it (90 for 9.0).
	SM                 int
	PCIeGen, PCIeWidth int
	// Params are the parameter values the class sets, each with its
	// source.
	Params []Override
	// SMSource and PCIeSource are the sources of SM and the PCIe link.
	SMSource, PCIeSource string
}

//go:embed gpus.txt
var gpuTableText string

// gpuTable returns the parsed table, parsed on first use (not at every
// start of a program that imports the package); a malformed table is a
// bug in this package, caught by any test.
var gpuTable = sync.OnceValue(mustGPUTable)

func mustGPUTable() []GPUClass {
	gs, err := ReadGPUTable(strings.NewReader(gpuTableText), "gpus.txt")
	if err != nil {
		panic(err)
	}
	return gs
}

// GPUClasses returns the GPU table in file order.
func GPUClasses() []GPUClass {
	out := make([]GPUClass, len(gpuTable()))
	copy(out, gpuTable())
	return out
}

// GPUClassNames returns the classes' names in table order.
func GPUClassNames() []string {
	var out []string
	for _, g := range gpuTable() {
		out = append(out, g.Name)
	}
	return out
}

// squash lower-cases s and drops spaces, dashes and underscores, so that
// "RTX 5090", "rtx5090" and "rtx-5090" compare equal.
func squash(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case ' ', '-', '_', '\t':
			return -1
		}
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, s)
}

// LookupGPUClass returns the class called name (any case, spaces and dashes
// ignored), or the class whose patterns match it best, or an error listing
// the classes.
func LookupGPUClass(name string) (GPUClass, error) {
	for _, g := range gpuTable() {
		if squash(g.Name) == squash(name) {
			return g, nil
		}
	}
	if g, ok := MatchGPUClass(name); ok {
		return g, nil
	}
	return GPUClass{}, fmt.Errorf("topology: unknown GPU %q (the GPU table has %s)", name, strings.Join(GPUClassNames(), ", "))
}

// MatchGPUClass finds the class of a GPU by its full name as drivers print it
// ("NVIDIA GeForce RTX 4090", "NVIDIA H100 80GB HBM3"): the class with the
// longest pattern contained in the name.
func MatchGPUClass(fullName string) (GPUClass, bool) {
	s := squash(fullName)
	best, bestLen := -1, 0
	for i, g := range gpuTable() {
		for _, p := range g.Names {
			if q := squash(p); q != "" && strings.Contains(s, q) && len(q) > bestLen {
				best, bestLen = i, len(q)
			}
		}
	}
	if best < 0 {
		return GPUClass{}, false
	}
	return gpuTable()[best], true
}

// GPUClassesWithSM returns the classes of compute capability sm, in table order.
func GPUClassesWithSM(sm int) []GPUClass {
	var out []GPUClass
	for _, g := range gpuTable() {
		if g.SM == sm {
			out = append(out, g)
		}
	}
	return out
}

// Apply sets the class's parameters in ps, each source prefixed with the
// class ("GPU table, RTX 5090: spec: …"), and its compute capability as
// gpu.compute_capability.
func (g GPUClass) Apply(ps *Params) error {
	for _, o := range g.Params {
		if err := ps.Set(o.Name, o.Value, "GPU table, "+g.Name+": "+o.Source); err != nil {
			return fmt.Errorf("topology: GPU %s: %w", g.Name, err)
		}
	}
	if _, ok := ps.Lookup(ComputeCapability); ok && g.SM > 0 {
		if err := ps.Set(ComputeCapability, float64(g.SM), "GPU table, "+g.Name+": "+g.SMSource); err != nil {
			return fmt.Errorf("topology: GPU %s: %w", g.Name, err)
		}
	}
	return nil
}

// ComputeCapability is the parameter naming a GPU's architecture as NCCL
// writes its compute capability (90 for 9.0): NCCL's tuning constants and
// its Simple unroll follow it.
const ComputeCapability = "gpu.compute_capability"

// ReadGPUTable parses a GPU table: sections "[NAME]", each with "names =
// a | b", "sm = N", "pcie = Gen G xW" and parameter lines "name = value",
// every value with its source after '#'. name is the file name for
// errors.
func ReadGPUTable(r io.Reader, name string) ([]GPUClass, error) {
	var out []GPUClass
	sc := bufio.NewScanner(r)
	errf := func(line int, format string, a ...any) error {
		return fmt.Errorf("topology: %s:%d: %s", name, line, fmt.Sprintf(format, a...))
	}
	seen := map[string]bool{}
	check := func(line int) error {
		if len(out) == 0 {
			return nil
		}
		g := out[len(out)-1]
		switch {
		case len(g.Names) == 0:
			return errf(line, "GPU %s has no names", g.Name)
		case g.SM == 0:
			return errf(line, "GPU %s has no sm", g.Name)
		case g.PCIeGen == 0:
			return errf(line, "GPU %s has no pcie", g.Name)
		}
		return nil
	}
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		if strings.HasPrefix(text, "[") {
			if err := check(line); err != nil {
				return nil, err
			}
			n, ok := strings.CutSuffix(strings.TrimPrefix(text, "["), "]")
			n = strings.TrimSpace(n)
			if !ok || n == "" {
				return nil, errf(line, "want a section header like [H200], got %q", text)
			}
			if seen[squash(n)] {
				return nil, errf(line, "GPU %s appears twice", n)
			}
			seen[squash(n)] = true
			out = append(out, GPUClass{Name: n})
			continue
		}
		if len(out) == 0 {
			return nil, errf(line, "%q before the first [GPU] section", text)
		}
		g := &out[len(out)-1]
		body, src, _ := strings.Cut(text, "#")
		src = strings.TrimSpace(src)
		k, v, ok := strings.Cut(body, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return nil, errf(line, "want \"name = value  # source\", got %q", text)
		}
		if k == "names" {
			for _, p := range strings.Split(v, "|") {
				if p = strings.TrimSpace(p); p != "" {
					g.Names = append(g.Names, strings.ToLower(p))
				}
			}
			continue
		}
		if src == "" {
			return nil, errf(line, "%s of GPU %s has no source (add \"# spec: …\")", k, g.Name)
		}
		if msg := g.setField(k, v, src, line); msg != "" {
			return nil, errf(line, "%s", msg)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("topology: %s: %w", name, err)
	}
	if err := check(line); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("topology: %s: no GPU", name)
	}
	return out, nil
}

// setField sets the table line k = v (with its source) of g; it returns
// what is wrong with the line, or "".
func (g *GPUClass) setField(k, v, src string, line int) string {
	switch k {
	case "sm":
		n, err := strconv.Atoi(v)
		if err != nil || n < 10 || n > 1000 {
			return fmt.Sprintf("sm %q is not a compute capability like 90", v)
		}
		g.SM, g.SMSource = n, src
	case "pcie":
		var gen, width int
		if _, err := fmt.Sscanf(strings.ToLower(v), "gen%d x%d", &gen, &width); err != nil {
			return fmt.Sprintf("pcie %q: want \"Gen5 x16\"", v)
		}
		if _, err := pcieRate(gen, width); err != nil {
			return fmt.Sprintf("pcie %q: %v", v, err)
		}
		g.PCIeGen, g.PCIeWidth, g.PCIeSource = gen, width, src
	default:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Sprintf("%s = %q: value must be a number", k, v)
		}
		if _, ok := baseTable().Lookup(k); !ok {
			return fmt.Sprintf("%s is not a machine parameter", k)
		}
		g.Params = append(g.Params, Override{Name: k, Value: f, Source: src, Line: line})
	}
	return ""
}

// gpuSuffix is " (NAME)" for a class, "" for none.
func gpuSuffix(g *GPUClass) string {
	if g == nil {
		return ""
	}
	return " (" + g.Name + ")"
}
