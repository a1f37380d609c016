package main

import (
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/validate"
)

var updateEvidence = flag.Bool("update-evidence", false, "rewrite evidence.json from the captures and tables it is computed from")

// evidenceNow validates every set of evidenceSources as arsim validate
// does and sums the records up by mechanism.
func evidenceNow(t *testing.T) []validate.EvidenceRow {
	t.Helper()
	root := func(p string) string { return filepath.Join("..", "..", p) }
	var vs []*validate.Validation
	for _, set := range evidenceSources {
		var traces []string
		for _, pat := range set.traces {
			files, err := filepath.Glob(root(pat))
			require.NoError(t, err)
			require.NotEmpty(t, files, pat)
			traces = append(traces, files...)
		}
		topo := set.topo
		if filepath.Ext(topo) != "" {
			topo = root(topo)
		}
		files, mm, err := loadMeasured(traces, true, set.opts, topo, "", "", io.Discard)
		require.NoError(t, err, set.name)
		for _, f := range files {
			v, err := validate.Run(f.recs, validate.Options{Params: mm.params, File: f.path, Preset: mm.preset, Machine: mm.machine})
			require.NoError(t, err, f.path)
			vs = append(vs, v)
		}
	}
	return validate.EvidenceOf(validate.Merge(vs...))
}

// evidence.json is what the captures and published tables say today: a
// change to the model or the data that moves a figure shows here as a
// diff (go test ./cmd/arsim -run TestEvidenceIsCurrent -update-evidence
// rewrites it; review the diff).
func TestEvidenceIsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("validates every committed capture")
	}
	rows := evidenceNow(t)
	got, err := json.MarshalIndent(rows, "", "  ")
	require.NoError(t, err)
	got = append(got, '\n')
	if *updateEvidence {
		require.NoError(t, os.WriteFile("evidence.json", got, 0o644))
	}
	assert.Equal(t, string(evidenceFile), string(got), "evidence.json is stale: go test ./cmd/arsim -run TestEvidenceIsCurrent -update-evidence")
	ev, err := committedEvidence()
	require.NoError(t, err)
	for _, m := range algos.Mechanisms {
		assert.Contains(t, ev, m)
	}
	for _, r := range rows {
		t.Logf("%-55s %s", r.Mechanism, r)
	}
}
