package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// The measured traces that validate and calibrate read.

// fileList is a repeatable flag.
type fileList []string

func (f *fileList) String() string { return strings.Join(*f, ",") }
func (f *fileList) Set(s string) error {
	if s == "" {
		return fmt.Errorf("empty file name")
	}
	*f = append(*f, s)
	return nil
}

// traceFile is one trace read for validate or calibrate.
type traceFile struct {
	path string
	recs []trace.Record
	bad  []trace.BadLine
}

// readTraces reads every file; a malformed line is an input error unless
// skipBad, when it is kept in bad.
func readTraces(paths []string, skipBad bool) ([]traceFile, error) {
	if len(paths) == 0 {
		return nil, badInputf("no trace: give --traces FILE (JSON Lines v1, e.g. testdata/h200x2/measurements.jsonl)")
	}
	var out []traceFile
	for _, p := range paths {
		recs, bad, err := trace.ReadJSONLFile(p, trace.ReadOptions{SkipBad: skipBad})
		if err != nil {
			if _, isParse := errors.AsType[*trace.ParseError](err); isParse && !skipBad {
				return nil, badInputf("%v (--skip-bad skips malformed lines)", err)
			}
			return nil, badInput(err)
		}
		out = append(out, traceFile{path: p, recs: recs, bad: bad})
	}
	return out, nil
}

// presetParams returns the parameters of every preset the records use,
// with the parameter file applied when one is given.
func presetParams(files []traceFile, paramsFile, override string) (map[string]*topology.Params, error) {
	out := map[string]*topology.Params{}
	var forced *topology.Preset
	if override != "" {
		p, err := topology.Lookup(override)
		if err != nil {
			return nil, badInputf("--topology: %v", err)
		}
		forced = p
	}
	for _, f := range files {
		for _, r := range f.recs {
			p, ok := forced, forced != nil
			if !ok {
				p, ok = topology.ForSystem(r.System)
			}
			if !ok || out[p.Name] != nil {
				continue
			}
			ps := p.DefaultParams()
			if paramsFile != "" {
				if err := applyParamsFile(ps, paramsFile); err != nil {
					return nil, fmt.Errorf("preset %s: %w", p.Name, err)
				}
			}
			out[p.Name] = ps
		}
	}
	return out, nil
}
