package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/validate"
)

// measuredSet is traces validated together: on the machines their records
// name (topology "") or on one machine with NCCL's settings, as
// arsim validate --traces … [--topology T --opts O] runs them.
type measuredSet struct {
	name   string
	traces []string // paths relative to the repository root; globs
	topo   string   // a preset or a topology file relative to the root
	opts   string
	params string // a parameter file relative to the root (the host's clock), or ""
}

// publishedTables are the published nccl-tests tables of PCIe-only
// machines in testdata/nccltests and the rtx6kpro wiki's NCCL figures
// (testdata/rtx6kpro), each on the machine it ran on.
var publishedTables = []measuredSet{
	{"8 × RTX 5090, P2P at SYS", []string{"testdata/nccltests/rtx5090x8_2socket_p2p_sys.txt"}, "testdata/topologies/pcie8_2socket_topo_m.txt", "NCCL_P2P_LEVEL=SYS", "testdata/nccltests/rtx5090x8_2socket_host.params"},
	{"4 × RTX 5090, SHM", []string{"testdata/nccltests/rtx5090x4_shm.txt"}, "rtxpro6000x4-1numa", "", "testdata/nccltests/rtx5090x4_genoa_host.params"},
	{"4 × RTX 4090, P2P at SYS", []string{"testdata/nccltests/rtx4090x4_p2p.txt"}, "testdata/topologies/pcie4_1socket_topo_m.txt", "NCCL_P2P_LEVEL=SYS", ""},
	{"6 × RTX 4090, P2P at SYS", []string{"testdata/nccltests/rtx4090x6_p2p_32mib.txt"}, "testdata/topologies/pcie6_1socket_topo_m.txt", "NCCL_P2P_LEVEL=SYS", ""},
	{"8 × RTX PRO 6000, two AMD Turin sockets, with and without NCCL_GRAPH_FILE", []string{"testdata/rtx6kpro/nccl_graph_xml.jsonl"}, "rtxpro6000x8-2numa", "", ""},
	{"8 × RTX PRO 6000 behind two switches on two root complexes, ring", []string{"testdata/rtx6kpro/wrx90_group_a.jsonl"}, "testdata/topologies/pcie8_2switch_2roots_topo_m.txt", "", "testdata/rtx6kpro/wrx90_host.params"},
	{"8 × RTX PRO 6000 behind two switches on one root complex, ring", []string{"testdata/rtx6kpro/wrx90_group_b.jsonl"}, "testdata/topologies/pcie8_2switch_1root_topo_m.txt", "", "testdata/rtx6kpro/wrx90_host.params"},
}

// evidenceSources are what evidence.json is computed from: every capture
// of the project (one H200, one H100, two H200s, the held-out two-H200 set),
// the published tables and the predicted side of the published GPU
// ping-pongs (the WRX90 box's pairs across its two groups; the pairs
// within a group set the PCIe path's latencies).
var evidenceSources = append([]measuredSet{
	{"the project's captures", []string{"testdata/h200x1-arsim/*.jsonl", "testdata/h100x1-arsim/*.jsonl", "testdata/h200x2-arsim/*.jsonl", "testdata/h200x2/*.jsonl"}, "", "", ""},
	{"GPU ping-pongs across the WRX90 box's groups", []string{"testdata/rtx6kpro/wrx90_pingpong_x.jsonl"}, "testdata/topologies/pcie16_4switch_3roots_topo_m.txt", "", ""},
}, publishedTables...)

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
		params := ""
		if set.params != "" {
			params = root(set.params)
		}
		files, mm, err := loadMeasured(traces, true, set.opts, topo, "", params, io.Discard)
		require.NoError(t, err, set.name)
		for _, f := range files {
			v, err := validate.Run(f.recs, validate.Options{Params: mm.params, File: f.path, Preset: mm.preset, Machine: mm.machine})
			require.NoError(t, err, f.path)
			vs = append(vs, v)
		}
	}
	return validate.EvidenceOf(validate.Merge(vs...))
}

// scheduleMechanisms are the mechanisms some built-in schedule rests on:
// every algorithm on every preset at four sizes, with its defaults and
// with each option that changes where its flags or data go (P2P level,
// flag layout and spacing, atomic barriers, NCCL's protocols).
func scheduleMechanisms(t *testing.T) map[algos.Mechanism]bool {
	t.Helper()
	options := []map[string]string{nil, {"p2p_level": "loc"}, {"p2p_level": "sys"}, {"flag_layout": "vllm"},
		{"flag_apart": "256"}, {"flag_apart": "512"}, {"flag_apart": "1024"}, {"flag_apart": "4096"},
		{"barrier": "atomic"}, {"proto": "ll"}, {"proto": "ll128"}, {"proto": "simple"}}
	used := map[algos.Mechanism]bool{}
	for _, name := range topology.Presets() {
		top, err := topology.Load(name)
		require.NoError(t, err)
		for _, a := range algos.Names() {
			seen := map[string]bool{}
			for _, o := range options {
				o = algos.OptionsFor(a, o)
				key := fmt.Sprint(o)
				if seen[key] {
					continue // the algorithm takes none of these options
				}
				seen[key] = true
				for _, b := range []int64{1 << 10, 43008, 4 << 20, 64 << 20} {
					s, err := algos.Plan(a, algos.Request{Top: top, Ranks: top.NumGPUs(), Bytes: b, DType: algos.BF16, Launch: hw.Graph, Opts: o})
					if err != nil {
						continue
					}
					ms := algos.MechanismsOf(s, top)
					if slices.Contains(ms, algos.MechLoadsBesideStores) && !used[algos.MechLoadsBesideStores] {
						// whether its loads run beside the streaming
						// stores shows only as it runs
						ms = ranMechanisms(t, top, s)
					}
					for _, m := range ms {
						used[m] = true
					}
				}
			}
		}
	}
	return used
}

// ranMechanisms runs s three times back to back, as sweep times it, and
// returns what it rests on as it ran (algos.RanMechanisms).
func ranMechanisms(t *testing.T, top *topology.Topology, s *algos.Schedule) []algos.Mechanism {
	t.Helper()
	m, err := hw.New(top)
	require.NoError(t, err)
	res, err := algos.Run(m, s, algos.RunOptions{Iterations: 3, Launch: hw.Graph})
	require.NoError(t, err, s.Algo)
	return algos.RanMechanisms(s, top, res)
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
	used := scheduleMechanisms(t)
	for i := range rows {
		rows[i].UsedBySchedules = used[rows[i].Mechanism]
	}
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
