package viz

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/arsim/arsim/scenarios"
)

type chromeEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  *float64       `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	ID   int            `json:"id,omitempty"`
	Bp   string         `json:"bp,omitempty"`
	Args map[string]any `json:"args,omitempty"`
}

// WritePerfetto writes slices as a Chrome / Perfetto trace (JSON object
// with "traceEvents"), which ui.perfetto.dev and chrome://tracing open.
// Groups become processes and tracks threads, numbered in order of first
// appearance. Slices that overlap on one track are spread over extra lanes
// ("ops #2", …) so that no two slices on one thread overlap. Each signal
// gets a flow arrow (category "flag") to every wait it releases.
func WritePerfetto(w io.Writer, slices []scenarios.Slice) error {
	type key struct{ g, t string }
	order := make([]int, len(slices))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return slices[order[a]].Start < slices[order[b]].Start })
	pids := map[string]int{}
	tids := map[key]int{}
	lanes := laneSet{}
	var meta, events []chromeEvent
	pidOf := func(g string) int {
		if p, ok := pids[g]; ok {
			return p
		}
		p := len(pids) + 1
		pids[g] = p
		meta = append(meta, chromeEvent{Name: "process_name", Ph: "M", Pid: p, Args: map[string]any{"name": g}},
			chromeEvent{Name: "process_sort_index", Ph: "M", Pid: p, Args: map[string]any{"sort_index": p}})
		return p
	}
	tidOf := func(g, t string, pid int) int {
		k := key{g, t}
		if id, ok := tids[k]; ok {
			return id
		}
		id := len(tids) + 1
		tids[k] = id
		meta = append(meta, chromeEvent{Name: "thread_name", Ph: "M", Pid: pid, Tid: id, Args: map[string]any{"name": t}},
			chromeEvent{Name: "thread_sort_index", Ph: "M", Pid: pid, Tid: id, Args: map[string]any{"sort_index": id}})
		return id
	}
	for _, i := range order {
		s := slices[i]
		if s.Dur < 0 || s.Start < 0 {
			return fmt.Errorf("viz: timeline slice %q on %s/%s: negative time (start %v, dur %v)", s.Name, s.Group, s.Track, s.Start, s.Dur)
		}
		pid := pidOf(s.Group)
		lane := lanes.place(s)
		track := s.Track
		if lane > 0 {
			track = fmt.Sprintf("%s #%d", s.Track, lane+1)
		}
		d := s.Dur
		tid := tidOf(s.Group, track, pid)
		events = append(events, chromeEvent{Name: s.Name, Ph: "X", Ts: s.Start, Dur: &d, Pid: pid, Tid: tid, Args: s.Args})
		// Flow arrows from a signal to the wait it releases, bound to the
		// slices that enclose them (their middle).
		mid := s.Start + s.Dur/2
		for _, id := range s.FlowOut {
			events = append(events, chromeEvent{Name: "flag", Cat: "flag", Ph: "s", Ts: mid, Pid: pid, Tid: tid, ID: id})
		}
		for _, id := range s.FlowIn {
			events = append(events, chromeEvent{Name: "flag", Cat: "flag", Ph: "f", Bp: "e", Ts: mid, Pid: pid, Tid: tid, ID: id})
		}
	}
	doc := struct {
		TraceEvents     []chromeEvent `json:"traceEvents"`
		DisplayTimeUnit string        `json:"displayTimeUnit"`
	}{append(meta, events...), "ns"}
	enc := json.NewEncoder(w)
	return enc.Encode(doc)
}

// laneSet spreads overlapping slices of a track over lanes: each slice goes
// to the first lane of its track that is free at its start. Slices must
// arrive in order of start time.
type laneSet map[[2]string][]float64

func (ls laneSet) place(s scenarios.Slice) int {
	k := [2]string{s.Group, s.Track}
	for l, end := range ls[k] {
		if end <= s.Start {
			ls[k][l] = s.Start + s.Dur
			return l
		}
	}
	ls[k] = append(ls[k], s.Start+s.Dur)
	return len(ls[k]) - 1
}
