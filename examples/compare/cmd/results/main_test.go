package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunQuick runs the whole command with tiny durations into a temp file
// and checks the report's sections and that hand-written notes survive.
// Numbers are not checked: they are measurements.
func TestRunQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every benchmark and RPC arm briefly")
	}
	out := filepath.Join(t.TempDir(), "RESULTS.md")
	notes := notesBegin + "\nkept by hand\n" + notesEnd
	if err := os.WriteFile(out, []byte("old numbers\n\n"+notes+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := Config{Out: out, BenchTime: time.Millisecond, BenchReps: 1, Reps: 1, Duration: 20 * time.Millisecond,
		Warm: 10 * time.Millisecond, Workers: 2, GOGC: 100, Progress: io.Discard}
	if err := run(c); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{"| cpu |", "GOMAXPROCS", "go run ./cmd/results", "## Codecs", "| zapcodec |",
		"| flatbuffers |", "## RPC", "| zapcodec rpc |", "| floor: raw echo, 1 conn |", "## Expectations", notes} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(s, "old numbers") {
		t.Error("old report text survived outside the notes")
	}
	// The charts are written beside the report, which links them.
	for _, f := range []string{codecChart, rpcChart} {
		svg, err := os.ReadFile(filepath.Join(filepath.Dir(out), filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		if len(readSVG(t, svg)) == 0 {
			t.Errorf("%s has no panels", f)
		}
		if !strings.Contains(s, "]("+f+")") {
			t.Errorf("report does not link %s", f)
		}
	}
}

// TestReportFastestNamesFloor: each fastest-codec row of the expectations
// says that the hand-written floor is left out and gives the floor's time,
// so a reader sees what "fastest" is measured against.
func TestReportFastestNamesFloor(t *testing.T) {
	r := &codecResults{names: []string{zap, "msgp", floor}, cells: map[string]map[string]cell{},
		req: map[string]int{}, resp: map[string]int{}}
	for i, op := range []string{"DecodeRequest", "DecodeResponse", "EncodeRequest", "EncodeResponse", "Handler"} {
		r.cells[op] = map[string]cell{zap: {ns: 20}, "msgp": {ns: 40}, floor: {ns: 10 + float64(i)}}
	}
	var b strings.Builder
	report(&b, Config{BenchReps: 1, Reps: 1}, r, nil, "", "", 0)
	n := 0
	for _, line := range strings.Split(b.String(), "\n") {
		if !strings.Contains(line, "fastest codec") {
			continue
		}
		op := strings.TrimSpace(strings.Split(strings.SplitN(line, ":", 2)[1], "|")[0])
		want := fmtNS(r.cells[op][floor].ns)
		if !strings.Contains(line, "floor aside") || !strings.Contains(line, "`"+floor+"`, "+want) {
			t.Errorf("row does not name the floor and its %s: %s", want, line)
		}
		n++
	}
	if n != 5 {
		t.Errorf("%d fastest-codec rows, want 5:\n%s", n, b.String())
	}
}

// TestReportPeersAtTheirBest: the expectations against fasthttp and gRPC
// are held against the faster of each one's two arms (fasthttp with a
// connection per worker and pipelined over one; gRPC's server with and
// without stream workers), whichever that is, and name it.
func TestReportPeersAtTheirBest(t *testing.T) {
	r := &codecResults{names: []string{zap}, cells: map[string]map[string]cell{}, req: map[string]int{}, resp: map[string]int{}}
	for _, op := range []string{"DecodeRequest", "DecodeResponse", "EncodeRequest", "EncodeResponse", "Handler"} {
		r.cells[op] = map[string]cell{zap: {ns: 20}}
	}
	for _, peer := range []struct {
		row  string // what the expectation's row contains
		a, b string // the peer's two arms
	}{
		{row: "1.5× fasthttp", a: fasthttpArm, b: fasthttpPipelinedArm},
		{row: "3× gRPC-go", a: grpcArm, b: grpcWorkersArm},
	} {
		for _, tc := range []struct {
			a, b float64
			want string
		}{
			{100, 125, "| 4.00× (500 vs " + peer.b + ", 125 calls/s) | **met** |"},
			{400, 125, "| 1.25× (500 vs " + peer.a + ", 400 calls/s) | **MISSED** |"},
		} {
			arms := []armResult{{name: "zapcodec rpc", perSec: 500}, {name: peer.a, perSec: tc.a}, {name: peer.b, perSec: tc.b}}
			var b strings.Builder
			report(&b, Config{BenchReps: 1, Reps: 1}, r, arms, "", "", 0)
			var row string
			for _, line := range strings.Split(b.String(), "\n") {
				if strings.Contains(line, peer.row) {
					row = line
				}
			}
			if !strings.Contains(row, tc.want) {
				t.Errorf("%s at %v, %s at %v calls/s: row %q, want it to end %q", peer.a, tc.a, peer.b, tc.b, row, tc.want)
			}
		}
	}
}
