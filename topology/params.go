package topology

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Param is one named physical parameter of a machine, with its unit, value
// and where the value comes from. Every number arsim prints traces back to
// parameters like these.
type Param struct {
	Name   string  // dotted name, e.g. "pcie.tlp_overhead"
	Unit   string  // "B", "ns", "µs", "GB/s", "ratio", "count", "bool", "loads", "doublings", "mask", "sm" (a compute capability), "GHz"
	Value  float64 // the value in Unit
	Min    float64 // smallest physically sensible value (inclusive)
	Max    float64 // largest physically sensible value (inclusive), finite
	Source string  // spec, published measurement, our capture, or "estimate: …"
	Doc    string  // one line: what it means
}

// Params is an ordered set of parameters. The zero value is empty and usable.
type Params struct {
	list  []Param
	index map[string]int
}

// Add appends p, or replaces the parameter of the same name.
func (ps *Params) Add(p Param) {
	if ps.index == nil {
		ps.index = map[string]int{}
	}
	if i, ok := ps.index[p.Name]; ok {
		ps.list[i] = p
		return
	}
	ps.index[p.Name] = len(ps.list)
	ps.list = append(ps.list, p)
}

// Clone returns an independent copy.
func (ps *Params) Clone() *Params {
	return &Params{list: slices.Clone(ps.list), index: maps.Clone(ps.index)}
}

// Lookup returns the parameter called name.
func (ps *Params) Lookup(name string) (Param, bool) {
	if i, ok := ps.index[name]; ok {
		return ps.list[i], true
	}
	return Param{}, false
}

// Get returns the value of name. A missing name is a bug in the preset or
// the caller and panics with the name, so it is caught by the preset tests.
func (ps *Params) Get(name string) float64 {
	p, ok := ps.Lookup(name)
	if !ok {
		panic("topology: no parameter " + strconv.Quote(name))
	}
	return p.Value
}

// HostIssue returns the host issue cost name (µs) on the simulated host:
// the cost measured on a core at host.issue_core_clock, scaled to a core
// at host.core_clock (the issue is the CPU's work, so its time goes as
// the clock's inverse).
func (ps *Params) HostIssue(name string) float64 {
	return ps.Get(name) * ps.Get("host.issue_core_clock") / ps.Get("host.core_clock")
}

// Integer reports whether the parameter takes whole numbers only: sizes in
// bytes, counts and switches (units B, count and bool).
func (p Param) Integer() bool {
	return p.Unit == "B" || p.Unit == "count" || p.Unit == "bool" || p.Unit == "sm"
}

// check reports why v is not a value p may take, or nil.
func (p Param) check(v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < p.Min || (p.Max != 0 && v > p.Max) {
		return fmt.Errorf("parameter %s = %v %s is outside its physical range [%v, %v]", p.Name, v, p.Unit, p.Min, rangeMax(p.Max))
	}
	if p.Integer() && v != math.Trunc(v) {
		return fmt.Errorf("parameter %s = %v %s must be a whole number (%s)", p.Name, v, p.Unit, map[bool]string{true: "a switch: 0 or 1", false: "a size in bytes or a count"}[p.Unit == "bool"])
	}
	return nil
}

// Set changes the value (and source) of an existing parameter, checking its
// physical range, and that a parameter in bytes, a count or a switch is a
// whole number.
func (ps *Params) Set(name string, v float64, source string) error {
	i, ok := ps.index[name]
	if !ok {
		return fmt.Errorf("topology: unknown parameter %q (known: %s)", name, strings.Join(ps.Names(), ", "))
	}
	p := &ps.list[i]
	if err := p.check(v); err != nil {
		return fmt.Errorf("topology: %w", err)
	}
	p.Value = v
	if source != "" {
		p.Source = source
	}
	return nil
}

func rangeMax(m float64) string {
	if m == 0 {
		return "∞"
	}
	return strconv.FormatFloat(m, 'g', -1, 64)
}

// Names returns the parameter names in definition order.
func (ps *Params) Names() []string {
	out := make([]string, len(ps.list))
	for i, p := range ps.list {
		out[i] = p.Name
	}
	return out
}

// All returns the parameters in definition order. The slice is a copy.
func (ps *Params) All() []Param { return append([]Param(nil), ps.list...) }

// Validate checks every value against its range, and that every
// parameter has a source.
func (ps *Params) Validate() error {
	if err := ps.validate(); err != nil {
		return fmt.Errorf("topology: %w", err)
	}
	return nil
}

