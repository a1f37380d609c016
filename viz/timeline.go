package viz

import (
	"fmt"
	"image/color"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/arsim/arsim/scenarios"
)

// TimelineOptions choose what a timeline picture shows.
type TimelineOptions struct {
	// EachWait draws every wait on a lane of its own; by default the waits
	// of a rank are merged into one row ("waits": when the rank was
	// waiting for any flag), so concurrent waits make no staircase.
	EachWait bool
	// Ranks are the ranks drawn, and the links of their GPUs; nil: all.
	// Block loops' rate caps (hw.LoopRate) are never drawn: they are not
	// links (the Perfetto trace has them).
	Ranks []int
}

// DrawTimeline draws slices as a Gantt chart with the default options
// (waits merged per rank, every rank); see DrawTimelineWith.
func DrawTimeline(path, title string, slices []scenarios.Slice) error {
	return DrawTimelineWith(path, title, slices, TimelineOptions{})
}

// DrawTimelineWith draws slices as a Gantt chart (one row per track, time
// in µs across) to an .svg or .png file, with a legend of the operation
// colours beside it: the picture of a timeline without a trace viewer.
// Overlapping slices on one track go to extra rows, as WritePerfetto lays
// them out. Rows appear in order of first slice, the links last.
func DrawTimelineWith(path, title string, slices []scenarios.Slice, o TimelineOptions) error {
	slices = selectTimeline(slices, o)
	g := layoutTimeline(slices)
	if len(g.rows) == 0 {
		return fmt.Errorf("viz: timeline %s has no slices to draw", path)
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "time (µs)"
	n := float64(len(g.rows))
	for _, b := range g.boxes {
		y := n - 1 - float64(b.row)
		w := max(b.end-b.start, g.maxT/2000)
		poly, err := plotter.NewPolygon(plotter.XYs{{X: b.start, Y: y - 0.4}, {X: b.start + w, Y: y - 0.4}, {X: b.start + w, Y: y + 0.4}, {X: b.start, Y: y + 0.4}})
		if err != nil {
			return err
		}
		poly.Color = b.color
		poly.LineStyle.Width = 0
		p.Add(poly)
	}
	ticks := make([]plot.Tick, len(g.rows))
	for i, name := range g.rows {
		ticks[i] = plot.Tick{Value: n - 1 - float64(i), Label: name}
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min, p.Y.Max = -0.6, n-0.4
	p.X.Min, p.X.Max = 0, g.maxT*1.01
	l := plot.NewLegend()
	l.Top, l.Left = true, true
	l.TextStyle.Font.Size = vg.Points(10)
	for _, k := range g.kinds {
		l.Add(k.name, swatch{k.color})
	}
	height := max(vg.Length(40+14*len(g.rows))*vg.Millimeter/3, 3*vg.Inch)
	sp := &sweepPlot{p: p, legend: l}
	return sp.save(path, 9*vg.Inch, height)
}

// swatch is a legend thumbnail: a filled box of one colour.
type swatch struct{ c color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	c.FillPolygon(s.c, []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}})
}

// selectTimeline keeps the ranks asked for (and the links of their GPUs)
// and merges each rank's waits into one "waits" track unless EachWait.
func selectTimeline(in []scenarios.Slice, o TimelineOptions) []scenarios.Slice {
	keepRank := func(group string) bool {
		if o.Ranks == nil {
			return true
		}
		r, err := strconv.Atoi(strings.TrimPrefix(group, "rank "))
		return err == nil && slices.Contains(o.Ranks, r)
	}
	keepLink := func(track string) bool {
		if o.Ranks == nil || !strings.Contains(track, "gpu") {
			return true
		}
		for _, r := range o.Ranks {
			if linkTouches(track, "gpu"+strconv.Itoa(r)) {
				return true
			}
		}
		return false
	}
	var out []scenarios.Slice
	waits := map[string][]scenarios.Slice{}
	var order []string
	for _, s := range in {
		switch {
		case s.Group == "links":
			if isLoopResource(s.Track) {
				continue // a block loop's rate cap, not a link
			}
			if keepLink(s.Track) {
				out = append(out, s)
			}
		case !keepRank(s.Group):
		case !o.EachWait && opKind(s.Name) == "wait":
			if _, ok := waits[s.Group]; !ok {
				order = append(order, s.Group)
			}
			waits[s.Group] = append(waits[s.Group], s)
		default:
			out = append(out, s)
		}
	}
	for _, grp := range order {
		out = append(out, mergeWaits(grp, waits[grp])...)
	}
	return out
}

// isLoopResource says whether a resource is a thread block loop's rate
// cap (hw.LoopRate: "loop:…"), which the picture leaves out.
func isLoopResource(track string) bool { return strings.HasPrefix(track, "loop:") }

// linkTouches says whether a link track ("gpu1→hb1", "hb0→gpu10") has
// an end called gpu (not gpu1 for gpu10).
func linkTouches(track, gpu string) bool {
	for _, end := range strings.FieldsFunc(track, func(r rune) bool { return r == '→' || r == '-' || r == ' ' }) {
		if end == gpu {
			return true
		}
	}
	return false
}

