package scenarios

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/arsim/arsim/internal/crash"
	"github.com/arsim/arsim/topology"
)

// FirmnessFactors are the moves Firmness tries on each parameter, the
// smaller first: a fifth and a half down, a quarter and a double up.
var FirmnessFactors = []float64{0.8, 1.25, 0.5, 2}

// Contenders are the algorithms Firmness times under each move: those
// within this factor of the winner's time.
const Contenders = 2.0

// Firm says how firm the fastest algorithm of one allreduce is: which
// single parameter moves would make another algorithm the fastest.
type Firm struct {
	// Winner is the fastest at the machine's values (ties: the first
	// given), Us every algorithm's time there (µs per allreduce, steady
	// state; those that cannot run are left out).
	Winner string
	Us     map[string]float64
	// Contenders are the algorithms timed under the moves: within
	// Contenders × the winner's time, fastest first (the winner first).
	Contenders []string
	// Moves are, for each parameter whose moves change the winner, the
	// smallest such move (FirmnessFactors, within the parameter's range),
	// the smallest first.
	Moves []WinnerMove
	// Held counts the parameters moved by every factor in range with the
	// winner unchanged (none moved where the winner is the only
	// contender); NotMoved those not moved (switches, bit masks, the
	// architecture, parameters at 0).
	Held, NotMoved int
}

// WinnerMove is one parameter moved alone so far that another algorithm
// is the fastest.
type WinnerMove struct {
	Param  topology.Param
	Factor float64 // the value tried over the machine's
	Tried  float64
	Winner string  // the fastest then
	Ratio  float64 // its time over the former winner's then (< 1)
}

// Firmness times every algorithm of names as c's allreduce (c.Algo is not
// used), then the contenders with each parameter moved alone by each of
// FirmnessFactors, the schedules planned again, and returns which moves
// change the fastest.
func Firmness(ctx context.Context, c SensitivityConfig, names []string) (*Firm, error) {
	if err := c.defaults(); err != nil {
		return nil, err
	}
	f := &Firm{Us: map[string]float64{}}
	base, err := c.timeAll(ctx, c.Params, names)
	if err != nil {
		return nil, err
	}
	for i, n := range names {
		if base[i] > 0 {
			f.Us[n] = base[i]
			if f.Winner == "" || base[i] < f.Us[f.Winner] {
				f.Winner = n
			}
		}
	}
	if f.Winner == "" {
		return nil, fmt.Errorf("scenarios: none of %v runs here", names)
	}
	for _, n := range names {
		if us, ok := f.Us[n]; ok && us <= Contenders*f.Us[f.Winner] {
			f.Contenders = append(f.Contenders, n)
		}
	}
	slices.SortStableFunc(f.Contenders, func(a, b string) int { return cmp.Compare(f.Us[a], f.Us[b]) })
	if len(f.Contenders) < 2 {
		return f, nil // nothing near enough to take its place: no move tried
	}
	for _, p := range c.Params.All() {
		if unmovable(p) != "" {
			f.NotMoved++
			continue
		}
		move, err := c.winnerUnder(ctx, p, f)
		if err != nil {
			return nil, err
		}
		if move == nil {
			f.Held++
			continue
		}
		f.Moves = append(f.Moves, *move)
	}
	slices.SortStableFunc(f.Moves, func(a, b WinnerMove) int {
		if x := cmp.Compare(math.Abs(math.Log(a.Factor)), math.Abs(math.Log(b.Factor))); x != 0 {
			return x
		}
		return cmp.Compare(a.Param.Name, b.Param.Name)
	})
	return f, nil
}

// winnerUnder moves p by each factor in turn (those within its range)
// and returns the first move under which a contender other than f.Winner
// is the fastest, or nil.
func (c SensitivityConfig) winnerUnder(ctx context.Context, p topology.Param, f *Firm) (*WinnerMove, error) {
	for _, k := range FirmnessFactors {
		v, ok := movedBy(p, k)
		if !ok {
			continue
		}
		ps := c.Params.Clone()
		if err := ps.Set(p.Name, v, ""); err != nil {
			continue
		}
		us, err := c.timeAll(ctx, ps, f.Contenders)
		if err != nil {
			return nil, err
		}
		best := -1
		for i := range us {
			if us[i] > 0 && (best < 0 || us[i] < us[best]) {
				best = i
			}
		}
		if best <= 0 { // none runs, or the winner (Contenders[0]) still wins
			continue
		}
		ratio := math.NaN() // the former winner no longer runs
		if us[0] > 0 {
			ratio = us[best] / us[0]
		}
		return &WinnerMove{Param: p, Factor: k, Tried: v, Winner: f.Contenders[best], Ratio: ratio}, nil
	}
	return nil, nil
}

// timeAll times each algorithm of names on the machine built with ps:
// 0 for one that cannot be built, planned or run there.
func (c SensitivityConfig) timeAll(ctx context.Context, ps *topology.Params, names []string) ([]float64, error) {
	us := make([]float64, len(names))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(c.Parallel)
	for i, n := range names {
		g.Go(func() (err error) {
			defer crash.Recover(&err)
			if err := ctx.Err(); err != nil {
				return err
			}
			d := c
			d.Algo = n
			if t, _, err := d.timeWith(ps); err == nil {
				us[i] = t
			}
			return nil
		})
	}
	return us, g.Wait()
}