// validate is Validate with errors that name no package.
func (ps *Params) validate() error {
	for _, p := range ps.list {
		if !(p.Max > p.Min) || math.IsInf(p.Max, 0) {
			return fmt.Errorf("parameter %s has no finite upper bound above its lower one (range %s)", p.Name, p.Range())
		}
		if err := p.check(p.Value); err != nil {
			return err
		}
		if p.Source == "" {
			return fmt.Errorf("parameter %s has no source", p.Name)
		}
	}
	return nil
}

// WriteTable prints the parameters as an aligned table: name, value, unit,
// range (lo..hi) and source.
func (ps *Params) WriteTable(w io.Writer) error {
	width := 4
	for _, p := range ps.list {
		width = max(width, len(p.Name))
	}
	if _, err := fmt.Fprintf(w, "%-*s  %12s  %-6s  %-13s  %s\n", width, "name", "value", "unit", "range", "source"); err != nil {
		return err
	}
	for _, p := range ps.list {
		if _, err := fmt.Fprintf(w, "%-*s  %12s  %-6s  %-13s  %s\n", width, p.Name, strconv.FormatFloat(p.Value, 'g', 6, 64), p.Unit, p.Range(), p.Source); err != nil {
			return err
		}
	}
	return nil
}

// Range is the physical range as the parameter tables write it: lo..hi,
// or lo.. when there is no upper bound.
func (p Param) Range() string {
	r := strconv.FormatFloat(p.Min, 'g', -1, 64) + ".."
	if p.Max != 0 {
		r += strconv.FormatFloat(p.Max, 'g', -1, 64)
	}
	return r
}

// WriteFile writes the parameters in the text form ReadOverrides reads:
// "name = value  # unit; source".
func (ps *Params) WriteFile(w io.Writer) error {
	for _, p := range ps.list {
		if _, err := fmt.Fprintf(w, "%s = %s  # %s; %s\n", p.Name, strconv.FormatFloat(p.Value, 'g', -1, 64), p.Unit, p.Source); err != nil {
			return err
		}
	}
	return nil
}

// Override is one "name = value" line of a parameter file.
type Override struct {
	Name   string
	Value  float64
	Source string // the comment after '#', if any
	Line   int
}

// ReadOverrides parses a parameter file: one "name = value" per line,
// '#' starts a comment (kept as the source), blank lines ignored; a name
// set on two lines is refused. name is
// the file name for error messages. It reads at most 1 MiB.
func ReadOverrides(r io.Reader, name string) ([]Override, error) {
	lr := &io.LimitedReader{R: r, N: maxParamsBytes + 1}
	out, err := readOverrides(bufio.NewScanner(lr), name)
	if lr.N <= 0 { // whatever the last line read gave: it may be cut short
		return nil, fmt.Errorf("topology: %s: larger than %d KiB: a parameter file has a line per parameter (%d in all)", name, maxParamsBytes>>10, len(baseTable().list))
	}
	return out, err
}

func readOverrides(sc *bufio.Scanner, name string) ([]Override, error) {
	var out []Override
	seen := map[string]int{} // name: its line
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		comment := ""
		if i := strings.IndexByte(text, '#'); i >= 0 {
			comment = strings.TrimSpace(text[i+1:])
			text = text[:i]
		}
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		k, v, ok := strings.Cut(text, "=")
		if !ok {
			return nil, fmt.Errorf("topology: %s:%d: want \"name = value\", got %q", name, line, text)
		}
		k = strings.TrimSpace(k)
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || k == "" {
			return nil, fmt.Errorf("topology: %s:%d: %q: value must be a number", name, line, text)
		}
		if at, dup := seen[k]; dup {
			return nil, fmt.Errorf("topology: %s:%d: %s is set twice, on lines %d and %d: which one is meant?", name, line, k, at, line)
		}
		seen[k] = line
		out = append(out, Override{Name: k, Value: f, Source: comment, Line: line})
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, fmt.Errorf("topology: %s: line %d is longer than %d KiB: not a parameter file", name, line+1, bufio.MaxScanTokenSize>>10)
	} else if err != nil {
		return nil, fmt.Errorf("topology: %s: %w", name, err)
	}
	return out, nil
}

// maxParamsBytes bounds what ReadOverrides reads: every parameter with a
// long source fits in a tenth of it.
const maxParamsBytes = 1 << 20

// Apply sets every override, reporting the file line of the first bad one.
func (ps *Params) Apply(ovs []Override, file string) error {
	for _, o := range ovs {
		src := o.Source
		if src == "" {
			src = "override from " + file
		}
		if err := ps.Set(o.Name, o.Value, src); err != nil {
			return fmt.Errorf("%s:%d: %w", file, o.Line, err)
		}
	}
	return nil
}
