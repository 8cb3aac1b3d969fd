package dump

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"

	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// maxFrame is the largest frame dump accepts: the canonical runtime
// refuses frames over 64 MiB (docs/wire.md §7).
const maxFrame = 64 << 20

// frames dumps data as a stream of transport frames, read with
// frame.Reader. guessed says the input was read as frames only because it
// does not start with a message.
func (d *dumper) frames(data []byte, guessed bool) {
	opts := []frame.Option{frame.WithMaxFrameSize(maxFrame)}
	if d.opts.HTTP {
		opts = append(opts, frame.WithHTTPFraming())
	}
	r := frame.NewReader(bytes.NewReader(data), opts...)
	for n, off := 0, 0; ; n++ {
		kind, payload, err := r.Next()
		if err != nil {
			if err != io.EOF {
				d.frameError(data, off, n, guessed, err)
			}
			return
		}
		if d.opts.HTTP {
			d.printf("frame %d @%d: http, %d bytes\n", n, off, len(payload))
			if len(payload) > 0 {
				d.one("  ", payload, off+4)
			}
			off += 4 + len(payload)
			continue
		}
		d.printf("frame %d @%d: ", n, off)
		d.frame(kind, payload, off+5)
		off += 5 + len(payload)
	}
}

// frameError lists why frame n, at off of data, could not be read: err is
// frame.Reader's. The length prefix is read here only to name it.
func (d *dumper) frameError(data []byte, off, n int, guessed bool, err error) {
	rest := len(data) - off
	if rest < 4 {
		d.fail("", off, "frame %d: length prefix truncated: need 4 bytes, have %d%s", n, rest, guessHint(guessed, n))
		return
	}
	l := binary.LittleEndian.Uint32(data[off:])
	if d.opts.HTTP {
		l = binary.BigEndian.Uint32(data[off:])
	}
	switch {
	case errors.Is(err, frame.ErrEmptyFrame):
		d.fail("", off, "frame %d: length 0, expected at least 1 (the kind byte)%s", n, guessHint(guessed, n))
	case errors.Is(err, frame.ErrFrameTooLarge):
		d.fail("", off, "frame %d: length %d exceeds the 64 MiB frame limit%s", n, l, guessHint(guessed, n))
	case errors.Is(err, io.ErrUnexpectedEOF):
		d.fail("", off, "frame %d: length %d passes the end of the input (%d bytes left after the prefix)%s", n, l, rest-4, guessHint(guessed, n))
	default:
		d.fail("", off, "frame %d: %v", n, err)
	}
}

func guessHint(guessed bool, n int) string {
	if guessed && n == 0 {
		return ` (the input does not start with "ZAP\x00", so it was read as frames)`
	}
	return ""
}

// frame dumps one canonical frame's kind and envelope (at base).
func (d *dumper) frame(kind byte, env []byte, base int) {
	switch kind {
	case wire.KindRequest:
		d.request("  ", env, base, "request")
	case wire.KindResponse:
		d.response("  ", env, base)
	case 3:
		d.request("  ", env, base, "stream-open")
	case 4, 5:
		name := "stream-message"
		if kind == 5 {
			name = "stream-end"
		}
		if len(env) < 4 {
			d.printf("%s, %d bytes\n", name, len(env))
			d.fail("  ", base, "%s: stream id truncated: need 4 bytes, have %d", name, len(env))
			return
		}
		msg := env[4:]
		if kind == wire.KindStreamEnd && len(msg) > 0 {
			// A zapcodec error end: status and text after the id.
			e, _ := wire.ParseStreamEnd(env)
			d.printf("%s, stream %d, error end: status %d %q\n", name, e.ID, e.Status, e.Message)
			return
		}
		d.printf("%s, stream %d, message %d bytes\n", name, binary.LittleEndian.Uint32(env), len(msg))
		if len(msg) > 0 && d.opts.Target.Struct != nil {
			d.show("  ", msg, base+4, d.opts.Target.Struct)
		}
	case wire.KindGoAway:
		d.printf("go-away, %d bytes\n", len(env))
	case wire.KindStreamWindow:
		id, n, ok := wire.ParseStreamWindow(env)
		switch {
		case !ok:
			d.printf("stream-window, %d bytes (not 8: skipped)\n", len(env))
		case id == 0:
			d.printf("stream-hello, window %d bytes\n", n)
		default:
			d.printf("stream-window, stream %d, grants %d bytes\n", id, n)
		}
	default:
		d.printf("kind %d (unknown: skipped), %d bytes\n", kind, len(env))
	}
}
