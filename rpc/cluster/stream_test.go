package cluster

import (
	"context"
	"encoding/binary"
	"io"
	"net"
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
	cn := (*c.ready.Load())[0]
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
