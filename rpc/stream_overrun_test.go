package rpc

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// overrunServer starts a server with a small stream window whose stream
// method sSum waits for gate before it reads, then reads to the end;
// rc is a raw client connection that sent its hello and read the
// server's.
func overrunServer(t *testing.T) (s *Server, rc *rawConn, gate chan struct{}, got chan overrunResult) {
	t.Helper()
	const window = 8 << 10 // the buffer's limit is preHelloWindow, 16 KiB
	s, addr, _ := testServer(t, WithStreamWindow(window))
	gate = make(chan struct{})
	got = make(chan overrunResult, 1)
	s.HandleStream(sSum, func(ctx context.Context, init []byte, st *Stream) error {
		<-gate
		var r overrunResult
		for {
			m, err := st.Recv(nil)
			if err != nil {
				r.err, r.ctxErr = err, ctx.Err()
				got <- r
				return err
			}
			r.vals = append(r.vals, binary.LittleEndian.Uint32(m))
		}
	})
	rc = rawDial(t, addr)
	rc.send(wire.KindStreamWindow, wire.AppendStreamWindow(nil, 0, DefaultStreamWindow))
	if kind, _, ok := rc.recv(); !ok || kind != wire.KindStreamWindow {
		t.Fatalf("got frame kind %d (ok %v), want the server's hello", kind, ok)
	}
	return s, rc, gate, got
}

type overrunResult struct {
	vals   []uint32
	err    error
	ctxErr error
}

// overrunMsgs is how many messages of 100 bytes the tests send: 20,800
// bytes accounted, past the 16 KiB a stream buffers.
const overrunMsgs = 200

func sendOverrun(rc *rawConn, id uint32) {
	pad := make([]byte, 96)
	for i := range uint32(overrunMsgs) {
		rc.send(wire.KindStreamMsg, append(wire.AppendStreamMsg(nil, id, u32msg(i)), pad...))
	}
}

// A client that sent its hello keeps the windows the server gives it; one
// that goes past a stream's window anyway breaks the protocol. Its stream
// ends with an error end 400 and the handler's Recv returns the error (its
// ctx is canceled), and the connection's read loop goes on: a unary call
// sent after the flood is answered while the handler still reads nothing.
// The read loop used to wait for the handler to make room, as it does for
// a canonical client, stopping every call and stream of the connection.
func TestStreamOverrunByFlowControlledPeer(t *testing.T) {
	_, rc, gate, got := overrunServer(t)
	rc.send(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: sSum, PromiseID: 1}))
	sendOverrun(rc, 1)
	rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 7, Payload: []byte("x")}))
	type frame struct {
		kind byte
		env  []byte
		ok   bool
	}
	frames := make(chan frame, 8)
	go func() {
		for {
			kind, env, ok := rc.recv()
			frames <- frame{kind, env, ok}
			if !ok {
				return
			}
		}
	}()
	var ended, answered bool
	for !ended || !answered {
		f := receive(t, "the stream's end and the call's answer, the handler reading nothing", frames)
		if !f.ok {
			t.Fatalf("connection closed (stream ended %v, call answered %v)", ended, answered)
		}
		switch f.kind {
		case wire.KindStreamEnd:
			e, err := wire.ParseStreamEnd(f.env)
			if err != nil || e.ID != 1 || e.Status != StatusBadRequest || string(e.Message) != streamOverrunText {
				t.Fatalf("stream end %+v (%v), want stream 1 ended 400 %q", e, err, streamOverrunText)
			}
			ended = true
		case wire.KindResponse:
			r, err := wire.ParseResponse(f.env)
			if err != nil || r.PromiseID != 7 || r.Status != StatusOK {
				t.Fatalf("response %+v (%v), want promise 7 answered 200", r, err)
			}
			answered = true
		case wire.KindStreamWindow:
			// a grant: the handler reads nothing, so none is expected,
			// but a grant is no error
		default:
			t.Fatalf("frame kind %d %x", f.kind, f.env)
		}
	}
	close(gate)
	r := receive(t, "the handler's Recv", got)
	var se *StatusError
	if !errors.As(r.err, &se) || se.Code != StatusBadRequest || len(r.vals) != 0 {
		t.Fatalf("handler: %d messages, then %v; want none, then a 400", len(r.vals), r.err)
	}
	if !errors.Is(r.ctxErr, context.Canceled) {
		t.Fatalf("handler's ctx: %v, want canceled", r.ctxErr)
	}
}

// A client whose hello wait ended before the server's hello came (a slow
// round trip) takes the server for a canonical one and sends past the
// window, after a no-window notice: the server then takes the flood as a
// canonical client's, as before (its read loop waits for room), and
// every message arrives in order.
func TestStreamOverrunAfterNoWindowNotice(t *testing.T) {
	s, rc, gate, got := overrunServer(t)
	rc.send(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: sSum, PromiseID: 1}))
	rc.send(wire.KindStreamWindow, wire.AppendStreamNoWindow(nil))
	go func() {
		sendOverrun(rc, 1)
		rc.send(wire.KindStreamEnd, wire.AppendStreamEnd(nil, 1))
	}()
	await(t, "the server's read loop to wait for room", func() bool { return s.streamStalls() > 0 })
	close(gate)
	r := receive(t, "the handler's messages", got)
	if len(r.vals) != overrunMsgs || !errors.Is(r.err, io.EOF) {
		t.Fatalf("handler: %d messages, then %v; want %d, then io.EOF", len(r.vals), r.err, overrunMsgs)
	}
	for i, v := range r.vals {
		if v != uint32(i) {
			t.Fatalf("message %d is %d", i, v)
		}
	}
}
