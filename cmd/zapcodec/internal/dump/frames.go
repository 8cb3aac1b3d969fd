package dump

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/zapcodec/zapcodec/codec/schema"
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

// maxPingPayload is the most bytes a ping carries (docs/wire.md §8): a
// peer closes the connection on a longer one.
const maxPingPayload = 8

// frame dumps one canonical frame's kind and body (at base): the envelope
// of a request, response or stream open, the stream frames, and the
// kinds of zapcodec's own extensions (go-away, ping, pong, window,
// trailer, not run, cancel).
func (d *dumper) frame(kind byte, body []byte, base int) {
	switch kind {
	case wire.KindRequest:
		d.request("  ", body, base, "request")
	case wire.KindResponse:
		d.response("  ", body, base)
	case wire.KindStreamOpen:
		d.request("  ", body, base, "stream-open")
	case wire.KindStreamMsg:
		id, msg, err := wire.ParseStreamMsg(body)
		if err != nil {
			d.streamShort("stream-message", body, base)
			return
		}
		d.streamMessage(id, msg, base+wire.StreamMsgOverhead)
	case wire.KindStreamEnd:
		e, err := wire.ParseStreamEnd(body)
		if err != nil {
			d.streamShort("stream-end", body, base)
			return
		}
		if e.Status == 0 {
			d.printf("stream-end, stream %d\n", e.ID)
			return
		}
		d.printf("stream-end, stream %d, error: status %d %s, %s\n", e.ID, e.Status, statusText(e.Status), strconv.Quote(string(e.Message)))
	case wire.KindStreamWindow:
		id, n, ok := wire.ParseStreamWindow(body)
		switch {
		case !ok:
			d.printf("stream-window, %d bytes (not 8: a reader ignores it)\n", len(body))
		case id == 0:
			d.printf("stream-window hello: the sender does flow control, %d bytes of window per stream\n", n)
		default:
			d.printf("stream-window, stream %d, grants %d bytes\n", id, n)
		}
	case wire.KindStreamTrailer:
		id, md, err := wire.ParseStreamTrailer(body)
		if err != nil {
			d.streamShort("stream-trailer", body, base)
			return
		}
		d.printf("stream-trailer, stream %d, %d bytes\n", id, len(md))
		d.metadata("  ", md, base+wire.StreamMsgOverhead, "a zapcodec client that asked fails the stream's end with rpc.ErrResponseMetadata")
	case wire.KindStreamNotRun:
		id, err := wire.ParseStreamNotRun(body)
		if err != nil {
			d.streamShort("stream-not-run", body, base)
			return
		}
		d.printf("stream-not-run, stream %d: the error end that follows refuses an open the server did not run\n", id)
	case wire.KindCancel:
		pid, ok := wire.ParseCancel(body)
		switch {
		case !ok:
			d.printf("cancel, %d bytes (shorter than a promise id: a reader ignores it)\n", len(body))
		case pid == 0:
			d.printf("cancel, promise 0: the server takes cancels (its answer to the ping %q)\n", wire.CancelQuestion)
		default:
			d.printf("cancel, promise %d: the caller no longer wants the answer; the handler's ctx ends\n", pid)
		}
	case wire.KindGoAway:
		d.printf("go-away, %d bytes\n", len(body))
	case wire.KindPing:
		if string(body) == wire.CancelQuestion {
			d.printf("ping, %d bytes: %s (%q: does the server take cancels?)\n", len(body), hexShort(body), wire.CancelQuestion)
		} else {
			d.printf("ping, %d bytes: %s\n", len(body), hexShort(body))
		}
		if len(body) > maxPingPayload {
			d.fail("  ", base, "ping: %d bytes of payload, over the %d a ping may carry: a protocol error that closes the connection", len(body), maxPingPayload)
		}
	case wire.KindPong:
		over := ""
		if len(body) > maxPingPayload {
			over = fmt.Sprintf(" (over the %d a ping may carry: it answers no ping)", maxPingPayload)
		}
		d.printf("pong, %d bytes%s: %s\n", len(body), over, hexShort(body))
	default:
		d.printf("kind %d (unknown: skipped), %d bytes\n", kind, len(body))
	}
}

// streamShort lists a stream frame whose body is shorter than its id.
func (d *dumper) streamShort(name string, body []byte, base int) {
	d.printf("%s, %d bytes\n", name, len(body))
	d.fail("  ", base, "%s: stream id truncated: need %d bytes, have %d", name, wire.StreamMsgOverhead, len(body))
}

// streamMessage dumps a stream message (at base) and, with a schema, the
// record it carries: the Target's struct, or the message type of the
// stream's method (the stream-open seen for its id, else a method
// Target).
func (d *dumper) streamMessage(id uint32, msg []byte, base int) {
	t := d.opts.Target
	m := d.streams[id]
	if m == nil {
		m = t.Method
	}
	mname := ""
	if m != nil && t.Struct == nil {
		mname = " (" + t.Interface.Name + "." + m.Name + ")"
	}
	d.printf("stream-message, stream %d%s, message %d bytes\n", id, mname, len(msg))
	if len(msg) == 0 || t.none() {
		return
	}
	st := t.Struct
	if st == nil {
		if m == nil {
			d.printf("  message not decoded: no stream-open seen for stream %d and -type names no method\n", id)
			return
		}
		var why string
		if st, why = streamStruct(m); st == nil {
			d.printf("  message not decoded: %s\n", why)
			return
		}
	}
	d.show("  ", msg, base, st)
}

// streamStruct returns the struct of the stream messages of method m, or
// why it cannot tell: the server's messages are its response (a stream of
// them, or the one response of a client stream), the client's are its
// request when the request is a stream, and a frame does not say which
// way it went.
func streamStruct(m *schema.Method) (*schema.Struct, string) {
	var fromClient *schema.Struct
	if m.ReqStream {
		fromClient = m.Req
	}
	switch {
	case fromClient == nil && m.Resp == nil:
		return nil, "method " + m.Name + " streams no messages"
	case fromClient == nil:
		return m.Resp, ""
	case m.Resp == nil || m.Resp == fromClient:
		return fromClient, ""
	}
	return nil, fmt.Sprintf("method %s streams %s from the client and %s from the server, and a frame does not say which way it went: give -type the struct",
		m.Name, fromClient.Name, m.Resp.Name)
}
