package validate

import (
	"fmt"
	"maps"
	"math"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/arsim/arsim/algos"
	"github.com/arsim/arsim/hw"
	"github.com/arsim/arsim/topology"
	"github.com/arsim/arsim/trace"
)

// Evidence: how well arsim predicts each mechanism a schedule rests on
// (algos.Mechanism), from the records that time it and that no parameter
// was fitted on (the predicted side of the fits, and every record of a
// file no fit or parameter source names), device-paced. EvidenceOf sums a
// validation up so; the command line keeps the figures for the project's
// captures and the published tables it reads, and prints them beside its
// rows.

// EvidenceRow is arsim's error on the predicted records that time one
// mechanism.
type EvidenceRow struct {
	Mechanism algos.Mechanism `json:"mechanism"`
	// Records is how many records time it; 0: none.
	Records int `json:"records"`
	// Files is how many files those records come from.
	Files             int     `json:"files"`
	MedianAbsErrorPct float64 `json:"median_abs_error_pct"`
	P95AbsErrorPct    float64 `json:"p95_abs_error_pct"`
	// Beyond is how many of the records lie beyond BeyondPct.
	Beyond int `json:"beyond_20pct"`
	// Systems are where the records were measured: their capture systems
	// (trace.Record System), "published nccl-tests" for a table's rows.
	Systems []string `json:"systems,omitempty"`
	// UsedBySchedules: some built-in schedule, on some preset and in some
	// configuration, rests on the mechanism (set where that is known: the
	// command line's committed evidence).
	UsedBySchedules bool `json:"used_by_schedules,omitempty"`
}

// PredictedOn is the error of the predicted side of the fits
// (HeldOut.Predicted's records) that time a mechanism use accepts, and
// how many of them lie beyond BeyondPct.
func (v *Validation) PredictedOn(use func(algos.Mechanism) bool) (ErrorStats, int) {
	var abs []float64
	for _, c := range v.Records {
		if c.Dimensions == nil || c.HostPaced || c.FittedFor != "" || !slices.ContainsFunc(c.Mechanisms, use) {
			continue
		}
		abs = append(abs, math.Abs(c.ErrorPct))
	}
	return statsOf(abs), beyond(abs, BeyondPct)
}

// String says the row in one line: "2,484 records in 31 files (h200x1-vm):
// median 6.1 %, p95 34.2 %, 277 beyond 20 %", or that nothing times it.
func (e EvidenceRow) String() string {
	if e.Records == 0 {
		return "no record times it"
	}
	files := "files"
	if e.Files == 1 {
		files = "file"
	}
	systems := ""
	if len(e.Systems) > 0 {
		systems = " (" + strings.Join(e.Systems, ", ") + ")"
	}
	return fmt.Sprintf("%s records in %d %s%s: median %.1f %%, p95 %.1f %%, %d beyond %.0f %%",
		thousands(e.Records), e.Files, files, systems, e.MedianAbsErrorPct, e.P95AbsErrorPct, e.Beyond, BeyondPct)
}

func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// mechanismsOf names the mechanisms a record times: where its flags,
// polls and lines live, which way its SMs move data to or from pinned host
// memory, and, for the records of two GPUs, the link between them, peer
// (peerOf the machine it is simulated on). Copy engines, launches and host
// costs are none of them.
func mechanismsOf(r trace.Record, peer algos.Mechanism) []algos.Mechanism {
	var m []algos.Mechanism
	add := func(x ...algos.Mechanism) {
		for _, y := range x {
			if y != "" { // no link on a machine of one GPU
				m = append(m, y)
			}
		}
	}
	flags := func(host bool) {
		if host {
			add(algos.MechHostFlags)
		} else {
			add(algos.MechGPUFlags)
		}
	}
	switch r.Kind {
	case trace.KindPoll:
		if strings.HasPrefix(r.Request, "atomic") {
			add(algos.MechFlagAtomics)
		} else {
			flags(r.Target == "host")
		}
	case trace.KindBlockPingpong:
		flags(r.Target == "host")
	case trace.KindPointerChase:
		switch {
		case r.WriteBlocks > 0 && r.WriteTarget != "local":
			add(algos.MechLoadsBesideStores)
		case r.Target == "host":
			add(algos.MechHostLoads)
		}
	case trace.KindSMAccess:
		if r.Target == "host" {
			if r.Op == "write" {
				add(algos.MechHostStores)
			} else {
				add(algos.MechHostLoads)
			}
		}
	case trace.KindHostLinkConcurrency:
		switch r.What {
		case "sm_read_beside_write", "sm_bidir":
			add(algos.MechLoadsBesideStores)
		case "sm_read":
			add(algos.MechHostLoads)
		case "sm_write":
			add(algos.MechHostStores)
		}
	case trace.KindFlagPingpong:
		flags(r.Via == "host")
		if r.Via == "peer" {
			add(peer)
		}
	case trace.KindBarrier:
		add(algos.MechGPUFlags)
		if r.Barrier == "cas" {
			add(algos.MechFlagAtomics)
		}
		add(peer)
	case trace.KindNCCLKernel: // an allreduce's are its schedule's (routeMechanisms)
		if r.Transport != trace.TransportSHM {
			add(peer)
		}
	case trace.KindLoop:
		m = loopMechanisms(r, peer)
	}
	return m
}

