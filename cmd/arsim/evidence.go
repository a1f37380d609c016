package main

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/scenarios"
	"github.com/arsim/arsim/validate"
)

// What a table of predictions rests on: each schedule's mechanisms
// (algos.MechanismsOf) and how well arsim predicts each on measurements
// of it that no parameter was fitted on (validate.EvidenceOf over the
// project's captures and the published tables: evidence.json), so that a
// row resting on physics the model gets wrong says so beside the row, not
// only in validate's report.

// evidenceFile is arsim's error by mechanism (validate.EvidenceOf) over
// the captures and published tables evidenceSources names
// (evidence_current_test.go), computed from them by a test that fails
// when it is stale.
//
//go:embed evidence.json
var evidenceFile []byte

// committedEvidence returns evidence.json by mechanism.
var committedEvidence = sync.OnceValues(func() (map[algos.Mechanism]validate.EvidenceRow, error) {
	var rows []validate.EvidenceRow
	if err := json.Unmarshal(evidenceFile, &rows); err != nil {
		return nil, fmt.Errorf("evidence.json: %w", err)
	}
	ev := map[algos.Mechanism]validate.EvidenceRow{}
	for _, r := range rows {
		ev[r.Mechanism] = r
	}
	return ev, nil
})

// usesByMechanism gathers, for each mechanism in algos.Mechanisms' order,
// the algorithms (in names' order) whose schedules use it.
func usesByMechanism(names []string, uses map[string][]algos.Mechanism) ([]algos.Mechanism, map[algos.Mechanism][]string) {
	by := map[algos.Mechanism][]string{}
	for _, n := range names {
		for _, m := range uses[n] {
			if !slices.Contains(by[m], n) {
				by[m] = append(by[m], n)
			}
		}
	}
	var all [][]algos.Mechanism
	for _, n := range names {
		all = append(all, uses[n])
	}
	return algos.UnionMechanisms(all...), by
}

// shown drops from order the whole-allreduce variants nothing measured:
// a row says what it rests on; that its algorithm was never measured as a
// whole on this route is the rule, not news.
func shown(order []algos.Mechanism, ev map[algos.Mechanism]validate.EvidenceRow) []algos.Mechanism {
	out := order[:0:0]
	for _, m := range order {
		if (m.Family() == algos.MechWhole || m.Family() == algos.MechPass) && ev[m].Records == 0 {
			continue
		}
		out = append(out, m)
	}
	return out
}

// evidenceLine says how well arsim predicts mechanism m on measured
// hardware (ev: committedEvidence).
func evidenceLine(ev map[algos.Mechanism]validate.EvidenceRow, m algos.Mechanism) string {
	e, ok := ev[m]
	if f := m.Family(); f != m && (!ok || e.Records == 0) {
		return "no measurement arsim has is of this layout; in every layout, " + evidenceLine(ev, f)
	}
	if !ok || e.Records == 0 {
		return "no measurement arsim has times it"
	}
	return e.String()
}

// writeEvidence prints, after a table, the mechanisms its rows' schedules
// rest on (uses, by algorithm), arsim's error on each, and which
// algorithms use it. Nothing when no row has a schedule.
func writeEvidence(out io.Writer, names []string, uses map[string][]algos.Mechanism) error {
	order, by := usesByMechanism(names, uses)
	if len(order) == 0 {
		return nil
	}
	ev, err := committedEvidence()
	if err != nil {
		return err
	}
	order = shown(order, ev)
	fmt.Fprintln(out)
	what := "these rows rest"
	if len(names) == 1 {
		what = names[0] + " rests"
	}
	fmt.Fprintf(out, "What %s on, and arsim's |error| on measurements of it that no parameter was fitted on (arsim validate):\n", what)
	for _, m := range order {
		fmt.Fprintf(out, "  %s: %s\n", m, evidenceLine(ev, m))
		if len(names) > 1 {
			fmt.Fprintf(out, "      %s\n", whichRows(names, by[m]))
		}
	}
	return nil
}

// whichRows names the rows (of names) that use a mechanism: all of them,
// all but a few, or the list.
func whichRows(names, using []string) string {
	var others []string
	for _, n := range names {
		if !slices.Contains(using, n) {
			others = append(others, n)
		}
	}
	switch {
	case len(others) == 0:
		return "every row"
	case len(others) <= 4 && len(others) < len(using):
		return "every row but " + strings.Join(others, ", ")
	}
	return strings.Join(using, ", ")
}

// evidenceJSON is the evidence of the mechanisms uses name, for JSON
// outputs.
type evidenceJSON struct {
	validate.EvidenceRow
	Algos []string `json:"algos"`
}

// sweepUses gathers each algorithm's mechanisms over a sweep's rows.
func sweepUses(rows []scenarios.SweepRow) map[string][]algos.Mechanism {
	uses := map[string][]algos.Mechanism{}
	for _, r := range rows {
		uses[r.Algo] = algos.UnionMechanisms(uses[r.Algo], r.Mechanisms)
	}
	return uses
}

// verifyUses is each algorithm's mechanisms in a verify pass: its
// schedule's, and the verify-pass variant of its algorithm over its route
// (algos.PassOf), which passes measured whole speak for.
func verifyUses(res []scenarios.VerifyResult) map[string][]algos.Mechanism {
	uses := map[string][]algos.Mechanism{}
	for _, r := range res {
		ms := slices.Clone(r.Mechanisms)
		for _, m := range r.Mechanisms {
			if p := algos.PassOf(m); p != "" {
				ms = append(ms, p)
			}
		}
		uses[r.Algo] = algos.UnionMechanisms(ms)
	}
	return uses
}

// evidenceRows is writeEvidence's content for JSON outputs.
func evidenceRows(names []string, uses map[string][]algos.Mechanism) ([]evidenceJSON, error) {
	order, by := usesByMechanism(names, uses)
	if len(order) == 0 {
		return nil, nil
	}
	ev, err := committedEvidence()
	if err != nil {
		return nil, err
	}
	order = shown(order, ev)
	out := make([]evidenceJSON, 0, len(order))
	for _, m := range order {
		e := ev[m]
		e.Mechanism = m
		out = append(out, evidenceJSON{EvidenceRow: e, Algos: by[m]})
	}
	return out, nil
}
