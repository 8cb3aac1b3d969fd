package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// svgBar is a bar as read back from a written SVG.
type svgBar struct {
	width float64
	title string
}

// readSVG decodes doc with encoding/xml (so it must be well-formed XML
// with an <svg> root in the SVG namespace) and returns its bars by panel.
func readSVG(t *testing.T, doc []byte) [][]svgBar {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	var panels [][]svgBar
	var cur *svgBar
	inTitle := false
	depth := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, doc)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			if depth == 0 && (e.Name.Local != "svg" || e.Name.Space != "http://www.w3.org/2000/svg") {
				t.Fatalf("root element %v, want svg in the SVG namespace", e.Name)
			}
			depth++
			attr := map[string]string{}
			for _, a := range e.Attr {
				attr[a.Name.Local] = a.Value
			}
			switch {
			case e.Name.Local == "g" && attr["class"] == "panel":
				panels = append(panels, nil)
			case e.Name.Local == "rect" && attr["class"] == "bar":
				w, err := strconv.ParseFloat(attr["width"], 64)
				if err != nil || len(panels) == 0 {
					t.Fatalf("bar width %q (panels %d)", attr["width"], len(panels))
				}
				p := &panels[len(panels)-1]
				*p = append(*p, svgBar{width: w})
				cur = &(*p)[len(*p)-1]
			case e.Name.Local == "title" && cur != nil:
				inTitle = true
			}
		case xml.EndElement:
			depth--
			if e.Name.Local == "title" {
				inTitle = false
			}
			if e.Name.Local == "rect" {
				cur = nil
			}
		case xml.CharData:
			if inTitle && cur != nil {
				cur.title += string(e)
			}
		}
	}
	return panels
}

// TestSVGBarsProportional: the document is well-formed, every bar is
// there with its label, and within a panel every bar's length divided by
// its value is the same, the longest bar filling the bar area.
func TestSVGBarsProportional(t *testing.T) {
	t.Parallel()
	c := &barChart{Title: `a <chart> & "quotes"`, Note: "ns"}
	vals := [][]float64{
		{26.8, 2911, 507, 0, 8.0},
		{351891, 38975, 76311},
		{0, 141.1, 18, 9},
	}
	for i, vs := range vals {
		pn := panel{Title: "panel " + strconv.Itoa(i)}
		for j, v := range vs {
			pn.Bars = append(pn.Bars, bar{Label: "lib <" + strconv.Itoa(j) + "> & co", Value: v, Text: strconv.FormatFloat(v, 'f', -1, 64), Kind: barKind(j % 3)})
		}
		c.Panels = append(c.Panels, pn)
	}
	var buf bytes.Buffer
	if err := c.writeSVG(&buf); err != nil {
		t.Fatal(err)
	}
	panels := readSVG(t, buf.Bytes())
	if len(panels) != len(vals) {
		t.Fatalf("%d panels, want %d", len(panels), len(vals))
	}
	for i, vs := range vals {
		if len(panels[i]) != len(vs) {
			t.Fatalf("panel %d: %d bars, want %d", i, len(panels[i]), len(vs))
		}
		top := slices.Max(vs)
		for j, v := range vs {
			b := panels[i][j]
			if want := v / top * barArea; math.Abs(b.width-want) > 0.006 {
				t.Errorf("panel %d bar %d: width %v for value %v, want %v (max %v fills %d)", i, j, b.width, v, want, top, barArea)
			}
			if want := c.Panels[i].Bars[j].Label + ": " + c.Panels[i].Bars[j].Text; b.title != want {
				t.Errorf("panel %d bar %d: title %q, want %q", i, j, b.title, want)
			}
		}
	}
}

