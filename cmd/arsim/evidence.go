package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/scenarios"
	"github.com/arsim/arsim/validate"
)

// What a table of predictions rests on: each schedule's mechanisms
// (algos.MechanismsOf) and how well arsim predicts each where the
// project's captures time it (validate.Evidence), so that a row resting
// on physics the model gets wrong says so beside the row, not only in
// validate's report.

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

// shown drops from order the whole-allreduce variants no capture measured:
// a row says what it rests on; that its algorithm was never measured as a
// whole on this route is the rule, not news.
func shown(order []algos.Mechanism, ev map[algos.Mechanism]validate.EvidenceRow) []algos.Mechanism {
	out := order[:0:0]
	for _, m := range order {
		if m.Family() == algos.MechWhole && ev[m].Records == 0 {
			continue
		}
		out = append(out, m)
	}
	return out
}

// evidenceLine says how well arsim predicts mechanism m on captured
// hardware.
func evidenceLine(ev map[algos.Mechanism]validate.EvidenceRow, m algos.Mechanism) string {
	e, ok := ev[m]
	if f := m.Family(); f != m && (!ok || e.Records == 0) {
		return "no capture of the project ran this layout; in every layout, " + evidenceLine(ev, f)
	}
	if !ok || e.Records == 0 {
		if m == algos.MechPeerPCIe {
			return "no capture of the project times it: its PCIe figures are spec values and published measurements (docs/VALIDATION.md compares NCCL with published nccl-tests tables)"
		}
		return "no capture of the project times it"
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
	ev, err := validate.Evidence()
	if err != nil {
		return err
	}
	order = shown(order, ev)
	fmt.Fprintln(out)
	what := "these rows rest"
	if len(names) == 1 {
		what = names[0] + " rests"
	}
	fmt.Fprintf(out, "What %s on, and arsim's |error| where its captures time it (records no parameter was fitted on; arsim validate):\n", what)
	for _, m := range order {
		fmt.Fprintf(out, "  %s: %s\n", m, evidenceLine(ev, m))
		switch {
		case len(names) == 1:
		case len(by[m]) == len(names):
			fmt.Fprintln(out, "      every row")
		default:
			fmt.Fprintf(out, "      %s\n", strings.Join(by[m], ", "))
		}
	}
	return nil
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

// verifyUses is each algorithm's mechanisms in a verify pass.
func verifyUses(res []scenarios.VerifyResult) map[string][]algos.Mechanism {
	uses := map[string][]algos.Mechanism{}
	for _, r := range res {
		uses[r.Algo] = r.Mechanisms
	}
	return uses
}

func evidenceRows(names []string, uses map[string][]algos.Mechanism) ([]evidenceJSON, error) {
	order, by := usesByMechanism(names, uses)
	if len(order) == 0 {
		return nil, nil
	}
	ev, err := validate.Evidence()
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
