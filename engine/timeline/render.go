package timeline

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/retrylab/retrylab/engine/trace"
)

// Window is the stretch of time a picture shows.
type Window struct {
	From time.Time
	Span time.Duration
}

// minSpan is the narrowest window: a millisecond.
const minSpan = time.Millisecond

// To is the window's end.
func (w Window) To() time.Time { return w.From.Add(w.Span) }

// Fit is the window that shows the whole timeline.
func (tl *Timeline) Fit() Window {
	span := tl.End.Sub(tl.Start)
	if span < minSpan {
		span = minSpan
	}
	return Window{From: tl.Start, Span: span}
}

// Zoom is w scaled by factor (below 1 zooms in) around at, kept within
// the timeline (never wider than the whole, never narrower than 1 ms).
func (tl *Timeline) Zoom(w Window, factor float64, at time.Time) Window {
	span := time.Duration(float64(w.Span) * factor)
	whole := tl.Fit().Span
	span = max(minSpan, min(span, whole))
	off := float64(at.Sub(w.From)) / float64(w.Span)
	from := at.Add(-time.Duration(off * float64(span)))
	return tl.clamp(Window{From: from, Span: span})
}

// Scroll is w moved by frac of its span (negative: back), kept within
// the timeline.
func (tl *Timeline) Scroll(w Window, frac float64) Window {
	return tl.clamp(Window{From: w.From.Add(time.Duration(frac * float64(w.Span))), Span: w.Span})
}

// Reveal is w moved the least that shows the item r names (its start when
// it is wider than w).
func (tl *Timeline) Reveal(w Window, r Ref) Window {
	it := tl.Item(r)
	switch {
	case it.From.Before(w.From):
		w.From = it.From.Add(-w.Span / 10)
	case it.To.After(w.To()):
		w.From = it.To.Add(-w.Span + w.Span/10)
		if it.From.Before(w.From) {
			w.From = it.From.Add(-w.Span / 10)
		}
	}
	return tl.clamp(w)
}

func (tl *Timeline) clamp(w Window) Window {
	if end := tl.Start.Add(tl.Fit().Span); w.To().After(end) {
		w.From = end.Add(-w.Span)
	}
	if w.From.Before(tl.Start) {
		w.From = tl.Start
	}
	return w
}

// The glyphs drawn, beside the marks of the trace.
const (
	glyphBar      = '━'
	glyphSelected = '█'
	glyphBackoff  = '┄'
	glyphRun      = '─'
	glyphIdle     = '░'
	glyphEffect   = '•'
	glyphLinked   = '●'
	glyphLane     = '│'
)

// Legend is one line saying what the glyphs mean.
func Legend() string {
	return "━ attempt  ◆ acted, caller never knew  ⏱ deadline passed  ┄ backoff  • effect #attempt  ☠ worker killed  ░ no worker running  ⋯ not kept"
}

// cell priorities: a cell shows what matters most.
const (
	prioNone = iota
	prioShade
	prioFill
	prioBar
	prioMark
)

// canvas is one lane's row of cells.
type canvas struct {
	cells []rune
	prio  []uint8
}

func newCanvas(n int) canvas {
	c := canvas{cells: make([]rune, n), prio: make([]uint8, n)}
	for i := range c.cells {
		c.cells[i] = ' '
	}
	return c
}

func (c canvas) set(i int, r rune, p uint8) {
	if i >= 0 && i < len(c.cells) && p >= c.prio[i] {
		c.cells[i], c.prio[i] = r, p
	}
}

func (c canvas) span(from, to int, r rune, p uint8) {
	from, to = max(from, 0), min(to, len(c.cells)-1)
	for i := from; i <= to; i++ {
		c.set(i, r, p)
	}
}

// text writes s from column i into cells no more than p holds.
func (c canvas) text(i int, s string, p uint8) {
	for _, r := range s {
		if i >= len(c.cells) || (i >= 0 && c.prio[i] >= p) {
			return
		}
		c.set(i, r, p)
		i++
	}
}

// LabelWidth is the width of the lanes' labels in a picture width wide.
func LabelWidth(width int) int { return max(8, min(24, width/5)) }

// Rows draws the picture width columns wide: a time axis, then count
// lanes from first (all of them when count < 0), each a label, a rule
// and the window's cells. sel is an index in Attempts, the attempt drawn
// selected with its effects (-1: none). Only the lanes asked for are drawn.
func (tl *Timeline) Rows(width int, w Window, sel, first, count int) []string {
	lw := LabelWidth(width)
	plot := width - lw - 1
	if plot < 4 || w.Span <= 0 {
		return nil
	}
	first = max(0, min(first, len(tl.Lanes)))
	last := len(tl.Lanes)
	if count >= 0 {
		last = min(last, first+count)
	}
	var selected Item
	hasSel := sel >= 0 && sel < len(tl.Attempts)
	if hasSel {
		selected = tl.Item(tl.Attempts[sel])
	}
	// The window's end falls in the last column.
	col := func(at time.Time) int {
		return int(math.Floor(float64(at.Sub(w.From)) / float64(w.Span) * float64(plot-1)))
	}
	idle := tl.idle()
	rows := make([]string, 0, last-first+1)
	rows = append(rows, strings.Repeat(" ", lw)+" "+tl.axis(plot, w))
	for li := first; li < last; li++ {
		lane := tl.Lanes[li]
		c := newCanvas(plot)
		for _, it := range idle {
			c.span(col(it.From), col(it.To), glyphIdle, prioShade)
		}
		// Items start in order: those past the window's end are skipped
		// at once, so a lane of many attempts costs what it shows.
		end := sort.Search(len(lane.Items), func(i int) bool { return lane.Items[i].From.After(w.To()) })
		for _, it := range lane.Items[:end] {
			if it.To.Before(w.From) {
				continue
			}
			linked := hasSel && it.Call == selected.Call && it.N == selected.N
			tl.draw(c, it, col(it.From), col(it.To), linked)
		}
		rows = append(rows, fitLabel(lane.Label, lw)+string(glyphLane)+string(c.cells))
	}
	return rows
}

