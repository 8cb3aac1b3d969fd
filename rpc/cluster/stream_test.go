package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
)

const mCount = 30 // stream: waits for gate, then sends init's u32 messages

// A stream opened through the cluster client runs on one of its
// connections; a connection retired while a stream is open on it stays
// up until the stream ends.
func TestOpenStreamThroughCluster(t *testing.T) {
	gate := make(chan struct{})
	s := rpc.NewServer()
	s.HandleStream(mCount, func(ctx context.Context, init []byte, st *rpc.Stream) error {
		<-gate
		n := binary.LittleEndian.Uint32(init)
		var b [4]byte
		for i := range n {
			binary.LittleEndian.PutUint32(b[:], i)
			if err := st.Send(b[:]); err != nil {
				return err
			}
		}
		return nil
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
	c := dialT(t, "static:///"+l.Addr().String())
	st, err := c.OpenStream(context.Background(), mCount, binary.LittleEndian.AppendUint32(nil, 1000))
	if err != nil {
		t.Fatal(err)
	}
	cn := c.ready.Load().conns[0]
	if cn.rc.Streams() != 1 {
		t.Fatalf("%d streams open on the connection", cn.rc.Streams())
	}
	c.drop(cn) // retired: no new calls; closed once drained
	// Let the retiring goroutine look at the connection a few times (its
	// ticker is 10 ms): without its stream it would close it now.
	time.Sleep(50 * time.Millisecond)
	close(gate)
	for i := range uint32(1000) {
		m, err := st.Recv(nil)
		if err != nil || binary.LittleEndian.Uint32(m) != i {
			t.Fatalf("message %d: %x %v", i, m, err)
		}
	}
	if _, err := st.Recv(nil); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
	await(t, "the retired connection to close after its stream", cn.rc.Closed)
}

// The cluster's stream interceptors run once around an open, the
// connections' once per attempt; Stats counts the stream.
func TestClusterStreamInterceptors(t *testing.T) {
	s := rpc.NewServer()
	s.HandleStream(mCount, func(ctx context.Context, init []byte, st *rpc.Stream) error {
		return st.Send(init)
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
	var outer, inner atomic.Int64
	c := dialT(t, "static:///"+l.Addr().String(),
		WithStreamInterceptors(func(ctx context.Context, method uint32, init []byte, open rpc.Streamer) (*rpc.Stream, error) {
			outer.Add(1)
			return open(ctx, method, init)
		}),
		WithClientOptions(rpc.WithStreamClientInterceptors(func(ctx context.Context, method uint32, init []byte, open rpc.Streamer) (*rpc.Stream, error) {
			inner.Add(1)
			return open(ctx, method, init)
		})))
	st, err := c.OpenStream(context.Background(), mCount, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if m, err := st.Recv(nil); err != nil || string(m) != "x" {
		t.Fatalf("%q %v", m, err)
	}
	if outer.Load() != 1 || inner.Load() != 1 {
		t.Fatalf("interceptors ran %d (cluster) and %d (connection) times, want 1 and 1", outer.Load(), inner.Load())
	}
	if st := c.Stats(); st.Streams != 1 || st.Calls != 1 {
		t.Fatalf("stats: %+v", st)
	}
}

// mTagged: echoes every message; reports its init (the stream's tag) and
// how it ended (see taggedEnd).
const mTagged = 31

// taggedEnd is how a stream of mTagged ended on the server: the error of
// the Recv that ended it, and the handler's ctx's error then.
type taggedEnd struct {
	tag       string
	recv, ctx error
}

// handleTagged registers mTagged on s, reporting every stream's end on
// ended.
func handleTagged(s *rpc.Server, ended chan<- taggedEnd) {
	s.HandleStream(mTagged, func(ctx context.Context, init []byte, st *rpc.Stream) error {
		for {
			m, err := st.Recv(nil)
			if err != nil {
				if err != io.EOF {
					<-ctx.Done() // the client's cancel ends it right after Recv
				}
				ended <- taggedEnd{string(init), err, ctx.Err()}
				return nil
			}
			if err := st.Send(m); err != nil {
				return err
			}
		}
	})
}

// The cluster's stream interceptors run around the connections' (and
// the cluster's retries): a stream either chain opened and did not
// return is canceled, once, whichever chain dropped it, also when the
// cluster retried the open on another replica; the stream returned
// through both chains is never canceled.
func TestClusterStreamInterceptorOrphansCanceled(t *testing.T) {
	ended := make(chan taggedEnd, 16)
	r1, r2 := startReplica(t, "127.0.0.1"), startReplica(t, "127.0.0.1")
	handleTagged(r1.server(), ended)
	handleTagged(r2.server(), ended)
	pass := func(ctx context.Context, method uint32, init []byte, open rpc.Streamer) (*rpc.Stream, error) {
		return open(ctx, method, init)
	}
	errRefused := errors.New("refused after a look")
	rows := []struct {
		name         string
		outer, inner rpc.StreamClientInterceptor // the cluster's, the connections'
		orphans      int
		err          error
	}{
		{name: "both pass the stream on", outer: pass, inner: pass},
		{name: "the connection's opens twice, returns the second", outer: pass, orphans: 1,
			inner: func(ctx context.Context, method uint32, init []byte, open rpc.Streamer) (*rpc.Stream, error) {
				open(ctx, method, []byte("orphan"))
				return open(ctx, method, init)
			}},
		{name: "the cluster's drops what the connection's returned, opens again", inner: pass, orphans: 1,
			outer: func(ctx context.Context, method uint32, init []byte, open rpc.Streamer) (*rpc.Stream, error) {
				open(ctx, method, []byte("orphan"))
				return open(ctx, method, init)
			}},
		{name: "the cluster's refuses after opening", inner: pass, orphans: 1, err: errRefused,
			outer: func(ctx context.Context, method uint32, init []byte, open rpc.Streamer) (*rpc.Stream, error) {
				open(ctx, method, []byte("orphan"))
				return nil, errRefused
			}},
		{name: "the connection's refuses attempt 1 after opening, the cluster retries", outer: pass, orphans: 1,
			inner: func() rpc.StreamClientInterceptor {
				var attempts atomic.Int64
				return func(ctx context.Context, method uint32, init []byte, open rpc.Streamer) (*rpc.Stream, error) {
					if attempts.Add(1) == 1 {
						open(ctx, method, []byte("orphan"))
						return nil, rpc.ErrTooManyStreams // retried on the other replica
					}
					return open(ctx, method, init)
				}
			}()},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			c := dialT(t, "static:///"+r1.addr+","+r2.addr, WithStreamInterceptors(row.outer),
				WithClientOptions(rpc.WithStreamClientInterceptors(row.inner)))
			open := func() int {
				n := 0
				for _, cn := range c.ready.Load().conns {
					n += cn.rc.Streams()
				}
				return n
			}
			st, err := c.OpenStream(context.Background(), mTagged, []byte("kept"))
			if err != row.err {
				t.Fatalf("OpenStream: %v, want %v", err, row.err)
			}
			kept := 0
			if st != nil {
				kept = 1
			}
			if n := open(); n != kept {
				t.Fatalf("%d streams open on the connections after OpenStream, want %d", n, kept)
			}
			for range row.orphans {
				if e := receive(t, "the server's end of the orphan", ended); e.tag != "orphan" || rpc.Code(e.recv) != rpc.StatusCanceled || e.ctx != context.Canceled {
					t.Fatalf("the server handler of %q ended with Recv's %v and ctx's %v, want a cancel", e.tag, e.recv, e.ctx)
				}
			}
			if st == nil {
				return
			}
			if err := st.Send([]byte("ping")); err != nil {
				t.Fatal(err)
			}
			if m, err := st.Recv(nil); err != nil || string(m) != "ping" {
				t.Fatalf("echo on the returned stream: %q %v", m, err)
			}
			st.CloseSend()
			if _, err := st.Recv(nil); err != io.EOF {
				t.Fatalf("the returned stream's end: %v", err)
			}
			if e := receive(t, "the server's end of the returned stream", ended); e.tag != "kept" || e.recv != io.EOF {
				t.Fatalf("the server handler of %q ended with %v, want the returned stream's clean end", e.tag, e.recv)
			}
			await(t, "no stream left on the connections", func() bool { return open() == 0 })
		})
	}
}
