package trace

import (
	"fmt"
	"image/color"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// RenderTimeline draws slices as a Gantt chart (one row per track, time in
// µs across) to an .svg or .png file: the picture of a timeline without a
// trace viewer. Overlapping slices on one track are drawn on extra rows,
// as WritePerfetto lays them out. Rows appear in order of first slice.
func RenderTimeline(path, title string, slices []Slice) error {
	type row struct {
		name string
		ends []float64
	}
	order := make([]int, len(slices))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return slices[order[a]].Start < slices[order[b]].Start })
	type rowKey struct {
		group, track string
		lane         int
	}
	rowOf := map[rowKey]int{}
	var keys []rowKey
	lanes := laneSet{}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "time (µs)"
	var maxT float64
	type box struct {
		r    int
		a, b float64
		link bool
		name string
	}
	var boxes []box
	for _, i := range order {
		s := slices[i]
		lane := lanes.place(s)
		rk := rowKey{s.Group, s.Track, lane}
		r, ok := rowOf[rk]
		if !ok {
			r = len(keys)
			rowOf[rk] = r
			keys = append(keys, rk)
		}
		boxes = append(boxes, box{r, s.Start, s.Start + s.Dur, s.Group == "links", s.Name})
		maxT = max(maxT, s.Start+s.Dur)
	}
	if len(keys) == 0 {
		return fmt.Errorf("trace: timeline %s has no slices to draw", path)
	}
	// Rows: groups in order of first appearance ("links" last), each
	// group's tracks and lanes together.
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
	rows := make([]string, len(keys))
	for p, i := range perm {
		pos[i] = p
		k := keys[i]
		rows[p] = k.group + " / " + k.track
		if k.lane > 0 {
			rows[p] = fmt.Sprintf("%s #%d", rows[p], k.lane+1)
		}
	}
	colors := map[string]color.RGBA{
		"launch": {150, 150, 150, 255}, "compute": {120, 120, 200, 255}, "read": {70, 130, 180, 255},
		"write": {60, 170, 110, 255}, "copy": {200, 160, 60, 255}, "reduce": {160, 90, 160, 255},
		"signal": {220, 80, 60, 255}, "wait": {240, 200, 200, 255}, "fence": {140, 90, 40, 255},
	}
	n := float64(len(rows))
	for _, b := range boxes {
		y := n - 1 - float64(pos[b.r])
		c := color.RGBA{90, 90, 90, 255}
		if b.link {
			c = color.RGBA{230, 140, 40, 255}
		} else if k, _, _ := strings.Cut(b.name, ":"); colors[k] != (color.RGBA{}) {
			c = colors[k]
		}
		w := max(b.b-b.a, maxT/2000)
		poly, err := plotter.NewPolygon(plotter.XYs{{X: b.a, Y: y - 0.4}, {X: b.a + w, Y: y - 0.4}, {X: b.a + w, Y: y + 0.4}, {X: b.a, Y: y + 0.4}})
		if err != nil {
			return err
		}
		poly.Color = c
		poly.LineStyle.Width = 0
		p.Add(poly)
	}
	ticks := make([]plot.Tick, len(rows))
	for i, name := range rows {
		ticks[i] = plot.Tick{Value: n - 1 - float64(i), Label: name}
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min, p.Y.Max = -0.6, n-0.4
	p.X.Min, p.X.Max = 0, maxT*1.01
	height := vg.Length(40+14*len(rows)) * vg.Millimeter / 3
	return p.Save(10*vg.Inch, max(height, 3*vg.Inch), path)
}
