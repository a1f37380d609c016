package trace

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// The halves file: which SMs of the GPU that ran a capture lie in SM 0's
// half of its SMs, read off the capture's own pair scan
// (tools/capture/halves.py; docs/TRACE_FORMAT.md, "The SMs' halves"). A
// load of host memory waits behind posted stores of its own half of the
// SMs about twice as long as behind the other half's, and which SMs form
// a half differs from chip to chip.
//
//	{"sms": 132, "sm0_half": [0, 1, 5, …], …}
//
// Other keys (the groups and medians it was read from) are kept for people
// and ignored here.

// maxHalvesBytes bounds a halves file: a few kilobytes for any GPU.
const maxHalvesBytes = 1 << 20

// maxSMs bounds sms: more SMs than any GPU has is a mistake.
const maxSMs = 4096

// HalvesPath is where a trace's halves file lies: system/<base>.halves.json
// in the trace's directory, <base> its name less .jsonl (or .json).
func HalvesPath(trace string) string {
	base := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(trace), ".jsonl"), ".json")
	return filepath.Join(filepath.Dir(trace), "system", base+".halves.json")
}

// halvesBeside reads the halves file beside the trace at path, nil when
// there is none.
func halvesBeside(path string) ([]int8, error) {
	f, p, err := openFirst(HalvesPath(path))
	if f == nil || err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadSMHalves(f, p)
}

// ReadSMHalves parses a halves file (name for errors): each SM's half, 0
// for SM 0's and 1 for the other, indexed by SM. SM 0 must be in
// sm0_half, every SM listed below sms and at most once, and neither half
// empty.
func ReadSMHalves(r io.Reader, name string) ([]int8, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxHalvesBytes+1))
	if err != nil {
		return nil, fmt.Errorf("trace: %s: %w", name, err)
	}
	if len(data) > maxHalvesBytes {
		return nil, fmt.Errorf("trace: %s: over %d bytes: not a halves file", name, maxHalvesBytes)
	}
	var h struct {
		SMs    *int  `json:"sms"`
		SM0Has []int `json:"sm0_half"`
	}
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, fmt.Errorf("trace: %s: not a halves file (JSON with sms and sm0_half): %w", name, err)
	}
	if h.SMs == nil || *h.SMs < 2 || *h.SMs > maxSMs {
		return nil, fmt.Errorf("trace: %s: sms must be an SM count from 2 to %d", name, maxSMs)
	}
	n := *h.SMs
	out := make([]int8, n)
	for i := range out {
		out[i] = 1
	}
	for _, sm := range h.SM0Has {
		if sm < 0 || sm >= n {
			return nil, fmt.Errorf("trace: %s: sm0_half lists SM %d; the GPU has SMs 0 to %d", name, sm, n-1)
		}
		if out[sm] == 0 {
			return nil, fmt.Errorf("trace: %s: sm0_half lists SM %d twice", name, sm)
		}
		out[sm] = 0
	}
	if len(h.SM0Has) == 0 || out[0] != 0 {
		return nil, fmt.Errorf("trace: %s: sm0_half must hold SM 0", name)
	}
	if len(h.SM0Has) == n {
		return nil, fmt.Errorf("trace: %s: sm0_half holds all %d SMs: the other half is empty", name, n)
	}
	return out, nil
}
