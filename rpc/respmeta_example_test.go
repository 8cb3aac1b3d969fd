package rpc_test

import (
	"context"
	"fmt"
	"log"
	"net"

	"github.com/zapcodec/zapcodec/rpc"
)

// A handler sets response metadata for its caller (gRPC-go's header and
// trailer), which a caller that asks for it receives with the answer, an
// error answer included.
func ExampleSetResponseMetadata() {
	s := rpc.NewServer()
	s.Handle(1, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		rpc.SetResponseMetadata(ctx, "server-timing", "db;dur=53")
		if len(req) == 0 {
			rpc.SetResponseMetadata(ctx, "retry-after", "30")
			return resp, rpc.Errorf(rpc.StatusForbidden, "empty request")
		}
		return append(resp, req...), nil
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go s.Serve(l)
	defer s.Shutdown(context.Background())
	c, err := rpc.Dial(context.Background(), "tcp", l.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// The receiver is set by each call made with ctx, one at a time.
	var md rpc.Metadata
	ctx := rpc.WithResponseMetadata(context.Background(), &md)
	out, err := c.Call(ctx, 1, []byte("hi"), nil)
	fmt.Printf("%s %v %s\n", out, err, md.Get("server-timing"))
	_, err = c.Call(ctx, 1, nil, nil)
	fmt.Printf("%v %s\n", err, md.Get("retry-after"))
	// Output:
	// hi <nil> db;dur=53
	// rpc: status 403: empty request 30
}

// A stream handler sets a trailer (gRPC-go's ServerStream.SetTrailer),
// sent just before its end; the caller that opened the stream with
// WithResponseMetadata reads it once Recv returned the end (io.EOF here).
func ExampleSetResponseMetadata_stream() {
	s := rpc.NewServer()
	s.HandleStream(2, func(ctx context.Context, init []byte, st *rpc.Stream) error {
		for i := range 3 {
			if err := st.Send(fmt.Appendf(nil, "row %d", i)); err != nil {
				return err
			}
		}
		return rpc.SetResponseMetadata(ctx, "rows", "3")
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go s.Serve(l)
	defer s.Shutdown(context.Background())
	c, err := rpc.Dial(context.Background(), "tcp", l.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	var md rpc.Metadata
	st, err := c.OpenStream(rpc.WithResponseMetadata(context.Background(), &md), 2, nil)
	if err != nil {
		log.Fatal(err)
	}
	st.CloseSend()
	for {
		m, err := st.Recv(nil)
		if err != nil {
			fmt.Printf("%v, rows=%s\n", err, md.Get("rows"))
			break
		}
		fmt.Printf("%s\n", m)
	}
	// Output:
	// row 0
	// row 1
	// row 2
	// EOF, rows=3
}
