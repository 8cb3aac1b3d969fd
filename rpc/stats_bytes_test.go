package rpc

import (
	"context"
	"io"
	"net"
	"sync/atomic"
	"testing"
)

// tallyConn counts the bytes read from and written to its net.Conn.
type tallyConn struct {
	net.Conn
	read, written atomic.Uint64
}

func (c *tallyConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(uint64(n))
	return n, err
}

func (c *tallyConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.written.Add(uint64(n))
	return n, err
}

// Stats.BytesIn and BytesOut count the frame bytes of every kind the
// server read and wrote: what its one client wrote and read, unary
// answers, refusals, stream messages, ends and windows, and pongs alike.
func TestStatsBytesCountEveryFrame(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		traffic func(t *testing.T, c *Client)
	}{
		{"unary", func(t *testing.T, c *Client) {
			for range 3 {
				if _, err := c.Call(ctx, mEcho, []byte("hello"), nil); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := c.Call(ctx, 99, nil, nil); !IsNoSuchMethod(err) {
				t.Fatalf("unknown method: %v", err)
			}
		}},
		{"refused metadata", func(t *testing.T, c *Client) {
			_, err := c.Call(WithMetadata(ctx, "k", "0123456789abcdef"), mEcho, nil, nil)
			if Code(err) != StatusMetadataTooLarge {
				t.Fatalf("metadata over the limit: %v", err)
			}
		}},
		{"server stream", func(t *testing.T, c *Client) {
			st, err := c.OpenStream(ctx, sCount, u32msg(200))
			if err != nil {
				t.Fatal(err)
			}
			for {
				if _, err := st.Recv(nil); err == io.EOF {
					break
				} else if err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"bidi stream", func(t *testing.T, c *Client) {
			st, err := c.OpenStream(ctx, sEcho, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 100 {
				if err := st.Send(u32msg(uint32(i))); err != nil {
					t.Fatal(err)
				}
				if _, err := st.Recv(nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := st.CloseSend(); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Recv(nil); err != io.EOF {
				t.Fatalf("end: %v", err)
			}
		}},
		{"ping", func(t *testing.T, c *Client) {
			c.ping()
			if _, err := c.Call(ctx, mEcho, nil, nil); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, addr, _ := streamServer(t, WithMaxMetadata(10))
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			cc := &tallyConn{Conn: nc}
			c := NewClient(cc)
			t.Cleanup(func() { c.Close() })
			tc.traffic(t, c)
			var last Stats
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("server counted %d bytes in and %d out; the client wrote %d and read %d",
						last.BytesIn, last.BytesOut, cc.written.Load(), cc.read.Load())
				}
			})
			await(t, "the server's byte counts to match what its client wrote and read", func() bool {
				last = s.Stats()
				return last.BytesIn == cc.written.Load() && last.BytesOut == cc.read.Load()
			})
		})
	}
}

// A refused open's initial message is counted in Stats.Streams.BytesIn,
// as the stream observer counts it in the BytesIn of the open's end
// event: for the same traffic the two agree.
func TestStreamStatsCountRefusedOpens(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ctx    context.Context
		method uint32
		status uint32
	}{
		{"no such method", context.Background(), 999, StatusNotFound},
		{"metadata too large", WithMetadata(context.Background(), "k", "0123456789abcdef"), sCount, StatusMetadataTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l streamLog
			s, addr, _ := streamServer(t, WithStreamObserver(l.observe), WithMaxMetadata(10))
			c := dial(t, addr)
			st, err := c.OpenStream(tc.ctx, tc.method, []byte("initial"))
			if err == nil {
				_, err = st.Recv(nil)
			}
			if Code(err) != tc.status {
				t.Fatalf("open: %v, want status %d", err, tc.status)
			}
			await(t, "the open's end event", func() bool { return l.count() == 2 })
			end := l.take()[1]
			if !end.End || end.Status != tc.status || end.BytesIn != int64(len("initial")) {
				t.Fatalf("end event %+v", end)
			}
			if got := s.Stats().Streams; got.Refused != 1 || got.BytesIn != uint64(end.BytesIn) {
				t.Fatalf("Stats.Streams %+v: want 1 refused and BytesIn %d, as the observer saw", got, end.BytesIn)
			}
		})
	}
}
