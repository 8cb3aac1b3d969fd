package plainserver

import (
	"encoding/binary"
	"net"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// watchedConn counts the bytes its reads returned and the reads it is in.
type watchedConn struct {
	net.Conn
	got     atomic.Int64
	reading atomic.Int32
}

func (c *watchedConn) Read(p []byte) (int, error) {
	c.reading.Add(1)
	n, err := c.Conn.Read(p)
	c.got.Add(int64(n))
	c.reading.Add(-1)
	return n, err
}

// watchedListener hands out its accepted connections as watchedConns.
type watchedListener struct {
	net.Listener
	mu    sync.Mutex
	conns []*watchedConn
}

func (l *watchedListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	c := &watchedConn{Conn: nc}
	l.mu.Lock()
	l.conns = append(l.conns, c)
	l.mu.Unlock()
	return c, nil
}

// heapInUse returns the live heap after two collections.
func heapInUse() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// Connections that declare a 16 MiB request and send one byte of it cost
// the server no 16 MiB buffer each: memory follows the bytes received.
// (The plain server made the whole buffer as soon as the header was in:
// 32 such connections held 512 MiB.)
func TestDeclaredLengthCostsNothing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	wl := &watchedListener{Listener: ln}
	defer wl.Close()
	go Serve(wl, func(method uint32, req, resp []byte) (uint32, []byte) {
		return rpc.StatusOK, append(resp, req...)
	})
	const n = 32
	// One call each first, so that each connection has its buffers.
	call := wire.AppendRequest(nil, &wire.Request{Method: 1, PromiseID: 1, Payload: make([]byte, 100)})
	call = append(binary.LittleEndian.AppendUint32(nil, uint32(1+len(call))), append([]byte{wire.KindRequest}, call...)...)
	conns := make([]net.Conn, n)
	for i := range conns {
		nc, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		conns[i] = nc
		if _, err := nc.Write(call); err != nil {
			t.Fatal(err)
		}
		var h [5]byte
		if _, err := readFull(nc, h[:]); err != nil {
			t.Fatal(err)
		}
		if _, err := readFull(nc, make([]byte, binary.LittleEndian.Uint32(h[:])-1)); err != nil {
			t.Fatal(err)
		}
	}
	idle := heapInUse()
	// The header of a request of 16 MiB (the largest the server takes),
	// and one byte of it.
	var h [6]byte
	binary.LittleEndian.PutUint32(h[:], maxFrame)
	h[4] = wire.KindRequest
	for _, nc := range conns {
		if _, err := nc.Write(h[:]); err != nil {
			t.Fatal(err)
		}
	}
	// Every connection has read its six bytes and waits in a read for
	// more: by then a server that sizes by the header has its buffer.
	wantRead := int64(len(call) + len(h))
	waitFor(t, "every connection to read the header and wait for the body", func() bool {
		wl.mu.Lock()
		defer wl.mu.Unlock()
		if len(wl.conns) != n {
			return false
		}
		for _, c := range wl.conns {
			if c.got.Load() != wantRead || c.reading.Load() == 0 {
				return false
			}
		}
		return true
	})
	busy := heapInUse()
	grew := int64(busy) - int64(idle)
	t.Logf("heap growth after %d connections declared 16 MiB and sent one byte: %d B", n, grew)
	if grew > 4<<20 {
		t.Fatalf("heap grew by %d B (%d B a connection), want at most 4 MiB in all", grew, grew/n)
	}
}

// A body that arrives in pieces, larger than any buffer the connection
// had, is read whole and answered as sent.
func TestLargeBodyInPieces(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go Serve(ln, func(method uint32, req, resp []byte) (uint32, []byte) {
		return rpc.StatusOK, append(resp, req...)
	})
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	for _, size := range []int{0, 1, 100, 5000, 70000, 1 << 20, 300} {
		payload := make([]byte, size)
		for i := range payload {
			payload[i] = byte(i * 7)
		}
		req := wire.AppendRequest(nil, &wire.Request{Method: 1, PromiseID: uint32(size + 1), Payload: payload})
		b := append(binary.LittleEndian.AppendUint32(nil, uint32(1+len(req))), append([]byte{wire.KindRequest}, req...)...)
		go func() {
			for len(b) > 0 {
				k := min(len(b), 777)
				if _, err := nc.Write(b[:k]); err != nil {
					return
				}
				b = b[k:]
			}
		}()
		var h [5]byte
		if _, err := readFull(nc, h[:]); err != nil {
			t.Fatal(err)
		}
		body := make([]byte, binary.LittleEndian.Uint32(h[:])-1)
		if _, err := readFull(nc, body); err != nil {
			t.Fatal(err)
		}
		resp, err := wire.ParseResponse(body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != rpc.StatusOK || resp.PromiseID != uint32(size+1) || string(resp.Body) != string(payload) {
			t.Fatalf("size %d: answer status %d id %d, %d bytes; want the payload echoed", size, resp.Status, resp.PromiseID, len(resp.Body))
		}
	}
}

func readFull(nc net.Conn, p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := nc.Read(p[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// waitFor waits for cond, failing with a goroutine dump after 60 s (a
// hang guard, not a time limit).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			pprof.Lookup("goroutine").WriteTo(os.Stderr, 1)
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
