package rpc

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/internal/latectx"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// Methods of the error journey's server.
const (
	mjNotFound = 701 // returns Errorf(StatusNotFound, "no user 7")
	mjPlain    = 702 // returns a plain error
	mjPanic    = 703 // panics
	mjBig      = 704 // answers 2 KiB
	mjBlock    = 705 // waits for its ctx's end or for release
	sjFail     = 706 // stream: returns Errorf(StatusNotFound, "no feed 9")
	sjHold     = 707 // stream: waits for its ctx's end
	mjDeaf     = 708 // waits for release alone, not its ctx
	sjDeaf     = 709 // stream: waits for release alone, not its ctx
	sjBig      = 710 // stream: sends a 2 KiB message, then waits for its ctx's end
)

// sentinels are the errors the docs name, which every row of the journey
// is matched against (errors.Is): a row names those it must match, and
// must match no other.
var sentinels = []struct {
	name string
	err  error
}{
	{"ErrClosed", ErrClosed},
	{"ErrGoAway", ErrGoAway},
	{"ErrTooManyStreams", ErrTooManyStreams},
	{"ErrTooManyPending", ErrTooManyPending},
	{"ErrProtocol", ErrProtocol},
	{"ErrMalformed", ErrMalformed},
	{"context.Canceled", context.Canceled},
	{"context.DeadlineExceeded", context.DeadlineExceeded},
	{"frame.ErrFrameTooLarge", frame.ErrFrameTooLarge},
	{"io.EOF", io.EOF},
	{"syscall.ECONNRESET", syscall.ECONNRESET},
	{"syscall.ECONNREFUSED", syscall.ECONNREFUSED},
	{"net.ErrClosed", net.ErrClosed},
	{"os.ErrDeadlineExceeded", os.ErrDeadlineExceeded},
}

// journeyServer is a server with the journey's handlers; release ends
// the mjBlock and sjHold handlers waiting.
type journeyServer struct {
	s       *Server
	addr    string
	started chan struct{}
	release chan struct{}
}

func newJourneyServer(t *testing.T, opts ...ServerOption) *journeyServer {
	t.Helper()
	s, addr, _ := testServer(t, append([]ServerOption{WithLogger(discardLogger())}, opts...)...)
	j := &journeyServer{s: s, addr: addr, started: make(chan struct{}, 16), release: make(chan struct{})}
	s.Handle(mjNotFound, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		return resp, Errorf(StatusNotFound, "no user 7")
	})
	s.Handle(mjPlain, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		return resp, errors.New("loading user 7: disk on fire")
	})
	s.Handle(mjPanic, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		panic("handler bug")
	})
	s.Handle(mjBig, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		return append(resp, make([]byte, 2048)...), nil
	})
	s.Handle(mjBlock, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		j.started <- struct{}{}
		select {
		case <-ctx.Done():
			return resp, ctx.Err()
		case <-j.release:
			return append(resp, "released"...), nil
		}
	})
	s.Handle(mjDeaf, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		j.started <- struct{}{}
		<-j.release
		return resp, nil
	})
	s.HandleStream(sjDeaf, func(ctx context.Context, init []byte, st *Stream) error {
		j.started <- struct{}{}
		<-j.release
		return nil
	})
	// Before the server's Close (cleanups run last first): the handlers
	// that wait for release alone return.
	t.Cleanup(j.releaseAll)
	s.HandleStream(sjFail, func(ctx context.Context, init []byte, st *Stream) error {
		return Errorf(StatusNotFound, "no feed 9")
	})
	s.HandleStream(sjHold, func(ctx context.Context, init []byte, st *Stream) error {
		j.started <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	})
	s.HandleStream(sjBig, func(ctx context.Context, init []byte, st *Stream) error {
		if err := st.Send(make([]byte, 2048)); err != nil {
			return err
		}
		<-ctx.Done()
		return ctx.Err()
	})
	return j
}

// releaseAll ends the handlers waiting for release, once.
func (j *journeyServer) releaseAll() {
	select {
	case <-j.release:
	default:
		close(j.release)
	}
}

// rawPeer listens on loopback TCP and runs serve, in a goroutine of its
// own, on each connection it accepts; it returns the address.
func rawPeer(t *testing.T, serve func(nc net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { nc.Close() })
			go serve(nc)
		}
	}()
	return l.Addr().String()
}

// readRequest reads frames from nc until a request, whose promise id it
// returns (false: the connection ended first).
func readRequest(nc net.Conn) (uint32, bool) {
	r := &rawConn{nil, nc}
	for {
		kind, env, ok := r.recv()
		if !ok {
			return 0, false
		}
		if kind == wire.KindRequest {
			req, err := wire.ParseRequest(env)
			return req.PromiseID, err == nil
		}
	}
}

// journeyRow is one failure a caller can meet and what it must see.
type journeyRow struct {
	name string
	// provoke makes the failure and returns the error the caller got.
	provoke func(t *testing.T) error
	code    uint32   // rpc.Code(err)
	is      []string // the sentinels (by name) err matches; no other
	maybe   []string // sentinels err may match or not (a race decides)
	text    []string // words err's text holds
	// check, when set, checks more of err (errors.As, IsNoSuchMethod...).
	check func(t *testing.T, err error)
}

