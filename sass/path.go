package sass

import (
	"fmt"
	"strings"
)

// Sources is the side of a loop that reads its sources one way, for a
// kernel that picks each load by a flag: tools/capture's copies load a
// source with ld.volatile.global (LDG….STRONG.SYS in the SASS, not cached
// in the L1) or a plain load (LDG without .STRONG) by an argument, and the
// compiler keeps both loads in the loop, each under a predicate.
type Sources int

const (
	// AnySources counts every instruction, whatever guards it
	// (Kernel.MainLoop).
	AnySources Sources = iota
	// PlainSources runs the side whose guarded loads are plain.
	PlainSources
	// VolatileSources runs the side whose guarded loads are strong
	// (volatile).
	VolatileSources
)

// String names the side as the trace field src_loads does.
func (s Sources) String() string {
	switch s {
	case PlainSources:
		return "plain"
	case VolatileSources:
		return "volatile"
	}
	return "any"
}

// MainLoopOn analyses the kernel's main loop as one thread runs it on
// the side src: each predicate that guards a load of the loop gets the
// value under which the loads of src's kind run and the others do not,
// and an instruction whose guard is then false is left out (a predicate
// that would need both values, or guards no load, is taken as true, as
// MainLoop takes every predicate). A loop whose loads are not guarded is
// analysed as MainLoop does.
func (k Kernel) MainLoopOn(src Sources) (Loop, error) {
	if src == AnySources {
		return k.MainLoopGuarded(nil)
	}
	return k.MainLoopGuarded(sideGuards(mainLoop(k.Code), src))
}

// strongLoad reports whether a global load is strong (ld.volatile.global,
// ld.relaxed.sys, ld.acquire: .STRONG in the SASS).
func strongLoad(op string) bool { return strings.Contains(op, ".STRONG.") }

// sideGuards is the value of each predicate of body that guards its loads
// on the side src (MainLoopOn).
func sideGuards(body []Instr, src Sources) map[string]bool {
	val := map[string]bool{}
	both := map[string]bool{}
	for _, in := range body {
		if in.Guard == "" || !strings.HasPrefix(in.Op, "LDG") {
			continue
		}
		p, neg := strings.CutPrefix(in.Guard, "!")
		run := strongLoad(in.Op) == (src == VolatileSources)
		v := run != neg // the guard holds exactly where the load should run
		if old, ok := val[p]; ok && old != v {
			both[p] = true
		}
		val[p] = v
	}
	for p := range both {
		delete(val, p)
	}
	return val
}

// MainLoopGuarded analyses the kernel's main loop with the predicates of
// val holding their values there: an instruction whose guard is then
// false is left out; every other predicate is taken as true.
func (k Kernel) MainLoopGuarded(val map[string]bool) (Loop, error) {
	body := mainLoop(k.Code)
	if len(body) == 0 {
		return Loop{}, fmt.Errorf("sass: %s has no loop (no backward branch)", k.Name)
	}
	return analyse(guarded(body, val)), nil
}

// guarded is body without the instructions whose guard val makes false.
func guarded(body []Instr, val map[string]bool) []Instr {
	out := make([]Instr, 0, len(body))
	for _, in := range body {
		p, neg := strings.CutPrefix(in.Guard, "!")
		if v, ok := val[p]; ok && in.Guard != "" && v == neg {
			continue // its guard is false
		}
		out = append(out, in)
	}
	return out
}
