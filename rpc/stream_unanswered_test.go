package rpc

import (
	"context"
	"encoding/binary"
	"net"
	"testing"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// An open the server refuses without answering it (no end may name its
// id: see streamUnanswered) is seen by the stream observer as a refused
// open is, a start and at once the end with the refusal's status, and
// counted in Stats().Streams.Refused. It reaches no handler, and the
// stream already running on the connection (id 1) and a unary call after
// it go on untouched: the peer, a zapcodec one (it sent its hello, so a
// refusal would be written to it), reads no end before the running
// stream's echo and the call's answer, and the running stream then ends
// cleanly.
func TestStreamUnansweredOpens(t *testing.T) {
	for _, tc := range []struct {
		name string
		open []byte // the open's envelope
		want []wantStreamEvent
	}{{
		name: "stream id 0: 400",
		open: wire.AppendRequest(nil, &wire.Request{Method: sEcho, PromiseID: 0, Payload: []byte("ab")}),
		want: refused(sEcho, 0, StatusBadRequest, 2),
	}, {
		// Id 0 comes first: without it, a 404 end naming id 0.
		name: "stream id 0, unknown method: 400",
		open: wire.AppendRequest(nil, &wire.Request{Method: 99, PromiseID: 0, Payload: []byte("abc")}),
		want: refused(99, 0, StatusBadRequest, 3),
	}, {
		name: "stream id 0, metadata over the limit: 400",
		open: wire.AppendRequest(nil, &wire.Request{Method: sEcho, PromiseID: 0, Payload: []byte("a"), Metadata: metadataPair("k", "0123456789abcdef0123456789abcdef")}),
		want: refused(sEcho, 0, StatusBadRequest, 1),
	}, {
		name: "stream id 0, envelope that does not parse: 400",
		open: unparsableOpen(sEcho, 0),
		want: refused(sEcho, 0, StatusBadRequest, 0),
	}, {
		// An end would end the running stream on the peer.
		name: "id of the running stream: 400",
		open: wire.AppendRequest(nil, &wire.Request{Method: sEcho, PromiseID: 1, Payload: []byte("ab")}),
		want: refused(sEcho, 1, StatusBadRequest, 2),
	}, {
		// The reuse comes before the other checks: without it, their
		// end would name the running stream.
		name: "id of the running stream, unknown method: 400",
		open: wire.AppendRequest(nil, &wire.Request{Method: 99, PromiseID: 1, Payload: []byte("abc")}),
		want: refused(99, 1, StatusBadRequest, 3),
	}, {
		name: "id of the running stream, metadata over the limit: 400",
		open: wire.AppendRequest(nil, &wire.Request{Method: sEcho, PromiseID: 1, Payload: []byte("a"), Metadata: metadataPair("k", "0123456789abcdef0123456789abcdef")}),
		want: refused(sEcho, 1, StatusBadRequest, 1),
	}, {
		name: "id of the running stream, envelope that does not parse: 400",
		open: unparsableOpen(sEcho, 1),
		want: refused(sEcho, 1, StatusBadRequest, 0),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var log streamLog
			s, addr, _ := streamServer(t, WithStreamObserver(log.observe), WithMaxMetadata(16))
			rc := rawDial(t, addr)
			peer := rc.LocalAddr().String()
			rc.send(wire.KindStreamWindow, wire.AppendStreamWindow(nil, 0, DefaultStreamWindow)) // our hello
			rc.open(sEcho, 1, "", nil)
			await(t, "the running stream's start", func() bool { return log.count() == 1 })
			rc.send(wire.KindStreamOpen, tc.open)
			rc.send(wire.KindStreamMsg, wire.AppendStreamMsg(nil, 1, []byte("still")))
			rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 7, Payload: []byte("after")}))
			// The refusal's events are reported by the read loop before
			// it reads the frames after the open: all are in once the
			// echo and the answer are read.
			for echoed, answered := false, false; !echoed || !answered; {
				kind, env, ok := rc.recv()
				if !ok {
					t.Fatal("connection closed")
				}
				switch kind {
				case wire.KindStreamEnd:
					e, err := wire.ParseStreamEnd(env)
					t.Fatalf("an end (%+v, %v) before the running stream's echo and the call's answer", e, err)
				case wire.KindStreamMsg:
					id, m, err := wire.ParseStreamMsg(env)
					if err != nil || id != 1 || string(m) != "still" {
						t.Fatalf("stream message id %d %q %v, want the running stream's echo", id, m, err)
					}
					echoed = true
				case wire.KindResponse:
					r, err := wire.ParseResponse(env)
					if err != nil || r.PromiseID != 7 || r.Status != StatusOK || string(r.Body) != "after" {
						t.Fatalf("answer %+v, %v", r, err)
					}
					answered = true
				}
			}
			evs := log.take()
			want := append([]wantStreamEvent{{method: sEcho, id: 1}}, tc.want...)
			if len(evs) != len(want) {
				t.Fatalf("%d events, want %d: %+v", len(evs), len(want), evs)
			}
			for i, w := range want {
				checkStreamEvent(t, evs[i], w, peer)
			}
			if st := s.Stats().Streams; st.Opened != 1 || st.Refused != 1 {
				t.Errorf("Stats().Streams Opened %d Refused %d, want 1 and 1", st.Opened, st.Refused)
			}
			// The running stream ends as it would have.
			rc.send(wire.KindStreamEnd, wire.AppendStreamEnd(nil, 1))
			if e := rc.recvEnd(); e.ID != 1 || e.Status != 0 {
				t.Fatalf("end %+v, want the running stream's clean end", e)
			}
			await(t, "the running stream's end event", func() bool { return log.count() == 1 })
			if ev := log.take()[0]; !ev.End || ev.ID != 1 || ev.Status != StatusOK || ev.MsgsIn != 1 || ev.MsgsOut != 1 {
				t.Errorf("end event %+v, want stream 1's clean end after one message each way", ev)
			}
		})
	}
}

