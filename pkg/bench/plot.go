package bench

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The --plot picture: a title with the headline numbers, then three panels
// (TTFT CDF, TPOT CDF, output throughput and requests in flight over time).
// It is drawn on a small canvas interface so that another output format
// needs only a new canvas.

type canvas interface {
	rect(x, y, w, h float64, fill, stroke string)
	line(x1, y1, x2, y2 float64, color string, width float64, dashed bool)
	polyline(pts [][2]float64, color string, width float64)
	text(x, y float64, s string, size float64, anchor, color string, bold bool)
}

const (
	plotW, plotH = 1260.0, 470.0
	colBlue      = "#1f77b4"
	colOrange    = "#ff7f0e"
	colGrid      = "#e5e5e5"
	colAxis      = "#333333"
	colMuted     = "#777777"
)

// WritePlot writes the picture to path; the extension picks the format.
func (r *Report) WritePlot(path string) error {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".svg":
		s := newSVG(plotW, plotH)
		r.draw(s)
		if err := os.WriteFile(path, []byte(s.String()), 0o644); err != nil {
			return fmt.Errorf("write plot: %w", err)
		}
		return nil
	}
	return fmt.Errorf("plot %s: the file name must end in .svg", path)
}

func (r *Report) draw(c canvas) {
	m, cfg := r.Metrics, r.Config
	c.rect(0, 0, plotW, plotH, "#ffffff", "")
	rate := fmt.Sprintf("%g req/s", cfg.RequestRate)
	if math.IsInf(cfg.RequestRate, 1) {
		rate = "rate inf"
	}
	conc := "unlimited"
	if cfg.MaxConcurrency > 0 {
		conc = fmt.Sprint(cfg.MaxConcurrency)
	}
	title := fmt.Sprintf("lightllm bench: %s %s  |  %s, %d prompts, %s, concurrency %s", cfg.API, cfg.URL,
		cfg.DatasetID, r.NumPrompts, rate, conc)
	if r.Interrupted {
		title += "  (INTERRUPTED)"
	}
	c.text(20, 28, title, 16, "start", colAxis, true)
	sub := fmt.Sprintf("completed %d, failed %d in %.1f s  |  %.2f req/s, output %.1f tok/s (peak %.0f), total %.1f tok/s  |  peak concurrency %d",
		m.Completed, m.Failed, m.Duration.Seconds(), m.RequestThroughput, m.OutputThroughput,
		m.PeakOutputThroughput, m.TotalTokenThroughput, m.PeakConcurrency)
	c.text(20, 50, sub, 12.5, "start", colMuted, false)

	var ttft, tpot []float64
	for _, res := range r.Results {
		if res != nil && res.Success {
			ttft = append(ttft, ms(res.TTFT))
			if res.OutputLen > 1 {
				tpot = append(tpot, ms(res.tpot()))
			}
		}
	}
	const top, h, w = 80.0, 330.0, 330.0
	cdfPanel(c, 70, top, w, h, "TTFT CDF", "time to first token (ms)", ttft, m.TTFT)
	cdfPanel(c, 475, top, w, h, "TPOT CDF", "time per output token (ms)", tpot, m.TPOT)
	timePanel(c, 880, top, w, h, m.Timeline, m.Duration.Seconds())
}

// frame draws a panel's title, box, grid and tick labels and returns the
// data->pixel mappings.
func frame(c canvas, x, y, w, h float64, title, xlabel string, xmax, ymax float64, yfmt func(float64) string) (func(float64) float64, func(float64) float64) {
	c.text(x+w/2, y-8, title, 14, "middle", colAxis, true)
	px := func(v float64) float64 { return x + w*v/xmax }
	py := func(v float64) float64 { return y + h - h*v/ymax }
	for _, t := range niceTicks(xmax, 6) {
		c.line(px(t), y, px(t), y+h, colGrid, 1, false)
		c.text(px(t), y+h+16, fmtTick(t), 11, "middle", colAxis, false)
	}
	for _, t := range niceTicks(ymax, 5) {
		c.line(x, py(t), x+w, py(t), colGrid, 1, false)
		c.text(x-6, py(t)+4, yfmt(t), 11, "end", colAxis, false)
	}
	c.rect(x, y, w, h, "", colAxis)
	c.text(x+w/2, y+h+36, xlabel, 12, "middle", colAxis, false)
	return px, py
}

func cdfPanel(c canvas, x, y, w, h float64, title, xlabel string, data []float64, st Stats) {
	if len(data) == 0 {
		frame(c, x, y, w, h, title, xlabel, 1, 1, fmtFrac)
		c.text(x+w/2, y+h/2, "no data", 14, "middle", colMuted, false)
		return
	}
	s := append([]float64(nil), data...)
	sort.Float64s(s)
	xmax := niceMax(s[len(s)-1])
	px, py := frame(c, x, y, w, h, title, xlabel, xmax, 1, fmtFrac)
	// A step function, thinned to at most ~600 steps for big runs.
	step := max(len(s)/600, 1)
	pts := [][2]float64{{px(0), py(0)}, {px(s[0]), py(0)}}
	for i := 0; i < len(s); i += step {
		frac := float64(i+1) / float64(len(s))
		pts = append(pts, [2]float64{px(s[i]), pts[len(pts)-1][1]}, [2]float64{px(s[i]), py(frac)})
	}
	pts = append(pts, [2]float64{px(s[len(s)-1]), py(1)}, [2]float64{px(xmax), py(1)})
	c.polyline(pts, colBlue, 2)
	for _, v := range []float64{st.Median, st.P90, st.P99} {
		c.line(px(v), y, px(v), y+h, colOrange, 1, true)
	}
	// The lower right of a CDF is empty: the legend goes there, on white.
	legend := fmt.Sprintf("mean %s  p50 %s  p90 %s  p99 %s ms", fmtMs(st.Mean), fmtMs(st.Median), fmtMs(st.P90), fmtMs(st.P99))
	c.rect(x+w-236, y+h-38, 232, 34, "#ffffff", colGrid)
	c.text(x+w-10, y+h-12, legend, 11, "end", colAxis, false)
	c.text(x+w-10, y+h-26, fmt.Sprintf("n = %d   dashed: p50, p90, p99", st.N), 11, "end", colMuted, false)
}

