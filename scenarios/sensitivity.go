package scenarios

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"runtime"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/internal/crash"
	"github.com/arsim/arsim/topology"
)

// SensitivityConfig is one allreduce on one machine whose time is traced
// back to the machine's parameters, one at a time.
type SensitivityConfig struct {
	// Preset builds the machine from Params (a registered preset or an
	// imported file, topology.ImportPreset); Params are its values.
	Preset *topology.Preset
	Params *topology.Params
	Algo   string
	Ranks  int
	Bytes  int64
	DType  algos.DType
	Launch hw.LaunchMode
	Opts   map[string]string
	// Iterations back to back, timed in steady state as Sweep times them
	// (default 3).
	Iterations int
	// Step is how far each parameter moves, as a fraction of its value
	// (default 0.1: +10 %, or −10 % where +10 % leaves its range).
	Step float64
	// Parallel is how many runs at once (default: all cores); the result
	// does not depend on it.
	Parallel int
}

// Sensitivity is how the time moves with one parameter.
type Sensitivity struct {
	Param topology.Param // as the machine has it
	// Tried is the value the parameter was moved to; Us the time then
	// (µs per allreduce, steady state).
	Tried, Us float64
	// Elasticity is the time's relative change over the parameter's:
	// (Us/base − 1) / (Tried/Value − 1). 1 means the time moves in
	// proportion; 0 that it does not move.
	Elasticity float64
	// PlanChanged: with the parameter moved, the algorithm planned another
	// schedule (another protocol, channel count, chunking or kernel shape,
	// planShape): the elasticity is then a step between two plans, not a
	// slope of one.
	PlanChanged bool
	// Skipped says why the parameter was not moved (a switch, a bit mask,
	// an architecture, at 0, no step within its range), or Err why the machine or the
	// schedule could not be made with it.
	Skipped string
	Err     error
}