// unparsableOpen is an open's envelope for method and stream id whose
// initial message's length runs past its end: the parse reads the method
// and the id, not the message.
func unparsableOpen(method, id uint32) []byte {
	env := wire.AppendRequest(nil, &wire.Request{Method: method, PromiseID: id, Payload: []byte("abc")})
	binary.LittleEndian.PutUint32(env[16+24:], 1000)
	return env
}

// closedConn returns a connection of a new server, with the tests'
// stream handlers and opts, registered as Serve registers one and then
// closed, whose read loop is not running: the caller drives its steps.
// Its peer's end of the pipe is the second result.
func closedConn(t *testing.T, opts ...ServerOption) (*serverConn, net.Conn) {
	t.Helper()
	s := NewServer(append([]ServerOption{WithLogger(discardLogger())}, opts...)...)
	registerStreamHandlers(s)
	t.Cleanup(func() { s.Close() })
	a, b := net.Pipe()
	t.Cleanup(func() { b.Close() })
	c := newServerConn(s, a, context.Background())
	s.mu.Lock() // registered as Serve does, so close can unregister it
	s.conns[c] = struct{}{}
	s.stats.active.Add(1)
	s.connWG.Add(1)
	s.mu.Unlock()
	c.close(nil)
	return c, b
}

// An open the read loop reads as its connection closes (Close, or a
// failed write, on another goroutine) is refused with 503 and no end
// (nothing more is written on the connection): the stream observer sees
// it as a refused open, Refused counts it, no handler runs, and the read
// loop stops. Over a socket the window is a scheduling gap, so the read
// loop's step is driven directly (as in
// TestWorkerSkipsCallOfDeadConnection).
func TestStreamOpenWhileClosingSeen(t *testing.T) {
	var log streamLog
	c, peer := closedConn(t, WithStreamObserver(log.observe))
	open := wire.AppendRequest(nil, &wire.Request{Method: sEcho, PromiseID: 1, Payload: []byte("late")})
	if c.streamFrame(wire.KindStreamOpen, open) {
		t.Fatal("the read loop goes on after an open read on a closed connection")
	}
	evs := log.take()
	want := refused(sEcho, 1, StatusUnavailable, 4)
	if len(evs) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(evs), len(want), evs)
	}
	for i, w := range want {
		checkStreamEvent(t, evs[i], w, peer.LocalAddr().String())
	}
	if st := c.s.Stats().Streams; st.Opened != 0 || st.Refused != 1 {
		t.Errorf("Stats().Streams Opened %d Refused %d, want 0 and 1", st.Opened, st.Refused)
	}
}
