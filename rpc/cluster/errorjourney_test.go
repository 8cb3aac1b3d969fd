package cluster

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/internal/latectx"
	"github.com/zapcodec/zapcodec/rpc"
)

// mjBlock waits until the test ends, whatever its ctx (the journey's
// replica).
const mjBlock = 90

// sjBlock is a stream that waits for its ctx's end.
const sjBlock = 91

// blockingReplica serves mjBlock and sjBlock on loopback TCP; started
// receives a value as each handler begins. It returns the server and its
// address.
func blockingReplica(t *testing.T) (*rpc.Server, string, chan struct{}) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := rpc.NewServer(rpc.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	started := make(chan struct{}, 4)
	release := make(chan struct{})
	s.Handle(mjBlock, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		started <- struct{}{}
		<-release // not ctx's end: a handler that misses it
		return resp, nil
	})
	s.HandleStream(sjBlock, func(ctx context.Context, init []byte, st *rpc.Stream) error {
		started <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	})
	served := make(chan error, 1)
	go func() { served <- s.Serve(l) }()
	t.Cleanup(func() {
		s.Close()
		<-served
	})
	t.Cleanup(func() { close(release) }) // before the Close
	return s, l.Addr().String(), started
}

// clusterRow is one failure a caller of a cluster Client meets.
type clusterRow struct {
	name    string
	provoke func(t *testing.T) error
	code    uint32   // rpc.Code(err)
	is      []string // the errors (by name, see clusterSentinels) err matches; no other
	text    []string // words err's text holds
	// replica: err is a *ReplicaError with that many attempts (0: it is
	// not one).
	attempts int
}

var clusterSentinels = []struct {
	name string
	err  error
}{
	{"ErrNoReplica", ErrNoReplica},
	{"rpc.ErrClosed", rpc.ErrClosed},
	{"rpc.ErrGoAway", rpc.ErrGoAway},
	{"context.Canceled", context.Canceled},
	{"context.DeadlineExceeded", context.DeadlineExceeded},
	{"io.EOF", io.EOF},
	{"net.ErrClosed", net.ErrClosed},
}