// Sensitivities times c's allreduce on the machine as given, then with
// each parameter moved by Step alone (the schedule planned again, as an
// algorithm that reads the machine would), and returns the base time and
// every parameter's sensitivity, the largest |Elasticity| first (then by
// name), those not moved last.
func Sensitivities(ctx context.Context, c SensitivityConfig) (float64, []Sensitivity, error) {
	if err := c.defaults(); err != nil {
		return 0, nil, err
	}
	base, shape, err := c.timeWith(c.Params)
	if err != nil {
		return 0, nil, err
	}
	if base <= 0 {
		return 0, nil, fmt.Errorf("scenarios: %s takes no time here, so nothing moves it", c.Algo)
	}
	all := c.Params.All()
	out := make([]Sensitivity, len(all))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(c.Parallel)
	for i, p := range all {
		out[i].Param = p
		tried, why := c.step(p)
		if why != "" {
			out[i].Skipped = why
			continue
		}
		out[i].Tried = tried
		g.Go(func() (err error) {
			defer crash.Recover(&err)
			if err := ctx.Err(); err != nil {
				return err
			}
			ps := c.Params.Clone()
			if err := ps.Set(p.Name, tried, ""); err != nil {
				out[i].Err = err
				return nil
			}
			us, sh, err := c.timeWith(ps)
			if err != nil {
				out[i].Err = err
				return nil
			}
			out[i].Us, out[i].PlanChanged = us, sh != shape
			out[i].Elasticity = (us/base - 1) / (tried/p.Value - 1)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return 0, nil, err
	}
	slices.SortStableFunc(out, func(a, b Sensitivity) int {
		if ma, mb := a.moved(), b.moved(); ma != mb {
			if ma {
				return -1
			}
			return 1
		}
		if x := cmp.Compare(math.Abs(b.Elasticity), math.Abs(a.Elasticity)); x != 0 {
			return x
		}
		return cmp.Compare(a.Param.Name, b.Param.Name)
	})
	return base, out, nil
}

// defaults fills in c's defaults and checks its step.
func (c *SensitivityConfig) defaults() error {
	if c.Iterations <= 0 {
		c.Iterations = 3
	}
	if c.Step == 0 {
		c.Step = 0.1
	}
	if c.Step <= 0 || c.Step >= 1 {
		return fmt.Errorf("scenarios: sensitivity step %v is not a fraction between 0 and 1", c.Step)
	}
	if c.Parallel <= 0 {
		c.Parallel = runtime.GOMAXPROCS(0)
	}
	if c.DType == "" {
		c.DType = algos.BF16
	}
	return nil
}

// moved reports whether the parameter was moved and the allreduce timed.
func (s Sensitivity) moved() bool { return s.Skipped == "" && s.Err == nil }

// unmovable says why p is not a quantity to move (a switch, a bit mask,
// an architecture, a parameter at 0), or "".
func unmovable(p topology.Param) string {
	switch {
	case p.Unit == "bool":
		return "a switch"
	case p.Unit == "mask":
		return "a bit mask"
	case p.Unit == "sm":
		return "an architecture"
	case p.Value == 0:
		return "at 0 (off)"
	}
	return ""
}

// step returns the value to move p to, or why it is not moved.
func (c SensitivityConfig) step(p topology.Param) (float64, string) {
	if why := unmovable(p); why != "" {
		return 0, why
	}
	for _, f := range []float64{1 + c.Step, 1 - c.Step} {
		v, ok := movedBy(p, f)
		if !ok && p.Integer() && math.Round(p.Value*f) == p.Value {
			// a whole number too small to move by the step: by one
			v, ok = movedBy(p, 1+math.Copysign(1, f-1)/p.Value)
		}
		if ok {
			return v, ""
		}
	}
	return 0, "no step within its range"
}

// movedBy is p's value times f, rounded for a whole-number parameter, and
// whether that is another value within p's range.
func movedBy(p topology.Param, f float64) (float64, bool) {
	v := p.Value * f
	if p.Integer() {
		v = math.Round(v)
	}
	return v, v != p.Value && v >= p.Min && (p.Max == 0 || v <= p.Max)
}

// timeWith builds the machine with ps, plans and runs the allreduce, and
// returns its time and its schedule's shape.
func (c SensitivityConfig) timeWith(ps *topology.Params) (float64, uint64, error) {
	top, err := c.Preset.BuildWith(ps.Clone())
	if err != nil {
		return 0, 0, err
	}
	s, err := algos.Plan(c.Algo, algos.Request{Top: top, Ranks: c.Ranks, Bytes: c.Bytes, DType: c.DType, Launch: c.Launch, Opts: optsFor(c.Algo, c.Opts)})
	if err != nil {
		return 0, 0, err
	}
	us, _, err := runPoint(top, s, c.Launch, c.Iterations)
	return us, planShape(s), err
}

// planShape hashes what a plan chooses: every rank's ops, their kinds,
// sizes, memories and dependencies, and their kernels' loops, blocks and
// threads; not the rates a planner works out from the machine's values.
func planShape(s *algos.Schedule) uint64 {
	h := fnv.New64a()
	var b []byte
	for _, prog := range s.Programs {
		b = binary.AppendUvarint(b[:0], uint64(len(prog)))
		h.Write(b)
		for i := range prog {
			op := &prog[i]
			b = binary.AppendUvarint(b[:0], uint64(op.Kind))
			b = binary.AppendVarint(b, op.Src.Len)
			b = binary.AppendVarint(b, op.Dst.Len)
			b = binary.AppendVarint(b, int64(op.Src.Buf.At.Rank))
			b = binary.AppendVarint(b, int64(op.Dst.Buf.At.Rank))
			b = append(b, boolByte(op.Src.Buf.At.Host), boolByte(op.Dst.Buf.At.Host))
			b = binary.AppendUvarint(b, uint64(op.Kernel.Loop))
			b = binary.AppendVarint(b, int64(op.Kernel.Blocks))
			b = binary.AppendVarint(b, int64(op.Kernel.Threads))
			b = binary.AppendUvarint(b, uint64(len(op.After)))
			for _, d := range op.After {
				b = binary.AppendVarint(b, int64(d))
			}
			h.Write(b)
		}
	}
	return h.Sum64()
}

func boolByte(x bool) byte {
	if x {
		return 1
	}
	return 0
}