// TestErrorsACallerSees walks the failures a caller of a Client meets,
// one row each, and checks what the call returns: rpc.Code, which of the
// documented sentinels (and causes: io.EOF, ECONNRESET...) errors.Is
// matches, and the words of the error's text. rpc/README.md's table
// "What a call returns when..." is this test's table.
func TestErrorsACallerSees(t *testing.T) {
	for _, row := range append(callerRows(), streamRows()...) {
		t.Run(row.name, func(t *testing.T) {
			err := row.provoke(t)
			checkRow(t, row, err)
		})
	}
}

func checkRow(t *testing.T, row journeyRow, err error) {
	t.Helper()
	if err == nil {
		if row.code != StatusOK {
			t.Fatalf("err nil, want an error with code %d", row.code)
		}
		return
	}
	t.Logf("err %T %q", err, err)
	if got := Code(err); got != row.code {
		t.Errorf("Code(err) = %d, want %d", got, row.code)
	}
	want := map[string]bool{}
	for _, n := range row.is {
		want[n] = true
	}
	for _, n := range row.maybe {
		delete(want, n)
	}
	for _, s := range sentinels {
		if slices.Contains(row.maybe, s.name) {
			continue
		}
		if got := errors.Is(err, s.err); got != want[s.name] {
			t.Errorf("errors.Is(err, %s) = %v, want %v", s.name, got, want[s.name])
		}
		delete(want, s.name)
	}
	for n := range want {
		t.Fatalf("row names %s, no sentinel of the table", n)
	}
	for _, w := range row.text {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("err %q does not say %q", err, w)
		}
	}
	if row.check != nil {
		row.check(t, err)
	}
}

// asNetOpError checks that errors.As finds a *net.OpError in err.
func asNetOpError(t *testing.T, err error) {
	t.Helper()
	var oe *net.OpError
	if !errors.As(err, &oe) {
		t.Errorf("errors.As(err, *net.OpError) false for %q", err)
	}
}

// statusIs checks the *StatusError StatusOf finds in err.
func statusIs(code uint32, msg string, noSuchMethod, retryable bool) func(t *testing.T, err error) {
	return func(t *testing.T, err error) {
		t.Helper()
		se := StatusOf(err)
		if se == nil || se.Code != code || se.Message != msg {
			t.Errorf("StatusOf(err) = %+v, want code %d message %q", se, code, msg)
		}
		if got := IsNoSuchMethod(err); got != noSuchMethod {
			t.Errorf("IsNoSuchMethod(err) = %v, want %v", got, noSuchMethod)
		}
		if got := IsRetryable(err); got != retryable {
			t.Errorf("IsRetryable(err) = %v, want %v", got, retryable)
		}
	}
}

// noStatus checks that err carries no *StatusError and is not retryable.
func noStatus(t *testing.T, err error) {
	t.Helper()
	if se := StatusOf(err); se != nil {
		t.Errorf("StatusOf(err) = %+v, want nil", se)
	}
	if IsRetryable(err) {
		t.Errorf("IsRetryable(err) true for %q", err)
	}
}

// timeoutNoStatus checks that err carries no *StatusError, is not
// retryable, and that errors.As finds a net.Error in it whose Timeout
// reports true.
func timeoutNoStatus(t *testing.T, err error) {
	t.Helper()
	noStatus(t, err)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("errors.As(err, net.Error) with Timeout() true fails for %q", err)
	}
}

// callOn dials addr with opts and makes one call of method with req and
// ctx, returning its error.
func callOn(t *testing.T, ctx context.Context, addr string, method uint32, req []byte, opts ...ClientOption) error {
	t.Helper()
	c := dial(t, addr, opts...)
	_, err := c.Call(ctx, method, req, nil)
	return err
}

// lostMidCall is the error of a call whose request a raw peer reads, and
// then does to the connection what cut does.
func lostMidCall(t *testing.T, cut func(nc net.Conn)) error {
	addr := rawPeer(t, func(nc net.Conn) {
		if _, ok := readRequest(nc); ok {
			cut(nc)
		}
	})
	return callOn(t, context.Background(), addr, mEcho, []byte("hi"))
}

