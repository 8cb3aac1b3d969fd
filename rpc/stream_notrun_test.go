package rpc

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// A server going away refuses an open it reads after its go-away with an
// error end 503 "going away" and, just before it, a KindStreamNotRun
// frame of the stream: the handler did not run. (The text alone could
// not tell the refusal from a handler's own 503 "going away", which ran.)
func TestStreamGoingAwayRefusalMarkedNotRun(t *testing.T) {
	s, addr, _ := streamServer(t, WithShutdownGrace(time.Hour))
	rc := rawDial(t, addr)
	serverConnOf(t, s) // Shutdown tells the connections it has
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	if kind, _, ok := rc.recv(); !ok || kind != wire.KindGoAway {
		t.Fatalf("frame kind %d ok %v, want a go-away", kind, ok)
	}
	rc.open(sEcho, 7, "late", nil)
	kind, body, ok := rc.recv()
	if !ok || kind != wire.KindStreamNotRun || len(body) != 4 || binary.LittleEndian.Uint32(body) != 7 {
		t.Fatalf("frame kind %d (%x) ok %v, want the not-run mark of stream 7", kind, body, ok)
	}
	e := rc.recvEnd()
	if e.ID != 7 || e.Status != StatusUnavailable || string(e.Message) != streamGoingAway {
		t.Fatalf("end %d %d %q, want stream 7's 503 %q", e.ID, e.Status, e.Message, streamGoingAway)
	}
	rc.Close()
	if err := receive(t, "Shutdown to return", shut); err != nil {
		t.Fatal(err)
	}
}

// A client takes an error end 503 that follows the not-run mark of its
// stream for the refusal of an open read after the go-away: Recv's error
// matches ErrGoAway and is retryable, as a unary call's 503 with the
// not-run flag is. The same end without the mark (a handler's own 503
// "going away"), or after the mark of another stream, is a plain 503.
func TestStreamNotRunEndIsGoAway(t *testing.T) {
	c, peer := pipeClient(t)
	go io.Copy(io.Discard, peer)
	for _, tc := range []struct {
		name   string
		mark   int // 0: none, 1: this stream's, 2: another stream's
		goAway bool
	}{
		{"marked", 1, true},
		{"not marked", 0, false},
		{"another stream's mark", 2, false},
	} {
		st, err := c.OpenStream(context.Background(), 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		switch tc.mark {
		case 1:
			peer.send(wire.KindStreamNotRun, wire.AppendStreamNotRun(nil, st.ID()))
		case 2:
			peer.send(wire.KindStreamNotRun, wire.AppendStreamNotRun(nil, st.ID()+2))
		}
		peer.send(wire.KindStreamEnd, wire.AppendStreamEndError(nil, st.ID(), StatusUnavailable, "going away"))
		_, err = st.Recv(nil)
		if Code(err) != StatusUnavailable {
			t.Fatalf("%s: Recv: %v, want the 503", tc.name, err)
		}
		if got := errors.Is(err, ErrGoAway); got != tc.goAway || IsRetryable(err) != tc.goAway {
			t.Fatalf("%s: errors.Is(%v, ErrGoAway) = %v, IsRetryable %v; want %v", tc.name, err, got, IsRetryable(err), tc.goAway)
		}
	}
}

// Every open the server refuses without running its handler for a reason
// a unary call is refused with the not-run flag gets the not-run mark
// just before its end: 431 (metadata over the limit) and 504 (the
// deadline passed before the handler could run), as the 503 of a server
// going away does (TestStreamGoingAwayRefusalMarkedNotRun). Refusals a
// unary call gets without the flag (400, 404) get no mark either.
func TestStreamUnrunRefusalsMarkedNotRun(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status uint32
		marked bool
		drive  func(t *testing.T) *rawConn // sends the open of stream 1
	}{{
		name: "metadata over the limit: 431", status: StatusMetadataTooLarge, marked: true,
		drive: func(t *testing.T) *rawConn {
			_, addr, _ := streamServer(t, WithMaxMetadata(16))
			rc := rawDial(t, addr)
			rc.open(sEcho, 1, "abcd", metadataPair("k", strings.Repeat("v", 32)))
			return rc
		},
	}, {
		name: "deadline passed before the handler could run: 504", status: StatusDeadlineExceeded, marked: true,
		drive: func(t *testing.T) *rawConn {
			s, addr, _ := streamServer(t)
			rc := rawDial(t, addr)
			openPastDeadline(t, s, rc, sEcho)
			return rc
		},
	}, {
		name: "malformed metadata: 400", status: StatusBadRequest,
		drive: func(t *testing.T) *rawConn {
			_, addr, _ := streamServer(t)
			rc := rawDial(t, addr)
			rc.open(sEcho, 1, "abcd", []byte{9, 0, 0, 0})
			return rc
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			rc := tc.drive(t)
			rc.SetReadDeadline(time.Now().Add(30 * time.Second)) // a broken test must not hang
			kind, body, ok := rc.recv()
			if tc.marked {
				if !ok || kind != wire.KindStreamNotRun || len(body) != 4 || binary.LittleEndian.Uint32(body) != 1 {
					t.Fatalf("frame kind %d (%x) ok %v, want the not-run mark of stream 1", kind, body, ok)
				}
				kind, body, ok = rc.recv()
			}
			if !ok || kind != wire.KindStreamEnd {
				t.Fatalf("frame kind %d (%x) ok %v, want the end of stream 1", kind, body, ok)
			}
			if e, err := wire.ParseStreamEnd(body); err != nil || e.ID != 1 || e.Status != tc.status {
				t.Fatalf("end %+v (%v), want stream 1's %d", e, err, tc.status)
			}
		})
	}
}