// TestSVGDegenerate: a panel of zeros and an empty chart still make
// well-formed documents with zero-length bars.
func TestSVGDegenerate(t *testing.T) {
	t.Parallel()
	for _, c := range []*barChart{
		{Title: "empty"},
		{Title: "zeros", Panels: []panel{{Title: "z", Bars: []bar{{Label: "a"}, {Label: "b", Value: math.NaN()}, {Label: "c", Value: -1}}}}},
	} {
		var buf bytes.Buffer
		if err := c.writeSVG(&buf); err != nil {
			t.Fatal(err)
		}
		for _, p := range readSVG(t, buf.Bytes()) {
			for _, b := range p {
				if b.width != 0 {
					t.Errorf("%s: bar width %v, want 0", c.Title, b.width)
				}
			}
		}
	}
}

// sampleResults is report input whose numbers survive the report's
// formatting unchanged.
func sampleResults() (*codecResults, []armResult) {
	r := &codecResults{names: []string{zap, "encoding/json", floor}, cells: map[string]map[string]cell{},
		req: map[string]int{zap: 74, "encoding/json": 118, floor: 54}, resp: map[string]int{zap: 96, "encoding/json": 213, floor: 80}}
	for i, o := range opTitles {
		r.cells[o.op] = map[string]cell{
			zap:             {ns: 17.5 + float64(i), allocs: 0},
			"encoding/json": {ns: 2911 + float64(100*i), allocs: 9},
			floor:           {ns: 8.25, allocs: 0}, // printed 8.2 (round half to even)
		}
	}
	arms := []armResult{
		{name: "zapcodec rpc", perSec: 351891, p50: 29500 * time.Nanosecond, p99: 166200 * time.Nanosecond, allocs: 0, perSecSamples: []float64{290296, 351891}},
		{name: "gRPC-go (protobuf)", perSec: 38975, p50: 325200 * time.Nanosecond, p99: 1872100 * time.Nanosecond, allocs: 141.1, perSecSamples: []float64{38975}},
		{name: "floor: raw echo, 1 conn", perSec: 231133, p50: 66300 * time.Nanosecond, p99: 184300 * time.Nanosecond, allocs: 0, perSecSamples: []float64{231133, 1}},
	}
	return r, arms
}

// TestParseReport: the tables a report writes read back as the values
// they were written from (to the precision printed).
func TestParseReport(t *testing.T) {
	t.Parallel()
	r, arms := sampleResults()
	var md bytes.Buffer
	report(&md, Config{BenchReps: 1, Reps: 1, Workers: 16, GOGC: 100}, r, arms, "0 0 0", "0 0 0", time.Second)
	got, gotArms, err := parseReport(md.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.names, r.names) {
		t.Fatalf("codecs %q, want %q", got.names, r.names)
	}
	for _, o := range opTitles {
		for _, n := range r.names {
			want := r.cells[o.op][n]
			want.ns, _ = strconv.ParseFloat(strings.TrimSuffix(fmtNS(want.ns), " ns"), 64)
			if g := got.cells[o.op][n]; g != want {
				t.Errorf("%s %s: %+v, want %+v", o.op, n, g, want)
			}
		}
	}
	for _, n := range r.names {
		if got.req[n] != r.req[n] || got.resp[n] != r.resp[n] {
			t.Errorf("%s sizes %d/%d, want %d/%d", n, got.req[n], got.resp[n], r.req[n], r.resp[n])
		}
	}
	if len(gotArms) != len(arms) {
		t.Fatalf("%d arms, want %d", len(gotArms), len(arms))
	}
	for i, a := range arms {
		g := gotArms[i]
		if g.name != a.name || g.perSec != a.perSec || g.allocs != a.allocs || g.p50 != a.p50 || g.p99 != a.p99 || !slices.Equal(g.perSecSamples, a.perSecSamples) {
			t.Errorf("arm %d: %+v, want %+v", i, g, a)
		}
	}
	// The charts drawn from the parsed tables equal those drawn from the
	// values (every value here prints exactly).
	for _, c := range r.cells {
		for n, x := range c {
			if n == floor {
				x.ns = 8.2
				c[n] = x
			}
		}
	}
	wc, wr := charts(r, arms)
	gc, gr := charts(got, gotArms)
	for i, pair := range [][2]*barChart{{wc, gc}, {wr, gr}} {
		var a, b bytes.Buffer
		pair[0].writeSVG(&a)
		pair[1].writeSVG(&b)
		if a.String() != b.String() {
			t.Errorf("chart %d differs when drawn from the parsed tables", i)
		}
	}
	if _, _, err := parseReport([]byte("# nothing\n")); err == nil {
		t.Error("a file without the tables parsed")
	}
	broken := strings.Replace(md.String(), "| 351891 |", "| many |", 1)
	if _, _, err := parseReport([]byte(broken)); err == nil {
		t.Error("a bad calls/s cell parsed")
	}
}

