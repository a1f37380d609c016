package topology

import (
	"bytes"
	"fmt"
	"os"
)

// ImportPreset imports the topology file at path (either format) and
// returns it as a preset that builds the same machine with any parameters
// (calibration and validation rebuild it with changed values): its
// defaults are the parameters of this import — the GPU class and what the
// file says, with opts.Overrides over them. The preset is not registered:
// Lookup does not find it. The topology returned is the first build, with
// its Notes.
func ImportPreset(path string, opts ImportOptions) (*Preset, *Topology, Format, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, FormatUnknown, fmt.Errorf("topology: %w", err)
	}
	data, err := readAllLimited(f, path) // at most maxImportBytes: /dev/zero ends
	f.Close()
	if err != nil {
		return nil, nil, FormatUnknown, err
	}
	t, format, err := Import(bytes.NewReader(data), path, opts)
	if err != nil {
		return nil, nil, format, err
	}
	gen, width := opts.PCIeGen, opts.PCIeWidth
	if gen == 0 && opts.GPU != nil {
		gen, width = opts.GPU.PCIeGen, opts.GPU.PCIeWidth
	}
	first := t.Params.Clone()
	p := &Preset{
		Name:        t.Name,
		Description: t.Description,
		params:      first.Clone,
		build: func(ps *Params) (*Topology, error) {
			if err := ps.Validate(); err != nil {
				return nil, fmt.Errorf("topology %s: %w", t.Name, err)
			}
			u, _, err := Import(bytes.NewReader(data), path, ImportOptions{PCIeGen: gen, PCIeWidth: width, Params: ps})
			if err != nil {
				return nil, err
			}
			u.Description, u.Notes = t.Description, t.Notes
			return u, nil
		},
	}
	return p, t, format, nil
}
