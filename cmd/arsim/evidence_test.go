package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/validate"
)

// A table of predictions says beside it what its rows rest on and how
// well arsim predicts that on captured hardware, naming the rows.
func TestTablesSayWhatTheyRestOn(t *testing.T) {
	ev, err := committedEvidence()
	require.NoError(t, err)
	host := ev[algos.HostFlagsIn("packed_128")]
	require.NotZero(t, host.Records, "evidence.json has the host barriers in host_one_shot's layout")

	out, _, err := runCLI(t, "sweep", "--algos", "ring,host_one_shot", "--sizes", "1KiB")
	require.NoError(t, err)
	assert.Contains(t, out, "What these rows rest on")
	assert.Contains(t, out, "  flags in pinned host memory, layout packed_128: "+host.String()+"\n      host_one_shot\n")
	assert.Contains(t, out, "  GPU to GPU over PCIe: "+ev[algos.MechPeerPCIe].String()+"\n      ring\n")
	assert.Contains(t, ev[algos.MechPeerPCIe].Systems, "published nccl-tests", "no capture of the project moves data GPU to GPU over PCIe")

	out, _, err = runCLI(t, "sweep", "--topology", "h200x2", "--algos", "ring,tree", "--sizes", "1MiB")
	require.NoError(t, err)
	assert.Contains(t, out, "  GPU to GPU over NVLink: "+ev[algos.MechPeerNVLink].String()+"\n      every row\n")
	assert.NotContains(t, out, "over PCIe")

	out, _, err = runCLI(t)
	require.NoError(t, err)
	assert.Contains(t, out, "  flags in pinned host memory, layout packed_128: "+host.String())

	// Another layout: its own barriers' figure.
	out, _, err = runCLI(t, "sweep", "--algos", "host_one_shot", "--sizes", "1KiB", "--opts", "flag_apart=4096")
	require.NoError(t, err)
	assert.Contains(t, out, "  flags in pinned host memory, layout packed_4k: "+ev[algos.HostFlagsIn("packed_4k")].String())

	out, _, err = runCLI(t, "verify", "--algos", "ring,host_one_shot", "--tokens", "1,3")
	require.NoError(t, err)
	assert.Contains(t, out, "  flags in pinned host memory, layout packed_128: "+host.String()+"\n      host_one_shot\n")

	out, _, err = runCLI(t, "explain", "host_one_shot", "--bytes", "42KiB")
	require.NoError(t, err)
	assert.Contains(t, out, "What host_one_shot rests on")
	assert.Contains(t, out, "  flags in pinned host memory, layout packed_128: "+host.String()+"\n  SM loads")

	out, _, err = runCLI(t, "design", "--show", "3")
	require.NoError(t, err)
	assert.Contains(t, out, "What these rows rest on")
}

func TestJSONSaysWhatRowsRestOn(t *testing.T) {
	out, _, err := runCLI(t, "sweep", "--algos", "ring,host_one_shot", "--sizes", "1KiB", "--format", "json")
	require.NoError(t, err)
	var doc struct {
		Evidence []struct {
			Mechanism string   `json:"mechanism"`
			Records   int      `json:"records"`
			P95       float64  `json:"p95_abs_error_pct"`
			Algos     []string `json:"algos"`
		} `json:"evidence"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	got := map[string][]string{}
	for _, e := range doc.Evidence {
		got[e.Mechanism] = e.Algos
		if e.Mechanism == string(algos.HostFlagsIn("packed_128")) {
			assert.Positive(t, e.Records)
			assert.Positive(t, e.P95)
		}
	}
	assert.Equal(t, []string{"host_one_shot"}, got[string(algos.HostFlagsIn("packed_128"))])
	assert.Equal(t, []string{"ring"}, got[string(algos.MechPeerPCIe)])

	out, _, err = runCLI(t, "design", "--format", "json", "--budget", "20")
	require.NoError(t, err)
	var des struct {
		Candidates []struct {
			RestsOn []algos.Mechanism `json:"rests_on"`
		} `json:"candidates"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &des))
	require.NotEmpty(t, des.Candidates)
	for _, c := range des.Candidates {
		assert.NotEmpty(t, c.RestsOn)
		for _, m := range c.RestsOn {
			assert.NotEqual(t, algos.MechWhole, m.Family(), "a design was never measured whole: %s", m)
		}
	}

	out, _, err = runCLI(t, "verify", "--algos", "ring,host_one_shot", "--format", "json")
	require.NoError(t, err)
	doc.Evidence = nil
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.NotEmpty(t, doc.Evidence)
}

