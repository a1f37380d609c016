package trace

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
)

// The run log: what tools/capture's `capture.py all` prints while it runs
// a capture's phases one after another in one process, kept beside the
// trace as system/run_<base>.log (or, where a directory holds captures of
// several instances, system/<instance>/run_<base>.log). Each phase starts
// with a line
//
//	16:16:50 === phase perblock (elapsed 6s)
//
// and the merged trace does not say which phase wrote a record, nor in
// what order the phases ran (tools/capture's merge concatenates the
// phases' files by name). The log does.

const (
	maxRunLogBytes = 64 << 20 // the longest capture logs are a few MB
	phaseMark      = "=== phase "
)

// RunLogPath is where a trace's run log lies first:
// system/run_<base>.log in the trace's directory, <base> its name less
// .jsonl (or .json).
func RunLogPath(trace string) string {
	base := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(trace), ".jsonl"), ".json")
	return filepath.Join(filepath.Dir(trace), "system", "run_"+base+".log")
}

// runPhasesBeside reads the phases of the run log beside the trace at
// path: RunLogPath, else the one system/*/run_<base>.log; nil where there
// is none, or several (which instance's run made the trace is then not
// known).
func runPhasesBeside(path string) ([]string, error) {
	p := RunLogPath(path)
	f, _, err := openFirst(p)
	if err != nil {
		return nil, err
	}
	if f == nil {
		pattern := filepath.Join(filepath.Dir(p), "*", filepath.Base(p))
		found, err := filepath.Glob(pattern)
		if err != nil || len(found) != 1 {
			return nil, nil
		}
		if f, p, err = openFirst(found[0]); f == nil || err != nil {
			return nil, err
		}
	}
	defer f.Close()
	return ReadRunPhases(f, p)
}

// ReadRunPhases parses a run log (name for errors): the name of each
// phase a "=== phase NAME (elapsed …)" line starts, in the order the
// lines come; nil where no line starts one. The lines that end a phase
// ("=== phase NAME done in …") are not starts.
func ReadRunPhases(r io.Reader, name string) ([]string, error) {
	sc := bufio.NewScanner(io.LimitReader(r, maxRunLogBytes+1))
	sc.Buffer(make([]byte, 0, 64<<10), maxRunLogBytes+1)
	var phases []string
	read := 0
	for sc.Scan() {
		line := sc.Text()
		read += len(line) + 1
		if read > maxRunLogBytes {
			return nil, fmt.Errorf("trace: %s: over %d bytes: not a run log", name, maxRunLogBytes)
		}
		i := strings.Index(line, phaseMark)
		if i < 0 {
			continue
		}
		f := strings.Fields(line[i+len(phaseMark):])
		if len(f) < 2 || !strings.HasPrefix(f[1], "(elapsed") {
			continue
		}
		phases = append(phases, f[0])
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("trace: %s: %w", name, err)
	}
	return phases, nil
}

// PhasesAfter reports whether the run log's phases hold a phase named
// then, and every one of them started after a phase named one of first:
// in one process, what those left behind holds for each run of then.
func PhasesAfter(phases []string, then string, first ...string) bool {
	seen, any := false, false
	for _, p := range phases {
		switch {
		case p == then && !seen:
			return false
		case p == then:
			any = true
		case slices.Contains(first, p):
			seen = true
		}
	}
	return any
}
