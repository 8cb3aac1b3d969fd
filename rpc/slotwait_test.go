package rpc

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// A connection whose read loop waits for an in-flight slot reads no byte,
// so it used to learn nothing of a peer that reset the connection: with
// handlers that wait on their ctx only, no slot ever came back, and the
// connection, its goroutines and buffers stayed for ever. The wait now
// looks at the socket each read timeout: a reset (or any error the socket
// holds) closes the connection and cancels the calls' ctx.
func TestSlotWaitSeesPeerReset(t *testing.T) {
	t.Run("tcp", func(t *testing.T) { testSlotWaitSeesPeerReset(t, false) })
	// WithTLSConfig: the socket is under the server's *tls.Conn and the
	// record bound of the read timeout (recordConn).
	t.Run("tls", func(t *testing.T) { testSlotWaitSeesPeerReset(t, true) })
}

func testSlotWaitSeesPeerReset(t *testing.T, useTLS bool) {
	const limit = 2
	opts := []ServerOption{WithMaxInFlight(limit), WithReadTimeout(50 * time.Millisecond), WithLogger(discardLogger())}
	var roots *x509.CertPool
	if useTLS {
		var cert tls.Certificate
		cert, roots = selfSigned(t)
		opts = append(opts, WithTLSConfig(&tls.Config{Certificates: []tls.Certificate{cert}}))
	}
	s, addr, _ := testServer(t, opts...)
	started := make(chan struct{}, limit+1)
	ended := make(chan error, limit+1)
	s.Handle(mSlow, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		started <- struct{}{}
		<-ctx.Done()
		ended <- ctx.Err()
		return resp, ctx.Err()
	})
	var nc net.Conn
	var rc *rawConn
	if useTLS {
		// The server gives the handshake the read timeout too, 50 ms
		// here: tlsEchoed makes the connection again until the server's
		// side of it is done.
		rc, nc = tlsEchoed(t, addr, roots, nil)
	} else {
		rc = rawDial(t, addr)
		nc = rc.Conn
	}
	for i := 1; i <= limit+2; i++ {
		rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mSlow, PromiseID: uint32(i)}))
	}
	for range limit {
		receive(t, "a handler's start", started)
	}
	nc.(*net.TCPConn).SetLinger(0)
	nc.Close()
	for range limit {
		if err := receive(t, "a handler's ctx to end after the peer's reset", ended); err == nil {
			t.Fatal("ctx done with a nil Err")
		}
	}
	await(t, "the connection to go", func() bool { return s.Stats().Active == 0 })
	select {
	case <-started:
		t.Error("a call read while the read loop waited for a slot ran after the reset")
	default:
	}
}

// A peer's half-close (FIN) while the read loop waits for a slot is no
// leave: the calls in flight run on and are answered, and so are those
// still unread (see TestInlineAnswersBeforeHalfClose).
func TestSlotWaitHalfCloseAnswered(t *testing.T) {
	const limit = 2
	s, addr, _ := testServer(t, WithMaxInFlight(limit), WithReadTimeout(20*time.Millisecond))
	started := make(chan struct{}, limit+2)
	release := make(chan struct{})
	s.Handle(mSlow, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
			return resp, ctx.Err()
		}
		return append(resp, req...), nil
	})
	rc := rawDial(t, addr)
	const calls = limit + 2
	for i := 1; i <= calls; i++ {
		rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mSlow, PromiseID: uint32(i), Payload: []byte{byte(i)}}))
	}
	for range limit {
		receive(t, "a handler's start", started)
	}
	if err := rc.Conn.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	// Several probes of the socket pass while the slots stay taken.
	time.Sleep(200 * time.Millisecond)
	close(release)
	seen := map[uint32]bool{}
	for range calls {
		a := rc.recvResponse()
		if a.Status != StatusOK || len(a.Body) != 1 || uint32(a.Body[0]) != a.PromiseID {
			t.Fatalf("answer %+v", a)
		}
		seen[a.PromiseID] = true
	}
	if len(seen) != calls {
		t.Errorf("answers to %d calls of %d", len(seen), calls)
	}
}
