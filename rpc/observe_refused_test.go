package rpc

import (
	"context"
	"encoding/binary"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/frame"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// wantEvent is what a server's observer must report for one call.
type wantEvent struct {
	method, status uint32
	in, out        int
	ran            bool // a handler ran (else Duration is 0)
}

// peerServer starts a test server with opts and dials it with a raw peer.
func peerServer(t *testing.T, opts ...ServerOption) (*Server, *rawConn) {
	t.Helper()
	s, addr, _ := testServer(t, opts...)
	return s, rawDial(t, addr)
}

// ask sends req on rc and reads its answer.
func (r *rawConn) ask(req *wire.Request) *wire.Response {
	r.t.Helper()
	r.send(wire.KindRequest, wire.AppendRequest(nil, req))
	a := r.recvResponse()
	return &a
}

// mTooBig's 8 KiB answer does not fit a frame of tooBigFrame.
const tooBigFrame = 4 << 10

// tooBig is the server of the rows whose answer exceeds the frame limit.
func tooBig(t *testing.T, opts ...ServerOption) *rawConn {
	s, rc := peerServer(t, append(opts, WithFrameOptions(frame.WithMaxFrameSize(tooBigFrame)))...)
	s.Handle(mTooBig, func(_ context.Context, req, resp []byte) ([]byte, error) {
		return append(resp, make([]byte, 2*tooBigFrame)...), nil
	})
	return rc
}

// exits is the server of the rows whose handler calls runtime.Goexit.
func exits(t *testing.T, opts ...ServerOption) *rawConn {
	s, rc := peerServer(t, opts...)
	s.Handle(mPanic, func(context.Context, []byte, []byte) ([]byte, error) {
		runtime.Goexit()
		return nil, nil
	})
	return rc
}

// A server's observer sees every call the server answers, once, whether
// or not a handler ran, and its event says what the peer got: the status
// and the body length on the wire. Each row drives one path; drive
// returns the peer's address as the server sees it and the answers of the
// calls it made, in the order of their events (nil: no answer can come).
func TestObserverSeesEveryAnsweredCall(t *testing.T) {
	for _, tc := range []struct {
		name  string
		drive func(t *testing.T, obs ServerOption) (peer string, answers []*wire.Response)
		want  []wantEvent
	}{{
		name: "unknown method: 404",
		drive: func(t *testing.T, obs ServerOption) (string, []*wire.Response) {
			_, rc := peerServer(t, obs)
			return rc.LocalAddr().String(), []*wire.Response{rc.ask(&wire.Request{Method: 77, PromiseID: 1, Payload: []byte("abc")})}
		},
		want: []wantEvent{{method: 77, status: StatusNotFound, in: 3, out: len(NoSuchMethod)}},
	}, {
		name: "read after the go-away: 503 not run",
		drive: func(t *testing.T, obs ServerOption) (string, []*wire.Response) {
			s, rc := peerServer(t, obs, WithShutdownGrace(time.Hour))
			serverConnOf(t, s) // Shutdown tells the connections it has
			shut := make(chan error, 1)
			go func() { shut <- s.Shutdown(context.Background()) }()
			if kind, _, ok := rc.recv(); !ok || kind != wire.KindGoAway {
				t.Fatalf("frame kind %d ok %v, want a go-away", kind, ok)
			}
			a := rc.ask(&wire.Request{Method: mEcho, PromiseID: 2, Payload: []byte("late")})
			if !a.NotRun {
				t.Errorf("refusal without the not-run flag: %+v", a)
			}
			rc.Close()
			if err := receive(t, "Shutdown to return", shut); err != nil {
				t.Fatal(err)
			}
			return rc.LocalAddr().String(), []*wire.Response{a}
		},
		want: []wantEvent{{method: mEcho, status: StatusUnavailable, in: 4, out: len(goAwayRefusal)}},
	}, {
		name: "envelope that does not parse but names its promise: 400",
		drive: func(t *testing.T, obs ServerOption) (string, []*wire.Response) {
			_, rc := peerServer(t, obs)
			env := wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 99, Payload: []byte("abc")})
			binary.LittleEndian.PutUint32(env[16+24:], 1000) // payload length past the end
			rc.send(wire.KindRequest, env)
			a := rc.recvResponse()
			if a.PromiseID != 99 {
				t.Fatalf("answer %+v, want one to promise 99", a)
			}
			return rc.LocalAddr().String(), []*wire.Response{&a}
		},
		// The method was read, the payload was not.
		want: []wantEvent{{method: mEcho, status: StatusBadRequest, in: 0, out: len("payload outside the message")}},
	}, {
		name: "target without pipelining: 400",
		drive: func(t *testing.T, obs ServerOption) (string, []*wire.Response) {
			_, rc := peerServer(t, obs)
			return rc.LocalAddr().String(), []*wire.Response{rc.ask(&wire.Request{Method: mEcho, PromiseID: 2, Target: 1, Payload: []byte("xy")})}
		},
		want: []wantEvent{{method: mEcho, status: StatusBadRequest, in: 2, out: len(pipeliningOff)}},
	}, {
		name: "metadata over the limit: 431",
		drive: func(t *testing.T, obs ServerOption) (string, []*wire.Response) {
			_, rc := peerServer(t, obs, WithMaxMetadata(16))
			md := metadataPair("k", strings.Repeat("v", 32))
			a := rc.ask(&wire.Request{Method: mEcho, PromiseID: 1, Payload: []byte("abcd"), Metadata: md})
			return rc.LocalAddr().String(), []*wire.Response{a}
		},
		want: []wantEvent{{method: mEcho, status: StatusMetadataTooLarge, in: 4, out: len(tooLargeText(len(metadataPair("k", strings.Repeat("v", 32))), 16))}},
	}, {
		name: "malformed metadata: 400",
		drive: func(t *testing.T, obs ServerOption) (string, []*wire.Response) {
			_, rc := peerServer(t, obs)
			a := rc.ask(&wire.Request{Method: mEcho, PromiseID: 1, Payload: []byte("abcd"), Metadata: []byte{9, 0, 0, 0}})
			return rc.LocalAddr().String(), []*wire.Response{a}
		},
		want: []wantEvent{{method: mEcho, status: StatusBadRequest, in: 4, out: len(malformedMetadata)}},
	}, {
		name: "connection closed before its worker started it: 503, no answer",
		drive: func(t *testing.T, obs ServerOption) (string, []*wire.Response) {
			// As in TestWorkerSkipsCallOfDeadConnection: over a socket
			// the window is a scheduling gap, so the worker's step is
			// driven directly.
			s := NewServer(obs, WithLogger(discardLogger()))
			t.Cleanup(func() { s.Close() })
			a, b := net.Pipe()
			t.Cleanup(func() { b.Close() })
			c := newServerConn(s, a, context.Background())
			s.mu.Lock()
			s.conns[c] = struct{}{}
			s.stats.active.Add(1)
			s.connWG.Add(1)
			s.mu.Unlock()
			j := c.acquire()
			j.h, j.method, j.pid = echo, mEcho, 1
			j.req = append(j.req[:0], "hello"...)
			c.inflight.Add(1) // as request does for the call it dispatches
			c.close(nil)
			c.run(j)
			return a.RemoteAddr().String(), []*wire.Response{nil}
		},
		want: []wantEvent{{method: mEcho, status: StatusUnavailable, in: 5, out: 0}},
	}, {
		name: "deadline passed while pipelined on a running call: 504 not run",
		drive: func(t *testing.T, obs ServerOption) (string, []*wire.Response) {
			s, rc := peerServer(t, obs, WithPipelining(0))
			release := make(chan struct{})
			s.Handle(mSlow, func(_ context.Context, req, resp []byte) ([]byte, error) {
				<-release
				return append(resp, "slow"...), nil
			})
			rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mSlow, PromiseID: 1, Payload: []byte("held")}))
			late := rc.ask(&wire.Request{Method: mEcho, PromiseID: 2, Target: 1, Timeout: 1000, Payload: []byte("xyz")})
			if late.PromiseID != 2 || !late.NotRun {
				t.Fatalf("first answer %+v, want promise 2 refused", late)
			}
			close(release)
			return rc.LocalAddr().String(), []*wire.Response{late, receiveAnswer(rc)}
		},
		want: []wantEvent{
			{method: mEcho, status: StatusDeadlineExceeded, in: 3, out: len(deadlineRefusal), ran: true},
			{method: mSlow, status: StatusOK, in: 4, out: 4, ran: true},
		},
	}, {
		name: "pipelined on a failed call: 400",
		drive: func(t *testing.T, obs ServerOption) (string, []*wire.Response) {
			s, rc := peerServer(t, obs, WithPipelining(0))
			s.Handle(mFail, func(_ context.Context, _, resp []byte) ([]byte, error) {
				return resp, Errorf(409, "conflict")
			})
			failed := rc.ask(&wire.Request{Method: mFail, PromiseID: 1})
			return rc.LocalAddr().String(), []*wire.Response{failed, rc.ask(&wire.Request{Method: mEcho, PromiseID: 2, Target: 1})}
		},
		want: []wantEvent{
			{method: mFail, status: 409, in: 0, out: len("conflict"), ran: true},
			{method: mEcho, status: StatusBadRequest, in: 0, out: len("promise target failed or unknown"), ran: true},
		},
	}, {
		name: "answer above the frame limit, inline: 500 saying so",
		drive: func(t *testing.T, obs ServerOption) (string, []*wire.Response) {
			rc := tooBig(t, obs)
			return rc.LocalAddr().String(), []*wire.Response{rc.ask(&wire.Request{Method: mTooBig, PromiseID: 1, Payload: []byte("q")})}
		},
		want: []wantEvent{{method: mTooBig, status: StatusInternal, in: 1, out: len(answerTooLargeText(2*tooBigFrame+wire.ResponseOverhead+1, tooBigFrame)), ran: true}},
	}, {
		name: "answer above the frame limit, on a worker: 500 saying so",
		drive: func(t *testing.T, obs ServerOption) (string, []*wire.Response) {
			rc := tooBig(t, obs, WithPipelining(0))
			return rc.LocalAddr().String(), []*wire.Response{rc.ask(&wire.Request{Method: mTooBig, PromiseID: 1, Payload: []byte("q")})}
		},
		want: []wantEvent{{method: mTooBig, status: StatusInternal, in: 1, out: len(answerTooLargeText(2*tooBigFrame+wire.ResponseOverhead+1, tooBigFrame)), ran: true}},
	}, {
		name: "handler calls runtime.Goexit, inline: 500",
		drive: func(t *testing.T, obs ServerOption) (string, []*wire.Response) {
			rc := exits(t, obs)
			return rc.LocalAddr().String(), []*wire.Response{rc.ask(&wire.Request{Method: mPanic, PromiseID: 1, Payload: []byte("bye")})}
		},
		want: []wantEvent{{method: mPanic, status: StatusInternal, in: 3, out: 0, ran: true}},
	}, {
		name: "handler calls runtime.Goexit, on a worker: 500",
		drive: func(t *testing.T, obs ServerOption) (string, []*wire.Response) {
			rc := exits(t, obs, WithPipelining(0))
			return rc.LocalAddr().String(), []*wire.Response{rc.ask(&wire.Request{Method: mPanic, PromiseID: 1, Payload: []byte("bye")})}
		},
		want: []wantEvent{{method: mPanic, status: StatusInternal, in: 3, out: 0, ran: true}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var log eventLog
			peer, answers := tc.drive(t, WithObserver(log.observe))
			// Each event is reported before its answer is written: all
			// are in once the answers are read.
			evs := log.take()
			if len(evs) != len(tc.want) {
				t.Fatalf("%d events, want %d: %+v", len(evs), len(tc.want), evs)
			}
			for i, w := range tc.want {
				checkEvent(t, evs[i], w, peer, answers[i])
			}
		})
	}
}

