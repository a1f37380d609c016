package trace

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// The tags file: the PCIe tag bits of the GPU that ran a capture, as
// tools/capture/pcie_tags.py prints them from its config space, one line a
// GPU:
//
//	0000:00:06.0: 10-bit tag completer supported 1, requester supported 1, requester enabled 0; …
//
// With 10-bit tags enabled as a requester a GPU may keep up to 768 read
// requests outstanding, with 8-bit tags 256 (gpu.host_requests_outstanding,
// gpu.host_requests_outstanding_8bit); instances of one machine type
// differ (docs/PER_BLOCK.md).

// Tags is what a capture's tags file says of its first GPU's requester.
type Tags int8

// The states of a GPU's 10-bit tags as a requester.
const (
	TagsUnknown  Tags = iota // no tags file beside the trace
	TagsTenBit               // 10-bit tags enabled
	TagsEightBit             // 10-bit tags not enabled: 8-bit tags
)

const (
	maxTagsBytes  = 64 << 10 // a line a GPU: a few hundred bytes
	tenBitEnabled = "requester enabled "
)

// TagsPath is where a trace's tags file lies: system/<base>.pcie_tags.txt
// in the trace's directory, <base> its name less .jsonl (or .json).
func TagsPath(trace string) string {
	base := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(trace), ".jsonl"), ".json")
	return filepath.Join(filepath.Dir(trace), "system", base+".pcie_tags.txt")
}

// tagsBeside reads the tags file beside the trace at path, else the
// capture's own system/pcie_tags.txt (as tools/capture's system phase
// writes it beside its measurements.jsonl), TagsUnknown when there is
// neither.
func tagsBeside(path string) (Tags, error) {
	f, p, err := openFirst(TagsPath(path), filepath.Join(filepath.Dir(path), "system", "pcie_tags.txt"))
	if f == nil || err != nil {
		return TagsUnknown, err
	}
	defer f.Close()
	return ReadTags(f, p)
}

// ReadTags parses a tags file (name for errors): the first line that says
// whether 10-bit tags are enabled as a requester ("requester enabled 0" or
// "1"). A file that says it of no GPU is an error.
func ReadTags(r io.Reader, name string) (Tags, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxTagsBytes+1))
	if err != nil {
		return TagsUnknown, fmt.Errorf("trace: %s: %w", name, err)
	}
	if len(data) > maxTagsBytes {
		return TagsUnknown, fmt.Errorf("trace: %s: over %d bytes: not a tags file", name, maxTagsBytes)
	}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		i := strings.Index(line, tenBitEnabled)
		if i < 0 {
			continue
		}
		v := ""
		if f := strings.Fields(line[i+len(tenBitEnabled):]); len(f) > 0 {
			v = strings.TrimRight(f[0], ";,")
		}
		switch v {
		case "1":
			return TagsTenBit, nil
		case "0":
			return TagsEightBit, nil
		default:
			return TagsUnknown, fmt.Errorf("trace: %s line %d: %q after %q: want 0 or 1", name, n, v, strings.TrimSpace(tenBitEnabled))
		}
	}
	return TagsUnknown, fmt.Errorf("trace: %s: no line says %q (tools/capture/pcie_tags.py prints one a GPU)", name, strings.TrimSpace(tenBitEnabled))
}
