package rpc

import (
	"context"
	"encoding/binary"
	"io"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// wantStreamEvent is what a server's stream observer must report: a start
// (end false) or an end.
type wantStreamEvent struct {
	method, id, status uint32
	end                bool
	in                 int64 // BytesIn (an end's)
}

// refused is the pair of events of an open refused with status, whose
// initial message had in bytes.
func refused(method, id, status uint32, in int64) []wantStreamEvent {
	return []wantStreamEvent{{method: method, id: id}, {method: method, id: id, status: status, end: true, in: in}}
}

// open sends a stream open for method with id and init on rc.
func (r *rawConn) open(method, id uint32, init string, md []byte) {
	r.t.Helper()
	r.send(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: method, PromiseID: id, Payload: []byte(init), Metadata: md}))
}

// recvEnd reads frames until a stream end and returns it.
func (r *rawConn) recvEnd() wire.StreamEnd {
	r.t.Helper()
	for {
		kind, env, ok := r.recv()
		if !ok {
			r.t.Fatal("connection closed, want a stream end")
		}
		if kind != wire.KindStreamEnd {
			continue
		}
		e, err := wire.ParseStreamEnd(env)
		if err != nil {
			r.t.Fatal(err)
		}
		return e
	}
}

// A server's stream observer sees every open the server refuses without
// running a handler: a start and at once an end with the refusal's
// status, Duration 0 and the initial message's bytes in, reported before
// the refusal is written. Each row drives one path and returns the peer's
// address as the server sees it and the ends the peer got (none when the
// peer is sent no end).
func TestStreamObserverSeesRefusedOpens(t *testing.T) {
	for _, tc := range []struct {
		name  string
		drive func(t *testing.T, obs ServerOption, log *streamLog) (peer string, got []wire.StreamEnd)
		want  []wantStreamEvent
	}{{
		name: "unknown method, zapcodec peer: 404",
		drive: func(t *testing.T, obs ServerOption, _ *streamLog) (string, []wire.StreamEnd) {
			_, addr, _ := streamServer(t, obs)
			c := dial(t, addr)
			st, err := c.OpenStream(context.Background(), 99, []byte("init"))
			if err != nil {
				t.Fatal(err)
			}
			_, err = st.Recv(nil)
			return c.nc.LocalAddr().String(), []wire.StreamEnd{{ID: st.ID(), Status: Code(err)}}
		},
		want: refused(99, 1, StatusNotFound, 4),
	}, {
		name: "unknown method, canonical peer: 404, no end sent",
		drive: func(t *testing.T, obs ServerOption, log *streamLog) (string, []wire.StreamEnd) {
			_, addr, _ := streamServer(t, obs)
			rc := rawDial(t, addr)
			rc.open(99, 5, "ab", nil)
			await(t, "the refusal's events", func() bool { return log.count() == 2 })
			return rc.LocalAddr().String(), nil
		},
		want: refused(99, 5, StatusNotFound, 2),
	}, {
		name: "read after the go-away: 503",
		drive: func(t *testing.T, obs ServerOption, _ *streamLog) (string, []wire.StreamEnd) {
			s, addr, _ := streamServer(t, obs, WithShutdownGrace(time.Hour))
			rc := rawDial(t, addr)
			serverConnOf(t, s) // Shutdown tells the connections it has
			shut := make(chan error, 1)
			go func() { shut <- s.Shutdown(context.Background()) }()
			if kind, _, ok := rc.recv(); !ok || kind != wire.KindGoAway {
				t.Fatalf("frame kind %d ok %v, want a go-away", kind, ok)
			}
			rc.open(sEcho, 1, "late", nil)
			e := rc.recvEnd()
			rc.Close()
			if err := receive(t, "Shutdown to return", shut); err != nil {
				t.Fatal(err)
			}
			return rc.LocalAddr().String(), []wire.StreamEnd{e}
		},
		want: refused(sEcho, 1, StatusUnavailable, 4),
	}, {
		name: "envelope that does not parse but names its stream: 400",
		drive: func(t *testing.T, obs ServerOption, _ *streamLog) (string, []wire.StreamEnd) {
			_, addr, _ := streamServer(t, obs)
			rc := rawDial(t, addr)
			env := wire.AppendRequest(nil, &wire.Request{Method: sEcho, PromiseID: 7, Payload: []byte("abc")})
			binary.LittleEndian.PutUint32(env[16+24:], 1000) // payload length past the end
			rc.send(wire.KindStreamOpen, env)
			return rc.LocalAddr().String(), []wire.StreamEnd{rc.recvEnd()}
		},
		// The method was read, the initial message was not.
		want: refused(sEcho, 7, StatusBadRequest, 0),
	}, {
		name: "one stream too many: 503",
		drive: func(t *testing.T, obs ServerOption, log *streamLog) (string, []wire.StreamEnd) {
			_, addr, _ := streamServer(t, obs, WithMaxStreams(1))
			rc := rawDial(t, addr)
			rc.open(sBlock, 1, "x", nil)
			await(t, "the first stream's start", func() bool { return log.count() == 1 })
			rc.open(sBlock, 3, "yz", nil)
			return rc.LocalAddr().String(), []wire.StreamEnd{rc.recvEnd()}
		},
		// The first stream runs until the test ends: its start only.
		want: append([]wantStreamEvent{{method: sBlock, id: 1}}, refused(sBlock, 3, StatusUnavailable, 2)...),
	}, {
		name: "metadata over the limit: 431",
		drive: func(t *testing.T, obs ServerOption, _ *streamLog) (string, []wire.StreamEnd) {
			_, addr, _ := streamServer(t, obs, WithMaxMetadata(16))
			rc := rawDial(t, addr)
			rc.open(sEcho, 1, "abcd", metadataPair("k", strings.Repeat("v", 32)))
			return rc.LocalAddr().String(), []wire.StreamEnd{rc.recvEnd()}
		},
		want: refused(sEcho, 1, StatusMetadataTooLarge, 4),
	}, {
		name: "malformed metadata: 400",
		drive: func(t *testing.T, obs ServerOption, _ *streamLog) (string, []wire.StreamEnd) {
			_, addr, _ := streamServer(t, obs)
			rc := rawDial(t, addr)
			rc.open(sEcho, 1, "abcd", []byte{9, 0, 0, 0})
			return rc.LocalAddr().String(), []wire.StreamEnd{rc.recvEnd()}
		},
		want: refused(sEcho, 1, StatusBadRequest, 4),
	}, {
		name: "deadline passed before the handler could run: 504",
		drive: func(t *testing.T, obs ServerOption, _ *streamLog) (string, []wire.StreamEnd) {
			s, addr, _ := streamServer(t, obs)
			const sLate = 65
			var ran atomic.Int32
			s.HandleStream(sLate, func(ctx context.Context, init []byte, st *Stream) error {
				ran.Add(1)
				return nil
			})
			rc := rawDial(t, addr)
			openPastDeadline(t, s, rc, sLate)
			e := rc.recvEnd()
			if string(e.Message) != streamDeadlineText {
				t.Errorf("end %+v, want the text %q", e, streamDeadlineText)
			}
			if n := ran.Load(); n != 0 {
				t.Errorf("the handler ran %d times", n)
			}
			if st := s.Stats().Streams; st.Refused != 1 || st.Opened != 0 || st.OtherStatus != 0 {
				t.Errorf("Stats.Streams %+v, want 1 refused, none opened or ended", st)
			}
			return rc.LocalAddr().String(), []wire.StreamEnd{e}
		},
		want: refused(65, 1, StatusDeadlineExceeded, 4),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var log streamLog
			peer, got := tc.drive(t, WithStreamObserver(log.observe), &log)
			// The events of a refusal are reported before its end is
			// written: all are in once the ends are read.
			evs := log.take()
			if len(evs) != len(tc.want) {
				t.Fatalf("%d events, want %d: %+v", len(evs), len(tc.want), evs)
			}
			for i, w := range tc.want {
				checkStreamEvent(t, evs[i], w, peer)
				if w.end && evs[i].Start != evs[i-1].Start {
					t.Errorf("end %+v does not share its start's Start %v", evs[i], evs[i-1].Start)
				}
			}
			for _, e := range got {
				if ev := evs[len(evs)-1]; e.ID != ev.ID || e.Status != ev.Status {
					t.Errorf("the peer got an end of stream %d with status %d; the event says %d with %d", e.ID, e.Status, ev.ID, ev.Status)
				}
			}
		})
	}
}