// validate reports a user's own records by the same mechanisms.
func TestValidateByMechanism(t *testing.T) {
	out, _, err := runCLI(t, "validate", "--traces", "../../testdata/h200x2-arsim/measurements.jsonl")
	require.NoError(t, err)
	assert.Regexp(t, `\n  GPU to GPU over NVLink: [0-9,]+ records in 1 file \(h200x2-vm\): median [0-9.]+ %, p95 [0-9.]+ %`, out)
	assert.Regexp(t, `\n    of which on what built-in schedules rest on .*\n +[0-9]+: median \|error\| [0-9.]+%, p95 [0-9.]+%, [0-9]+ beyond 20%\n`, out)
	js, _, err := runCLI(t, "validate", "--traces", "../../testdata/h200x2-arsim/measurements.jsonl", "--format", "json")
	require.NoError(t, err)
	var doc struct {
		HeldOut struct {
			Predicted validate.ErrorStats `json:"predicted"`
		} `json:"held_out"`
		Schedules struct {
			Count int `json:"count"`
		} `json:"predicted_on_what_schedules_rest_on"`
		ByMechanism []validate.EvidenceRow `json:"by_mechanism"`
		Records     []validate.Compared    `json:"records"`
	}
	require.NoError(t, json.Unmarshal([]byte(js), &doc))
	assert.Positive(t, doc.Schedules.Count)
	assert.LessOrEqual(t, doc.Schedules.Count, doc.HeldOut.Predicted.Count)
	assert.NotEmpty(t, doc.ByMechanism)
	// Each record says which of those rows it counts in: the rows' counts
	// are the records' (device-paced, not fitted on).
	counts := map[algos.Mechanism]int{}
	for _, c := range doc.Records {
		if c.FittedFor != "" || c.HostPaced {
			continue
		}
		for _, m := range c.Mechanisms {
			counts[m]++
		}
	}
	for _, row := range doc.ByMechanism {
		assert.Equal(t, row.Records, counts[row.Mechanism], row.Mechanism)
	}

	// A user's nccl-tests table, with its host's clock: nothing was fitted
	// on it, every record is a prediction.
	out, _, err = runCLI(t, "validate", "--traces", "../../testdata/nccltests/rtx5090x8_2socket_p2p_sys.txt",
		"--topology", "../../testdata/topologies/pcie8_2socket_topo_m.txt", "--opts", "NCCL_P2P_LEVEL=SYS",
		"--params", "../../testdata/nccltests/rtx5090x8_2socket_host.params")
	require.NoError(t, err)
	assert.Contains(t, out, "\n  GPU to GPU over PCIe: 32 records in 1 file")
	assert.Contains(t, out, "\n  allreduces measured whole: nccl over PCIe: 32 records in 1 file")
}

// A layout no capture ran says so and gives every layout's figure.
func TestEvidenceOfALayoutNoCaptureRan(t *testing.T) {
	fam := validate.EvidenceRow{Mechanism: algos.MechHostFlags, Records: 10, Files: 1, Systems: []string{"s"}}
	ev := map[algos.Mechanism]validate.EvidenceRow{algos.MechHostFlags: fam}
	assert.Equal(t, "no measurement arsim has is of this layout; in every layout, "+fam.String(), evidenceLine(ev, algos.HostFlagsIn("packed_96")))
	assert.Equal(t, "no measurement arsim has times it", evidenceLine(ev, algos.MechPeerPCIe))
	assert.Equal(t, fam.String(), evidenceLine(ev, algos.MechHostFlags))
}

// Every mechanism a built-in schedule rests on, on any preset, has
// measurements in evidence.json, but for an algorithm never measured whole
// on its route: a mechanism the validation cannot attribute records to
// would print "no measurement" under every table that uses it.
func TestEveryMechanismOfTheSchedulesHasEvidence(t *testing.T) {
	ev, err := committedEvidence()
	require.NoError(t, err)
	for _, name := range topology.Presets() {
		top, err := topology.Load(name)
		require.NoError(t, err)
		for _, a := range algos.Names() {
			for _, b := range []int64{1 << 10, 43008, 4 << 20} {
				s, err := algos.Plan(a, algos.Request{Top: top, Ranks: top.NumGPUs(), Bytes: b, DType: algos.BF16, Launch: hw.Graph})
				if err != nil {
					continue // the algorithm does not run there
				}
				for _, m := range algos.MechanismsOf(s, top) {
					if m.Family() == algos.MechWhole {
						continue
					}
					assert.Positive(t, ev[m].Records, "%s on %s at %d B: %s", a, name, b, m)
				}
			}
		}
	}
}

func TestWhichRows(t *testing.T) {
	names := []string{"a", "b", "c", "d", "e", "f"}
	assert.Equal(t, "every row", whichRows(names, names))
	assert.Equal(t, "every row but c, f", whichRows(names, []string{"a", "b", "d", "e"}))
	assert.Equal(t, "a, b", whichRows(names, []string{"a", "b"}))
	assert.Equal(t, "a, b, c", whichRows(names, []string{"a", "b", "c"}), "half the rows: named")
}

// The verify command says how well whole verify passes were predicted
// (allreduce_sequence records: 122 allreduces back to back) for the
// algorithms such passes were measured with; a sweep, whose rows are single
// allreduces, does not.
func TestVerifyShowsPassesMeasuredWhole(t *testing.T) {
	out, _, err := runCLI(t, "verify", "--topology", "h200x2", "--algos", "nccl,one_stage")
	require.NoError(t, err)
	assert.Contains(t, out, "\n  verify passes measured whole: nccl over NVLink: ")
	assert.NotContains(t, out, "verify passes measured whole: one_stage")
	out, _, err = runCLI(t, "sweep", "--topology", "h200x2", "--algos", "nccl", "--sizes", "43008")
	require.NoError(t, err)
	assert.Contains(t, out, "allreduces measured whole: nccl over NVLink")
	assert.NotContains(t, out, "verify passes measured whole")
}
