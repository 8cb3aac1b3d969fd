package rpctest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
	"github.com/zapcodec/zapcodec/rpc/rpctest"
)

const (
	mEcho   = 1
	mSlow   = 2
	mStream = 3
)

func echo(_ context.Context, req, resp []byte) ([]byte, error) { return append(resp, req...), nil }

// serve starts a server with an echo method and an echo stream on a new
// Listener; Serve's result arrives on the returned channel.
func serve(t *testing.T, opts ...rpc.ServerOption) (*rpctest.Listener, *rpc.Server, <-chan error) {
	t.Helper()
	l := rpctest.NewListener()
	s := rpc.NewServer(opts...)
	s.Handle(mEcho, echo)
	s.HandleStream(mStream, func(ctx context.Context, init []byte, st *rpc.Stream) error {
		var buf []byte
		for {
			msg, err := st.Recv(buf[:0])
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			if err := st.Send(append(init, msg...)); err != nil {
				return err
			}
			buf = msg
		}
	})
	served := make(chan error, 1)
	go func() { served <- s.Serve(l) }()
	t.Cleanup(func() { s.Close() })
	return l, s, served
}

// dial is rpc.Dial through l.
func dial(t *testing.T, l *rpctest.Listener, opts ...rpc.ClientOption) *rpc.Client {
	t.Helper()
	c, err := rpc.Dial(context.Background(), "tcp", "ignored:1", append(opts, rpc.WithDialer(l))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestUnaryAndStream(t *testing.T) {
	l, _, _ := serve(t)
	ctx := context.Background()
	for name, c := range map[string]*rpc.Client{
		"rpc.Dial with the listener as dialer": dial(t, l),
		"Listener.Dial and rpc.NewClient": func() *rpc.Client {
			nc, err := l.Dial()
			if err != nil {
				t.Fatal(err)
			}
			c := rpc.NewClient(nc)
			t.Cleanup(func() { c.Close() })
			return c
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			out, err := c.Call(ctx, mEcho, []byte("hello"), nil)
			if err != nil || string(out) != "hello" {
				t.Fatalf("Call = %q, %v", out, err)
			}
			st, err := c.OpenStream(ctx, mStream, []byte("> "))
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range []string{"one", "two"} {
				if err := st.Send([]byte(m)); err != nil {
					t.Fatal(err)
				}
				got, err := st.Recv(nil)
				if err != nil || string(got) != "> "+m {
					t.Fatalf("Recv = %q, %v", got, err)
				}
			}
			if err := st.CloseSend(); err != nil {
				t.Fatal(err)
			}
			if got, err := st.Recv(nil); err != io.EOF {
				t.Fatalf("Recv after CloseSend = %q, %v; want io.EOF", got, err)
			}
		})
	}
}

// TestBusy: many callers with payloads larger than the write buffers,
// and streams both ways at once, over connections whose buffers they
// fill: nothing waits for ever.
func TestBusy(t *testing.T) {
	l, _, _ := serve(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // only against a hang
	defer cancel()
	c := dial(t, l)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := bytes.Repeat([]byte{byte(i)}, 1+i*9000)
			for range 20 {
				out, err := c.Call(ctx, mEcho, req, nil)
				if err != nil || !bytes.Equal(out, req) {
					errs <- fmt.Errorf("call of %d bytes: %d bytes, %v", len(req), len(out), err)
					return
				}
			}
		}()
	}
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := c.OpenStream(ctx, mStream, nil)
			if err != nil {
				errs <- err
				return
			}
			msg := bytes.Repeat([]byte{byte(i)}, 100_000)
			done := make(chan error, 1)
			go func() { // send while the other side sends back
				for range 30 {
					if err := st.Send(msg); err != nil {
						done <- err
						return
					}
				}
				done <- st.CloseSend()
			}()
			n := 0
			var buf []byte
			for {
				buf, err = st.Recv(buf[:0])
				if err == io.EOF {
					break
				}
				if err != nil || !bytes.Equal(buf, msg) {
					errs <- fmt.Errorf("stream message %d: %d bytes, %v", n, len(buf), err)
					return
				}
				n++
			}
			if err := <-done; err != nil || n != 30 {
				errs <- fmt.Errorf("stream: %d messages back, send: %v", n, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestShutdown(t *testing.T) {
	l, s, served := serve(t)
	release := make(chan struct{})
	started := make(chan struct{})
	s.Handle(mSlow, func(_ context.Context, req, resp []byte) ([]byte, error) {
		close(started)
		<-release
		return append(resp, "late"...), nil
	})
	c := dial(t, l)
	got := make(chan error, 1)
	go func() {
		out, err := c.Call(context.Background(), mSlow, nil, nil)
		if err == nil && string(out) != "late" {
			err = fmt.Errorf("answer %q", out)
		}
		got <- err
	}()
	<-started
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	// Shutdown answers the call it took, then closes the connection.
	close(release)
	if err := <-got; err != nil {
		t.Fatalf("call running at Shutdown: %v", err)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-served; err != rpc.ErrServerClosed {
		t.Fatalf("Serve returned %v, want ErrServerClosed", err)
	}
	if _, err := c.Call(context.Background(), mEcho, []byte("x"), nil); err == nil {
		t.Fatal("call after Shutdown succeeded")
	}
	// Serve closed the listener: a dial fails at once, clearly.
	_, err := rpc.Dial(context.Background(), "tcp", "x:1", rpc.WithDialer(l))
	if !errors.Is(err, rpctest.ErrClosed) || !errors.Is(err, net.ErrClosed) || !strings.Contains(err.Error(), "closed listener") {
		t.Fatalf("dial after Shutdown: %v", err)
	}
}

func TestClose(t *testing.T) {
	l, s, served := serve(t)
	c := dial(t, l)
	if _, err := c.Call(context.Background(), mEcho, []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != rpc.ErrServerClosed {
		t.Fatalf("Serve returned %v, want ErrServerClosed", err)
	}
	if _, err := c.Call(context.Background(), mEcho, []byte("x"), nil); !errors.Is(err, rpc.ErrClosed) {
		t.Fatalf("call after the server's Close: %v, want rpc.ErrClosed", err)
	}
	c.Close()
}

func TestListenerClose(t *testing.T) {
	l := rpctest.NewListener()
	accepted := make(chan error, 1)
	go func() {
		_, err := l.Accept()
		accepted <- err
	}()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := <-accepted; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close: %v", err)
	}
	nc, err := l.Dial()
	if nc != nil || !errors.Is(err, rpctest.ErrClosed) || !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Dial after Close: %v, %v", nc, err)
	}
	if got, want := err.Error(), "rpctest: dial on a closed listener: use of closed network connection"; got != want {
		t.Fatalf("error %q, want %q", got, want)
	}
	if a := l.Addr(); a.Network() != "pipe" || a.String() != "rpctest" {
		t.Fatalf("Addr %s %s", a.Network(), a)
	}
}

// TestDialWaitsForAccept: a dial returns once Accept took the
// connection; with no one accepting, DialContext returns by its ctx, and
// a Close while it waits fails it with ErrClosed.
func TestDialWaitsForAccept(t *testing.T) {
	l := rpctest.NewListener()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.DialContext(ctx, "", ""); !errors.Is(err, context.Canceled) {
		t.Fatalf("DialContext with no Accept, ctx canceled: %v", err)
	}
	dialed := make(chan error, 1)
	go func() {
		_, err := l.Dial()
		dialed <- err
	}()
	select {
	case err := <-dialed:
		t.Fatalf("Dial returned with no Accept: %v", err)
	default:
	}
	l.Close()
	if err := <-dialed; !errors.Is(err, rpctest.ErrClosed) {
		t.Fatalf("Dial waiting at Close: %v", err)
	}
}
