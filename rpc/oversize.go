package rpc

import (
	"encoding/binary"
	"fmt"

	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// A frame over the receiver's maximum frame size fails alone: both read
// loops set their Reader to read past such a frame
// (frame.Reader.DiscardTooLarge), which returns its kind and the first
// oversizeHead bytes of its envelope, where the promise id (or stream
// id) lies, and drops the rest as it arrives, holding no more than a
// busy stream's read-ahead; the read deadlines bound it as any frame.
// A server answers a request so with 413 (StatusTooLarge, not run),
// refuses a stream open so the same, and ends the stream of a message
// so; a client fails the call of an answer so, cancels the stream of
// a message so, ends with the error the stream of a trailer so, and ends
// the stream of an error end so with its status and the start of its
// text. A frame of a kind that carries no promise or stream id
// (a ping, a cancel, a go-away...) or whose envelope's head does not
// say its promise id still closes the connection, as a length beyond
// frame.DiscardLimit (64 MiB, or four times the maximum if more) does.

// oversizeHead is how many bytes of a frame's envelope over the maximum
// the read loops look at: the 16-byte message header and the root's
// first 8 bytes need 24 where the root lies right after the header (as
// every writer of the wire puts it); 64 leaves room for a root a little
// further on.
const oversizeHead = 64

// requestTooLarge is the text of the 413 that refuses a request (or a
// stream open, or ends a stream for a message) over the server's
// maximum frame size.
func requestTooLarge(tl *frame.TooLargeError, what string) string {
	return fmt.Sprintf("rpc: %s too large for the server's maximum frame size (len:%d max:%d): raise it (WithFrameOptions(frame.WithMaxFrameSize(n)) on both sides) or send the payload in parts (a stream)",
		what, tl.Len, tl.Max)
}

// oversized handles, in the server's read loop, a frame over the maximum
// frame size that the Reader read past (tl; head, the first bytes of its
// envelope): a request is answered 413 (not run), a stream open refused
// 413, a stream message ends its stream 413; an answer or a kind
// unknown to the server is ignored, as it would be within the limit.
// Any other frame closes the connection, as one whose promise id cannot
// be read does. It reports whether the read loop goes on.
func (c *serverConn) oversized(tl *frame.TooLargeError, head []byte) bool {
	c.local.bytesIn += uint64(len(head) + 5) // what was looked at, as for any frame (the rest is dropped)
	switch tl.Kind {
	case wire.KindRequest, wire.KindStreamOpen:
		method, pid, ok := wire.PeekEnvelope(head)
		if !ok {
			break
		}
		c.active = true
		req := wire.Request{Method: method, PromiseID: pid}
		if tl.Kind == wire.KindStreamOpen {
			return c.streamRefuse(&req, StatusTooLarge, requestTooLarge(tl, "stream open"), true, true)
		}
		c.local.calls++
		c.hold()
		c.promiseFailed(pid)
		c.answerDirect(&req, StatusTooLarge, requestTooLarge(tl, "request"), true)
		return !c.closed.Load()
	case wire.KindStreamMsg:
		if len(head) < 4 {
			break
		}
		c.streamFailed(binary.LittleEndian.Uint32(head), &StatusError{Code: StatusTooLarge, Message: requestTooLarge(tl, "stream message")})
		return true
	case wire.KindResponse:
		return true // a server takes no answers
	case wire.KindGoAway, wire.KindPing, wire.KindPong, wire.KindCancel, wire.KindStreamEnd,
		wire.KindStreamWindow, wire.KindStreamTrailer, wire.KindStreamNotRun:
	default:
		return true // a kind it does not know: ignored (docs/wire.md §7)
	}
	c.publish()
	c.close(fmt.Errorf("read: %w", unrefusable(tl, "server")))
	return false
}

// unrefusable is the error that closes a connection for a frame over
// the maximum frame size (tl) that names no call or stream who (the
// server or the client) can fail alone: it matches
// frame.ErrFrameTooLarge, and says the frame's length, the maximum and
// its kind.
func unrefusable(tl *frame.TooLargeError, who string) error {
	return fmt.Errorf("%w (len:%d max:%d), of kind %d, which names no call or stream the %s could fail alone",
		frame.ErrFrameTooLarge, tl.Len, tl.Max, tl.Kind, who)
}

// answerTooLarge is the error of a call whose answer (or of a stream
// whose message) was over the client's maximum frame size: it matches
// frame.ErrFrameTooLarge ([Code]: 413, gRPC's ResourceExhausted) and
// says what to change.
func answerTooLarge(tl *frame.TooLargeError, what string) error {
	return fmt.Errorf("rpc: %s over the client's maximum frame size (raise it with WithFrameOptions(frame.WithMaxFrameSize(n)), or send the result in parts, a stream); the connection goes on: %w", what, tl)
}

// oversized handles, in the client's read loop, a frame over the
// maximum frame size that the Reader read past (tl; head, the first
// bytes of its envelope): an answer fails its call alone, a stream
// message cancels its stream (the server's handler sees a cancel, the
// caller's Recv and Send the error), a stream's trailer makes the
// stream's end fail with the error (a caller that asked for no response
// metadata loses nothing: the stream ends as it would have), an error
// end ends its stream with its status and the start of its text, and a kind
// unknown to the client is ignored. It reports false for any other frame, and for an answer
// whose promise id the head does not say: the read loop then fails the
// connection (its calls get an error matching ErrClosed and
// frame.ErrFrameTooLarge, see unrefusable).
func (c *Client) oversized(tl *frame.TooLargeError, head []byte) bool {
	switch tl.Kind {
	case wire.KindResponse:
		_, pid, ok := wire.PeekEnvelope(head)
		if !ok {
			return false
		}
		c.deliverErr(pid, answerTooLarge(tl, "answer"))
		return true
	case wire.KindStreamMsg:
		if len(head) < 4 {
			return false
		}
		if st := c.streams.lookup(binary.LittleEndian.Uint32(head)); st != nil {
			err := answerTooLarge(tl, "stream message")
			// The receive side ends here, in the read loop, before the
			// stream's next frame is read: a message after the lost one
			// is dropped, never returned by Recv as if it were the next.
			st.mu.Lock()
			if !st.rdone {
				st.rdone, st.rerr = true, err
				st.q, st.qh, st.qBytes = putQueue(st.q), 0, 0
				st.cond.Broadcast()
			}
			st.mu.Unlock()
			// The cancel on a goroutine: its end may wait for room in
			// the outbox, and the read loop must not.
			go st.clientCancel(noCtx, err)
		}
		return true
	case wire.KindStreamTrailer:
		// Response metadata within the server's metadata limit but past
		// our frame limit: the stream's end, which follows, fails with
		// the error (as a refused trailer does); nothing for a caller
		// that asked for no metadata, or a stream not open.
		if len(head) < 4 {
			return false
		}
		c.streams.onTrailerTooLarge(binary.LittleEndian.Uint32(head), answerTooLarge(tl, "stream trailer"))
		return true
	case wire.KindStreamEnd:
		// An error end whose text is past our frame limit: the stream
		// ends with its status and the start of its text.
		return c.streams.onClientEndTooLarge(tl, head)
	case wire.KindRequest, wire.KindGoAway, wire.KindPing, wire.KindPong, wire.KindCancel, wire.KindStreamOpen,
		wire.KindStreamWindow, wire.KindStreamNotRun:
		return false
	}
	return true // a kind it does not know: ignored (docs/wire.md §7)
}
