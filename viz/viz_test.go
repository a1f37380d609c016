package viz

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arsim/arsim/scenarios"
	"github.com/arsim/arsim/validate"
)

var slices3 = []scenarios.Slice{
	{Group: "rank 0", Track: "ops", Name: "read: pull", Start: 0, Dur: 2},
	{Group: "rank 0", Track: "ops", Name: "wait: flag", Start: 1, Dur: 2}, // overlaps: a second lane
	{Group: "links", Track: "gpu0→hb0", Name: "50.0 GB/s", Start: 0.5, Dur: 1},
	{Group: "rank 1", Track: "ops", Name: "write", Start: 3, Dur: 1},
}

// Overlapping slices of one track go to lanes of their own, so that no two
// slices of one Perfetto thread overlap.
func TestWritePerfettoLanes(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WritePerfetto(&buf, slices3))
	var doc struct {
		TraceEvents []struct {
			Name string         `json:"name"`
			Ph   string         `json:"ph"`
			Pid  int            `json:"pid"`
			Tid  int            `json:"tid"`
			Args map[string]any `json:"args"`
		} `json:"traceEvents"`
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &doc))
	threads := map[string]bool{}
	spans := 0
	for _, e := range doc.TraceEvents {
		if e.Ph == "M" && e.Name == "thread_name" {
			threads[e.Args["name"].(string)] = true
		}
		if e.Ph == "X" {
			spans++
		}
	}
	assert.Equal(t, 4, spans)
	assert.Equal(t, map[string]bool{"ops": true, "ops #2": true, "gpu0→hb0": true}, threads)
	assert.ErrorContains(t, WritePerfetto(&buf, []scenarios.Slice{{Start: -1}}), "viz: timeline slice")
}

// Rows: groups in order of first appearance, links last, a track's lanes
// together.
func TestLayoutTimelineRows(t *testing.T) {
	g := layoutTimeline(slices3)
	assert.Equal(t, []string{"rank 0 / ops", "rank 0 / ops #2", "rank 1 / ops", "links / gpu0→hb0"}, g.rows)
	assert.Equal(t, 4.0, g.maxT)
	require.Len(t, g.boxes, 4)
	assert.Equal(t, linkColor, g.boxes[1].color) // the link slice starts second
}

func TestDrawPictures(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"t.svg", "t.png"} {
		require.NoError(t, DrawTimeline(filepath.Join(dir, name), "test", slices3))
		st, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.Positive(t, st.Size())
	}
	assert.ErrorContains(t, DrawTimeline(filepath.Join(dir, "e.svg"), "empty", nil), "no slices")
	rows := []scenarios.SweepRow{{Algo: "a", Bytes: 1024, Us: 3}, {Algo: "a", Bytes: 2048, Us: 4}, {Algo: "b", Bytes: 1024, Us: 5}}
	require.NoError(t, DrawSweep(filepath.Join(dir, "s.svg"), "test", []string{"a", "b"}, rows))
	assert.ErrorContains(t, DrawValidation(filepath.Join(dir, "v.svg"), &validate.Validation{}), "no record was simulated")
}

