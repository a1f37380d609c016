package viz

import (
	"fmt"
	"image/color"
	"math"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

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
// record kind, with the identity line, to an .svg or .png file.
func DrawValidation(path string, v *validate.Validation) error {
	p := plot.New()
	p.Title.Text = "arsim validate: simulated versus measured"
	p.X.Label.Text = "measured (µs; pointer_chase ns; host_link_concurrency GB/s)"
	p.Y.Label.Text = "simulated (same unit)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	byKind := map[string]plotter.XYs{}
	var kinds []string
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range v.Records {
		if _, ok := byKind[r.Kind]; !ok {
			kinds = append(kinds, r.Kind)
		}
		byKind[r.Kind] = append(byKind[r.Kind], plotter.XY{X: r.Measured, Y: r.Predicted})
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
	p.Legend.Add("simulated = measured", id)
	for i, k := range kinds {
		sc, err := plotter.NewScatter(byKind[k])
		if err != nil {
			return err
		}
		sc.GlyphStyle.Color = kindPalette[i%len(kindPalette)]
		sc.GlyphStyle.Shape = draw.CircleGlyph{}
		sc.GlyphStyle.Radius = vg.Points(2)
		p.Add(sc)
		p.Legend.Add(fmt.Sprintf("%s (%d)", k, len(byKind[k])), sc)
	}
	return p.Save(7*vg.Inch, 7*vg.Inch, path)
}