// checkStreamEvent fails the test unless ev is w, seen by a server from
// peer, for a stream whose handler has not run a message (a refused one,
// or one just started).
func checkStreamEvent(t *testing.T, ev StreamEvent, w wantStreamEvent, peer string) {
	t.Helper()
	if ev.Client || ev.End != w.end || ev.Method != w.method || ev.ID != w.id || ev.Status != w.status || ev.BytesIn != w.in ||
		ev.Err != nil || ev.MsgsIn != 0 || ev.MsgsOut != 0 || ev.BytesOut != 0 || ev.Duration != 0 || ev.Start.IsZero() {
		t.Errorf("event %+v, want %+v", ev, w)
	}
	if ev.Peer == nil || ev.Peer.String() != peer {
		t.Errorf("event peer %v, want %s", ev.Peer, peer)
	}
}

// A panic in a server's stream observer on a refused open is recovered
// and logged: the refusal goes out, and the connection goes on.
func TestStreamObserverPanicOnRefusedOpen(t *testing.T) {
	_, addr, logs := streamServer(t, WithStreamObserver(func(ev StreamEvent) {
		if ev.Method == 99 {
			panic("observer on a refused open")
		}
	}))
	c := dial(t, addr)
	ctx := context.Background()
	st, err := c.OpenStream(ctx, 99, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(nil); Code(err) != StatusNotFound {
		t.Fatalf("refused open: %v", err)
	}
	st, err = c.OpenStream(ctx, sCount, u32msg(2))
	if err != nil {
		t.Fatal(err)
	}
	if msgs, err := recvAll(st); len(msgs) != 2 || err != io.EOF {
		t.Fatalf("next stream: %d messages, %v", len(msgs), err)
	}
	if l := logs.String(); strings.Count(l, "rpc: stream observer panic") != 2 || !contains(l, "observer on a refused open") {
		t.Fatalf("panics not logged: %s", l)
	}
}

// openPastDeadline sends, on rc to s, the open of stream 1 of method
// whose deadline passes before its handler can run: the read loop parses
// the open, whose deadline is 1 µs after it arrived, then waits for the
// stream table, held here until that has passed.
func openPastDeadline(t *testing.T, s *Server, rc *rawConn, method uint32) {
	t.Helper()
	sc := serverConnOf(t, s)
	sc.streams.mu.Lock()
	rc.send(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: method, PromiseID: 1, Payload: []byte("late"), Timeout: 1}))
	awaitLockedIn(t, "rpc.(*serverConn).streamOpen")
	sc.streams.mu.Unlock()
}

// awaitLockedIn waits until a goroutine waits for a mutex in fn (a
// function's name as a goroutine's stack shows it).
func awaitLockedIn(t *testing.T, fn string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	await(t, "a goroutine waiting for a lock in "+fn, func() bool {
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, fn+"(") && strings.Contains(g, "Mutex).Lock") {
				return true
			}
		}
		return false
	})
}