func callerRows() []journeyRow {
	closedText := "rpc: connection closed"
	return []journeyRow{{
		name: "dial to a closed port",
		provoke: func(t *testing.T) error {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := l.Addr().String()
			l.Close()
			_, err = Dial(context.Background(), "tcp", addr)
			return err
		},
		code:  StatusInternal,
		is:    []string{"syscall.ECONNREFUSED"},
		text:  []string{"connection refused"},
		check: asNetOpError,
	}, {
		name: "server process gone mid-call (FIN)",
		provoke: func(t *testing.T) error {
			return lostMidCall(t, func(nc net.Conn) { nc.Close() })
		},
		code:  StatusUnavailable,
		is:    []string{"ErrClosed", "io.EOF"},
		text:  []string{closedText + ": EOF"},
		check: noStatus,
	}, {
		name: "connection reset by peer mid-call",
		provoke: func(t *testing.T) error {
			return lostMidCall(t, func(nc net.Conn) {
				nc.(*net.TCPConn).SetLinger(0)
				nc.Close()
			})
		},
		code: StatusUnavailable,
		is:   []string{"ErrClosed", "syscall.ECONNRESET"},
		text: []string{closedText, "connection reset by peer"},
		check: func(t *testing.T, err error) {
			asNetOpError(t, err)
			noStatus(t, err)
		},
	}, {
		name: "promise: Wait after the connection was reset",
		provoke: func(t *testing.T) error {
			addr := rawPeer(t, func(nc net.Conn) {
				if _, ok := readRequest(nc); ok {
					nc.(*net.TCPConn).SetLinger(0)
					nc.Close()
				}
			})
			p, err := dial(t, addr).Send(context.Background(), mEcho, []byte("hi"), nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Wait(context.Background())
			return err
		},
		code: StatusUnavailable,
		is:   []string{"ErrClosed", "syscall.ECONNRESET"},
		text: []string{closedText, "connection reset by peer"},
		check: func(t *testing.T, err error) {
			asNetOpError(t, err)
			noStatus(t, err)
		},
	}, {
		name: "server Close mid-call",
		provoke: func(t *testing.T) error {
			j := newJourneyServer(t)
			c := dial(t, j.addr)
			errc := make(chan error, 1)
			go func() {
				_, err := c.Call(context.Background(), mjBlock, nil, nil)
				errc <- err
			}()
			receive(t, "the handler's start", j.started)
			j.s.Close()
			return receive(t, "the call's error", errc)
		},
		code:  StatusUnavailable,
		is:    []string{"ErrClosed", "io.EOF"},
		text:  []string{closedText + ": EOF"},
		check: noStatus,
	}, {
		name: "peer answers with bytes that are no envelope",
		provoke: func(t *testing.T) error {
			return lostMidCall(t, func(nc net.Conn) {
				nc.Write(frameBytes(wire.KindResponse, []byte{1, 2, 3}))
				io.Copy(io.Discard, nc)
			})
		},
		code: StatusInternal,
		is:   []string{"ErrClosed", "ErrProtocol", "ErrMalformed"},
		text: []string{closedText + ": rpc: protocol violation: rpc: malformed envelope"},
		check: func(t *testing.T, err error) {
			noStatus(t, err)
			var ee *wire.EnvelopeError
			if !errors.As(err, &ee) || ee.HasPromise {
				t.Errorf("errors.As(err, *wire.EnvelopeError) false, or the promise read, for %q", err)
			}
		},
	}, {
		name: "peer sends a frame of length 0",
		provoke: func(t *testing.T) error {
			return lostMidCall(t, func(nc net.Conn) {
				nc.Write([]byte{0, 0, 0, 0})
				io.Copy(io.Discard, nc)
			})
		},
		code: StatusInternal,
		is:   []string{"ErrClosed", "ErrProtocol"},
		text: []string{closedText + ": rpc: protocol violation: frame: frame of length 0"},
		check: func(t *testing.T, err error) {
			noStatus(t, err)
			if !errors.Is(err, frame.ErrEmptyFrame) {
				t.Errorf("errors.Is(err, frame.ErrEmptyFrame) false for %q", err)
			}
		},
	}, {
		name: "plaintext client to a TLS server",
		provoke: func(t *testing.T) error {
			cert, _ := selfSigned(t)
			j := newJourneyServer(t, WithTLSConfig(&tls.Config{Certificates: []tls.Certificate{cert}}))
			return callOn(t, context.Background(), j.addr, mEcho, nil)
		},
		// The server fails the handshake (and logs it) and closes: the
		// client reads EOF, or a reset when the close found bytes of its
		// request unread.
		code:  StatusUnavailable,
		is:    []string{"ErrClosed"},
		maybe: []string{"io.EOF", "syscall.ECONNRESET"},
		text:  []string{closedText},
		check: noStatus,
	}, {
		name: "client to an HTTP server",
		provoke: func(t *testing.T) error {
			return lostMidCall(t, func(nc net.Conn) {
				io.WriteString(nc, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
				nc.Close()
			})
		},
		code: StatusUnavailable,
		is:   []string{"ErrClosed", "frame.ErrFrameTooLarge"},
		text: []string{closedText, "HTTP", "not ZAP frames"},
	}, {
		name: "peer stops answering: ctx deadline",
		provoke: func(t *testing.T) error {
			addr := rawPeer(t, func(nc net.Conn) { io.Copy(io.Discard, nc) })
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			return callOn(t, ctx, addr, mEcho, nil)
		},
		code: StatusDeadlineExceeded,
		is:   []string{"context.DeadlineExceeded"},
		check: func(t *testing.T, err error) {
			if err != context.DeadlineExceeded {
				t.Errorf("err %q, want context.DeadlineExceeded itself", err)
			}
		},
	}, {
		name: "peer stops answering: WithAnswerTimeout",
		provoke: func(t *testing.T) error {
			addr := rawPeer(t, func(nc net.Conn) { io.Copy(io.Discard, nc) })
			return callOn(t, context.Background(), addr, mEcho, nil, WithAnswerTimeout(100*time.Millisecond))
		},
		code:  StatusUnavailable,
		is:    []string{"ErrClosed", "os.ErrDeadlineExceeded"},
		text:  []string{closedText, "no answer"},
		check: timeoutNoStatus,
	}, {
		name: "peer stops reading: WithWriteTimeout",
		provoke: func(t *testing.T) error {
			// A net.Pipe takes no byte until its other end reads, which
			// this one never does.
			a, b := net.Pipe()
			t.Cleanup(func() { a.Close(); b.Close() })
			c := NewClient(a, WithWriteTimeout(100*time.Millisecond), WithAnswerTimeout(0))
			t.Cleanup(func() { c.Close() })
			_, err := c.Call(context.Background(), mEcho, []byte("hi"), nil)
			return err
		},
		code:  StatusUnavailable,
		is:    []string{"ErrClosed", "os.ErrDeadlineExceeded"},
		text:  []string{closedText + ": rpc: write timeout"},
		check: timeoutNoStatus,
	}, {
		name: "handler returned its ctx's error at the deadline: 504 arrived first",
		provoke: func(t *testing.T) error {
			// What a server answers when the handler returns its ctx's
			// context.DeadlineExceeded (TestCallDeadlinePassedAnswered504),
			// here before the client's own timer fired: the caller's
			// deadline has passed, its ctx not done yet. The call ran,
			// and ended at its deadline as if the client's timer had
			// fired first.
			c, peer := pipeClient(t)
			ctx := latectx.New()
			errc := make(chan error, 1)
			go func() {
				_, err := c.Call(ctx, mEcho, nil, nil)
				errc <- err
			}()
			pid := peer.recvRequest().PromiseID
			ctx.Pass()
			peer.send(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{PromiseID: pid, Status: StatusDeadlineExceeded, Body: []byte("context deadline exceeded")}))
			return receive(t, "the call's error", errc)
		},
		code:  StatusDeadlineExceeded,
		is:    []string{"context.DeadlineExceeded"},
		text:  []string{"rpc: status 504: context deadline exceeded"},
		check: statusIs(StatusDeadlineExceeded, "context deadline exceeded", false, false),
	}, {
		name: "handler returned its ctx's error at the deadline: either timer first",
		provoke: func(t *testing.T) error {
			// The client's timer or the server's: the caller cannot
			// tell which fired first, and need not.
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			return callOn(t, ctx, newJourneyServer(t).addr, mjBlock, nil)
		},
		code: StatusDeadlineExceeded,
		is:   []string{"context.DeadlineExceeded"},
	}, {
		name: "a handler's own 504, to a call without a deadline",
		provoke: func(t *testing.T) error {
			// No deadline of the caller's passed: the 504 is the
			// handler's word alone, as any status it returns.
			c, peer := pipeClient(t)
			_, err := callAnswered(t, c, peer, nil, wire.Response{Status: StatusDeadlineExceeded, Body: []byte("upstream timed out")})
			return err
		},
		code:  StatusDeadlineExceeded,
		text:  []string{"rpc: status 504: upstream timed out"},
		check: statusIs(StatusDeadlineExceeded, "upstream timed out", false, false),
	}, {
		name: "deadline passed before the handler could run: 504 not run",
		provoke: func(t *testing.T) error {
			c, peer := pipeClient(t)
			_, err := callAnswered(t, c, peer, nil, wire.Response{Status: StatusDeadlineExceeded, NotRun: true, Body: []byte("deadline passed before the call could run")})
			return err
		},
		code:  StatusDeadlineExceeded,
		is:    []string{"context.DeadlineExceeded"},
		text:  []string{"rpc: status 504"},
		check: statusIs(StatusDeadlineExceeded, "deadline passed before the call could run", false, false),
	}, {
		name: "caller cancels",
		provoke: func(t *testing.T) error {
			j := newJourneyServer(t)
			c := dial(t, j.addr)
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() {
				_, err := c.Call(ctx, mjBlock, nil, nil)
				errc <- err
			}()
			receive(t, "the handler's start", j.started)
			cancel()
			return receive(t, "the call's error", errc)
		},
		code: StatusCanceled,
		is:   []string{"context.Canceled"},
		check: func(t *testing.T, err error) {
			if err != context.Canceled {
				t.Errorf("err %q, want context.Canceled itself", err)
			}
		},
	}, {
		name: "server Shutdown before the call",
		provoke: func(t *testing.T) error {
			j := newJourneyServer(t)
			c := dial(t, j.addr)
			if _, err := c.Call(context.Background(), mEcho, nil, nil); err != nil {
				t.Fatal(err)
			}
			go j.s.Shutdown(context.Background())
			await(t, "the go-away", c.Draining)
			_, err := c.Call(context.Background(), mEcho, nil, nil)
			return err
		},
		code: StatusUnavailable,
		is:   []string{"ErrGoAway"},
		text: []string{"going away"},
		check: func(t *testing.T, err error) {
			if err != ErrGoAway || !IsRetryable(err) {
				t.Errorf("err %q, want ErrGoAway itself, retryable", err)
			}
		},
	}, {
		name: "server Shutdown during the call: answered",
		provoke: func(t *testing.T) error {
			j := newJourneyServer(t)
			c := dial(t, j.addr)
			errc := make(chan error, 1)
			go func() {
				out, err := c.Call(context.Background(), mjBlock, nil, nil)
				if err == nil && string(out) != "released" {
					err = fmt.Errorf("answer %q", out)
				}
				errc <- err
			}()
			receive(t, "the handler's start", j.started)
			shut := make(chan error, 1)
			go func() { shut <- j.s.Shutdown(context.Background()) }()
			await(t, "the go-away", c.Draining)
			j.releaseAll()
			if err := receive(t, "Shutdown", shut); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
			return receive(t, "the call's error", errc)
		},
		code: StatusOK,
	}, {
		name: "call read after the go-away: 503 not run",
		provoke: func(t *testing.T) error {
			c, peer := pipeClient(t)
			_, err := callAnswered(t, c, peer, nil, wire.Response{Status: StatusUnavailable, NotRun: true, Body: []byte(goAwayRefusal)})
			return err
		},
		code:  StatusUnavailable,
		is:    []string{"ErrGoAway"},
		text:  []string{"rpc: status 503: going away"},
		check: statusIs(StatusUnavailable, "going away", false, true),
	}, {
		name: "handler returns Errorf(StatusNotFound)",
		provoke: func(t *testing.T) error {
			return callOn(t, context.Background(), newJourneyServer(t).addr, mjNotFound, nil)
		},
		code:  StatusNotFound,
		text:  []string{"rpc: status 404: no user 7"},
		check: statusIs(StatusNotFound, "no user 7", false, false),
	}, {
		name: "handler returns a plain error",
		provoke: func(t *testing.T) error {
			return callOn(t, context.Background(), newJourneyServer(t).addr, mjPlain, nil)
		},
		code:  StatusInternal,
		text:  []string{"rpc: status 500: loading user 7: disk on fire"},
		check: statusIs(StatusInternal, "loading user 7: disk on fire", false, false),
	}, {
		name: "handler panics",
		provoke: func(t *testing.T) error {
			return callOn(t, context.Background(), newJourneyServer(t).addr, mjPanic, nil)
		},
		code:  StatusInternal,
		text:  []string{"rpc: status 500"},
		check: statusIs(StatusInternal, "", false, false),
	}, {
		name: "unknown method",
		provoke: func(t *testing.T) error {
			return callOn(t, context.Background(), newJourneyServer(t).addr, 999, nil)
		},
		code:  StatusNotFound,
		text:  []string{"rpc: status 404: no such method"},
		check: statusIs(StatusNotFound, NoSuchMethod, true, false),
	}, {
		name: "request too large",
		provoke: func(t *testing.T) error {
			j := newJourneyServer(t)
			c := dial(t, j.addr, WithFrameOptions(frame.WithMaxFrameSize(1024)))
			_, err := c.Call(context.Background(), mEcho, make([]byte, 2048), nil)
			if _, err2 := c.Call(context.Background(), mEcho, nil, nil); err2 != nil {
				t.Errorf("the next call: %v, want the connection unaffected", err2)
			}
			return err
		},
		code:  StatusTooLarge,
		is:    []string{"frame.ErrFrameTooLarge"},
		text:  []string{"frame too large"},
		check: noStatus,
	}, {
		// A server's limit below the client's (frame.WithMaxFrameSize
		// on the server alone, as a service facing the internet sets
		// it): the server reads past the frame and answers that call
		// alone 413, not run; the call beside it, running, and the
		// connection go on.
		name: "request over the server's maximum frame size",
		provoke: func(t *testing.T) error {
			j := newJourneyServer(t, WithFrameOptions(frame.WithMaxFrameSize(1024)))
			c := dial(t, j.addr)
			errc := make(chan error, 1)
			go func() {
				_, err := c.Call(context.Background(), mjBlock, nil, nil)
				errc <- err
			}()
			receive(t, "the handler's start", j.started)
			_, err := c.Call(context.Background(), mEcho, make([]byte, 2048), nil)
			nextCallWorks(t, c)
			j.releaseAll()
			if other := receive(t, "the answer of the call beside it", errc); other != nil {
				t.Errorf("the call beside it: %v, want its answer", other)
			}
			return err
		},
		code: StatusTooLarge,
		text: []string{"rpc: status 413: rpc: request too large for the server's maximum frame size (len:2093 max:1024)"},
		check: func(t *testing.T, err error) {
			se := StatusOf(err)
			if se == nil || se.Code != StatusTooLarge || !se.refused || IsRetryable(err) {
				t.Errorf("StatusOf(err) = %+v, want 413 not run, not retryable", se)
			}
		},
	}, {
		name: "answer too large for the server",
		provoke: func(t *testing.T) error {
			j := newJourneyServer(t, WithFrameOptions(frame.WithMaxFrameSize(1024)))
			return callOn(t, context.Background(), j.addr, mjBig, nil)
		},
		code: StatusInternal,
		text: []string{"rpc: status 500: rpc: answer too large for a frame (len:2085 max:1024)"},
		check: func(t *testing.T, err error) {
			if se := StatusOf(err); se == nil || !strings.HasPrefix(se.Message, "rpc: answer too large") {
				t.Errorf("StatusOf(err) = %+v, want the server's words", se)
			}
		},
	}, {
		name: "answer too large for the client",
		provoke: func(t *testing.T) error {
			j := newJourneyServer(t)
			c := dial(t, j.addr, WithFrameOptions(frame.WithMaxFrameSize(1024)))
			_, err := c.Call(context.Background(), mjBig, nil, nil)
			nextCallWorks(t, c)
			return err
		},
		code:  StatusTooLarge,
		is:    []string{"frame.ErrFrameTooLarge"},
		text:  []string{"rpc: answer over the client's maximum frame size", "frame too large (len:2085 max:1024), read past"},
		check: noStatus,
	}, {
		name: "server at MaxInFlight: the caller's deadline",
		provoke: func(t *testing.T) error {
			j := newJourneyServer(t, WithMaxInFlight(1))
			c := dial(t, j.addr)
			go c.Call(context.Background(), mjBlock, nil, nil)
			receive(t, "the handler's start", j.started)
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			_, err := c.Call(ctx, mjBlock, nil, nil)
			return err
		},
		code: StatusDeadlineExceeded,
		is:   []string{"context.DeadlineExceeded"},
	}, {
		name: "client at MaxPending",
		provoke: func(t *testing.T) error {
			j := newJourneyServer(t)
			c := dial(t, j.addr, WithMaxPending(1))
			go c.Call(context.Background(), mjBlock, nil, nil)
			receive(t, "the handler's start", j.started)
			_, err := c.Call(context.Background(), mEcho, nil, nil)
			return err
		},
		code:  StatusTooManyRequests,
		is:    []string{"ErrTooManyPending"},
		check: noStatus,
	}, {
		name: "TLS handshake: unknown certificate (Dial)",
		provoke: func(t *testing.T) error {
			cert, _ := selfSigned(t)
			j := newJourneyServer(t, WithTLSConfig(&tls.Config{Certificates: []tls.Certificate{cert}}))
			_, err := Dial(context.Background(), "tcp", j.addr, WithTLSConfig(&tls.Config{RootCAs: x509.NewCertPool()}))
			return err
		},
		code:  StatusInternal,
		text:  []string{"certificate"},
		check: asCertError,
	}, {
		name: "TLS handshake: unknown certificate (NewClient)",
		provoke: func(t *testing.T) error {
			cert, _ := selfSigned(t)
			j := newJourneyServer(t, WithTLSConfig(&tls.Config{Certificates: []tls.Certificate{cert}}))
			nc, err := net.Dial("tcp", j.addr)
			if err != nil {
				t.Fatal(err)
			}
			c := NewClient(nc, WithTLSConfig(&tls.Config{RootCAs: x509.NewCertPool(), ServerName: "127.0.0.1"}))
			defer c.Close()
			_, err = c.Call(context.Background(), mEcho, nil, nil)
			return err
		},
		code:  StatusUnavailable,
		is:    []string{"ErrClosed"},
		text:  []string{closedText, "tls: failed to verify certificate"},
		check: asCertError,
	}}
}

// streamRows are the journey's rows for a client's stream: each
// provoke returns the error of the stream operation the row names.
func streamRows() []journeyRow {
	closedText := "rpc: connection closed"
	// heldStream opens an sjHold stream on a client of j and waits for
	// its handler's start.
	heldStream := func(t *testing.T, j *journeyServer, ctx context.Context, opts ...ClientOption) (*Client, *Stream) {
		t.Helper()
		c := dial(t, j.addr, opts...)
		st, err := c.OpenStream(ctx, sjHold, nil)
		if err != nil {
			t.Fatal(err)
		}
		receive(t, "the stream handler's start", j.started)
		return c, st
	}
	// recvFailed opens a stream of method on a client of j and returns
	// the error of its Recv.
	recvFailed := func(t *testing.T, j *journeyServer, method uint32) error {
		t.Helper()
		st, err := dial(t, j.addr).OpenStream(context.Background(), method, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = st.Recv(nil)
		return err
	}
	return []journeyRow{{
		name: "stream: Recv after the handler returned Errorf(StatusNotFound)",
		provoke: func(t *testing.T) error {
			return recvFailed(t, newJourneyServer(t), sjFail)
		},
		code:  StatusNotFound,
		text:  []string{"rpc: status 404: no feed 9"},
		check: statusIs(StatusNotFound, "no feed 9", false, false),
	}, {
		name: "stream: Send after the handler returned Errorf(StatusNotFound)",
		provoke: func(t *testing.T) error {
			st, err := dial(t, newJourneyServer(t).addr).OpenStream(context.Background(), sjFail, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Recv(nil); err == nil {
				t.Fatal("Recv: nil error, want the error end")
			}
			return st.Send([]byte("late"))
		},
		code:  StatusNotFound,
		text:  []string{"rpc: status 404: no feed 9"},
		check: statusIs(StatusNotFound, "no feed 9", false, false),
	}, {
		name: "stream: unknown stream method",
		provoke: func(t *testing.T) error {
			return recvFailed(t, newJourneyServer(t), 999)
		},
		code:  StatusNotFound,
		text:  []string{"rpc: status 404: no such stream method"},
		check: statusIs(StatusNotFound, streamNoHandler, true, false),
	}, {
		name: "stream: Recv after the connection was reset",
		provoke: func(t *testing.T) error {
			// The peer resets once OpenStream has returned: a reset as
			// soon as the open came could reach OpenStream first, which
			// then failed with it (under -race, 39 runs in 200).
			opened := make(chan struct{})
			addr := rawPeer(t, func(nc net.Conn) {
				r := &rawConn{nil, nc}
				for {
					kind, _, ok := r.recv()
					if !ok {
						return
					}
					if kind == wire.KindStreamOpen {
						<-opened
						nc.(*net.TCPConn).SetLinger(0)
						nc.Close()
						return
					}
				}
			})
			st, err := dial(t, addr).OpenStream(context.Background(), sjHold, nil)
			close(opened)
			if err != nil {
				t.Fatal(err)
			}
			_, err = st.Recv(nil)
			return err
		},
		code: StatusUnavailable,
		is:   []string{"ErrClosed", "syscall.ECONNRESET"},
		text: []string{closedText, "connection reset by peer"},
		check: func(t *testing.T, err error) {
			asNetOpError(t, err)
			noStatus(t, err)
		},
	}, {
		name: "stream: Send after the server closed",
		provoke: func(t *testing.T) error {
			j := newJourneyServer(t)
			c, st := heldStream(t, j, context.Background())
			j.s.Close()
			await(t, "the client to see the close", c.Closed)
			return st.Send([]byte("late"))
		},
		code:  StatusUnavailable,
		is:    []string{"ErrClosed", "io.EOF"},
		text:  []string{closedText + ": EOF"},
		check: noStatus,
	}, {
		name: "stream: Recv after the server closed",
		provoke: func(t *testing.T) error {
			j := newJourneyServer(t)
			_, st := heldStream(t, j, context.Background())
			j.s.Close()
			_, err := st.Recv(nil)
			return err
		},
		code:  StatusUnavailable,
		is:    []string{"ErrClosed", "io.EOF"},
		text:  []string{closedText + ": EOF"},
		check: noStatus,
	}, {
		name: "stream: Recv after the caller canceled",
		provoke: func(t *testing.T) error {
			ctx, cancel := context.WithCancel(context.Background())
			_, st := heldStream(t, newJourneyServer(t), ctx)
			cancel()
			_, err := st.Recv(nil)
			return err
		},
		code: StatusCanceled,
		is:   []string{"context.Canceled"},
	}, {
		name: "stream: Recv past the caller's deadline",
		provoke: func(t *testing.T) error {
			// The handler does not return at its deadline: the client's
			// timer ends the stream (see the 504 rows for a handler that
			// returns its ctx's error).
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			j := newJourneyServer(t)
			st, err := dial(t, j.addr).OpenStream(ctx, sjDeaf, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = st.Recv(nil)
			return err
		},
		code: StatusDeadlineExceeded,
		is:   []string{"context.DeadlineExceeded"},
	}, {
		name: "stream: ended 504 at its deadline before the client's timer fired",
		provoke: func(t *testing.T) error {
			// A handler that returns its ctx's error at the deadline
			// ends the stream 504 (TestStreamDeadlineEnds504), here
			// before the client's own timer fired.
			c, peer := pipeClient(t)
			ctx := latectx.New()
			opened := make(chan uint32, 1)
			go func() {
				for {
					kind, env, ok := peer.recv()
					if !ok {
						return
					}
					if kind == wire.KindStreamOpen {
						r, _ := wire.ParseRequest(env)
						opened <- r.PromiseID
					}
				}
			}()
			st, err := c.OpenStream(ctx, sjHold, nil)
			if err != nil {
				t.Fatal(err)
			}
			id := receive(t, "the open", opened)
			ctx.Pass()
			peer.send(wire.KindStreamEnd, wire.AppendStreamEndError(nil, id, StatusDeadlineExceeded, "context deadline exceeded"))
			_, err = st.Recv(nil)
			return err
		},
		code:  StatusDeadlineExceeded,
		is:    []string{"context.DeadlineExceeded"},
		text:  []string{"rpc: status 504: context deadline exceeded"},
		check: statusIs(StatusDeadlineExceeded, "context deadline exceeded", false, false),
	}, {
		name: "stream: open beyond the client's WithMaxStreams",
		provoke: func(t *testing.T) error {
			c, _ := heldStream(t, newJourneyServer(t), context.Background(), WithMaxStreams(1))
			_, err := c.OpenStream(context.Background(), sjHold, nil)
			return err
		},
		code:  StatusTooManyRequests,
		is:    []string{"ErrTooManyStreams"},
		check: noStatus,
	}, {
		name: "stream: open beyond the server's WithMaxStreams",
		provoke: func(t *testing.T) error {
			j := newJourneyServer(t, WithMaxStreams(1))
			c, _ := heldStream(t, j, context.Background())
			st, err := c.OpenStream(context.Background(), sjHold, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = st.Recv(nil)
			return err
		},
		// Not run, but not marked so (see WithMaxStreams): the wire's
		// mark would make it a go-away.
		code:  StatusUnavailable,
		text:  []string{"rpc: status 503: too many open streams"},
		check: statusIs(StatusUnavailable, streamTooMany, false, false),
	}, {
		name: "stream: open after the server's go-away",
		provoke: func(t *testing.T) error {
			j := newJourneyServer(t)
			c, _ := heldStream(t, j, context.Background())
			go j.s.Shutdown(context.Background())
			await(t, "the go-away", c.Draining)
			_, err := c.OpenStream(context.Background(), sjHold, nil)
			return err
		},
		code: StatusUnavailable,
		is:   []string{"ErrGoAway"},
	}, {
		// A server's limit below the client's: the server reads the
		// message past and ends that stream alone 413; the connection
		// goes on.
		name: "stream: a message over the server's maximum frame size",
		provoke: func(t *testing.T) error {
			j := newJourneyServer(t, WithFrameOptions(frame.WithMaxFrameSize(1024)))
			c, st := heldStream(t, j, context.Background())
			if err := st.Send(make([]byte, 2048)); err != nil {
				t.Fatalf("Send: %v, want it sent", err)
			}
			_, err := st.Recv(nil)
			nextCallWorks(t, c)
			return err
		},
		code: StatusTooLarge,
		text: []string{"rpc: status 413: rpc: stream message too large for the server's maximum frame size (len:2053 max:1024)"},
		check: func(t *testing.T, err error) {
			if se := StatusOf(err); se == nil || se.Code != StatusTooLarge || se.refused || IsRetryable(err) {
				t.Errorf("StatusOf(err) = %+v, want 413, not retryable", se)
			}
		},
	}, {
		name: "stream: a message over the client's maximum frame size",
		provoke: func(t *testing.T) error {
			j := newJourneyServer(t)
			c := dial(t, j.addr, WithFrameOptions(frame.WithMaxFrameSize(1024)))
			st, err := c.OpenStream(context.Background(), sjBig, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = st.Recv(nil)
			nextCallWorks(t, c)
			return err
		},
		code:  StatusTooLarge,
		is:    []string{"frame.ErrFrameTooLarge"},
		text:  []string{"rpc: stream message over the client's maximum frame size", "frame too large (len:2053 max:1024), read past"},
		check: noStatus,
	}, {
		// A client limit below the 1 KiB of text a zapcodec server's
		// error end may carry.
		name: "stream: an error end whose text is over the client's maximum frame size",
		provoke: func(t *testing.T) error {
			const sjLongError = 711
			j := newJourneyServer(t)
			j.s.HandleStream(sjLongError, func(ctx context.Context, init []byte, st *Stream) error {
				return Errorf(418, "%s", strings.Repeat("e", 1000))
			})
			c := dial(t, j.addr, WithFrameOptions(frame.WithMaxFrameSize(512)))
			st, err := c.OpenStream(context.Background(), sjLongError, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = st.Recv(nil)
			nextCallWorks(t, c)
			return err
		},
		code: 418,
		text: []string{"rpc: status 418: " + strings.Repeat("e", 56)},
		check: func(t *testing.T, err error) {
			// The frame's first 64 bytes: id, status and 56 of the text.
			if se := StatusOf(err); se == nil || len(se.Message) != 56 || se.BodyLen != 1000 {
				t.Errorf("StatusOf(err) = %+v, want 56 bytes of the text and BodyLen 1000", se)
			}
		},
	}}
}

// nextCallWorks checks that a call on c after a row's failure is
// answered: the failure was the call's or stream's alone, not the
// connection's.
func nextCallWorks(t *testing.T, c *Client) {
	t.Helper()
	if out, err := c.Call(context.Background(), mEcho, []byte("next"), nil); err != nil || string(out) != "next" {
		t.Errorf("the next call: %q %v, want the connection unaffected", out, err)
	}
}

// asCertError checks that errors.As finds the certificate's verification
// error in err.
func asCertError(t *testing.T, err error) {
	t.Helper()
	var ce *tls.CertificateVerificationError
	if !errors.As(err, &ce) {
		t.Errorf("errors.As(err, *tls.CertificateVerificationError) false for %q", err)
	}
	var ua x509.UnknownAuthorityError
	if !errors.As(err, &ua) {
		t.Errorf("errors.As(err, x509.UnknownAuthorityError) false for %q", err)
	}
}

// failingReadConn is a connection whose Read fails with err.
type failingReadConn struct {
	net.Conn
	err error
}

func (c failingReadConn) Read([]byte) (int, error) { return 0, c.err }

// The error of a call whose connection broke wraps what broke it, which
// errors.Is and errors.As find, but is no answer: StatusOf and Code do
// not look into it, whatever the connection's Read returned (here an
// error that wraps a *StatusError and a ctx's error): Code says 503, as
// of any lost connection.
func TestConnErrorCauseIsNoStatus(t *testing.T) {
	a, b := net.Pipe()
	t.Cleanup(func() { b.Close() })
	cause := fmt.Errorf("wrapper: %w, %w", Errorf(StatusNotFound, "no route"), context.DeadlineExceeded)
	c := NewClient(failingReadConn{a, cause})
	defer c.Close()
	_, err := c.Call(context.Background(), mEcho, nil, nil)
	if !errors.Is(err, ErrClosed) || !errors.Is(err, cause) {
		t.Fatalf("err %q: want it to match ErrClosed and wrap the cause", err)
	}
	if se := StatusOf(err); se != nil {
		t.Errorf("StatusOf(err) = %+v, want nil: no answer came", se)
	}
	if got := Code(err); got != StatusUnavailable {
		t.Errorf("Code(err) = %d, want 503: the connection was lost, whatever broke it", got)
	}
	if want := "rpc: connection closed: wrapper: rpc: status 404: no route, context deadline exceeded"; err.Error() != want {
		t.Errorf("text %q, want %q", err, want)
	}
}
