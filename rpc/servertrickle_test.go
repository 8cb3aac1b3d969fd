package rpc

import (
	"bytes"
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// pipeListener is a listener whose connections are the server ends of
// net.Pipes made by dial: no socket buffer between the server's write
// and its peer's read.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{} }

// dial returns the client end of a new connection to the server on l,
// closed when the test ends.
func (l *pipeListener) dial(t testing.TB) net.Conn {
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	select {
	case l.conns <- b:
	case <-l.done:
		t.Fatal("the listener is closed")
	}
	return a
}

// trickle reads nc one byte at a time, a pause of every after each, until
// a read fails; the error goes to the channel returned.
func trickle(nc net.Conn, every time.Duration) <-chan error {
	errc := make(chan error, 1)
	go func() {
		var one [1]byte
		for {
			if _, err := nc.Read(one[:]); err != nil {
				errc <- err
				return
			}
			time.Sleep(every)
		}
	}()
	return errc
}

// A peer that takes one byte of the server's write now and then, each
// within the write timeout, no longer holds the write (and every answer
// behind it on the connection) for ever: a server's write too has the
// write timeout plus a second per 16 KiB it carries, in all, on both of
// its paths: the watched one (an answer written by the read loop of a
// connection on the watchdog's list, which sets no deadline: the scans'
// past deadlines bound it) and the one under a socket deadline (a
// worker's answer once the connection left the list). Past it the
// connection is closed; the server's other connections go on. Before,
// the write timeout restarted on every byte taken: this 4 KiB answer,
// a byte every half second, would have taken half an hour to leave.
// (A write timeout of a second: on a loaded machine the trickle's
// goroutine may wait a while to run, and a pause of a write timeout
// would end the write on its own.)
func TestServerWriteTimeoutBoundsTrickleReader(t *testing.T) {
	const timeout = time.Second
	answer := bytes.Repeat([]byte{7}, 4<<10)
	for _, tc := range []struct {
		name    string
		offList bool // the answer is a worker's, written off the watchdog's list
	}{
		{"watched", false},
		{"deadline", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			missed := "the answer was written on the other path"
			untilReached(t, missed, func(t *testing.T) bool {
				l := newPipeListener()
				s, logs := testServerOn(t, l, WithWriteTimeout(timeout))
				release := make(chan struct{})
				s.Handle(mSlow, func(context.Context, []byte, []byte) ([]byte, error) {
					<-release
					return answer, nil
				})
				peer := &rawConn{t, l.dial(t)}
				sc := serverConnOf(t, s)
				if tc.offList {
					peer.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mSlow, PromiseID: 1}))
					// The handler loses the read loop to a worker, and the
					// connection, without inline calls, leaves the list.
					await(t, "the connection to leave the watchdog's list", func() bool { return sc.wdUnlists.Load() > 0 && !sc.wdListed.Load() })
					close(release)
				} else {
					peer.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 1, Payload: answer}))
				}
				readErr := trickle(peer, timeout/2)
				receive(t, "the server to drop the connection whose answer the peer trickles out", readErr)
				if (sc.out.offList.Load() > 0) != tc.offList {
					return false
				}
				await(t, "the drop to be logged", func() bool { return contains(logs.String(), "closing connection") })
				if !contains(logs.String(), "slower than") {
					t.Errorf("the log does not say why the connection was closed:\n%s", logs)
				}
				// The server's other connections are not affected.
				c := NewClient(l.dial(t))
				defer c.Close()
				if out, err := c.Call(context.Background(), mEcho, answer, nil); err != nil || !bytes.Equal(out, answer) {
					t.Errorf("a call on another connection: %d bytes, %v", len(out), err)
				}
				return true
			})
		})
	}
}
