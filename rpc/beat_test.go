package rpc

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// deadlineCounter counts the write deadlines set on a connection.
type deadlineCounter struct {
	net.Conn
	set atomic.Int32
}

// NetConn: the pipe, a socket as far as resumableConn is concerned (a
// write the beat cut can go on).
func (d *deadlineCounter) NetConn() net.Conn { return d.Conn }

func (d *deadlineCounter) SetWriteDeadline(t time.Time) error {
	d.set.Add(1)
	return d.Conn.SetWriteDeadline(t)
}

func (d *deadlineCounter) SetDeadline(t time.Time) error {
	d.set.Add(1)
	return d.Conn.SetDeadline(t)
}

// A healthy client with the default write and answer timeouts sets no
// write deadline on its socket: the runtime timer a deadline arms would
// stay pending and make every scheduling on its P read the clock. (Before
// the beat, the first write armed the write timeout and kept it armed.)
func TestHealthyClientSetsNoWriteDeadline(t *testing.T) {
	_, addr, _ := testServer(t)
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	dc := &deadlineCounter{Conn: nc}
	c := NewClient(dc)
	defer c.Close()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				if out, err := c.Call(context.Background(), mEcho, []byte("abc"), nil); err != nil || string(out) != "abc" {
					t.Errorf("call: %q, %v", out, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	big := bytes.Repeat([]byte{7}, 1<<20) // a write of its own (writev)
	if out, err := c.Call(context.Background(), mEcho, big, nil); err != nil || !bytes.Equal(out, big) {
		t.Fatalf("1 MiB call: %d bytes, %v", len(out), err)
	}
	if n := dc.set.Load(); n != 0 {
		t.Fatalf("%d write deadlines set by a healthy client, want 0", n)
	}
}

// The same over TLS, where a write cannot be resumed once a deadline
// cut it: a healthy client sets no deadline, and a peer that completes
// the handshake and then stops reading is still dropped after the write
// timeout (the beat interrupts the write).
func TestWriteTimeoutTLSWithoutDeadlines(t *testing.T) {
	cert, roots := selfSigned(t)
	_, addr, _ := testServer(t, WithTLSConfig(&tls.Config{Certificates: []tls.Certificate{cert}}))
	c := dial(t, addr, WithTLSConfig(&tls.Config{RootCAs: roots}))
	for range 10 {
		if out, err := c.Call(context.Background(), mEcho, []byte("tls"), nil); err != nil || string(out) != "tls" {
			t.Fatalf("call: %q, %v", out, err)
		}
	}
	if c.out.wdl != (time.Time{}) {
		t.Fatalf("write deadline %v left on a healthy TLS client", c.out.wdl)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	held := make(chan net.Conn, 1)
	go func() {
		nc, err := l.Accept()
		if err != nil {
			return
		}
		tc := tls.Server(nc, &tls.Config{Certificates: []tls.Certificate{cert}})
		if tc.Handshake() == nil {
			held <- tc // never read again
		} else {
			nc.Close()
		}
	}()
	defer func() {
		select {
		case nc := <-held:
			nc.Close()
		default:
		}
	}()
	deaf := dial(t, l.Addr().String(), WithTLSConfig(&tls.Config{RootCAs: roots}), WithWriteTimeout(200*time.Millisecond))
	// More than the socket buffers of both ends take: 4 MiB did not
	// always stall (the client's send buffer grows to 4 MiB, tcp_wmem's
	// maximum here, and the peer's receive buffer starts at 128 KiB), and
	// the call then waited for an answer.
	req := bytes.Repeat([]byte{3}, 12<<20)
	errc := make(chan error, 1)
	go func() {
		_, err := deaf.Call(context.Background(), mEcho, req, nil)
		errc <- err
	}()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) || !errors.Is(deaf.out.failure(), errWriteTimeout) {
			t.Fatalf("call to a TLS peer that stopped reading: %v (stream: %v), want ErrClosed by the write timeout", err, deaf.out.failure())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("call to a TLS peer that stopped reading still blocked after 30 s")
	}
}

// watchedPipe returns an outbox over one end of a net.Pipe, watched by
// the beat as a client's is (but beaten by hand), with the given write
// timeout, and the other end.
func watchedPipe(t *testing.T, timeout time.Duration) (*outbox, net.Conn, *deadlineCounter) {
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	dc := &deadlineCounter{Conn: a}
	o := &outbox{}
	o.setup(dc, timeout, 1<<20)
	o.ww = &writeWatch{}
	return o, b, dc
}

// startWrite writes p on o as the writer role would, in a goroutine, and
// waits until the write is under way (seen by watchWrite).
func startWrite(t *testing.T, o *outbox, p []byte) <-chan error {
	errc := make(chan error, 1)
	go func() {
		_, err := o.write(noCtx, p, nil)
		errc <- err
	}()
	await(t, "the write to begin", func() bool { return o.ww.state.Load()&writeBusy != 0 })
	return errc
}

// The beat interrupts a write it saw under way for the write timeout;
// having taken no byte, the write fails with errWriteTimeout. Before
// that, beats change nothing. (The beats are made by hand, with made-up
// times: the test does not depend on the clock.)
func TestWatchWriteInterruptsStuckWrite(t *testing.T) {
	const timeout = time.Hour // never reached by a socket deadline here
	o, _, _ := watchedPipe(t, timeout)
	errc := startWrite(t, o, []byte("never read"))
	o.watchWrite(1000)
	o.watchWrite(1000 + int64(timeout) - 1)
	select {
	case err := <-errc:
		t.Fatalf("write ended before the write timeout: %v", err)
	default:
	}
	o.watchWrite(1000 + int64(timeout))
	select {
	case err := <-errc:
		if err != errWriteTimeout {
			t.Fatalf("stuck write: %v, want errWriteTimeout", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the interrupted write did not return within 30 s")
	}
}

// A write that took some bytes when the beat interrupts it goes on under
// a socket deadline: a reader that goes on reading gets the whole write.
func TestWatchWriteSparesProgress(t *testing.T) {
	o, peer, dc := watchedPipe(t, time.Hour)
	p := bytes.Repeat([]byte{1}, 1000)
	errc := startWrite(t, o, p)
	got := make([]byte, 0, len(p))
	buf := make([]byte, 10)
	n, err := peer.Read(buf) // some progress, then a stall
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, buf[:n]...)
	o.watchWrite(0)
	o.watchWrite(int64(time.Hour))
	// The kick (a past deadline, set in a goroutine of its own) makes the
	// write return; it goes on under a socket deadline an hour ahead.
	await(t, "the interrupted write to set a deadline", func() bool { return dc.set.Load() >= 2 })
	// Read the rest.
	rest, err := io.ReadAll(io.LimitReader(peer, int64(len(p)-len(got))))
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, rest...)
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("write with progress: %v, want it to go on", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("write did not end within 30 s")
	}
	if !bytes.Equal(got, p) {
		t.Fatalf("peer got %d bytes, want the %d written", len(got), len(p))
	}
	if o.wdl.IsZero() {
		t.Fatal("the write went on without a socket deadline")
	}
	// The next write sets no deadline and takes the one left off.
	errc = startWrite(t, o, []byte("next"))
	if _, err := io.ReadFull(peer, make([]byte, 4)); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil || !o.wdl.IsZero() {
		t.Fatalf("next write: %v, deadline %v; want nil and none", err, o.wdl)
	}
}

// kickAtEnd is a connection whose next Write, once its bytes are taken,
// lets the beat see the write under way for the write timeout before it
// returns: the kick lands between the write's end and the writer's look
// at the watch.
type kickAtEnd struct {
	net.Conn
	t    *testing.T
	o    *outbox
	kick bool
}

func (k *kickAtEnd) Write(p []byte) (int, error) {
	n, err := k.Conn.Write(p)
	if k.kick {
		k.kick = false
		k.o.watchWrite(0)
		k.o.watchWrite(int64(k.o.timeout))
		// The kick runs in a goroutine: wait until it landed (the
		// writer, inside this Write, cannot clear it meanwhile).
		await(k.t, "the kick to land", func() bool { return k.o.ww.state.Load()&writeKicked != 0 })
	}
	return n, err
}

// A beat that comes as the write ends leaves the outbox healthy: the
// write succeeds, the past deadline the beat set is taken off, and the
// next write goes through.
func TestWatchWriteLateKick(t *testing.T) {
	a, peer := net.Pipe()
	defer a.Close()
	defer peer.Close()
	k := &kickAtEnd{Conn: a, t: t, kick: true}
	o := &outbox{}
	o.setup(k, time.Hour, 1<<20)
	o.ww = &writeWatch{}
	k.o = o
	go io.Copy(io.Discard, peer)
	for i := range 2 {
		if _, err := o.write(noCtx, []byte("payload"), nil); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		if !o.wdl.IsZero() {
			t.Fatalf("write %d left the deadline %v", i, o.wdl)
		}
	}
	if k.kick || o.ww.state.Load() != 0 {
		t.Fatalf("the kick did not land (%v) or the watch was left at %#x", k.kick, o.ww.state.Load())
	}
}

// The beat of a private set: a member is beaten, and once it leaves the
// goroutine stops the clock and ends.
func TestBeatStopsWithoutMembers(t *testing.T) {
	var s beatSet
	var n atomic.Int32
	e := s.join(beatFunc(func(int64) { n.Add(1) }), beatMin)
	await(t, "the member to be beaten", func() bool { return n.Load() >= 3 })
	s.leave(e)
	s.leave(e) // a second leave does nothing
	await(t, "the beat to stop without members", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return !s.running && s.every == 0
	})
	// It starts again for a new member.
	m := n.Load()
	e = s.join(beatFunc(func(int64) { n.Add(1) }), beatMin)
	await(t, "the beat to start again", func() bool { return n.Load() > m })
	s.leave(e)
}

type beatFunc func(int64)

func (f beatFunc) beat(now int64) { f(now) }

// Members are beaten at their own periods: one that asked for an hour is
// not beaten while one that asked for a millisecond is beaten again and
// again, and its leaving does not stop the other's beats.
func TestBeatPeriods(t *testing.T) {
	var s beatSet
	var fast, slow atomic.Int32
	ef := s.join(beatFunc(func(int64) { fast.Add(1) }), beatMin)
	es := s.join(beatFunc(func(int64) { slow.Add(1) }), time.Hour)
	await(t, "the fast member to be beaten", func() bool { return fast.Load() >= 5 })
	if n := slow.Load(); n != 0 {
		t.Fatalf("the hourly member was beaten %d times", n)
	}
	// Two members of one period share a group; one leaving keeps the
	// other's beats.
	var fast2 atomic.Int32
	ef2 := s.join(beatFunc(func(int64) { fast2.Add(1) }), beatMin)
	s.leave(ef)
	m := fast.Load()
	await(t, "the member left in the group to be beaten", func() bool { return fast2.Load() >= 5 })
	if fast.Load() > m+1 { // one beat may have been under way
		t.Fatalf("a member that left was beaten %d times more", fast.Load()-m)
	}
	s.leave(ef2)
	s.leave(es)
	await(t, "the beat to stop without members", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return !s.running && len(s.groups) == 0
	})
}
