package viz

import (
	"bytes"
	"encoding/json"
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
