package msccl

import (
	"fmt"

	"github.com/arsim/arsim/algos"
)

// Prefix is the algorithm-name prefix under which MSCCL files are planned:
// "file:ring.xml" reads ring.xml (arsim sweep --algos file:ring.xml).
const Prefix = "file:"

func init() { algos.RegisterLoader(Prefix, Load) }

// Algorithm is an MSCCL file as an arsim algorithm.
type Algorithm struct {
	A *Algo
}

var (
	_ algos.Algorithm = Algorithm{}
	_ algos.SizeUnit  = Algorithm{}
)

// Load reads the MSCCL file at path as an algorithm named file:path.
func Load(path string) (algos.Algorithm, error) {
	a, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Algorithm{A: a}, nil
}

// Name is file:PATH.
func (m Algorithm) Name() string { return Prefix + m.A.File }

// Describe says what the file holds.
func (m Algorithm) Describe() string {
	return fmt.Sprintf("MSCCL schedule %q: %d GPUs, %d chunks, proto %s", m.A.Name, m.A.NGPUs, m.A.NChunks, m.A.Proto)
}

// Options: the thread block size.
func (m Algorithm) Options() []algos.OptionSpec {
	return []algos.OptionSpec{algos.ThreadsOption(fmt.Sprintf("threads per thread block (default %d, the interpreter's NCCL_MAX_NTHREADS)", Threads))}
}

// WorldSizes allows the file's GPU count only.
func (m Algorithm) WorldSizes(n int) error {
	if n != m.A.NGPUs {
		return fmt.Errorf("the MSCCL schedule %s is written for %d GPUs, not %d", m.A.File, m.A.NGPUs, n)
	}
	return nil
}

// Unit is the message size unit (whole chunks of whole elements).
func (m Algorithm) Unit(elem int64) int64 { return m.A.Unit(elem) }

// Plan builds the schedule.
func (m Algorithm) Plan(req algos.Request) (*algos.Schedule, error) {
	return m.A.Schedule(m.Name(), req)
}
