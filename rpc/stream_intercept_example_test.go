package rpc_test

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"

	"github.com/zapcodec/zapcodec/rpc"
)

// Stream middleware: a server interceptor that refuses streams without a
// token and counts the messages of the others with a tap, a client
// interceptor that adds the token to every open, and the stream observer
// reporting each stream's end.
func ExampleWithStreamInterceptors() {
	var msgs atomic.Int64
	auth := func(ctx context.Context, method uint32, init []byte, st *rpc.Stream, next rpc.StreamHandler) error {
		if string(rpc.MetadataFrom(ctx).Get("token")) != "s3cret" {
			return rpc.Errorf(rpc.StatusUnauthorized, "no token")
		}
		st.Tap(rpc.StreamTap{Send: func(msg []byte) error { msgs.Add(1); return nil }})
		return next(ctx, init, st)
	}
	ended := make(chan rpc.StreamEvent, 2)
	s := rpc.NewServer(rpc.WithStreamInterceptors(auth), rpc.WithStreamObserver(func(ev rpc.StreamEvent) {
		if ev.End {
			ended <- ev
		}
	}))
	s.HandleStream(1, func(ctx context.Context, init []byte, st *rpc.Stream) error {
		for i := range 3 {
			if err := st.Send(fmt.Appendf(nil, "msg %d", i)); err != nil {
				return err
			}
		}
		return nil
	})
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	go s.Serve(l)
	defer s.Close()

	addToken := func(ctx context.Context, method uint32, init []byte, open rpc.Streamer) (*rpc.Stream, error) {
		return open(rpc.WithMetadata(ctx, "token", "s3cret"), method, init)
	}
	for _, opts := range [][]rpc.ClientOption{nil, {rpc.WithStreamClientInterceptors(addToken)}} {
		c, _ := rpc.Dial(context.Background(), "tcp", l.Addr().String(), opts...)
		st, _ := c.OpenStream(context.Background(), 1, nil)
		n := 0
		var err error
		for err == nil {
			if _, err = st.Recv(nil); err == nil {
				n++
			}
		}
		ev := <-ended
		fmt.Printf("%d messages, then %v; the server saw status %d, %d messages out\n", n, err, ev.Status, ev.MsgsOut)
		c.Close()
	}
	fmt.Println("tapped:", msgs.Load())
	// Output:
	// 0 messages, then rpc: status 401: no token; the server saw status 401, 0 messages out
	// 3 messages, then EOF; the server saw status 200, 3 messages out
	// tapped: 3
}