// Sizes read as B, KiB and MiB; a wide range labels every second or
// fourth power of two, never more than about ten.
func TestSizeTicks(t *testing.T) {
	ts := sizeTicks{}.Ticks(1024, 256<<20)
	var labels []string
	for _, tk := range ts {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	assert.Equal(t, []string{"1 KiB", "4 KiB", "16 KiB", "64 KiB", "256 KiB", "1 MiB", "4 MiB", "16 MiB", "64 MiB", "256 MiB"}, labels)
	assert.Len(t, ts, 19)
	assert.Nil(t, sizeTicks{}.Ticks(0, 1))
}

// Every algorithm of a sweep gets a style of its own (up to 30).
func TestSeriesStylesAreDistinct(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 30; i++ {
		c, d, g := seriesStyle(i)
		k := fmt.Sprint(c, d, g)
		assert.False(t, seen[k], "style %d repeats", i)
		seen[k] = true
	}
}

// By default a rank's waits are one row, the union of their intervals;
// --ranks-shown keeps those ranks and their GPUs' links; block loops'
// rate caps are never drawn.
func TestSelectTimeline(t *testing.T) {
	in := []scenarios.Slice{
		{Group: "rank 0", Track: "ops", Name: "wait: a", Start: 0, Dur: 2},
		{Group: "rank 0", Track: "ops", Name: "wait: b", Start: 1, Dur: 2},
		{Group: "rank 0", Track: "ops", Name: "wait: c", Start: 5, Dur: 1},
		{Group: "rank 0", Track: "ops", Name: "read: x", Start: 0, Dur: 1},
		{Group: "rank 1", Track: "ops", Name: "read: x", Start: 0, Dur: 1},
		{Group: "links", Track: "gpu0→hb0", Start: 0, Dur: 1},
		{Group: "links", Track: "gpu10→hb10", Start: 0, Dur: 1},
		{Group: "links", Track: "gpu1→hb1", Start: 0, Dur: 1},
		{Group: "links", Track: "cpu0-mem0", Start: 0, Dur: 1},
		{Group: "links", Track: "loop:0:ring@1", Start: 0, Dur: 1},
	}
	out := selectTimeline(in, TimelineOptions{Ranks: []int{0}})
	var waits []scenarios.Slice
	tracks := map[string]bool{}
	for _, s := range out {
		tracks[s.Group+"/"+s.Track] = true
		if s.Track == "waits" {
			waits = append(waits, s)
		}
	}
	require.Len(t, waits, 2)
	assert.Equal(t, 0.0, waits[0].Start)
	assert.Equal(t, 3.0, waits[0].Dur)
	assert.Equal(t, map[string]bool{"rank 0/waits": true, "rank 0/ops": true, "links/gpu0→hb0": true, "links/cpu0-mem0": true}, tracks)
	each := selectTimeline(in, TimelineOptions{EachWait: true})
	assert.Len(t, each, len(in)-1)
	g := layoutTimeline(out)
	var kinds []string
	for _, k := range g.kinds {
		kinds = append(kinds, k.name)
	}
	assert.Equal(t, []string{"read", "wait", "link busy"}, kinds)
}

// A signal's flow arrow ends on the wait it releases.
func TestWritePerfettoFlows(t *testing.T) {
	sl := []scenarios.Slice{
		{Group: "rank 0", Track: "ops", Name: "signal: s", Start: 0, Dur: 1, FlowOut: []int{7}},
		{Group: "rank 1", Track: "ops", Name: "wait: s", Start: 0, Dur: 3, FlowIn: []int{7}},
	}
	var buf bytes.Buffer
	require.NoError(t, WritePerfetto(&buf, sl))
	var doc struct {
		TraceEvents []struct {
			Ph  string  `json:"ph"`
			ID  int     `json:"id"`
			Ts  float64 `json:"ts"`
			Pid int     `json:"pid"`
			Bp  string  `json:"bp"`
		} `json:"traceEvents"`
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &doc))
	var s, f int
	for _, e := range doc.TraceEvents {
		switch e.Ph {
		case "s":
			s++
			assert.Equal(t, 7, e.ID)
			assert.Equal(t, 0.5, e.Ts)
		case "f":
			f++
			assert.Equal(t, "e", e.Bp)
			assert.Equal(t, 1.5, e.Ts)
		}
	}
	assert.Equal(t, 1, s)
	assert.Equal(t, 1, f)
}

func TestDrawSweepBusBW(t *testing.T) {
	dir := t.TempDir()
	rows := []scenarios.SweepRow{{Algo: "a", Bytes: 1024, Us: 3, BusGBps: 1}, {Algo: "a", Bytes: 2048, Us: 4, BusGBps: 2}, {Algo: "b", Bytes: 1024, Us: 5, BusGBps: 0.5}}
	for _, name := range []string{"b.svg", "b.png"} {
		require.NoError(t, DrawSweepBusBW(filepath.Join(dir, name), "test", []string{"a", "b"}, rows))
	}
	assert.Error(t, DrawSweep(filepath.Join(dir, "x.gif"), "test", []string{"a"}, rows))
}
