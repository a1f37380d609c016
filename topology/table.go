package topology

import (
	"bufio"
	"embed"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
)

// The parameter tables, one text file per machine family (params/*.txt):
// base.txt is every parameter with its unit, range and source; the others
// change values and sources in the form of a parameter file (ReadOverrides).
//
//go:embed params/*.txt
var tableFiles embed.FS

// ReadTable parses a parameter table. Each parameter is one line of
// whitespace-separated fields,
//
//	name  value  unit  range  source…
//
// where range is lo..hi (both finite: every parameter has a physical
// maximum) and the source is the rest of the line. The comment line directly above a parameter ('#'
// first) is its one-line doc; other comment lines and blank lines are
// commentary. name is used in error messages.
func ReadTable(r io.Reader, name string) (*Params, error) {
	ps := &Params{}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	doc := ""
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		switch {
		case text == "":
			doc = ""
			continue
		case strings.HasPrefix(text, "#"):
			doc = strings.TrimSpace(strings.TrimPrefix(text, "#"))
			continue
		}
		p, err := parseTableLine(text)
		if err != nil {
			return nil, fmt.Errorf("topology: %s:%d: %w", name, line, err)
		}
		if _, dup := ps.Lookup(p.Name); dup {
			return nil, fmt.Errorf("topology: %s:%d: parameter %s is defined twice", name, line, p.Name)
		}
		p.Doc, doc = doc, ""
		ps.Add(p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("topology: %s: %w", name, err)
	}
	if err := ps.validate(); err != nil {
		return nil, fmt.Errorf("topology: %s: %w", name, err)
	}
	return ps, nil
}

// parseTableLine reads "name value unit lo..hi source…".
func parseTableLine(text string) (Param, error) {
	var f [4]string
	rest := text
	for i := range f {
		end := strings.IndexAny(rest, " \t")
		if end < 0 {
			end = len(rest)
		}
		f[i], rest = rest[:end], strings.TrimLeft(rest[end:], " \t")
		if f[i] == "" {
			return Param{}, fmt.Errorf("want \"name value unit lo..hi source\", got %q", text)
		}
	}
	p := Param{Name: f[0], Unit: f[2], Source: rest}
	var err error
	if p.Value, err = strconv.ParseFloat(f[1], 64); err != nil {
		return Param{}, fmt.Errorf("%s: value %q is not a number", p.Name, f[1])
	}
	lo, hi, ok := strings.Cut(f[3], "..")
	if !ok {
		return Param{}, fmt.Errorf("%s: range %q is not lo..hi", p.Name, f[3])
	}
	if p.Min, err = strconv.ParseFloat(lo, 64); err != nil {
		return Param{}, fmt.Errorf("%s: range %q: lower bound is not a number", p.Name, f[3])
	}
	if p.Max, err = strconv.ParseFloat(hi, 64); err != nil || !(p.Max > p.Min) || math.IsInf(p.Max, 0) {
		return Param{}, fmt.Errorf("%s: range %q: want a finite upper bound above the lower one (every parameter has a physical maximum)", p.Name, f[3])
	}
	if p.Source == "" {
		return Param{}, fmt.Errorf("%s: no source", p.Name)
	}
	return p, nil
}

// mustTable reads an embedded table; a malformed one is a bug in this
// package, caught by any test.
func mustTable(file string) *Params {
	f, err := tableFiles.Open("params/" + file)
	if err != nil {
		panic("topology: " + err.Error())
	}
	defer f.Close()
	ps, err := ReadTable(f, file)
	if err != nil {
		panic(err)
	}
	return ps
}

// mustOverrides reads an embedded file of value changes.
func mustOverrides(file string) []Override {
	f, err := tableFiles.Open("params/" + file)
	if err != nil {
		panic("topology: " + err.Error())
	}
	defer f.Close()
	ovs, err := ReadOverrides(f, file)
	if err != nil {
		panic(err)
	}
	return ovs
}

// withChanges returns base's parameters with the embedded file's changes
// applied (each in its range, with its own source).
func withChanges(base func() *Params, file string) func() *Params {
	ovs := sync.OnceValue(func() []Override { return mustOverrides(file) })
	return func() *Params {
		ps := base()
		if err := ps.Apply(ovs(), file); err != nil {
			panic(err)
		}
		return ps
	}
}
