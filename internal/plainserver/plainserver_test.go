package plainserver

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
)

// An rpc.Client talks to the plain server: pipelined calls from several
// goroutines are answered by promise id, and a non-200 status reaches
// the caller.
func TestServe(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go Serve(l, func(method uint32, req, resp []byte) (uint32, []byte) {
		if method != 1 {
			return rpc.StatusNotFound, append(resp, "no"...)
		}
		return rpc.StatusOK, append(resp, req...)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := rpc.Dial(ctx, "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	errc := make(chan error, 8)
	for g := range 8 {
		go func() {
			for i := range 100 {
				want := string(rune('a'+g)) + string(rune('0'+i%10))
				out, err := c.Call(ctx, 1, []byte(want), nil)
				if err == nil && string(out) != want {
					err = &rpc.StatusError{Code: 0, Message: "answer " + string(out) + " to " + want}
				}
				if err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}()
	}
	for range 8 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Call(ctx, 2, nil, nil); rpc.Code(err) != rpc.StatusNotFound {
		t.Fatalf("unknown method: %v, want a 404", err)
	}
}
