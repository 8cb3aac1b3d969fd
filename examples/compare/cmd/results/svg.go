package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strings"
)

// A barChart is a horizontal bar chart in one or more panels. Each panel
// has its own linear scale starting at zero, so a bar's length is
// proportional to its value within the panel; every bar is labelled with
// its value, so panels whose values differ by orders of magnitude stay
// readable.
type barChart struct {
	Title  string
	Note   string // one line under the title (units, what is better)
	Panels []panel
}

type panel struct {
	Title string
	Bars  []bar
}

type bar struct {
	Label string
	Value float64
	Text  string // the value as printed beside the bar
	Kind  barKind
}

// barKind picks a bar's colour.
type barKind int

const (
	barPeer  barKind = iota // another library
	barOurs                 // zapcodec
	barFloor                // a hand-written floor
)

// Layout of a chart, in SVG user units (pixels).
const (
	svgWidth    = 760
	svgMargin   = 12
	svgLabelW   = 230 // bar labels, right-aligned against the bars
	svgValueW   = 120 // room right of the longest bar for its value
	svgBarH     = 16
	svgBarGap   = 5
	svgTitleH   = 44 // title and note
	svgPanelTop = 26 // a panel's title above its first bar
	svgPanelGap = 12
)

var barFill = map[barKind]string{barPeer: "#8da0cb", barOurs: "#e6550d", barFloor: "#bdbdbd"}

// barArea is the width of the longest bar of a panel.
const barArea = svgWidth - 2*svgMargin - svgLabelW - svgValueW

// writeSVG writes c as a standalone SVG document: plain shapes and text,
// no script, no external reference, readable by browsers and by GitHub's
// Markdown image rendering.
func (c *barChart) writeSVG(w io.Writer) error {
	height := svgTitleH
	for _, p := range c.Panels {
		height += svgPanelTop + len(p.Bars)*(svgBarH+svgBarGap) + svgPanelGap
	}
	height += svgMargin
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		svgWidth, height, svgWidth, height)
	p(`<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", svgWidth, height)
	p(`<text x="%d" y="20" font-size="15" font-weight="bold">%s</text>`+"\n", svgMargin, esc(c.Title))
	if c.Note != "" {
		p(`<text x="%d" y="36" fill="#555555">%s</text>`+"\n", svgMargin, esc(c.Note))
	}
	y := svgTitleH
	x0 := svgMargin + svgLabelW
	for _, pn := range c.Panels {
		p(`<g class="panel">` + "\n")
		p(`<text x="%d" y="%d" font-weight="bold">%s</text>`+"\n", svgMargin, y+17, esc(pn.Title))
		y += svgPanelTop
		top := y
		scale := panelScale(pn.Bars)
		for _, br := range pn.Bars {
			wd := br.Value * scale
			if !(wd > 0) { // negative, NaN
				wd = 0
			}
			p(`<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", x0-6, y+svgBarH-4, esc(br.Label))
			p(`<rect class="bar" x="%d" y="%d" width="%.2f" height="%d" fill="%s"><title>%s: %s</title></rect>`+"\n",
				x0, y, wd, svgBarH, barFill[br.Kind], esc(br.Label), esc(br.Text))
			p(`<text x="%.2f" y="%d" fill="#333333">%s</text>`+"\n", float64(x0)+wd+5, y+svgBarH-4, esc(br.Text))
			y += svgBarH + svgBarGap
		}
		p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#666666"/>`+"\n", x0, top-2, x0, y-svgBarGap+2)
		p("</g>\n")
		y += svgPanelGap
	}
	p("</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}

// panelScale returns the pixels per unit of value that make the largest
// bar of bars barArea long (0 when no bar is positive).
func panelScale(bars []bar) float64 {
	var top float64
	for _, br := range bars {
		if br.Value > top && !math.IsInf(br.Value, 1) {
			top = br.Value
		}
	}
	if top <= 0 {
		return 0
	}
	return barArea / top
}

// esc escapes s for XML character data and attribute values.
func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}
