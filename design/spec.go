package design

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/arsim/arsim/algos"
)

// SpecVersion is the version of the spec file format WriteSpec writes.
const SpecVersion = 1

// Spec is a design saved to a file: the point of the space, and where and
// how fast it was found (for the reader; planning uses Params alone, for
// whatever machine, ranks and size it is asked for).
type Spec struct {
	Version  int     `json:"arsim_design"`
	Name     string  `json:"name"`
	Params   Params  `json:"params"`
	Topology string  `json:"topology,omitempty"`
	Ranks    int     `json:"ranks,omitempty"`
	Bytes    int64   `json:"bytes,omitempty"`
	Us       float64 `json:"us,omitempty"`
	As       string  `json:"as,omitempty"`
	Binds    string  `json:"binds,omitempty"`
}

// WriteSpec writes s as indented JSON.
func WriteSpec(w io.Writer, s Spec) error {
	s.Version = SpecVersion
	if s.Name == "" {
		s.Name = s.Params.Name()
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// ReadSpec reads a spec; unknown fields, a wrong version and invalid
// params are refused, naming the file.
func ReadSpec(r io.Reader, file string) (Spec, error) {
	var s Spec
	dec := json.NewDecoder(io.LimitReader(r, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Spec{}, fmt.Errorf("design: spec %s: %w", file, err)
	}
	if dec.More() {
		return Spec{}, fmt.Errorf("design: spec %s: more than one JSON value", file)
	}
	if s.Version != SpecVersion {
		return Spec{}, fmt.Errorf("design: spec %s: arsim_design version %d, want %d", file, s.Version, SpecVersion)
	}
	if err := s.Params.Validate(); err != nil {
		return Spec{}, fmt.Errorf("design: spec %s: %w", file, err)
	}
	return s, nil
}

// ReadSpecFile reads the spec at path.
func ReadSpecFile(path string) (Spec, error) {
	f, err := os.Open(path)
	if err != nil {
		return Spec{}, fmt.Errorf("design: %w", err)
	}
	defer f.Close()
	return ReadSpec(f, path)
}

// SpecPrefix is the algorithm-name prefix of saved designs:
// "spec:winner.json" plans the design in winner.json.
const SpecPrefix = "spec:"

func init() {
	algos.RegisterLoader(SpecPrefix, func(path string) (algos.Algorithm, error) {
		s, err := ReadSpecFile(path)
		if err != nil {
			return nil, err
		}
		return SpecAlgorithm{File: path, Spec: s}, nil
	})
}

// SpecAlgorithm is a saved design as an algorithm.
type SpecAlgorithm struct {
	File string
	Spec Spec
}

var _ algos.Algorithm = SpecAlgorithm{}

// Name is spec:FILE.
func (a SpecAlgorithm) Name() string { return SpecPrefix + a.File }

// Describe names the design.
func (a SpecAlgorithm) Describe() string {
	return fmt.Sprintf("design %q (arsim design, found on %s at %d B)", a.Spec.Params.Name(), a.Spec.Topology, a.Spec.Bytes)
}

// Options: none; the spec fixes every choice.
func (SpecAlgorithm) Options() []algos.OptionSpec { return nil }

// WorldSizes allows any; Plan refuses what the design cannot do.
func (SpecAlgorithm) WorldSizes(int) error { return nil }

// Plan builds the design for req.
func (a SpecAlgorithm) Plan(req algos.Request) (*algos.Schedule, error) {
	s, _, err := Build(a.Spec.Params, req)
	if err != nil {
		return nil, err
	}
	s.Algo = a.Name()
	return s, nil
}
