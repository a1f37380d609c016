package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/scenarios"
	"github.com/arsim/arsim/sim"
	"github.com/arsim/arsim/topology"
)

// verifyFirmness works out how firm the verify pass's fastest algorithm is
// (scenarios.Firmness) over the algorithms that ran.
func verifyFirmness(ctx context.Context, mf *machineFlags, t *topology.Topology, mode hw.LaunchMode, o map[string]string, tokens int, res []scenarios.VerifyResult) (*scenarios.Firm, error) {
	mach, err := mf.machine()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, r := range res {
		if r.Err == nil {
			names = append(names, r.Algo)
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	f, err := scenarios.Firmness(ctx, scenarios.SensitivityConfig{Preset: mach.preset, Params: mach.params,
		Ranks: t.NumGPUs(), Bytes: scenarios.BytesPerAllreduce(tokens), Launch: mode, Opts: o}, names)
	if err != nil {
		return nil, fmt.Errorf("verify: --firmness: %w", err)
	}
	return f, nil
}

// factors says FirmnessFactors as "×0.8, ×1.25, ×0.5, ×2".
func factors() string {
	var xs []string
	for _, k := range scenarios.FirmnessFactors {
		xs = append(xs, "×"+strconv.FormatFloat(k, 'g', -1, 64))
	}
	return strings.Join(xs, ", ")
}

// writeFirmness writes which single parameter moves make another
// algorithm the fastest.
func writeFirmness(out io.Writer, f *scenarios.Firm, bytes int64) {
	if len(f.Contenders) < 2 {
		fmt.Fprintf(out, "\nHow firm the fastest is at %d B: no other algorithm is within %g× of %s, so no parameter move was tried.\n", bytes, scenarios.Contenders, f.Winner)
		return
	}
	fmt.Fprintf(out, "\nHow firm the fastest is at %d B: each parameter moved alone (%s, within its range; the schedules planned\n", bytes, factors())
	fmt.Fprintf(out, "again), the %d algorithms within %g× of the fastest timed as single allreduces, three back to back (%s first):\n",
		len(f.Contenders), scenarios.Contenders, f.Winner)
	moved := f.Held + len(f.Moves)
	if len(f.Moves) == 0 {
		fmt.Fprintf(out, "  %s stays the fastest under every move of the %d parameters moved (%d not moved: switches, bit masks,\n"+
			"  the architecture, parameters at 0).\n", f.Winner, moved, f.NotMoved)
		return
	}
	fmt.Fprintf(out, "  %s stays the fastest under every move of %d of the %d parameters moved; another is under these moves\n"+
		"  (the smallest for each parameter; %d not moved: switches, bit masks, the architecture, parameters at 0):\n", f.Winner, f.Held, moved, f.NotMoved)
	nameW := 0
	for _, m := range f.Moves {
		nameW = max(nameW, len(m.Param.Name))
	}
	for _, m := range f.Moves {
		faster := "the former no longer runs"
		if !math.IsNaN(m.Ratio) {
			faster = fmt.Sprintf("%.1f %% faster", (1/m.Ratio-1)*100)
		}
		fmt.Fprintf(out, "    ×%-4s  %-*s  %s → %s %s: %s, %s;  %s\n", strconv.FormatFloat(m.Factor, 'g', -1, 64), nameW, m.Param.Name,
			strconv.FormatFloat(m.Param.Value, 'g', -1, 64), strconv.FormatFloat(m.Tried, 'g', -1, 64), m.Param.Unit,
			m.Winner, faster, shortSource(m.Param.Source))
	}
}

// maxFirmnessSizes bounds sweep --firmness: each size times every
// parameter's moves.
const maxFirmnessSizes = 8

// firmnessMovesShown is how many moves a sweep's line names per size.
const firmnessMovesShown = 3

// writeSweepFirmness writes a line per size: the fastest and the
// smallest moves that make another algorithm the fastest.
func writeSweepFirmness(out io.Writer, sizes []int64, firms []*scenarios.Firm) {
	fmt.Fprintf(out, "\nHow firm the fastest is at each size: each parameter moved alone (%s, within its range; the schedules\n", factors())
	fmt.Fprintf(out, "planned again), the algorithms within %g× of the fastest timed again; the smallest moves that make another the fastest:\n", scenarios.Contenders)
	for i, f := range firms {
		if f == nil {
			continue
		}
		moved := f.Held + len(f.Moves)
		if len(f.Contenders) < 2 {
			fmt.Fprintf(out, "  %9v  %s, no other algorithm within %g× of it: no move tried\n", sim.Bytes(sizes[i]), f.Winner, scenarios.Contenders)
			continue
		}
		if len(f.Moves) == 0 {
			fmt.Fprintf(out, "  %9v  %s under every move of the %d parameters moved\n", sim.Bytes(sizes[i]), f.Winner, moved)
			continue
		}
		var xs []string
		for _, m := range f.Moves[:min(len(f.Moves), firmnessMovesShown)] {
			xs = append(xs, fmt.Sprintf("×%s %s (%s %s) → %s", strconv.FormatFloat(m.Factor, 'g', -1, 64), m.Param.Name,
				strconv.FormatFloat(m.Tried, 'g', -1, 64), m.Param.Unit, m.Winner))
		}
		more := ""
		if len(f.Moves) > firmnessMovesShown {
			more = fmt.Sprintf(" and %d more", len(f.Moves)-firmnessMovesShown)
		}
		fmt.Fprintf(out, "  %9v  %s; %s%s; %d of %d parameters hold\n", sim.Bytes(sizes[i]), f.Winner, strings.Join(xs, "; "), more, f.Held, moved)
	}
}

// firmJSON is --firmness in verify's JSON.
type firmJSON struct {
	Winner     string         `json:"winner"`
	Contenders []string       `json:"contenders"`
	Factors    []float64      `json:"factors"`
	Moves      []winnerMoveJS `json:"moves"`
	Held       int            `json:"held"`
	NotMoved   int            `json:"not_moved"`
}

type winnerMoveJS struct {
	Param  string   `json:"param"`
	Unit   string   `json:"unit"`
	Value  float64  `json:"value"`
	Factor float64  `json:"factor"`
	Tried  float64  `json:"tried"`
	Winner string   `json:"winner"`
	Ratio  *float64 `json:"ratio,omitempty"` // its time over the former winner's
	Source string   `json:"source"`
}

func firmnessJSON(f *scenarios.Firm) *firmJSON {
	if f == nil {
		return nil
	}
	j := &firmJSON{Winner: f.Winner, Contenders: f.Contenders, Factors: scenarios.FirmnessFactors, Moves: []winnerMoveJS{}, Held: f.Held, NotMoved: f.NotMoved}
	for _, m := range f.Moves {
		x := winnerMoveJS{Param: m.Param.Name, Unit: m.Param.Unit, Value: m.Param.Value, Factor: m.Factor, Tried: m.Tried, Winner: m.Winner, Source: m.Param.Source}
		if !math.IsNaN(m.Ratio) {
			x.Ratio = ptr(round(m.Ratio, 4))
		}
		j.Moves = append(j.Moves, x)
	}
	return j
}
