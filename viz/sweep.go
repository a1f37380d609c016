package viz

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/arsim/arsim/scenarios"
	"github.com/arsim/arsim/sim"
)

// seriesPalette has ten colours that stay apart on screen and in print
// (Tableau 10); with seriesDashes and seriesGlyphs every algorithm of a
// sweep gets a style of its own: colour i mod 10, dash pattern and point
// marker i div 10 (30 before a style repeats).
var seriesPalette = kindPalette

var seriesDashes = [][]vg.Length{nil, {vg.Points(6), vg.Points(3)}, {vg.Points(2), vg.Points(2)}}

var seriesGlyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}}

// seriesStyle is algorithm i's line colour, dashes and point marker.
func seriesStyle(i int) (color.Color, []vg.Length, draw.GlyphDrawer) {
	k := i / len(seriesPalette) % len(seriesDashes)
	return seriesPalette[i%len(seriesPalette)], seriesDashes[k], seriesGlyphs[k]
}

// sizeTicks labels a log axis of message sizes in B, KiB, MiB and GiB at
// powers of two, every second or fourth power when the range is wide.
type sizeTicks struct{}

func (sizeTicks) Ticks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi <= lo {
		return nil
	}
	a, b := int(math.Floor(math.Log2(lo))), int(math.Ceil(math.Log2(hi)))
	step := 1
	for (b-a)/step > 10 {
		step *= 2
	}
	var ts []plot.Tick
	for e := a; e <= b; e++ {
		v := math.Exp2(float64(e))
		if v < lo || v > hi {
			continue
		}
		t := plot.Tick{Value: v}
		if e%step == 0 {
			t.Label = sim.Bytes(int64(v)).String()
		}
		ts = append(ts, t)
	}
	return ts
}

// sweepPlot is a sweep picture under construction: the plot, and the
// legend drawn to its right, outside the data.
type sweepPlot struct {
	p      *plot.Plot
	legend plot.Legend
}

func newSweepPlot(title, ylabel string, logY bool) *sweepPlot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "message size"
	p.Y.Label.Text = ylabel
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, sizeTicks{}
	if logY {
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	} else {
		p.Y.Min = 0
	}
	p.Add(plotter.NewGrid())
	l := plot.NewLegend()
	l.Top, l.Left = true, true
	l.TextStyle.Font.Size = vg.Points(10)
	l.ThumbnailWidth = vg.Points(28)
	return &sweepPlot{p: p, legend: l}
}

// series adds algorithm i's points (x bytes, y) with its own style.
func (sp *sweepPlot) series(i int, name string, xy plotter.XYs) error {
	c, dash, glyph := seriesStyle(i)
	l, err := plotter.NewLine(xy)
	if err != nil {
		return err
	}
	l.Color, l.Dashes, l.Width = c, dash, vg.Points(1.6)
	sc, err := plotter.NewScatter(xy)
	if err != nil {
		return err
	}
	sc.GlyphStyle = draw.GlyphStyle{Color: c, Shape: glyph, Radius: vg.Points(2.2)}
	sp.p.Add(l, sc)
	sp.legend.Add(name, l, sc)
	return nil
}

// winners rings the fastest point at each size.
func (sp *sweepPlot) winners(xy plotter.XYs, what string) error {
	if len(xy) == 0 {
		return nil
	}
	sc, err := plotter.NewScatter(xy)
	if err != nil {
		return err
	}
	sc.GlyphStyle = draw.GlyphStyle{Color: color.Black, Shape: draw.RingGlyph{}, Radius: vg.Points(5)}
	sp.p.Add(sc)
	sp.legend.Add(what, sc)
	return nil
}

// save writes the picture with the legend in a column right of the plot.
func (sp *sweepPlot) save(path string, w, h vg.Length) error {
	width := sp.legend.Rectangle(draw.Canvas{}).Max.X - sp.legend.Rectangle(draw.Canvas{}).Min.X + vg.Points(24)
	ext := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	c, err := draw.NewFormattedCanvas(w+width, h, ext)
	if err != nil {
		return fmt.Errorf("viz: %s: %w", path, err)
	}
	dc := draw.New(c)
	sp.p.Draw(draw.Crop(dc, 0, -width, 0, 0))
	lc := draw.Crop(dc, w+vg.Points(12), 0, 0, -vg.Points(40))
	sp.legend.Draw(lc)
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("viz: %w", err)
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("viz: %s: %w", path, err)
	}
	return f.Close()
}

// DrawSweep draws time per allreduce against message size, log-log, one
// line per algorithm of names (in that order, each with its own colour,
// dash pattern and marker; points that could not run are left out), the
// fastest at each size ringed, sizes labelled in B/KiB/MiB, the legend
// beside the plot, to an .svg or .png file.
func DrawSweep(path, topo string, names []string, rows []scenarios.SweepRow) error {
	sp := newSweepPlot("Allreduce time on "+topo, "time per allreduce (µs)", true)
	for i, n := range names {
		var xy plotter.XYs
		for _, r := range rows {
			if r.Algo == n && r.Err == nil {
				xy = append(xy, plotter.XY{X: float64(r.Bytes), Y: r.Us})
			}
		}
		if len(xy) == 0 {
			continue
		}
		if err := sp.series(i, n, xy); err != nil {
			return err
		}
	}
	if err := sp.winners(winnerPoints(rows, func(r scenarios.SweepRow) float64 { return r.Us }), "fastest at that size"); err != nil {
		return err
	}
	return sp.save(path, 7*vg.Inch, 5*vg.Inch)
}

// DrawSweepBusBW draws nccl-tests' bus bandwidth (bytes / time × 2(n−1)/n)
// against message size, one line per algorithm, the fastest at each size
// ringed, like DrawSweep.
func DrawSweepBusBW(path, topo string, names []string, rows []scenarios.SweepRow) error {
	sp := newSweepPlot("Allreduce bus bandwidth on "+topo, "bus bandwidth (GB/s)", false)
	for i, n := range names {
		var xy plotter.XYs
		for _, r := range rows {
			if r.Algo == n && r.Err == nil {
				xy = append(xy, plotter.XY{X: float64(r.Bytes), Y: r.BusGBps})
			}
		}
		if len(xy) == 0 {
			continue
		}
		if err := sp.series(i, n, xy); err != nil {
			return err
		}
	}
	if err := sp.winners(winnerPoints(rows, func(r scenarios.SweepRow) float64 { return r.BusGBps }), "fastest at that size"); err != nil {
		return err
	}
	return sp.save(path, 7*vg.Inch, 5*vg.Inch)
}

// winnerPoints is (size, y of the fastest) for every size, in size order.
func winnerPoints(rows []scenarios.SweepRow, y func(scenarios.SweepRow) float64) plotter.XYs {
	win := scenarios.Winners(rows)
	var xy plotter.XYs
	seen := map[int64]bool{}
	for _, r := range rows {
		if w, ok := win[r.Bytes]; ok && !seen[r.Bytes] {
			seen[r.Bytes] = true
			xy = append(xy, plotter.XY{X: float64(r.Bytes), Y: y(w)})
		}
	}
	return xy
}
