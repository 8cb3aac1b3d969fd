package streams

import (
	"context"
	"net"
	"sync/atomic"
	"testing"

	"github.com/zapcodec/zapcodec/rpc"
)

// Generated typed streams go through the stream interceptors, their taps
// and the stream observer like raw ones: the typed Send and Recv are
// rpc.Stream's.
func TestTypedStreamsIntercepted(t *testing.T) {
	var srvTap, cliTap atomic.Int64
	ended := make(chan rpc.StreamEvent, 1)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := rpc.NewServer(
		rpc.WithStreamInterceptors(func(ctx context.Context, m uint32, init []byte, s *rpc.Stream, next rpc.StreamHandler) error {
			s.Tap(rpc.StreamTap{Send: func([]byte) error { srvTap.Add(1); return nil }})
			return next(ctx, init, s)
		}),
		rpc.WithStreamObserver(func(ev rpc.StreamEvent) {
			if ev.End {
				ended <- ev
			}
		}))
	RegisterFeedServer(srv, &feed{})
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	c, err := rpc.Dial(context.Background(), "tcp", l.Addr().String(),
		rpc.WithStreamClientInterceptors(func(ctx context.Context, m uint32, init []byte, open rpc.Streamer) (*rpc.Stream, error) {
			st, err := open(ctx, m, init)
			if err == nil {
				st.Tap(rpc.StreamTap{Recv: func([]byte) error { cliTap.Add(1); return nil }})
			}
			return st, err
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	sub, err := NewFeedClient(c).Subscribe(context.Background(), &Filter{Count: 100, Size: 8})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		if _, err := sub.Recv(); err != nil {
			break
		}
		n++
	}
	ev := <-ended
	if n != 100 || srvTap.Load() != 100 || cliTap.Load() != 100 || ev.MsgsOut != 100 || ev.Status != rpc.StatusOK {
		t.Fatalf("%d messages; taps saw %d (server) and %d (client); end event %+v", n, srvTap.Load(), cliTap.Load(), ev)
	}
}