// TestErrorsACallerSeesThroughCluster is rpc's TestErrorsACallerSees for
// a cluster Client: what a call (or a stream's Recv) returns when a
// replica fails it, when its connection breaks, when no replica is
// ready, and when the caller's deadline passes. rpc/README.md's table
// "What a call returns when..." has these rows.
func TestErrorsACallerSeesThroughCluster(t *testing.T) {
	rows := []clusterRow{{
		name: "replica's handler fails",
		provoke: func(t *testing.T) error {
			r := startReplica(t, "127.0.0.1")
			c := dialT(t, r.addr)
			_, err := c.Call(context.Background(), mFail, nil, nil)
			return err
		},
		code:     rpc.StatusInternal,
		text:     []string{"cluster: replica 127.0.0.1:", ": rpc: status 500: broken replica"},
		attempts: 1,
	}, {
		name: "replica's handler fails, retried by policy",
		provoke: func(t *testing.T) error {
			r1, r2 := startReplica(t, "127.0.0.1"), startReplica(t, "127.0.0.1")
			c := dialT(t, r1.addr+","+r2.addr, WithEjection(-1, 0, 0),
				WithRetryPolicy(RetryPolicy{MaxAttempts: 3, Statuses: []uint32{rpc.StatusInternal}}))
			_, err := c.Call(context.Background(), mFail, nil, nil)
			return err
		},
		code:     rpc.StatusInternal,
		text:     []string{"rpc: status 500: broken replica (after 3 attempts)"},
		attempts: 3,
	}, {
		name: "replica's server closes mid-call",
		provoke: func(t *testing.T) error {
			s, addr, started := blockingReplica(t)
			c := dialT(t, addr)
			errc := make(chan error, 1)
			go func() {
				_, err := c.Call(context.Background(), mjBlock, nil, nil)
				errc <- err
			}()
			receive(t, "the handler's start", started)
			s.Close()
			return receive(t, "the call's error", errc)
		},
		code:     rpc.StatusUnavailable,
		is:       []string{"rpc.ErrClosed", "io.EOF"},
		text:     []string{": rpc: connection closed: EOF"},
		attempts: 1,
	}, {
		name: "the client's socket closed under it mid-call",
		provoke: func(t *testing.T) error {
			_, addr, started := blockingReplica(t)
			d := &rawConnDialer{}
			c := dialT(t, addr, WithClientOptions(rpc.WithDialer(d)))
			errc := make(chan error, 1)
			go func() {
				_, err := c.Call(context.Background(), mjBlock, nil, nil)
				errc <- err
			}()
			receive(t, "the handler's start", started)
			d.last().Close()
			return receive(t, "the call's error", errc)
		},
		code:     rpc.StatusUnavailable,
		is:       []string{"rpc.ErrClosed", "net.ErrClosed"},
		text:     []string{": rpc: connection closed: ", "use of closed network connection"},
		attempts: 1,
	}, {
		name: "no replica ready",
		provoke: func(t *testing.T) error {
			r := startReplica(t, "127.0.0.1")
			c := dialT(t, r.addr)
			r.kill()
			await(t, "the replica to leave the ready set", func() bool { return readyCount(c) == 0 })
			_, err := c.Call(context.Background(), mEcho, nil, nil)
			return err
		},
		code: rpc.StatusUnavailable,
		is:   []string{"ErrNoReplica"},
		text: []string{"cluster: no replica is ready"},
	}, {
		name: "caller's deadline",
		provoke: func(t *testing.T) error {
			// The handler does not return at its deadline: the client's
			// timer ends the call. (One that returns its ctx's error may
			// be answered 504 first: rpc's TestErrorsACallerSees.)
			_, addr, _ := blockingReplica(t)
			c := dialT(t, addr)
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			_, err := c.Call(ctx, mjBlock, nil, nil)
			if err != context.DeadlineExceeded {
				t.Errorf("err %q, want context.DeadlineExceeded itself", err)
			}
			return err
		},
		code: rpc.StatusDeadlineExceeded,
		is:   []string{"context.DeadlineExceeded"},
	}, {
		name: "replica answers 504 at the deadline, before the client's timer fired",
		provoke: func(t *testing.T) error {
			// A handler that returns its ctx's error at the deadline is
			// answered 504; here the answer comes once the caller's
			// deadline has passed, its ctx's timer not fired yet. It
			// reads as the client's timer would have made it.
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ctx := latectx.New()
			s := rpc.NewServer(rpc.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
			s.Handle(mjBlock, func(context.Context, []byte, []byte) ([]byte, error) {
				ctx.Pass()
				return nil, rpc.Errorf(rpc.StatusDeadlineExceeded, "context deadline exceeded")
			})
			served := make(chan error, 1)
			go func() { served <- s.Serve(l) }()
			t.Cleanup(func() {
				s.Close()
				<-served
			})
			c := dialT(t, l.Addr().String())
			_, err = c.Call(ctx, mjBlock, nil, nil)
			return err
		},
		code:     rpc.StatusDeadlineExceeded,
		is:       []string{"context.DeadlineExceeded"},
		text:     []string{": rpc: status 504: context deadline exceeded"},
		attempts: 1,
	}, {
		name: "caller cancels",
		provoke: func(t *testing.T) error {
			_, addr, started := blockingReplica(t)
			c := dialT(t, addr)
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() {
				_, err := c.Call(ctx, mjBlock, nil, nil)
				errc <- err
			}()
			receive(t, "the handler's start", started)
			cancel()
			err := receive(t, "the call's error", errc)
			if err != context.Canceled {
				t.Errorf("err %q, want context.Canceled itself", err)
			}
			return err
		},
		code: rpc.StatusCanceled,
		is:   []string{"context.Canceled"},
	}, {
		name: "stream: Recv after the replica's server closed",
		provoke: func(t *testing.T) error {
			s, addr, started := blockingReplica(t)
			c := dialT(t, addr)
			st, err := c.OpenStream(context.Background(), sjBlock, nil)
			if err != nil {
				t.Fatal(err)
			}
			receive(t, "the stream handler's start", started)
			s.Close()
			_, err = st.Recv(nil)
			return err
		},
		code: rpc.StatusUnavailable,
		is:   []string{"rpc.ErrClosed", "io.EOF"},
		text: []string{"rpc: connection closed: EOF"},
	}}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			err := row.provoke(t)
			if err == nil {
				t.Fatal("err nil")
			}
			t.Logf("err %T %q", err, err)
			if got := rpc.Code(err); got != row.code {
				t.Errorf("rpc.Code(err) = %d, want %d", got, row.code)
			}
			want := map[string]bool{}
			for _, n := range row.is {
				want[n] = true
			}
			for _, s := range clusterSentinels {
				if got := errors.Is(err, s.err); got != want[s.name] {
					t.Errorf("errors.Is(err, %s) = %v, want %v", s.name, got, want[s.name])
				}
			}
			for _, w := range row.text {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err %q does not say %q", err, w)
				}
			}
			var re *ReplicaError
			switch isRE := errors.As(err, &re); {
			case row.attempts == 0 && isRE:
				t.Errorf("err is a *ReplicaError (%q), want none", err)
			case row.attempts > 0 && !isRE:
				t.Errorf("err %q is no *ReplicaError", err)
			case row.attempts > 0 && max(re.Attempts, 1) != row.attempts:
				t.Errorf("ReplicaError.Attempts = %d, want %d", re.Attempts, row.attempts)
			}
		})
	}
}
