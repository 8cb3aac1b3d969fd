package frame

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"github.com/zapcodec/zapcodec/internal/fixture"
	"io"
	"os"
	"path/filepath"
	"testing"
)

type rpcFixtureFrame struct {
	Name string `json:"name"`
	Dir  int    `json:"dir"`
	Hex  string `json:"hex"`
}

func loadFixtureFrames(t testing.TB) []rpcFixtureFrame {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(fixture.Dir(t), "fixtures", "rpc.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Frames []rpcFixtureFrame `json:"frames"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Frames) == 0 {
		t.Fatal("rpc.json has no frames")
	}
	return f.Frames
}

func TestGoldenFixtureFrames(t *testing.T) {
	t.Parallel()
	for _, fx := range loadFixtureFrames(t) {
		t.Run(fx.Name, func(t *testing.T) {
			want, err := hex.DecodeString(fx.Hex)
			if err != nil {
				t.Fatal(err)
			}
			if len(want) < 5 {
				t.Fatalf("fixture frame too short: %d bytes", len(want))
			}
			kind, envelope := want[4], want[5:]
			if int(kind) != fx.Dir {
				t.Fatalf("fixture kind byte %d, dir field %d", kind, fx.Dir)
			}

			// Writing the envelope gives the fixture bytes, by both paths.
			var out bytes.Buffer
			w := NewWriter(&out)
			if err := w.WriteFrame(kind, envelope); err != nil {
				t.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Fatalf("WriteFrame:\n got %x\nwant %x", out.Bytes(), want)
			}
			out.Reset()
			buf := w.Begin(kind)
			buf = append(buf, envelope...)
			if err := w.End(buf); err != nil {
				t.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Fatalf("Begin/End:\n got %x\nwant %x", out.Bytes(), want)
			}

			// Reading the fixture bytes gives kind and envelope, then io.EOF.
			r := NewReader(bytes.NewReader(want))
			k, p, err := r.Next()
			if err != nil {
				t.Fatal(err)
			}
			if k != kind || !bytes.Equal(p, envelope) {
				t.Fatalf("Next = %d %x, want %d %x", k, p, kind, envelope)
			}
			if _, _, err := r.Next(); err != io.EOF {
				t.Fatalf("after the frame: %v, want io.EOF", err)
			}
		})
	}
}
