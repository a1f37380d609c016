package viz

import (
	"fmt"
	"image/color"
	"math"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/arsim/arsim/validate"
)

// kindPalette has one distinct colour per trace kind (Tableau 10).
var kindPalette = []color.Color{
	color.RGBA{31, 119, 180, 255}, color.RGBA{255, 127, 14, 255}, color.RGBA{44, 160, 44, 255},
	color.RGBA{214, 39, 40, 255}, color.RGBA{148, 103, 189, 255}, color.RGBA{140, 86, 75, 255},
	color.RGBA{227, 119, 194, 255}, color.RGBA{23, 190, 207, 255}, color.RGBA{188, 189, 34, 255},
	color.RGBA{127, 127, 127, 255},
}

// DrawValidation draws simulated against measured, log-log, one colour per
// record kind (per group when every record is of one kind), with the
// identity line and the legend beside the plot, to an .svg or .png file.
func DrawValidation(path string, v *validate.Validation) error {
	p := plot.New()
	p.Title.Text = "Simulated versus measured (µs; pointer_chase ns; host_link GB/s)"
	p.X.Label.Text = "measured"
	p.Y.Label.Text = "simulated"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	kindOf := func(r validate.Compared) string { return r.Kind }
	oneKind := true
	for _, r := range v.Records {
		oneKind = oneKind && r.Kind == v.Records[0].Kind
	}
	if oneKind {
		kindOf = func(r validate.Compared) string { return r.Group }
	}
	byKind := map[string]plotter.XYs{}
	var kinds []string
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range v.Records {
		k := kindOf(r)
		if _, ok := byKind[k]; !ok {
			kinds = append(kinds, k)
		}
		byKind[k] = append(byKind[k], plotter.XY{X: r.Measured, Y: r.Predicted})
		lo = min(lo, r.Measured, r.Predicted)
		hi = max(hi, r.Measured, r.Predicted)
	}
	if len(kinds) == 0 {
		return fmt.Errorf("viz: nothing to plot: no record was simulated")
	}
	sort.Strings(kinds)
	id, err := plotter.NewLine(plotter.XYs{{X: lo, Y: lo}, {X: hi, Y: hi}})
	if err != nil {
		return err
	}
	id.Color = color.Gray{Y: 120}
	id.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(plotter.NewGrid(), id)
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = lo/1.15, hi*1.15, lo/1.15, hi*1.15
	l := plot.NewLegend()
	l.Top, l.Left = true, true
	l.TextStyle.Font.Size = vg.Points(10)
	l.Add("simulated = measured", id)
	for i, k := range kinds {
		sc, err := plotter.NewScatter(byKind[k])
		if err != nil {
			return err
		}
		c, _, glyph := seriesStyle(i)
		sc.GlyphStyle.Color = c
		sc.GlyphStyle.Shape = glyph
		sc.GlyphStyle.Radius = vg.Points(2)
		p.Add(sc)
		l.Add(fmt.Sprintf("%s (%d)", k, len(byKind[k])), sc)
	}
	sp := &sweepPlot{p: p, legend: l}
	return sp.save(path, 6*vg.Inch, 6*vg.Inch)
}