func timePanel(c canvas, x, y, w, h float64, tl []Bucket, dur float64) {
	peakTok, peakReq := 0.0, 0
	for _, b := range tl {
		peakTok = max(peakTok, b.OutputTokens)
		peakReq = max(peakReq, b.InFlight)
	}
	xmax := math.Ceil(max(dur, 1))
	ymax := niceMax(max(peakTok, 1))
	px, py := frame(c, x, y, w, h, "Throughput over time", "time since start (s)", xmax, ymax, fmtTick)
	var tok [][2]float64
	for _, b := range tl {
		t := b.Start.Seconds()
		tok = append(tok, [2]float64{px(t), py(b.OutputTokens)}, [2]float64{px(math.Min(t+1, dur)), py(b.OutputTokens)})
	}
	c.polyline(tok, colBlue, 2)
	// Requests in flight on a right-hand axis.
	rmax := niceMax(float64(max(peakReq, 1)))
	ry := func(v float64) float64 { return y + h - h*v/rmax }
	var req [][2]float64
	for _, b := range tl {
		t := b.Start.Seconds()
		req = append(req, [2]float64{px(t), ry(float64(b.InFlight))}, [2]float64{px(math.Min(t+1, dur)), ry(float64(b.InFlight))})
	}
	c.polyline(req, colOrange, 1.5)
	for _, t := range niceTicks(rmax, 5) {
		c.text(x+w+6, ry(t)+4, fmtTick(t), 11, "start", colOrange, false)
	}
	c.text(x+8, y+16, "output tokens/s (per 1 s)", 11, "start", colBlue, true)
	c.text(x+8, y+30, "requests in flight (right axis)", 11, "start", colOrange, true)
}

// niceMax rounds v up to a round number (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6
// or 8 times a power of ten) so an axis is not mostly empty.
func niceMax(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if v <= m*p*1.0000001 {
			return m * p
		}
	}
	return 10 * p
}

// niceTicks returns about n round tick values from 0 to max inclusive.
func niceTicks(vmax float64, n int) []float64 {
	raw := vmax / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	step := p
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if raw <= m*p {
			step = m * p
			break
		}
	}
	var out []float64
	for t := 0.0; t <= vmax*1.0000001; t += step {
		out = append(out, t)
	}
	return out
}

func fmtTick(v float64) string {
	switch {
	case v == math.Trunc(v) && math.Abs(v) < 1e9:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 1:
		return fmt.Sprintf("%.1f", v)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
}

func fmtFrac(v float64) string { return fmt.Sprintf("%.0f%%", v*100) }

func fmtMs(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// svg is a canvas that writes SVG elements.
type svg struct{ b strings.Builder }

func newSVG(w, h float64) *svg {
	s := &svg{}
	fmt.Fprintf(&s.b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="Helvetica, Arial, sans-serif">`+"\n", w, h, w, h)
	return s
}

func (s *svg) String() string { return s.b.String() + "</svg>\n" }

func (s *svg) rect(x, y, w, h float64, fill, stroke string) {
	if fill == "" {
		fill = "none"
	}
	if stroke == "" {
		stroke = "none"
	}
	fmt.Fprintf(&s.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" stroke="%s"/>`+"\n", x, y, w, h, fill, stroke)
}

func (s *svg) line(x1, y1, x2, y2 float64, color string, width float64, dashed bool) {
	dash := ""
	if dashed {
		dash = ` stroke-dasharray="5,4"`
	}
	fmt.Fprintf(&s.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%.1f"%s/>`+"\n", x1, y1, x2, y2, color, width, dash)
}

func (s *svg) polyline(pts [][2]float64, color string, width float64) {
	s.b.WriteString(`<polyline fill="none" stroke="` + color + `" stroke-width="` + fmt.Sprintf("%.1f", width) + `" stroke-linejoin="round" points="`)
	for i, p := range pts {
		if i > 0 {
			s.b.WriteByte(' ')
		}
		fmt.Fprintf(&s.b, "%.1f,%.1f", p[0], p[1])
	}
	s.b.WriteString("\"/>\n")
}

func (s *svg) text(x, y float64, str string, size float64, anchor, color string, bold bool) {
	weight := ""
	if bold {
		weight = ` font-weight="bold"`
	}
	fmt.Fprintf(&s.b, `<text x="%.1f" y="%.1f" font-size="%.1f" text-anchor="%s" fill="%s"%s>%s</text>`+"\n",
		x, y, size, anchor, color, weight, xmlEscape(str))
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