// A client gives a stream's end marked not run the meaning a unary
// call's answer with the not-run flag has, status by status: a 504 so
// marked (its deadline passed before the server could run it) matches
// context.DeadlineExceeded and is not retryable, a 431 so marked matches
// neither that nor ErrGoAway, and neither end unmarked (a handler's own)
// matches anything.
func TestStreamNotRunEndMeansAsUnary(t *testing.T) {
	c, peer := pipeClient(t)
	go io.Copy(io.Discard, peer)
	for _, tc := range []struct {
		status           uint32
		marked           bool
		deadline, goAway bool
	}{
		{StatusDeadlineExceeded, true, true, false},
		{StatusDeadlineExceeded, false, false, false},
		{StatusMetadataTooLarge, true, false, false},
		{StatusMetadataTooLarge, false, false, false},
		{StatusUnavailable, true, false, true},
	} {
		st, err := c.OpenStream(context.Background(), 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tc.marked {
			peer.send(wire.KindStreamNotRun, wire.AppendStreamNotRun(nil, st.ID()))
		}
		peer.send(wire.KindStreamEnd, wire.AppendStreamEndError(nil, st.ID(), tc.status, "refused"))
		_, err = st.Recv(nil)
		// The unary answer with the same status and flag.
		unary := newStatusError(tc.status, []byte("refused"), tc.marked)
		if Code(err) != tc.status || err.Error() != unary.Error() {
			t.Fatalf("%d marked %v: Recv: %v, want %v", tc.status, tc.marked, err, unary)
		}
		for _, target := range []struct {
			err  error
			want bool
		}{{context.DeadlineExceeded, tc.deadline}, {ErrGoAway, tc.goAway}} {
			if got := errors.Is(err, target.err); got != target.want || errors.Is(unary, target.err) != target.want {
				t.Fatalf("%d marked %v: errors.Is(%v, %v) = %v (unary: %v), want %v", tc.status, tc.marked, err, target.err, got, errors.Is(unary, target.err), target.want)
			}
		}
		if IsRetryable(err) != tc.goAway {
			t.Fatalf("%d marked %v: IsRetryable(%v) = %v, want %v", tc.status, tc.marked, err, IsRetryable(err), tc.goAway)
		}
	}
}
