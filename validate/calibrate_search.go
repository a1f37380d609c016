package validate

import (
	"math"
	"slices"
	"strconv"

	"github.com/arsim/arsim/topology"
)

// The search of one parameter in Calibrate's coordinate descent.

// space is a parameter's search interval, in log space when its lower bound
// is positive.
type space struct {
	lo, hi    float64 // in the parameter's unit
	log       bool
	integer   bool
	limitNote string // why hi is what it is, when not a physical bound
}

func (s space) toX(v float64) float64 {
	if s.log {
		return math.Log(v)
	}
	return v
}

func (s space) fromX(x float64) float64 {
	v := x
	if s.log {
		v = math.Exp(x)
	}
	if s.integer {
		v = math.Round(v)
	}
	return min(max(v, s.lo), s.hi)
}

// spaceOf is where p may be searched, or why it is not fitted.
func spaceOf(p topology.Param) (space, string) {
	if p.Unit == "bool" {
		return space{}, "not fitted: a switch (bool), not a quantity"
	}
	sp := space{lo: p.Min, hi: p.Max, integer: p.Integer()}
	if sp.hi == 0 {
		sp.hi = 4 * p.Value
		sp.limitNote = "4× the starting value (no physical upper bound)"
		if sp.hi <= sp.lo {
			return space{}, "not fitted: no upper bound and a starting value of 0"
		}
	}
	sp.log = sp.lo > 0
	return sp, ""
}

// gridN is the number of points of the scan over a parameter's range.
const gridN = 9

// nearStart are the multiples of a parameter's starting value the scan
// tries beside the range's grid: a linear grid over a wide range (a
// latency of 0–1000 µs) steps past a minimum a few µs wide near the
// default, which a golden section between grid points then misses.
var nearStart = []float64{0.25, 0.5, 0.75, 1.25, 1.5, 2}

// scanGrid is the values a parameter's scan tries, ascending: gridN points
// across its range and the nearStart multiples of its starting value
// within it.
func scanGrid(sp space, start float64) []float64 {
	xlo, xhi := sp.toX(sp.lo), sp.toX(sp.hi)
	vs := make([]float64, 0, gridN+len(nearStart))
	for g := 0; g < gridN; g++ {
		vs = append(vs, sp.fromX(xlo+(xhi-xlo)*float64(g)/(gridN-1)))
	}
	if start > 0 {
		for _, m := range nearStart {
			vs = append(vs, sp.fromX(sp.toX(min(max(start*m, sp.lo), sp.hi))))
		}
	}
	slices.Sort(vs)
	return slices.Compact(vs)
}

// point is a value tried, with the objective and the predictions there.
type point struct {
	x, v, f float64
	preds   []float64
}

// paramSearch is the search of one parameter, name, from ps.
type paramSearch struct {
	c        *calib
	ps       *topology.Params
	name     string
	p        topology.Param
	sp       space
	xlo, xhi float64
	pos      []int // fit positions that depend on the parameter
	idx      []int // their twins
	best     point
}

// eval predicts the fit positions pos with the parameter at v (NaN where
// v is refused).
func (s *paramSearch) eval(v float64, pos []int) []float64 {
	q := s.ps.Clone()
	if err := q.Set(s.name, v, ""); err != nil {
		out := make([]float64, len(pos))
		for i := range out {
			out[i] = math.NaN()
		}
		return out
	}
	idx := make([]int, len(pos))
	for i, k := range pos {
		idx[i] = s.c.fit[k]
	}
	return s.c.predict(q, idx)
}

// fitOne searches one parameter, updating ps and cur (the fit records'
// predictions) when a better value is found. dep holds the fit positions
// that depend on the parameter; it is found on the first sweep. The status
// is "" when the evaluation cap stopped the search before it began.
func (c *calib) fitOne(ps *topology.Params, name string, cur *[]float64, dep *[]int, first bool) (status string, changed bool) {
	p, _ := ps.Lookup(name)
	sp, why := spaceOf(p)
	if why != "" {
		return why, false
	}
	s := &paramSearch{c: c, ps: ps, name: name, p: p, sp: sp, xlo: sp.toX(sp.lo), xhi: sp.toX(sp.hi)}
	gridV := scanGrid(sp, p.Value)
	gridPreds, ok := s.scan(gridV, *cur, dep, first)
	if !ok {
		return "", false
	}
	s.pos = *dep
	if len(s.pos) == 0 {
		return "no effect", false
	}
	s.idx = make([]int, len(s.pos))
	curSub := make([]float64, len(s.pos))
	for j, k := range s.pos {
		s.idx[j] = c.fit[k]
		curSub[j] = (*cur)[k]
	}
	s.best = point{x: sp.toX(p.Value), v: p.Value, f: c.objective(s.idx, curSub), preds: curSub}
	startF := s.best.f
	bestG := -1
	for g := range gridV {
		if f := c.objective(s.idx, gridPreds[g]); f < s.best.f {
			s.best = point{x: sp.toX(gridV[g]), v: gridV[g], f: f, preds: gridPreds[g]}
			bestG = g
		}
	}
	// The golden section runs between the best scan point's neighbours
	// (or the starting value's, for none).
	centre := min(max(p.Value, sp.lo), sp.hi)
	if bestG >= 0 {
		centre = gridV[bestG]
	}
	lo, hi := sp.lo, sp.hi
	for _, v := range gridV {
		if v < centre {
			lo = v
		}
		if v > centre && hi == sp.hi {
			hi = v
		}
	}
	tol := s.golden(sp.toX(lo), sp.toX(hi))
	if !(s.best.f < startF) || s.best.v == p.Value {
		return "unchanged", false
	}
	return s.keep(cur, tol)
}

