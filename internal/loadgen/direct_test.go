package loadgen

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/rpc"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// A Direct run makes the same calls with the same bytes on the wire as an
// rpc.Client run: answers checked, statuses counted, bytes as computed.
func TestDirectSameAsClient(t *testing.T) {
	s, addr := startServer(t)
	rep := run(t, Config{Addr: addr, Conns: 3, Direct: true, Calls: 600, Method: mEcho, Request: request, Check: echoed})
	if rep.Calls != 600 || rep.OK != 600 || rep.Failed != 0 {
		t.Fatalf("calls %d ok %d failed %d, want 600/600/0; errors %v", rep.Calls, rep.OK, rep.Failed, rep.Errors)
	}
	checkLatency(t, rep)
	if want := uint64(600 * (5 + wire.RequestOverhead + 8)); rep.BytesOut != want {
		t.Errorf("bytes out %d, want %d", rep.BytesOut, want)
	}
	if want := uint64(600 * (5 + wire.ResponseOverhead + 8)); rep.BytesIn != want {
		t.Errorf("bytes in %d, want %d", rep.BytesIn, want)
	}
	if st := s.Stats(); st.Accepted != 3 || st.OK != 600 {
		t.Errorf("server accepted %d connections and answered %d OK, want 3 and 600", st.Accepted, st.OK)
	}
	rep = run(t, Config{Addr: addr, Direct: true, Calls: 50, Method: mReject, Payload: []byte("x")})
	if rep.Failed != 50 || rep.Statuses["403"] != 50 || len(rep.Errors) != 0 {
		t.Fatalf("403 run: failed %d statuses %v errors %v", rep.Failed, rep.Statuses, rep.Errors)
	}
	rep = run(t, Config{Addr: addr, Direct: true, Conns: 2, Rate: 2000, Duration: 100 * time.Millisecond, Method: mEcho, Request: request, Check: echoed})
	if rep.Calls != 200 || rep.OK != 200 {
		t.Fatalf("open loop: calls %d ok %d, want 200; errors %v", rep.Calls, rep.OK, rep.Errors)
	}
}

// Direct needs one call in flight per connection and no client options.
func TestDirectConfig(t *testing.T) {
	_, addr := startServer(t)
	for _, cfg := range []Config{
		{Addr: addr, Direct: true, Concurrency: 2, Method: mEcho},
		{Addr: addr, Direct: true, ClientOptions: []rpc.ClientOption{rpc.WithAnswerTimeout(time.Second)}, Method: mEcho},
	} {
		if r, err := New(context.Background(), cfg); err == nil {
			r.Close()
			t.Fatalf("New(%+v) succeeded", cfg)
		}
	}
}

// A server that shuts down: its go-away is acknowledged, the calls after
// it fail as go-away or closed (not as a hang), and the run ends.
func TestDirectServerShutdown(t *testing.T) {
	s, addr := startServer(t)
	r, err := New(context.Background(), Config{Addr: addr, Conns: 2, Direct: true, Duration: 30 * time.Second, Method: mEcho, Payload: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() {
		afterAnswers(s)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	}()
	rep, err := r.Run(context.Background())
	if !errors.Is(err, ErrNoConns) {
		t.Fatalf("Run = %v, want ErrNoConns once the server is gone", err)
	}
	if rep.OK == 0 || rep.Failed == 0 {
		t.Fatalf("ok %d failed %d errors %v statuses %v: want calls before and failures after the shutdown", rep.OK, rep.Failed, rep.Errors, rep.Statuses)
	}
	for class := range rep.Errors {
		if class != "go-away" && class != "connection closed" {
			t.Fatalf("error class %q after a shutdown", class)
		}
	}
}

// A server that never answers: the call is cut once the run's grace is
// over and counted as abandoned; the run ends.
func TestDirectGraceCutsHungCall(t *testing.T) {
	addr := silentServer(t)
	r, err := New(context.Background(), Config{Addr: addr, Direct: true, Calls: 1,
		Duration: 20 * time.Millisecond, Grace: 50 * time.Millisecond, Method: mEcho, Payload: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rep, _ := r.Run(context.Background())
	if rep.Calls != 1 || rep.Errors["abandoned (no answer in time)"] != 1 {
		t.Fatalf("calls %d errors %v, want the one call abandoned", rep.Calls, rep.Errors)
	}
}

// deadlineConn counts the past deadlines set on its connection.
type deadlineConn struct {
	net.Conn
	cuts atomic.Int32
}

func (c *deadlineConn) SetDeadline(t time.Time) error {
	if t.Equal(past) {
		c.cuts.Add(1)
	}
	return c.Conn.SetDeadline(t)
}

// A ctx that ends after its call was answered (the run's watch of
// timeouts gave the call up as its answer came) cuts the connection's I/O
// with nothing in flight: the next call, under a new ctx, undoes the cut
// and goes through. Its write failed on the past deadline, and the
// connection was closed.
func TestDirectLateCutUndone(t *testing.T) {
	_, addr := startServer(t)
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	dc := &deadlineConn{Conn: nc}
	d := newDirectConn(dc)
	defer d.Close()
	ctx1, cancel1 := context.WithCancel(context.Background())
	if out, err := d.Call(ctx1, mEcho, []byte("a"), nil); err != nil || string(out) != "a" {
		t.Fatalf("first call: %q %v", out, err)
	}
	cancel1()
	for deadline := time.Now().Add(30 * time.Second); dc.cuts.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("after 30 s the ended ctx had not cut the I/O")
		}
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	if out, err := d.Call(ctx2, mEcho, []byte("b"), nil); err != nil || string(out) != "b" {
		t.Fatalf("a call after a ctx ended with none in flight: %q %v", out, err)
	}
	if d.Closed() {
		t.Fatal("the connection is closed")
	}
}

// A request too large for a frame fails its call, as rpc.Client fails it,
// without a byte written: the connection is kept and the calls after it
// are answered. (The direct client wrote it; the server closed the
// connection at its header, and the call, then the run, failed as
// "connection closed".)
func TestDirectRequestTooLarge(t *testing.T) {
	_, addr := startServer(t)
	big := make([]byte, frame.DefaultMaxFrameSize)
	rep := run(t, Config{Addr: addr, Direct: true, Calls: 4, Method: mEcho, Request: func(i uint64, dst []byte) []byte {
		if i == 1 {
			return big
		}
		return request(i, dst)
	}})
	if rep.Calls != 4 || rep.OK != 3 || rep.Failed != 1 || len(rep.Errors) != 1 {
		t.Fatalf("calls %d ok %d failed %d errors %v; want 4 calls, 3 ok, 1 failed as too large", rep.Calls, rep.OK, rep.Failed, rep.Errors)
	}
	for class := range rep.Errors {
		if !strings.Contains(class, frame.ErrFrameTooLarge.Error()) {
			t.Fatalf("error class %q, want %q", class, frame.ErrFrameTooLarge)
		}
	}
	if rep.BytesOut > 1<<20 {
		t.Fatalf("%d bytes written, want the small requests' only", rep.BytesOut)
	}
}