// mergeWaits joins a rank's wait slices into the union of their
// intervals, on the track "waits".
func mergeWaits(group string, ws []scenarios.Slice) []scenarios.Slice {
	sort.SliceStable(ws, func(a, b int) bool { return ws[a].Start < ws[b].Start })
	var out []scenarios.Slice
	for _, w := range ws {
		end := w.Start + w.Dur
		if k := len(out) - 1; k >= 0 && w.Start <= out[k].Start+out[k].Dur {
			out[k].Dur = max(out[k].Dur, end-out[k].Start)
			continue
		}
		out = append(out, scenarios.Slice{Group: group, Track: "waits", Name: "wait: any flag", Start: w.Start, Dur: w.Dur})
	}
	return out
}

// gantt is a timeline laid out in rows, top row first.
type gantt struct {
	rows  []string // "group / track", "group / track #2" for a lane
	boxes []box
	maxT  float64 // µs
	// kinds are the colours used, for the legend, in legend order.
	kinds []kindColor
}

// box is one slice in its row.
type box struct {
	row        int
	start, end float64
	color      color.Color
}

type kindColor struct {
	name  string
	color color.Color
}

// opColors colour the slices of ranks by the kind of operation (the name
// before its ':'); link slices are orange, anything else grey. opOrder is
// the legend's order.
var (
	opColors = map[string]color.RGBA{
		"launch": {150, 150, 150, 255}, "compute": {120, 120, 200, 255}, "read": {70, 130, 180, 255},
		"write": {60, 170, 110, 255}, "copy": {200, 160, 60, 255}, "reduce": {160, 90, 160, 255},
		"signal": {220, 80, 60, 255}, "wait": {240, 170, 180, 255}, "fence": {140, 90, 40, 255},
	}
	opOrder    = []string{"launch", "compute", "read", "write", "copy", "reduce", "signal", "wait", "fence"}
	linkColor  = color.RGBA{230, 140, 40, 255}
	otherColor = color.RGBA{90, 90, 90, 255}
)

// opKind is the kind of operation a slice's name starts with.
func opKind(name string) string {
	k, _, _ := strings.Cut(name, ":")
	return strings.TrimSpace(k)
}

// layoutTimeline puts each slice on a row: its group's, its track's and
// the first lane of the track that is free at its start. Rows are ordered
// by group (in order of first appearance, "links" last), then track name,
// then lane.
func layoutTimeline(slices []scenarios.Slice) gantt {
	type rowKey struct {
		group, track string
		lane         int
	}
	order := make([]int, len(slices))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return slices[order[a]].Start < slices[order[b]].Start })
	rowOf := map[rowKey]int{}
	var keys []rowKey
	lanes := laneSet{}
	var g gantt
	used := map[string]bool{}
	for _, i := range order {
		s := slices[i]
		rk := rowKey{s.Group, s.Track, lanes.place(s)}
		r, ok := rowOf[rk]
		if !ok {
			r = len(keys)
			rowOf[rk] = r
			keys = append(keys, rk)
		}
		c := color.Color(otherColor)
		kind := "other"
		if s.Group == "links" {
			c, kind = linkColor, "link busy"
		} else if k := opKind(s.Name); opColors[k] != (color.RGBA{}) {
			c, kind = opColors[k], k
		}
		used[kind] = true
		g.boxes = append(g.boxes, box{row: r, start: s.Start, end: s.Start + s.Dur, color: c})
		g.maxT = max(g.maxT, s.Start+s.Dur)
	}
	for _, k := range opOrder {
		if used[k] {
			g.kinds = append(g.kinds, kindColor{k, opColors[k]})
		}
	}
	if used["other"] {
		g.kinds = append(g.kinds, kindColor{"other", otherColor})
	}
	if used["link busy"] {
		g.kinds = append(g.kinds, kindColor{"link busy", linkColor})
	}
	firstGroup := map[string]int{}
	for i, k := range keys {
		if _, ok := firstGroup[k.group]; !ok {
			firstGroup[k.group] = i
		}
	}
	perm := make([]int, len(keys))
	for i := range perm {
		perm[i] = i
	}
	sort.SliceStable(perm, func(a, b int) bool {
		x, y := keys[perm[a]], keys[perm[b]]
		if (x.group == "links") != (y.group == "links") {
			return y.group == "links"
		}
		if x.group != y.group {
			return firstGroup[x.group] < firstGroup[y.group]
		}
		if x.track != y.track {
			return x.track < y.track
		}
		return x.lane < y.lane
	})
	pos := make([]int, len(keys))
	g.rows = make([]string, len(keys))
	for p, i := range perm {
		pos[i] = p
		k := keys[i]
		g.rows[p] = k.group + " / " + k.track
		if k.lane > 0 {
			g.rows[p] = fmt.Sprintf("%s #%d", g.rows[p], k.lane+1)
		}
	}
	for i := range g.boxes {
		g.boxes[i].row = pos[g.boxes[i].row]
	}
	return g
}