// draw puts one item on a lane's cells, from column c0 to c1.
func (tl *Timeline) draw(c canvas, it Item, c0, c1 int, linked bool) {
	switch it.Kind {
	case ItemAttempt:
		bar := glyphBar
		if linked {
			bar = glyphSelected
		}
		c.span(c0, c1-1, bar, prioBar)
		end := it.Mark
		switch {
		case it.Outcome == trace.OutcomeTimeout:
			end = trace.MarkTimeout // the deadline, where it fired
		case it.Mark == trace.MarkAmbiguous:
			end = trace.MarkKilled // only a death leaves an unfinished attempt ◆
		}
		if it.Mark == trace.MarkAmbiguous && c1 > c0 {
			c.set(c0, glyphOf(trace.MarkAmbiguous), prioMark)
		}
		c.set(c1, glyphOf(end), prioMark)
	case ItemBackoff:
		c.span(c0+1, c1, glyphBackoff, prioFill)
	case ItemRun:
		c.span(c0, c1-1, glyphRun, prioBar)
		if it.Mark != trace.MarkNone {
			c.set(c1, glyphOf(it.Mark), prioMark)
		}
	case ItemIdle:
		c.span(c0, c1, glyphIdle, prioBar)
	case ItemNotKept, ItemReplay:
		c.set(c0, glyphOf(it.Mark), prioMark)
		if it.Kind == ItemNotKept {
			c.text(c0+1, fmt.Sprintf("#%d", it.N), prioFill)
		}
	case ItemEffect:
		g := glyphEffect
		if linked {
			g = glyphLinked
		}
		c.set(c0, g, prioMark)
		c.text(c0+1, fmt.Sprintf("#%d", it.N), prioFill)
	}
}

// glyphOf is a mark's glyph as one cell.
func glyphOf(m trace.Mark) rune {
	r, _ := utf8.DecodeRuneInString(m.Glyph())
	return r
}

// idle are the workers' lane's spans with no worker running.
func (tl *Timeline) idle() []Item {
	var out []Item
	for _, lane := range tl.Lanes {
		if lane.Kind != LaneWorkers {
			continue
		}
		for _, it := range lane.Items {
			if it.Kind == ItemIdle {
				out = append(out, it)
			}
		}
	}
	return out
}

// axis is the time axis over plot columns: offsets from the timeline's
// start at round steps, at least 10 columns apart.
func (tl *Timeline) axis(plot int, w Window) string {
	step := niceStep(time.Duration(float64(w.Span) * 10 / float64(plot)))
	c := newCanvas(plot)
	off := w.From.Sub(tl.Start)
	first := (off + step - 1) / step * step
	if off <= 0 {
		first = 0
	}
	for d := first; d <= off+w.Span; d += step {
		i := int(float64(d-off) / float64(w.Span) * float64(plot))
		label := "╵" + Offset(d, step)
		if i+utf8.RuneCountInString(label) > plot {
			break
		}
		c.text(i, label, prioMark)
	}
	return string(c.cells)
}

// niceStep is the smallest of 1, 2, 5 × a power of ten at least d.
func niceStep(d time.Duration) time.Duration {
	for s := time.Microsecond; ; s *= 10 {
		for _, k := range []time.Duration{1, 2, 5} {
			if s*k >= d {
				return s * k
			}
		}
	}
}

// Offset says d from the start as the axis and the moments do: "+1.07s",
// with as many decimals as the step between marks needs.
func Offset(d, step time.Duration) string {
	if d >= 100*time.Second && step >= time.Second {
		return "+" + d.Round(time.Second).String()
	}
	dec := 0
	for s := time.Second; s > step && dec < 6; s /= 10 {
		dec++
	}
	return fmt.Sprintf("+%.*fs", dec, d.Seconds())
}

// fitLabel is s cut or padded to n columns.
func fitLabel(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s + strings.Repeat(" ", n-len(r))
}

// Moment is one thing that happened, in words, at its offset.
type Moment struct {
	At   time.Duration
	Text string
}

// Moments are the timeline's attempts, deadlines, effects, backoffs and
// crashes in order of time, in words: "+0.011s mail delivered msg_… (step-4 #1)".
func (tl *Timeline) Moments() []Moment {
	var out []Moment
	for _, lane := range tl.Lanes {
		for _, it := range lane.Items {
			switch it.Kind {
			case ItemAttempt:
				out = append(out, Moment{it.From.Sub(tl.Start), fmt.Sprintf("%s #%d sent", it.Call, it.N)})
				if it.Mark != trace.MarkRunning {
					out = append(out, Moment{it.To.Sub(tl.Start), it.Text})
				}
			case ItemRun:
				if it.Mark == trace.MarkKilled {
					out = append(out, Moment{it.To.Sub(tl.Start), it.Text})
				}
			default:
				if it.Kind != ItemIdle {
					out = append(out, Moment{it.From.Sub(tl.Start), it.Text})
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

// Text is the picture as `show --timeline` and the handout print it:
// the whole execution width columns wide, the legend, then its moments.
func (tl *Timeline) Text(width int) []string {
	w := tl.Fit()
	out := tl.Rows(width, w, -1, 0, -1)
	out = append(out, "", Legend(), "")
	for _, m := range tl.Moments() {
		out = append(out, fmt.Sprintf("%10s  %s", Offset(m.At, time.Millisecond), m.Text))
	}
	return out
}
