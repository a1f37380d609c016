package trace

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strconv"
)

// The versions file: what software a capture ran, beside its traces in
// system/. tools/capture writes system/versions.json ({"nccl": "2.28.9",
// …}); older captures wrote system/versions.txt, PyTorch's version and
// torch.cuda.nccl.version() ("2.11.0+cu130 (2, 28, 9)"). Only the NCCL
// release is read: NCCL's channel split and tuning rules differ between
// releases, and a capture's records are simulated with its own
// (docs/TRACE_FORMAT.md, "The capture's NCCL").

// maxVersionsBytes bounds a versions file: a few hundred bytes.
const maxVersionsBytes = 1 << 16

// ncclTuple is torch.cuda.nccl.version()'s form in versions.txt.
var ncclTuple = regexp.MustCompile(`\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)`)

// ncclReleaseBeside returns the NCCL release named by the versions file
// beside the trace at path ("2.28.9"), "" where there is none or it names
// none.
func ncclReleaseBeside(path string) (string, error) {
	dir := filepath.Join(filepath.Dir(path), "system")
	if v, err := readVersionsFile(filepath.Join(dir, "versions.json")); v != "" || err != nil {
		return v, err
	}
	return readVersionsFile(filepath.Join(dir, "versions.txt"))
}

// readVersionsFile reads one versions file, "" when it does not exist.
func readVersionsFile(p string) (string, error) {
	f, _, err := openFirst(p)
	if f == nil || err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxVersionsBytes+1))
	if err != nil {
		return "", fmt.Errorf("trace: %s: %w", p, err)
	}
	if len(data) > maxVersionsBytes {
		return "", fmt.Errorf("trace: %s: more than %d bytes: not a versions file", p, maxVersionsBytes)
	}
	return ParseNCCLVersions(data, p)
}

// ParseNCCLVersions returns the NCCL release a versions file names (name
// for errors): versions.json's "nccl" string, or in any other text
// PyTorch's tuple "(2, 28, 9)"; "" where it names none.
func ParseNCCLVersions(data []byte, name string) (string, error) {
	var js map[string]any
	if json.Unmarshal(data, &js) == nil {
		v, ok := js["nccl"]
		if !ok {
			return "", nil
		}
		s, ok := v.(string)
		if !ok || !releaseForm.MatchString(s) {
			return "", fmt.Errorf("trace: %s: \"nccl\" is %v, not a release such as \"2.28.9\"", name, v)
		}
		return s, nil
	}
	m := ncclTuple.FindSubmatch(data)
	if m == nil {
		return "", nil
	}
	parts := [3]int{}
	for i := range parts {
		n, err := strconv.Atoi(string(m[i+1]))
		if err != nil || n > 999 {
			return "", fmt.Errorf("trace: %s: NCCL version %s is not a release", name, m[0])
		}
		parts[i] = n
	}
	return fmt.Sprintf("%d.%d.%d", parts[0], parts[1], parts[2]), nil
}

// releaseForm is a release as versions.json writes it.
var releaseForm = regexp.MustCompile(`^\d{1,3}\.\d{1,3}(\.\d{1,3})?$`)
