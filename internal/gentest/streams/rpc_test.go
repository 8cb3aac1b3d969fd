package streams

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
	"github.com/zapcodec/zapcodec/rpc"
)

// feed serves Feed.
type feed struct {
	pings atomic.Int32
	sunk  atomic.Int64
}

// Subscribe sends req.Count logs from block req.From, each with Size bytes.
func (f *feed) Subscribe(ctx context.Context, req FilterView, s *FeedSubscribeServerStream) error {
	if req.Count() > 1<<20 {
		return rpc.Errorf(rpc.StatusBadRequest, "too many")
	}
	l := Log{Data: make([]byte, req.Size())}
	for i := range req.Count() {
		l.Block, l.Index = req.From()+uint64(i), i
		if err := s.Send(&l); err != nil {
			return err
		}
	}
	return nil
}

// Upload counts the chunks and their bytes, checking their order.
func (f *feed) Upload(ctx context.Context, s *FeedUploadServerStream, resp *Summary) error {
	for {
		c, err := s.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if c.Seq() != resp.Chunks {
			return rpc.Errorf(rpc.StatusBadRequest, "chunk %d out of order", c.Seq())
		}
		resp.Chunks++
		resp.Bytes += uint64(len(c.Data()))
	}
}

// Chat answers each message with the same text and the next number.
func (f *feed) Chat(ctx context.Context, s *FeedChatServerStream) error {
	var out Msg
	for {
		m, err := s.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		out.Seq, out.Text = m.Seq()+1, m.Text()
		if err := s.Send(&out); err != nil {
			return err
		}
	}
}

func (f *feed) Ping(ctx context.Context) error { f.pings.Add(1); return nil }

// Heads sends three logs and then fails: the error ends the stream.
func (f *feed) Heads(ctx context.Context, s *FeedHeadsServerStream) error {
	for i := range uint32(3) {
		if err := s.Send(&Log{Block: uint64(100 + i)}); err != nil {
			return err
		}
	}
	return rpc.Errorf(418, "no more heads")
}

func (f *feed) Sink(ctx context.Context, s *FeedSinkServerStream) error {
	for {
		c, err := s.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		f.sunk.Add(int64(len(c.Data())))
	}
}

func start(t testing.TB) (*FeedClient, *feed) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := rpc.NewServer()
	impl := &feed{}
	RegisterFeedServer(srv, impl)
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	c, err := rpc.Dial(context.Background(), "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return NewFeedClient(c), impl
}

