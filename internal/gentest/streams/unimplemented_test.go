package streams

import (
	"context"
	"errors"
	"net"
	"testing"

	"github.com/zapcodec/zapcodec/rpc"
)

// pingOnly implements Ping; every streaming method comes from
// UnimplementedFeedServer.
type pingOnly struct{ UnimplementedFeedServer }

func (pingOnly) Ping(ctx context.Context) error { return nil }

// TestUnimplementedStreams: a streaming method left to
// UnimplementedFeedServer opens and ends with 404 rpc.NoSuchMethod, which
// rpc.IsNoSuchMethod reports, on every kind of stream: what the client's
// Recv, CloseAndRecv and (for a stream with neither) CloseAndRecv return.
func TestUnimplementedStreams(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := rpc.NewServer()
	RegisterFeedServer(srv, pingOnly{})
	go srv.Serve(l)
	defer srv.Close()
	c, err := rpc.Dial(context.Background(), "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cli := NewFeedClient(c)
	ctx := context.Background()
	check := func(what string, err error) {
		t.Helper()
		var se *rpc.StatusError
		if !rpc.IsNoSuchMethod(err) || !errors.As(err, &se) || se.Code != rpc.StatusNotFound {
			t.Errorf("%s: %v, want 404 %q (rpc.IsNoSuchMethod)", what, err, rpc.NoSuchMethod)
		}
	}
	sub, err := cli.Subscribe(ctx, &Filter{Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = sub.Recv()
	check("Subscribe", err)
	up, err := cli.Upload(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var sum Summary
	check("Upload", up.CloseAndRecv(&sum))
	chat, err := cli.Chat(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = chat.Recv()
	check("Chat", err)
	heads, err := cli.Heads(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = heads.Recv()
	check("Heads", err)
	sink, err := cli.Sink(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check("Sink", sink.CloseAndRecv())
	if err := cli.Ping(ctx); err != nil {
		t.Fatalf("Ping, implemented: %v", err)
	}
}
