package rpc

import (
	"bytes"
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// A worker's answer written while the connection is off the watchdog's
// list, to a peer that does not read, over a net.Conn whose write
// deadlines do nothing: the write's own deadline cannot end it and no
// scan watches it. It blocked for ever (the connection, its handlers and
// Shutdown with it); the beat now closes the connection a write timeout
// after its past deadline did nothing, as the scans do for a listed
// connection's write.
func TestOffListWriteIgnoringDeadlineCloses(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const timeout = 50 * time.Millisecond
	s, logs := testServerOn(t, wrapListener{l, func(nc net.Conn) net.Conn { return noWriteDeadlineConn{nc} }},
		WithWriteTimeout(timeout))
	const mSlow = 60
	release := make(chan struct{})
	big := bytes.Repeat([]byte{7}, 8<<20)
	s.Handle(mSlow, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		<-release
		return append(resp, big...), nil
	})
	rc := rawDial(t, l.Addr().String())
	rc.Conn.(*net.TCPConn).SetReadBuffer(4096)
	rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mSlow, PromiseID: 1}))
	sc := serverConnOf(t, s)
	// The handler loses the read loop to a worker, and the connection,
	// without inline calls, leaves the watchdog's list.
	await(t, "the connection to leave the watchdog's list", func() bool { return sc.wdUnlists.Load() > 0 && !sc.wdListed.Load() })
	close(release)
	await(t, "the server to drop the connection its write is stuck on", func() bool { return s.Stats().Dropped == 1 })
	// The drop is counted just before it is logged.
	await(t, "the close to be logged", func() bool { return contains(logs.String(), "closing connection") })
	if n := sc.out.offList.Load(); n == 0 {
		t.Errorf("the stuck write did not begin off the watchdog's list")
	}
	if !contains(logs.String(), "past write deadline did not end the write") {
		t.Errorf("log does not say why the connection was closed:\n%s", logs)
	}
}

// The same for a stream handler's Send on a connection that never ran a
// call inline (so never on the watchdog's list), to a canonical peer (no
// window) that does not read.
func TestOffListStreamWriteIgnoringDeadlineCloses(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const timeout = 50 * time.Millisecond
	s, _ := testServerOn(t, wrapListener{l, func(nc net.Conn) net.Conn { return noWriteDeadlineConn{nc} }},
		WithWriteTimeout(timeout))
	const sFlood = 63
	msg := bytes.Repeat([]byte{9}, 1<<20)
	sendErr := make(chan error, 1)
	s.HandleStream(sFlood, func(ctx context.Context, init []byte, st *Stream) error {
		var err error
		for err == nil {
			err = st.Send(msg)
		}
		sendErr <- err
		return err
	})
	rc := rawDial(t, l.Addr().String())
	rc.Conn.(*net.TCPConn).SetReadBuffer(4096)
	sc := serverConnOf(t, s) // before the drop removes it
	rc.send(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: sFlood, PromiseID: 1}))
	if err := receive(t, "the handler's Send to fail", sendErr); !errors.Is(err, ErrClosed) {
		t.Errorf("Send on the dropped connection: %v, want ErrClosed", err)
	}
	if sc.wdUnlists.Load() != 0 || sc.out.offList.Load() == 0 {
		t.Errorf("the stuck write was not one that began off the watchdog's list")
	}
	await(t, "the drop to be counted", func() bool { return s.Stats().Dropped == 1 })
}
