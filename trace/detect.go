package trace

import (
	"bufio"
	"bytes"
	"strings"
)

// Format is a measured-trace format this package reads.
type Format uint8

// Formats.
const (
	FormatUnknown   Format = iota
	FormatJSONL            // JSON Lines v1 (ReadJSONL)
	FormatNCCLTests        // nccl-tests text output (ReadNCCLTests)
	FormatKineto           // PyTorch profiler Chrome trace (ReadKineto)
)

// String names the format as messages print it.
func (f Format) String() string {
	switch f {
	case FormatJSONL:
		return "JSON Lines v1"
	case FormatNCCLTests:
		return "nccl-tests output"
	case FormatKineto:
		return "PyTorch profiler trace"
	}
	return "unknown format"
}

// DetectFormat tells from its content which format data is in: a JSON
// document whose top level holds "traceEvents" (or a bare array of
// events) is a profiler trace; lines of JSON objects are JSON Lines; '#'
// header lines of nccl-tests ("# nThread", "# Collective test", the
// "size count type" column header) or its result rows are nccl-tests
// output. It reads at most the first 64 KiB.
func DetectFormat(data []byte) Format {
	head := data
	if len(head) > 64<<10 {
		head = head[:64<<10]
	}
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	t := bytes.TrimLeft(head, " \t\r\n")
	switch {
	case bytes.HasPrefix(t, []byte("[")):
		return FormatKineto
	case bytes.HasPrefix(t, []byte("{")):
		first, _, _ := bytes.Cut(t, []byte("\n"))
		if bytes.Contains(head, []byte(`"traceEvents"`)) && !bytes.Contains(first, []byte(`"kind"`)) {
			return FormatKineto
		}
		return FormatJSONL
	}
	sc := bufio.NewScanner(bytes.NewReader(head))
	sc.Buffer(nil, len(head)+1)
	for sc.Scan() {
		line := strings.TrimSpace(launcherPrefix().ReplaceAllString(sc.Text(), ""))
		h, ok := strings.CutPrefix(line, "#")
		if !ok {
			continue
		}
		h = strings.TrimSpace(h)
		f := strings.Fields(h)
		switch {
		case strings.HasPrefix(h, "nThread "), strings.HasPrefix(h, "Collective test starting"), strings.HasPrefix(h, "nccl-tests version"):
			return FormatNCCLTests
		case len(f) >= 3 && f[0] == "size" && f[1] == "count" && f[2] == "type":
			return FormatNCCLTests
		}
	}
	return FormatUnknown
}
