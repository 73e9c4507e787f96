package main

import (
	"image/color"
	"math"
	"os"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// series is one line of a plot of time against nodes.
type series struct {
	name   string
	points plotter.XYs
	color  int         // index into plotutil's palette, so a model line can match its δ
	dashed bool        // a model, not a measurement
	dashes []vg.Length // a measurement's dash pattern; nil: solid
}

// savePlot draws time against nodes, one line per series, as the paper's
// Figures 2 and 3, and writes it as PNG (or another format by extension).
// logTime draws time on a log scale, for launchers whose times differ by
// orders of magnitude.
func savePlot(path, title string, lines []series, logTime bool) error {
	p, err := newPlot(title, lines, logTime)
	if err != nil {
		return err
	}
	return p.Save(16*vg.Centimeter, 11*vg.Centimeter, path)
}

// savePlotLegendBeside is savePlot with the legend right of the plot, not
// over it, for more lines than fit over one; PNG only.
func savePlotLegendBeside(path, title string, lines []series, logTime bool) error {
	p, err := newPlot(title, lines, logTime)
	if err != nil {
		return err
	}
	legend := p.Legend
	p.Legend = plot.NewLegend()
	width, height := 24*vg.Centimeter, 12*vg.Centimeter
	img := vgimg.New(width, height)
	dc := draw.New(img)
	beside := legend.Rectangle(dc).Size().X + vg.Centimeter
	p.Draw(draw.Crop(dc, 0, -beside, 0, 0))
	legend.Draw(draw.Crop(dc, width-beside+vg.Centimeter/2, 0, 0, -vg.Centimeter))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func newPlot(title string, lines []series, logTime bool) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "nodes"
	p.Y.Label.Text = "time (s)"
	if logTime {
		p.Y.Label.Text = "time (s, log scale)"
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, oneTwoFive{}
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	for _, s := range lines {
		if len(s.points) == 0 {
			continue
		}
		l, pts, err := plotter.NewLinePoints(s.points)
		if err != nil {
			return nil, err
		}
		l.Color = plotutil.Color(s.color)
		if l.Color == nil {
			l.Color = color.Black
		}
		pts.Color, pts.Shape = l.Color, plotutil.Shape(s.color)
		l.Dashes = s.dashes
		if s.dashed {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(l)
			p.Legend.Add(s.name, l)
			continue
		}
		p.Add(l, pts)
		p.Legend.Add(s.name, l, pts)
	}
	return p, nil
}

// oneTwoFive labels 1, 2 and 5 times each power of ten on a log axis:
// plot.LogTicks labels powers of ten only, none in a range such as 0.2–8 s.
type oneTwoFive struct{}

func (oneTwoFive) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(min)); math.Pow(10, e) <= max; e++ {
		for _, m := range []float64{1, 2, 5} {
			if v := m * math.Pow(10, e); v >= min && v <= max {
				ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64)})
			}
		}
	}
	return ticks
}