// TestCommittedResultsCharts: the committed RESULTS.md parses and its
// charts draw, with every codec in every panel, and its links point at
// the chart files.
func TestCommittedResultsCharts(t *testing.T) {
	t.Parallel()
	md, err := os.ReadFile(filepath.Join("..", "..", "..", "RESULTS.md"))
	if err != nil {
		t.Fatal(err)
	}
	r, arms, err := parseReport(md)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.names) < 3 || len(arms) < 3 {
		t.Fatalf("%d codecs, %d arms", len(r.names), len(arms))
	}
	codecs, rpc := charts(r, arms)
	for _, c := range []*barChart{codecs, rpc} {
		var buf bytes.Buffer
		if err := c.writeSVG(&buf); err != nil {
			t.Fatal(err)
		}
		for i, p := range readSVG(t, buf.Bytes()) {
			if len(p) != len(c.Panels[i].Bars) {
				t.Fatalf("%s panel %d: %d bars, want %d", c.Title, i, len(p), len(c.Panels[i].Bars))
			}
		}
	}
	for _, f := range []string{codecChart, rpcChart} {
		if !bytes.Contains(md, []byte("]("+f+")")) {
			t.Errorf("RESULTS.md does not link %s", f)
		}
	}
}

// TestChartsOnly redraws the charts of a report file without measuring.
func TestChartsOnly(t *testing.T) {
	t.Parallel()
	r, arms := sampleResults()
	var md bytes.Buffer
	report(&md, Config{BenchReps: 1, Reps: 1, Workers: 16, GOGC: 100}, r, arms, "0 0 0", "0 0 0", time.Second)
	dir := t.TempDir()
	out := filepath.Join(dir, "RESULTS.md")
	if err := os.WriteFile(out, md.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(Config{Out: out, ChartsOnly: true}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{codecChart, rpcChart} {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		if len(readSVG(t, b)) == 0 {
			t.Errorf("%s: no panels", f)
		}
	}
	if b, _ := os.ReadFile(out); !bytes.Equal(b, md.Bytes()) {
		t.Error("-charts-only changed RESULTS.md")
	}
}

func TestThousands(t *testing.T) {
	t.Parallel()
	for x, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 351891.4: "351,891", 1234567: "1,234,567", -4500: "-4,500"} {
		if got := thousands(x); got != want {
			t.Errorf("thousands(%v) = %q, want %q", x, got, want)
		}
	}
}

// TestCommittedChartsCurrent: the committed charts are the ones the
// committed RESULTS.md's tables draw, so that a rerun that rewrites the
// tables cannot leave old pictures behind.
func TestCommittedChartsCurrent(t *testing.T) {
	t.Parallel()
	results := filepath.Join("..", "..", "..", "RESULTS.md")
	md, err := os.ReadFile(results)
	if err != nil {
		t.Fatal(err)
	}
	r, arms, err := parseReport(md)
	if err != nil {
		t.Fatal(err)
	}
	codecs, rpc := charts(r, arms)
	for _, c := range []struct {
		file  string
		chart *barChart
	}{{codecChart, codecs}, {rpcChart, rpc}} {
		var want bytes.Buffer
		if err := c.chart.writeSVG(&want); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(filepath.Dir(results), filepath.FromSlash(c.file)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("examples/%s is not what examples/RESULTS.md's tables draw: run cd examples/compare && go run ./cmd/results -charts-only", c.file)
		}
	}
}