// metadataPair is the wire encoding of metadata holding one key and value
// (see Metadata).
func metadataPair(k, v string) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(k)))
	b = append(b, k...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

// receiveAnswer reads the next answer on rc.
func receiveAnswer(rc *rawConn) *wire.Response {
	a := rc.recvResponse()
	return &a
}

// checkEvent fails the test unless ev is w, seen from the server by peer,
// and says what the peer got in a (nil: no answer was written).
func checkEvent(t *testing.T, ev CallEvent, w wantEvent, peer string, a *wire.Response) {
	t.Helper()
	if ev.Client || ev.Err != nil || ev.Method != w.method || ev.Status != w.status || ev.BytesIn != w.in || ev.BytesOut != w.out {
		t.Errorf("event %+v, want %+v", ev, w)
	}
	if ev.Start.IsZero() || ev.Duration < 0 || !w.ran && ev.Duration != 0 {
		t.Errorf("event start %v, duration %v (a handler ran: %v)", ev.Start, ev.Duration, w.ran)
	}
	if ev.Peer == nil || ev.Peer.String() != peer {
		t.Errorf("event peer %v, want %s", ev.Peer, peer)
	}
	if a != nil && (a.Status != ev.Status || len(a.Body) != ev.BytesOut) {
		t.Errorf("the peer got status %d with %d bytes; the event says %d with %d", a.Status, len(a.Body), ev.Status, ev.BytesOut)
	}
}

// A panic in the observer on a call answered without a handler is
// recovered and logged like one on a handler's call: the answer goes out,
// and the connection goes on.
func TestObserverPanicOnUnrunCall(t *testing.T) {
	_, addr, logs := testServer(t, WithObserver(func(ev CallEvent) {
		if ev.Status == StatusNotFound {
			panic("observer on a 404")
		}
	}))
	rc := rawDial(t, addr)
	if a := rc.ask(&wire.Request{Method: 77, PromiseID: 1}); a.Status != StatusNotFound || string(a.Body) != NoSuchMethod {
		t.Fatalf("answer %+v, want 404", a)
	}
	if a := rc.ask(&wire.Request{Method: mEcho, PromiseID: 2, Payload: []byte("on")}); a.Status != StatusOK || string(a.Body) != "on" {
		t.Fatalf("next call: %+v", a)
	}
	if l := logs.String(); !contains(l, "rpc: observer panic") || !contains(l, "observer on a 404") {
		t.Fatalf("panic not logged: %s", l)
	}
}
