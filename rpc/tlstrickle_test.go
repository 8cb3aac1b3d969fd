package rpc

import (
	"bytes"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// trickleConn writes through to its socket; once trickling is set, it
// writes chunk bytes at a time with a pause after each (a peer sending
// its TLS records slowly after a handshake at full speed).
type trickleConn struct {
	net.Conn
	trickle atomic.Bool
	chunk   int
	pause   time.Duration
}

func (c *trickleConn) Write(p []byte) (int, error) {
	if !c.trickle.Load() {
		return c.Conn.Write(p)
	}
	n := 0
	for n < len(p) {
		k, err := c.Conn.Write(p[n:min(n+c.chunk, len(p))])
		n += k
		if err != nil {
			return n, err
		}
		time.Sleep(c.pause)
	}
	return n, nil
}

// A server made TLS by WithTLSConfig bounds a TLS record's transfer by the
// read timeout, as it bounds a frame's on a plain socket: a peer that
// trickles the record carrying its request, one byte every 50 ms, is
// dropped (it used to be held to the idle limit, its request answered
// once the record was whole); a frame sent slowly but faster than
// WithMinReadRate, in records each longer in transit than the read
// timeout, is answered.
func TestTLSTrickledRecord(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    []ServerOption
		chunk   int
		pause   time.Duration
		payload int
		dropped bool
	}{
		{name: "no rate extension", opts: []ServerOption{WithMinReadRate(-1)}, chunk: 1, pause: 50 * time.Millisecond, payload: 20, dropped: true},
		{name: "default rate", chunk: 1, pause: 50 * time.Millisecond, payload: 20, dropped: true},
		// 256 bytes every 30 ms, about 8.5 KB/s, eight times the rate
		// asked (room for a loaded machine's late wake-ups); crypto/tls's
		// records grow from about 1.2 KB by as much each (its dynamic
		// record sizing): most take longer than the read timeout in
		// transit, the last about 0.85 s.
		{name: "healthy slow frame", opts: []ServerOption{WithMinReadRate(1024)}, chunk: 256, pause: 30 * time.Millisecond, payload: 24 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cert, roots := selfSigned(t)
			opts := append([]ServerOption{WithReadTimeout(300 * time.Millisecond),
				WithTLSConfig(&tls.Config{Certificates: []tls.Certificate{cert}})}, tc.opts...)
			s, addr, logs := testServer(t, opts...)
			// The handshake, at full speed, gets the read timeout too,
			// which a loaded machine can take longer over: tlsEchoed makes
			// the connection again until the server's side of it is done.
			var tr *trickleConn
			peer, _ := tlsEchoed(t, addr, roots, func(nc net.Conn) net.Conn {
				tr = &trickleConn{Conn: nc, chunk: tc.chunk, pause: tc.pause}
				return tr
			})
			// Connections of handshakes cut were counted as dropped
			// before their peer saw the close (serverConn.close).
			dropped := s.Stats().Dropped
			tr.trickle.Store(true)
			payload := bytes.Repeat([]byte{7}, tc.payload)
			if !tc.dropped {
				go peer.Write(frameBytes(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 1, Payload: payload})))
				resp := peer.recvResponse()
				if resp.Status != StatusOK || !bytes.Equal(resp.Body, payload) {
					t.Fatalf("answer status %d, %d bytes; want OK and the %d bytes sent", resp.Status, len(resp.Body), len(payload))
				}
				if d := s.Stats().Dropped - dropped; d != 0 {
					t.Fatalf("%d connections dropped; log:\n%s", d, logs)
				}
				return
			}
			// Requests, each in a record of its own, trickled until the
			// connection fails.
			sendCallsForever(peer, payload)
			closed := make(chan struct{})
			go func() {
				for {
					if _, _, ok := peer.recv(); !ok {
						close(closed)
						return
					}
				}
			}()
			receive(t, "the server to close the trickling TLS connection", closed)
			await(t, "the drop counted", func() bool { return s.Stats().Dropped == dropped+1 })
			if !contains(logs.String(), errRecordTimeout.Error()) {
				t.Fatalf("log does not say why:\n%s", logs)
			}
		})
	}
}

// recordConn, alone over a pipe: a record that arrives whole sets no
// deadline; a past deadline set while a Read waits inside a record (the
// watchdog's pokeRead) ends the wait with a timeout, the connection going
// on; a record not whole within the read timeout fails the Read, and
// every later one, with errRecordTimeout, not a timeout.
func TestRecordConnDeadlines(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	r := newRecordConn(a, time.Hour, -1)
	send := func(p []byte) {
		go func() {
			if _, err := b.Write(p); err != nil {
				t.Error(err)
			}
		}()
	}
	buf := make([]byte, 64)
	read := func() (int, error) { return r.Read(buf) }
	applied := func() time.Time {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.applied
	}

	// Two whole records, then the header of a third and a byte of it,
	// in one write: no Read waits inside a record.
	send([]byte{23, 3, 3, 0, 2, 'a', 'b', 23, 3, 3, 0, 0, 23, 3, 3, 0, 4, 'c'})
	if n, err := read(); n != 18 || err != nil {
		t.Fatalf("read %d, %v; want 18 bytes", n, err)
	}
	if !applied().IsZero() {
		t.Fatalf("a deadline was set between records: %v", applied())
	}

	// A Read waits inside the third record; a past deadline set meanwhile
	// ends it with a timeout.
	errs := make(chan error, 1)
	go func() {
		_, err := read()
		errs <- err
	}()
	await(t, "the Read to set the record's limit", func() bool { return !applied().IsZero() })
	r.SetReadDeadline(pastDeadline)
	if err := receive(t, "the poked Read", errs); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("poked Read: %v, want a timeout", err)
	}
	r.SetReadDeadline(time.Time{})
	send([]byte{'d', 'e', 'f'})
	if n, err := read(); n != 3 || err != nil {
		t.Fatalf("read %d, %v; want the record's last 3 bytes", n, err)
	}
	if !applied().IsZero() {
		t.Fatalf("the deadline was not cleared after the record: %v", applied())
	}

	// A record trickled past the read timeout.
	r.timeout = 100 * time.Millisecond
	send([]byte{23, 3, 3, 0, 9, 'x'})
	if n, err := read(); n != 6 || err != nil {
		t.Fatalf("read %d, %v; want 6 bytes", n, err)
	}
	_, err := read()
	if !errors.Is(err, errRecordTimeout) || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read of a late record: %v, want errRecordTimeout", err)
	}
	if _, err2 := read(); err2 != err {
		t.Fatalf("next Read: %v, want %v again", err2, err)
	}
}
