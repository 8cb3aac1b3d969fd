package dump

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// The stream frames zapcodec adds: an error end, the hello and a grant.
func TestStreamExtensionFrames(t *testing.T) {
	frame := func(kind byte, body []byte) []byte {
		return append(binary.LittleEndian.AppendUint32(nil, uint32(len(body)+1)), append([]byte{kind}, body...)...)
	}
	in := bytes.Join([][]byte{
		frame(wire.KindStreamWindow, wire.AppendStreamWindow(nil, 0, 65536)),
		frame(wire.KindStreamWindow, wire.AppendStreamWindow(nil, 3, 32768)),
		frame(wire.KindStreamEnd, wire.AppendStreamEnd(nil, 3)),
		frame(wire.KindStreamEnd, wire.AppendStreamEndError(nil, 5, 503, "going away")),
	}, nil)
	var out bytes.Buffer
	if _, err := Write(&out, in, Options{Raw: true, Frames: true}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"stream-hello, window 65536 bytes",
		"stream-window, stream 3, grants 32768 bytes",
		"stream-end, stream 3, message 0 bytes",
		`stream-end, stream 5, error end: status 503 "going away"`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in:\n%s", want, out.String())
		}
	}
}
