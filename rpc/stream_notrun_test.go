package rpc

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
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