// loopMechanisms: a per-block loop's mechanisms by what it polls, loads
// and stores.
func loopMechanisms(r trace.Record, peer algos.Mechanism) []algos.Mechanism {
	var m []algos.Mechanism
	loads := strings.Contains(r.Src, "host") || r.Recv == "host"
	stores := r.Dst == "host"
	switch {
	case r.Loop == "group_barrier":
		switch {
		case r.Target != "host":
			return []algos.Mechanism{algos.MechGPUFlags}
		case hw.IsFlagLayout(r.Layout):
			return []algos.Mechanism{algos.MechHostFlags, algos.HostFlagsIn(r.Layout)}
		}
		return []algos.Mechanism{algos.MechHostFlags}
	case r.Loop == "host_shot":
		// The capture's two-rank one-shot through host memory: its
		// phases stage (stores), barrier (flags in vLLM's layout) and pull
		// (loads), the ones the record times.
		if r.Phases&2 != 0 {
			m = append(m, algos.MechHostFlags, algos.HostFlagsIn("vllm"))
		}
		if r.Phases&4 != 0 {
			m = append(m, algos.MechHostLoads)
		}
		if r.Phases&1 != 0 {
			m = append(m, algos.MechHostStores)
		}
		return m
	case strings.HasPrefix(r.Loop, "ll"):
		switch r.Recv {
		case "host":
			m = append(m, algos.MechHostLines)
		case "local":
			m = append(m, algos.MechGPULines)
		}
		loads = strings.Contains(r.Src, "host")
	}
	if loads {
		m = append(m, algos.MechHostLoads)
	}
	if stores {
		m = append(m, algos.MechHostStores)
	}
	if (loads || r.Recv == "host") && stores {
		beside := algos.MechLoadsBesideStores // a plain loop's stores
		if r.Loop != "copy" && r.Loop != "pull" {
			beside = algos.MechLoopsBesideStores // the protocol loops' (ll, ll128, simple)
		}
		m = append(m, beside)
	}
	if r.Dst == "peer" && peer != "" {
		m = append(m, peer)
	}
	return m
}

// cited reports whether file is a capture the model's parameters may come
// from: named (by its last two path elements) in a fit's files (Fits) or
// in the source of a parameter, the presets' defaults' or params', where a
// source's testdata/DIR/NAME may be a pattern (host_costs_[a-e].jsonl). A
// file of no name counts as cited. Every record of a file no one cites is
// a prediction.
func cited(file string, params map[string]*topology.Params) bool {
	if file == "" {
		return true
	}
	key := captureKey(file)
	for _, f := range Fits {
		if slices.Contains(f.Files, key) || slices.Contains(f.AlsoPredicts, key) {
			return true
		}
	}
	names := func(src string) bool {
		if strings.Contains(src, key) {
			return true
		}
		for _, m := range citedFile().FindAllStringSubmatch(src, -1) {
			if ok, _ := path.Match(m[1], key); ok {
				return true
			}
		}
		return false
	}
	if slices.ContainsFunc(presetSources(), names) {
		return true
	}
	for _, ps := range params {
		for _, p := range ps.All() {
			if names(p.Source) {
				return true
			}
		}
	}
	return false
}

// citedFile finds testdata/DIR/NAME in a parameter's source, NAME perhaps a
// pattern.
var citedFile = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`testdata/([A-Za-z0-9_.-]+/[A-Za-z0-9_.*?\[\]-]+)`)
})

// presetSources are every preset's default parameters' sources.
var presetSources = sync.OnceValue(func() []string {
	var out []string
	for _, name := range topology.Presets() {
		if pr, err := topology.Lookup(name); err == nil {
			for _, p := range pr.DefaultParams().All() {
				out = append(out, p.Source)
			}
		}
	}
	return out
})

// peerOf is the link between the first two GPUs of top: NVLink or PCIe;
// "" for a machine of one GPU (it has none).
func peerOf(top *topology.Topology) algos.Mechanism {
	if top == nil || top.NumGPUs() < 2 {
		return ""
	}
	if c, err := top.PathClass(top.GPUs()[0], top.GPUs()[1]); err == nil && c.Kind == topology.PathNV {
		return algos.MechPeerNVLink
	}
	return algos.MechPeerPCIe
}

// EvidenceOf sums up the predicted, device-paced records of v (the
// predicted side of the fits, and every record of a file no one cites) by
// mechanism, one row per algos.Mechanisms entry (Records 0 where none)
// and one per variant the records time: a flag layout of the barriers in
// host memory (algos.HostFlagsIn), an algorithm measured whole over a
// route (algos.Whole).
func EvidenceOf(v *Validation) []EvidenceRow { return evidenceOf(v.Records) }

func evidenceOf(recs []Compared) []EvidenceRow {
	type acc struct {
		abs     []float64
		files   map[string]bool
		systems map[string]bool
	}
	by := map[algos.Mechanism]*acc{}
	for _, c := range recs {
		if c.FittedFor != "" || c.HostPaced {
			continue
		}
		for _, m := range c.Mechanisms {
			a := by[m]
			if a == nil {
				a = &acc{files: map[string]bool{}, systems: map[string]bool{}}
				by[m] = a
			}
			a.abs = append(a.abs, math.Abs(c.ErrorPct))
			a.files[c.File] = true
			if c.source != "" {
				a.systems[c.source] = true
			}
		}
	}
	seen := slices.Collect(maps.Keys(by))
	var rows []EvidenceRow
	for _, m := range algos.UnionMechanisms(algos.Mechanisms, seen) {
		row := EvidenceRow{Mechanism: m}
		if a := by[m]; a != nil {
			s := statsOf(a.abs)
			row.Records, row.Files = s.Count, len(a.files)
			row.MedianAbsErrorPct, row.P95AbsErrorPct = round1(s.MedianAbsPct), round1(s.P95AbsPct)
			row.Beyond = beyond(a.abs, BeyondPct)
			row.Systems = slices.Sorted(maps.Keys(a.systems))
		}
		rows = append(rows, row)
	}
	return rows
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }
