package rpc

import (
	"net"
	"testing"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// A server's flood of pings (or of requests, which a client answers
// 404) sent in one write is answered in a write per read of the client,
// not one per frame: every pong (and 404) comes, in order, and the
// writes that carry them are far fewer than the frames.
func TestClientRepliesBatched(t *testing.T) {
	for _, kind := range []byte{wire.KindPing, wire.KindRequest} {
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		cw := &writeCounter{Conn: a} // verify_session_test.go
		c := NewClient(cw)
		t.Cleanup(func() { c.Close() })
		const n = 1000
		var flood []byte
		for i := range n {
			if kind == wire.KindPing {
				flood = append(flood, frameBytes(wire.KindPing, []byte{byte(i), byte(i >> 8)})...)
			} else {
				flood = append(flood, frameBytes(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: 1, PromiseID: uint32(i + 1)}))...)
			}
		}
		go b.Write(flood)
		peer := &rawConn{t, b}
		for i := range n {
			k, env, ok := peer.recv()
			if !ok {
				t.Fatalf("kind %d: connection closed after %d answers", kind, i)
			}
			switch kind {
			case wire.KindPing:
				if k != wire.KindPong || len(env) != 2 || int(env[0])|int(env[1])<<8 != i {
					t.Fatalf("answer %d to a ping: kind %d %x", i, k, env)
				}
			default:
				r, err := wire.ParseResponse(env)
				if k != wire.KindResponse || err != nil || r.PromiseID != uint32(i+1) || r.Status != StatusNotFound {
					t.Fatalf("answer %d to a request: kind %d %+v %v", i, k, r, err)
				}
			}
		}
		if w := int(cw.writes.Load()); w > n/10 {
			t.Errorf("kind %d: %d frames answered in %d writes, want far fewer writes", kind, n, w)
		}
	}
}