// scan predicts the fit records at each grid value. On the first sweep it
// predicts them all and keeps in dep those whose prediction moves anywhere
// on the grid; later it predicts dep's only. It reports false when the
// evaluation cap stopped it.
func (s *paramSearch) scan(gridV, cur []float64, dep *[]int, first bool) ([][]float64, bool) {
	gridPreds := make([][]float64, len(gridV))
	if !first {
		for g, v := range gridV {
			if s.c.evals >= s.c.opts.MaxEvals {
				s.c.capHit = true
				return nil, false
			}
			gridPreds[g] = s.eval(v, *dep)
		}
		return gridPreds, true
	}
	allPos := make([]int, len(s.c.fit))
	for i := range allPos {
		allPos[i] = i
	}
	for g, v := range gridV {
		gridPreds[g] = s.eval(v, allPos)
	}
	*dep = (*dep)[:0]
	for k := range allPos {
		for g := range gridV {
			a, b := gridPreds[g][k], cur[k]
			if math.IsNaN(a) || math.Abs(a-b) > 1e-9*math.Abs(b) {
				*dep = append(*dep, k)
				break
			}
		}
	}
	for g := range gridPreds {
		sub := make([]float64, len(*dep))
		for j, k := range *dep {
			sub[j] = gridPreds[g][k]
		}
		gridPreds[g] = sub
	}
	return gridPreds, true
}

// golden runs a golden-section search over [a, b] (in x), keeping the
// best point; it returns the search's tolerance in x.
func (s *paramSearch) golden(a, b float64) (tol float64) {
	tol = 1e-5 * (s.xhi - s.xlo)
	if s.sp.integer {
		tol = 0.5
		if s.sp.log {
			tol = math.Log1p(0.5 / max(s.p.Value, 1))
		}
	}
	invPhi := (math.Sqrt(5) - 1) / 2
	try := func(x float64) (float64, bool) {
		if s.c.evals >= s.c.opts.MaxEvals {
			s.c.capHit = true
			return math.Inf(1), false
		}
		v := s.sp.fromX(x)
		preds := s.eval(v, s.pos)
		f := s.c.objective(s.idx, preds)
		if f < s.best.f {
			s.best = point{x: x, v: v, f: f, preds: preds}
		}
		return f, true
	}
	x1, x2 := b-invPhi*(b-a), a+invPhi*(b-a)
	f1, ok1 := try(x1)
	f2, ok2 := try(x2)
	for ok1 && ok2 && b-a > tol {
		if f1 <= f2 {
			b, x2, f2 = x2, x1, f1
			x1 = b - invPhi*(b-a)
			f1, ok1 = try(x1)
		} else {
			a, x1, f1 = x1, x2, f2
			x2 = a + invPhi*(b-a)
			f2, ok2 = try(x2)
		}
	}
	return tol
}

// keep sets the best value when the fit set as a whole does not get worse
// and says whether it lies at a bound: within two search tolerances of it
// (the golden section converges to within one of a bound it is pressed
// against; a share of the range instead would call 9 µs "at the bound" of
// a 0–10,000 µs parameter).
func (s *paramSearch) keep(cur *[]float64, tol float64) (status string, changed bool) {
	next := append([]float64(nil), (*cur)...)
	for j, k := range s.pos {
		next[k] = s.best.preds[j]
	}
	if s.c.objective(s.c.fit, next) > s.c.objective(s.c.fit, *cur) {
		return "unchanged", false
	}
	if err := s.ps.Set(s.name, s.best.v, ""); err != nil {
		return "not fitted: " + err.Error(), false
	}
	*cur = next
	near := 2 * tol
	bx := s.sp.toX(s.best.v)
	switch {
	case bx-s.xlo <= near:
		return "pinned at lower bound " + strconv.FormatFloat(s.sp.lo, 'g', -1, 64), true
	case s.xhi-bx <= near && s.sp.limitNote != "":
		return "pinned at search limit " + strconv.FormatFloat(s.sp.hi, 'g', -1, 64) + ": " + s.sp.limitNote, true
	case s.xhi-bx <= near:
		return "pinned at upper bound " + strconv.FormatFloat(s.sp.hi, 'g', -1, 64), true
	}
	return "fitted", true
}
