//go:build amd64 || arm64

// The sizes below are int constants past 2 GiB: 64-bit platforms only.

package codec_test

import (
	"errors"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
	"github.com/zapcodec/zapcodec/internal/bigbuf"
)

// The Builder keeps positions in 32 bits. A message that starts beyond 2
// GiB in its buffer (after 2 GiB of other messages) must still come out
// right: the position of its text slot, counted from the start of the
// buffer, was negative as an int32 and taken for a slot set empty since,
// so the value's offset went to bytes just before the message and its own
// slot stayed null, with no error. A message that grows past 2 GiB cannot
// be built right and must be reported as misuse (a text slot beyond 2 GiB
// was patched at the wrong place too, and Err said nothing below 4 GiB).
// The buffers are mapped address space (internal/bigbuf), and the 2 GiB
// a list element holds are never written (EndElement takes them as the
// element's bytes), so the test touches a few pages.
func TestBuilderPast2GiB(t *testing.T) {
	const gib = 1 << 30
	space := bigbuf.New(t, 3*gib)
	build := func(dst []byte, bulk int) ([]byte, error) {
		var b codec.Builder
		b.Reset(dst)
		o := b.StartObject(16)
		if bulk > 0 {
			l := b.StartList(0)
			buf := l.BeginElement()
			l.EndElement(buf[:len(buf)+bulk])
			o.SetList(0, l.Finish())
		}
		c := b.StartObject(16) // after the bulk: beyond 2 GiB with it
		c.SetUint32(0, 7)
		c.SetText(8, "zap")
		o.SetObject(8, c.Finish())
		b.SetRoot(o.Finish())
		out := b.Finish()
		return out[len(dst):], b.Err()
	}
	t.Run("message beyond 2 GiB in its buffer", func(t *testing.T) {
		msg, err := build(space[:2*gib+8], 0)
		if err != nil {
			t.Fatal(err)
		}
		m, err := codec.Parse(msg)
		if err != nil {
			t.Fatal(err)
		}
		c := m.Root().Object(8)
		if c.Uint32(0) != 7 || c.Text(8) != "zap" {
			t.Fatalf("nested object reads %d %q, want 7 \"zap\"", c.Uint32(0), c.Text(8))
		}
	})
	t.Run("message past 2 GiB", func(t *testing.T) {
		if _, err := build(space[:0], 2*gib); !errors.Is(err, codec.ErrBuilder) {
			t.Fatalf("Err = %v, want ErrBuilder", err)
		}
	})
}