func TestFeedStreams(t *testing.T) {
	c, impl := start(t)
	ctx := context.Background()

	sub, err := c.Subscribe(ctx, &Filter{From: 7, Count: 1000, Size: 33})
	if err != nil {
		t.Fatal(err)
	}
	for i := range uint32(1000) {
		l, err := sub.Recv()
		if err != nil || l.Block() != 7+uint64(i) || l.Index() != i || len(l.Data()) != 33 {
			t.Fatalf("log %d: block %d index %d, %d bytes, %v", i, l.Block(), l.Index(), len(l.Data()), err)
		}
	}
	if _, err := sub.Recv(); err != io.EOF {
		t.Fatalf("subscribe end: %v", err)
	}

	up, err := c.Upload(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range uint32(500) {
		if err := up.Send(&Chunk{Seq: i, Data: bytes.Repeat([]byte{1}, int(i))}); err != nil {
			t.Fatal(err)
		}
	}
	var sum Summary
	if err := up.CloseAndRecv(&sum); err != nil || sum.Chunks != 500 || sum.Bytes != 499*500/2 {
		t.Fatalf("upload: %+v %v", sum, err)
	}

	chat, err := c.Chat(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range uint32(100) {
		if err := chat.Send(&Msg{Seq: i, Text: fmt.Sprintf("abc%d", i)}); err != nil {
			t.Fatal(err)
		}
		m, err := chat.Recv()
		if err != nil || m.Seq() != i+1 || m.Text() != fmt.Sprintf("abc%d", i) {
			t.Fatalf("chat %d: %d %q %v", i, m.Seq(), m.Text(), err)
		}
	}
	chat.CloseSend()
	if _, err := chat.Recv(); err != io.EOF {
		t.Fatalf("chat end: %v", err)
	}

	heads, err := c.Heads(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if l, err := heads.Recv(); err != nil || l.Block() != uint64(100+i) {
			t.Fatalf("head %d: %v", i, err)
		}
	}
	var se *rpc.StatusError
	if _, err := heads.Recv(); !errors.As(err, &se) || se.Code != 418 || se.Message != "no more heads" {
		t.Fatalf("heads end: %v", err)
	}

	sink, err := c.Sink(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		sink.Send(&Chunk{Data: make([]byte, 100)})
	}
	if err := sink.CloseAndRecv(); err != nil || impl.sunk.Load() != 1000 {
		t.Fatalf("sink: %v, %d bytes", err, impl.sunk.Load())
	}

	if err := c.Ping(ctx); err != nil || impl.pings.Load() != 1 {
		t.Fatalf("ping: %v", err)
	}
}

// A Caller that cannot open streams gets rpc.ErrNoStreams.
type callerOnly struct{}

func (callerOnly) Call(ctx context.Context, method uint32, req, resp []byte) ([]byte, error) {
	return resp, nil
}

func TestNoStreams(t *testing.T) {
	if _, err := NewFeedClient(callerOnly{}).Subscribe(context.Background(), &Filter{}); err != rpc.ErrNoStreams {
		t.Fatal(err)
	}
}

// A streamed request that is not a valid message ends the stream with
// status 400, as an invalid unary request or initial message is
// answered, when the method returns the error of its server stream's
// Recv: it is the client's fault. It used to end it with 500 (and a
// server error in the log), the decode error being a plain one.
func TestStreamInvalidRequest(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := rpc.NewServer()
	RegisterFeedServer(srv, &feed{})
	go srv.Serve(l)
	defer srv.Close()
	c, err := rpc.Dial(context.Background(), "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bad := []byte("not a ZAP message")
	for _, tt := range []struct {
		name       string
		method     uint32
		init, msg  []byte
		wantPrefix string
	}{
		{"initial message", FeedSubscribeOrdinal, bad, nil, "streams: Feed.subscribe: "},
		{"client stream", FeedUploadOrdinal, nil, bad, "streams: Feed.upload: "},
		{"both ways", FeedChatOrdinal, nil, bad, "streams: Feed.chat: "},
		{"client stream without result", FeedSinkOrdinal, nil, bad, "streams: Feed.sink: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, err := c.OpenStream(context.Background(), tt.method, tt.init)
			if err != nil {
				t.Fatal(err)
			}
			if tt.msg != nil {
				if err := st.Send(tt.msg); err != nil {
					t.Fatal(err)
				}
			}
			_, err = st.Recv(nil)
			var se *rpc.StatusError
			if !errors.As(err, &se) || se.Code != rpc.StatusBadRequest || !strings.HasPrefix(se.Message, tt.wantPrefix) {
				t.Fatalf("got %v, want status 400 %q...", err, tt.wantPrefix)
			}
		})
	}
}

// A server that streams what is not a valid message (garbage, or a
// message cut short) gives the typed client's Recv and CloseAndRecv a
// decode error, not a panic, nor a message.
func TestStreamInvalidAnswer(t *testing.T) {
	good := (&Log{Block: 1, Data: []byte("abc")}).AppendZAP(nil)
	for _, tt := range []struct {
		name string
		msg  []byte
		want error
	}{
		{"garbage", []byte("not a ZAP message"), codec.ErrMagic},
		{"short", good[:10], codec.ErrTooSmall},
		{"cut", good[:len(good)-1], codec.ErrTooSmall},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := rpc.NewServer()
			send := func(ctx context.Context, init []byte, st *rpc.Stream) error { return st.Send(tt.msg) }
			for _, m := range []uint32{FeedSubscribeOrdinal, FeedUploadOrdinal, FeedChatOrdinal} {
				srv.HandleStream(m, send)
			}
			go srv.Serve(l)
			defer srv.Close()
			c, err := rpc.Dial(context.Background(), "tcp", l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			cli := NewFeedClient(c)
			ctx := context.Background()
			sub, err := cli.Subscribe(ctx, &Filter{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sub.Recv(); !errors.Is(err, tt.want) {
				t.Errorf("Subscribe Recv: %v, want %v", err, tt.want)
			}
			chat, err := cli.Chat(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := chat.Recv(); !errors.Is(err, tt.want) {
				t.Errorf("Chat Recv: %v, want %v", err, tt.want)
			}
			up, err := cli.Upload(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var sum Summary
			if err := up.CloseAndRecv(&sum); !errors.Is(err, tt.want) {
				t.Errorf("CloseAndRecv: %v, want %v", err, tt.want)
			}
		})
	}
}

// CloseAndRecv takes the server's first message as the result and drops
// the rest up to the stream's end, whose error it returns, as its doc
// says.
func TestCloseAndRecvDropsMore(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := rpc.NewServer()
	srv.HandleStream(FeedUploadOrdinal, func(ctx context.Context, init []byte, st *rpc.Stream) error {
		for i := range 3 {
			if err := st.Send((&Summary{Chunks: uint32(i + 1)}).AppendZAP(nil)); err != nil {
				return err
			}
		}
		return rpc.Errorf(418, "after the result")
	})
	go srv.Serve(l)
	defer srv.Close()
	c, err := rpc.Dial(context.Background(), "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	up, err := NewFeedClient(c).Upload(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var sum Summary
	err = up.CloseAndRecv(&sum)
	var se *rpc.StatusError
	if !errors.As(err, &se) || se.Code != 418 || sum.Chunks != 1 {
		t.Fatalf("CloseAndRecv: %v, result %+v; want status 418 and the first message", err, sum)
	}
}
