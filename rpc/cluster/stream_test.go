package cluster

import (
	"context"
	"encoding/binary"
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
