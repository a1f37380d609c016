package viz

import (
	"fmt"
	"image/color"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/arsim/arsim/scenarios"
)

// DrawTimeline draws slices as a Gantt chart (one row per track, time in
// µs across) to an .svg or .png file: the picture of a timeline without a
// trace viewer. Overlapping slices on one track are drawn on extra rows,
// as WritePerfetto lays them out. Rows appear in order of first slice, the
// links last.
func DrawTimeline(path, title string, slices []scenarios.Slice) error {
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
	height := vg.Length(40+14*len(g.rows)) * vg.Millimeter / 3
	return p.Save(10*vg.Inch, max(height, 3*vg.Inch), path)
}

// gantt is a timeline laid out in rows, top row first.
type gantt struct {
	rows  []string // "group / track", "group / track #2" for a lane
	boxes []box
	maxT  float64 // µs
}

// box is one slice in its row.
type box struct {
	row        int
	start, end float64
	color      color.Color
}

// opColors colour the slices of ranks by the kind of operation (the name
// before its ':'); link slices are orange, anything else grey.
var (
	opColors = map[string]color.RGBA{
		"launch": {150, 150, 150, 255}, "compute": {120, 120, 200, 255}, "read": {70, 130, 180, 255},
		"write": {60, 170, 110, 255}, "copy": {200, 160, 60, 255}, "reduce": {160, 90, 160, 255},
		"signal": {220, 80, 60, 255}, "wait": {240, 200, 200, 255}, "fence": {140, 90, 40, 255},
	}
	linkColor  = color.RGBA{230, 140, 40, 255}
	otherColor = color.RGBA{90, 90, 90, 255}
)

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
		if s.Group == "links" {
			c = linkColor
		} else if k, _, _ := strings.Cut(s.Name, ":"); opColors[k] != (color.RGBA{}) {
			c = opColors[k]
		}
		g.boxes = append(g.boxes, box{row: r, start: s.Start, end: s.Start + s.Dur, color: c})
		g.maxT = max(g.maxT, s.Start+s.Dur)
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
