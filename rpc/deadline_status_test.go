package rpc

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// A stream handler that returns the error its ctx (or Recv) gave it once
// the stream's deadline passed ends the stream 504
// (StatusDeadlineExceeded), as gRPC-go reports codes.DeadlineExceeded,
// and is counted and observed so, not as a handler's failure (500), and
// not logged as a handler error. The peer is raw: a client's own ctx
// would cancel the stream at its deadline. On a loaded machine the 20 ms
// may pass before the server starts the handler, and the open is refused
// 504 without running it: such an attempt proves nothing, and another is
// made.
func TestStreamDeadlinePassedEnds504(t *testing.T) {
	for _, how := range []string{"ctx", "wrapped", "recv"} {
		t.Run(how, func(t *testing.T) {
			for attempt := 1; !streamDeadlinePassed(t, how); attempt++ {
				if attempt == 100 {
					t.Fatalf("%d opens in a row refused, their deadline passed before the handler ran", attempt)
				}
			}
		})
	}
}

// streamDeadlinePassed is an attempt of TestStreamDeadlinePassedEnds504;
// false when the open was refused before the handler ran.
func streamDeadlinePassed(t *testing.T, how string) bool {
	var log streamLog
	s, addr, logs := testServer(t, WithStreamObserver(log.observe))
	const sWait = 66
	s.HandleStream(sWait, func(ctx context.Context, init []byte, st *Stream) error {
		switch how {
		case "recv":
			_, err := st.Recv(nil)
			return err
		case "wrapped":
			<-ctx.Done()
			return fmt.Errorf("waiting for the upstream: %w", ctx.Err())
		}
		<-ctx.Done()
		return ctx.Err()
	})
	rc := rawDial(t, addr)
	rc.SetReadDeadline(time.Now().Add(30 * time.Second)) // a broken test must not hang
	rc.send(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: sWait, PromiseID: 1, Timeout: 20_000}))
	e := rc.recvEnd()
	if e.ID != 1 || e.Status != StatusDeadlineExceeded {
		t.Errorf("end %+v, want status %d", e, StatusDeadlineExceeded)
	}
	// The end is counted in Stats before the observer is told of
	// it: wait for both.
	await(t, "the stream's end", func() bool { return s.Stats().Streams.Active == 0 && log.count() >= 2 })
	if st := s.Stats().Streams; st.Refused == 1 && st.Opened == 0 {
		return false
	}
	if st := s.Stats().Streams; st.OtherStatus != 1 || st.Internal != 0 || st.Canceled != 0 {
		t.Errorf("Stats.Streams %+v, want 1 other status, none internal or canceled", st)
	}
	evs := log.take()
	if len(evs) != 2 || !evs[1].End || evs[1].Status != StatusDeadlineExceeded {
		t.Errorf("events %+v, want a start and an end with status %d", evs, StatusDeadlineExceeded)
	}
	if l := logs.String(); contains(l, "handler error") {
		t.Errorf("logged as a handler error:\n%s", l)
	}
	return true
}

// The same for a unary call: a handler that returns its ctx's error once
// the call's deadline passed is answered 504, counted and observed so,
// and not logged as a handler error (it was answered 500 and logged at
// Error). The answer is no refusal: the call ran.
func TestCallDeadlinePassedAnswered504(t *testing.T) {
	for _, wrapped := range []bool{false, true} {
		t.Run(fmt.Sprint("wrapped=", wrapped), func(t *testing.T) {
			var log eventLog
			s, addr, logs := testServer(t, WithObserver(log.observe))
			s.Handle(mSlow, func(ctx context.Context, req, resp []byte) ([]byte, error) {
				<-ctx.Done()
				if wrapped {
					return resp, fmt.Errorf("waiting for the upstream: %w", ctx.Err())
				}
				return resp, ctx.Err()
			})
			rc := rawDial(t, addr)
			rc.SetReadDeadline(time.Now().Add(30 * time.Second)) // a broken test must not hang
			rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mSlow, PromiseID: 1, Timeout: 20_000}))
			a := rc.recvResponse()
			if a.PromiseID != 1 || a.Status != StatusDeadlineExceeded {
				t.Errorf("answer %+v, want status %d", a, StatusDeadlineExceeded)
			}
			await(t, "the call's event", func() bool {
				log.mu.Lock()
				defer log.mu.Unlock()
				return len(log.evs) == 1
			})
			if ev := log.take()[0]; ev.Status != StatusDeadlineExceeded {
				t.Errorf("event %+v, want status %d", ev, StatusDeadlineExceeded)
			}
			// An answer is counted as its write returns.
			await(t, "the answer's count", func() bool { st := s.Stats(); return st.Internal+st.OtherStatus != 0 })
			if st := s.Stats(); st.Internal != 0 || st.OtherStatus != 1 {
				t.Errorf("Stats %+v, want 1 other status, none internal", st)
			}
			if l := logs.String(); contains(l, "handler error") {
				t.Errorf("logged as a handler error:\n%s", l)
			}
		})
	}
}
