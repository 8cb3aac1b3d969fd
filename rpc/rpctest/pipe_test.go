package rpctest_test

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/rpctest"
)

// hang bounds the waits of these tests that would otherwise hang for
// ever when the pipe is broken; no test expects to come near it.
const hang = time.Minute

// pipeMaker makes the two ends of a connection.
type pipeMaker struct {
	name     string
	make     func(t *testing.T) (net.Conn, net.Conn)
	buffered int // bytes each way a write may leave without a reader: 0 for net.Pipe
}

func pipeMakers() []pipeMaker {
	return []pipeMaker{
		{"Pipe", func(*testing.T) (net.Conn, net.Conn) { return rpctest.Pipe(rpctest.Options{}) }, rpctest.DefaultBufferSize},
		{"Pipe/BufferSize=7", func(*testing.T) (net.Conn, net.Conn) { return rpctest.Pipe(rpctest.Options{BufferSize: 7}) }, 7},
		{"Pipe/BufferSize=-1", func(*testing.T) (net.Conn, net.Conn) { return rpctest.Pipe(rpctest.Options{BufferSize: -1}) }, 1},
		{"Listener", func(t *testing.T) (net.Conn, net.Conn) {
			l := rpctest.NewListenerWithOptions(rpctest.Options{BufferSize: 4096})
			t.Cleanup(func() { l.Close() })
			accepted := make(chan net.Conn, 1)
			go func() {
				c, err := l.Accept()
				if err != nil {
					t.Error(err)
				}
				accepted <- c
			}()
			c, err := l.Dial()
			if err != nil {
				t.Fatal(err)
			}
			return c, <-accepted
		}, 4096},
		// The cases that need no buffer hold for net.Pipe too: that
		// checks the table against the connection it imitates.
		{"net.Pipe", func(*testing.T) (net.Conn, net.Conn) { return net.Pipe() }, 0},
	}
}

// connCase is one clause of the net.Conn contract a Pipe keeps;
// minBuffer > 0 marks those that need that many bytes of buffer.
type connCase struct {
	name      string
	minBuffer int
	run       func(t *testing.T, a, b net.Conn, buffered int)
}

var connCases = []connCase{
	{"BasicIO", 0, testBasicIO},
	{"PingPong", 0, testPingPong},
	{"BothWriteThenRead", 1, testBothWriteThenRead},
	{"WriteBeyondBuffer", 1, testWriteBeyondBuffer},
	{"PastDeadline", 0, testPastDeadline},
	{"FutureDeadline", 0, testFutureDeadline},
	{"DeadlineMovedWhileWaiting", 0, testDeadlineMovedWhileWaiting},
	{"DeadlineSetWhileWaiting", 0, testDeadlineSetWhileWaiting},
	{"WriteDeadlineKeepsWritten", 1, testWriteDeadlineKeepsWritten},
	{"CloseWakesReaders", 0, testCloseWakesReaders},
	{"CloseWakesWriters", 0, testCloseWakesWriters},
	{"PeerReadsBufferedAfterClose", 1, testPeerReadsBufferedAfterClose},
	{"AfterClose", 0, testAfterClose},
	{"ZeroLength", 1, testZeroLength},
	{"WritesDoNotInterleave", 0, testWritesDoNotInterleave},
	{"ConcurrentMethods", 0, testConcurrentMethods},
}

// TestConnContract runs the net.Conn contract's cases (after
// golang.org/x/net/nettest's TestConn, written anew: the module depends
// on the standard library only) on each maker.
func TestConnContract(t *testing.T) {
	for _, m := range pipeMakers() {
		t.Run(m.name, func(t *testing.T) {
			for _, c := range connCases {
				t.Run(c.name, func(t *testing.T) {
					if c.minBuffer > m.buffered {
						t.Skipf("needs %d bytes of buffer", c.minBuffer)
					}
					a, b := m.make(t)
					defer a.Close()
					defer b.Close()
					c.run(t, a, b, m.buffered)
				})
			}
		})
	}
}

// TestPipeAddrs: the ends of a Listener's connection name the listener
// and the dial; a Pipe's both "pipe".
func TestPipeAddrs(t *testing.T) {
	a, b := rpctest.Pipe(rpctest.Options{})
	for _, c := range []net.Conn{a, b} {
		if l, r := c.LocalAddr(), c.RemoteAddr(); l.Network() != "pipe" || l.String() != "pipe" || r.Network() != "pipe" || r.String() != "pipe" {
			t.Errorf("Pipe end's addresses %s %s, %s %s", l.Network(), l, r.Network(), r)
		}
	}
	m := pipeMakers()[3]
	client, server := m.make(t)
	if client.RemoteAddr().String() != "rpctest" || server.LocalAddr().String() != "rpctest" ||
		client.LocalAddr().String() != server.RemoteAddr().String() || client.LocalAddr().String() == "rpctest" {
		t.Errorf("client %s -> %s, server %s <- %s", client.LocalAddr(), client.RemoteAddr(), server.LocalAddr(), server.RemoteAddr())
	}
	client2, _ := m.make(t)
	if client2.LocalAddr().String() == "" {
		t.Error("empty address")
	}
}

// TestListenerConnsBuffered: both ends of a Listener's connection write
// what fits in the buffer from their reading goroutines, then read: with
// net.Pipe (the Listener's connections before) each write waited for a
// read that never came, until the deadline.
func TestListenerConnsBuffered(t *testing.T) {
	l := rpctest.NewListener()
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := l.Accept()
		accepted <- c
	}()
	client, err := l.Dial()
	if err != nil {
		t.Fatal(err)
	}
	server := <-accepted
	defer client.Close()
	defer server.Close()
	testBothWriteThenRead(t, client, server, rpctest.DefaultBufferSize)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) && errors.As(err, &ne) && ne.Timeout()
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rand.IntN(256))
	}
	return b
}

// guard sets a deadline on both ends that only keeps a broken pipe from
// hanging the test.
func guard(t *testing.T, conns ...net.Conn) {
	t.Helper()
	for _, c := range conns {
		if err := c.SetDeadline(time.Now().Add(hang)); err != nil {
			t.Fatal(err)
		}
	}
}

// testBasicIO: bytes written in chunks of random sizes arrive in order;
// after the writer's Close the reader gets io.EOF.
func testBasicIO(t *testing.T, a, b net.Conn, buffered int) {
	guard(t, a, b)
	n := 1 << 20
	if buffered > 0 && buffered < 1024 { // tiny buffers: fewer bytes, to keep it quick
		n = 1 << 14
	}
	want := randomBytes(n)
	werr := make(chan error, 1)
	go func() {
		p := want
		for len(p) > 0 {
			k := min(len(p), 1+rand.IntN(100_000))
			n, err := a.Write(p[:k])
			if err != nil || n != k {
				werr <- err
				return
			}
			p = p[k:]
		}
		werr <- a.Close()
	}()
	got, err := io.ReadAll(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, not the %d written", len(got), len(want))
	}
}

// testPingPong: each end answers what the other wrote, turn by turn.
func testPingPong(t *testing.T, a, b net.Conn, _ int) {
	guard(t, a, b)
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 8)
		for {
			if _, err := io.ReadFull(b, buf); err != nil {
				if err == io.EOF {
					err = nil
				}
				done <- err
				return
			}
			buf[0]++
			if _, err := b.Write(buf); err != nil {
				done <- err
				return
			}
		}
	}()
	buf := make([]byte, 8)
	for i := range 1000 {
		buf[0] = byte(2 * i)
		if _, err := a.Write(buf); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(a, buf); err != nil {
			t.Fatal(err)
		}
		if buf[0] != byte(2*i+1) {
			t.Fatalf("turn %d: got %d", i, buf[0])
		}
	}
	a.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// testBothWriteThenRead: both ends write a buffer's worth from the same
// goroutine that reads afterwards; neither waits for the other.
func testBothWriteThenRead(t *testing.T, a, b net.Conn, buffered int) {
	guard(t, a, b)
	wa, wb := randomBytes(buffered), randomBytes(buffered)
	errs := make(chan error, 2)
	for _, x := range []struct {
		c         net.Conn
		out, want []byte
	}{{a, wa, wb}, {b, wb, wa}} {
		go func() {
			if _, err := x.c.Write(x.out); err != nil {
				errs <- err
				return
			}
			got := make([]byte, len(x.want))
			if _, err := io.ReadFull(x.c, got); err != nil {
				errs <- err
				return
			}
			if !bytes.Equal(got, x.want) {
				errs <- errors.New("read other bytes than were written")
				return
			}
			errs <- nil
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// testWriteBeyondBuffer: a write larger than the buffer returns once the
// reader has taken the rest, all of it written.
func testWriteBeyondBuffer(t *testing.T, a, b net.Conn, buffered int) {
	guard(t, a, b)
	want := randomBytes(3*buffered + 1)
	written := make(chan error, 1)
	go func() {
		n, err := a.Write(want)
		if err == nil && n != len(want) {
			err = io.ErrShortWrite
		}
		written <- err
	}()
	got := make([]byte, len(want))
	if _, err := io.ReadFull(b, got); err != nil {
		t.Fatal(err)
	}
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("read other bytes than were written")
	}
}

// testPastDeadline: a deadline in the past fails reads and writes at
// once with a timeout; clearing it makes them work again.
func testPastDeadline(t *testing.T, a, b net.Conn, _ int) {
	if err := a.SetDeadline(time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	for range 2 { // and again, once it has passed
		if n, err := a.Read(make([]byte, 1)); n != 0 || !isTimeout(err) {
			t.Fatalf("Read past its deadline = %d, %v", n, err)
		}
		if n, err := a.Write([]byte("x")); n != 0 || !isTimeout(err) {
			t.Fatalf("Write past its deadline = %d, %v", n, err)
		}
	}
	if err := a.SetDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	guard(t, b)
	go b.Write([]byte("y"))
	buf := make([]byte, 1)
	if n, err := a.Read(buf); n != 1 || err != nil || buf[0] != 'y' {
		t.Fatalf("Read after the deadline was cleared = %d, %v", n, err)
	}
	go b.Read(buf)
	if n, err := a.Write([]byte("z")); n != 1 || err != nil {
		t.Fatalf("Write after the deadline was cleared = %d, %v", n, err)
	}
}

// testFutureDeadline: a read waiting for data, and a write waiting for a
// reader, fail with a timeout when their deadlines pass.
func testFutureDeadline(t *testing.T, a, b net.Conn, buffered int) {
	if err := a.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if n, err := a.Read(make([]byte, 1)); n != 0 || !isTimeout(err) {
		t.Fatalf("Read = %d, %v; want a timeout", n, err)
	}
	if n, err := writeCut(a, make([]byte, buffered+1), buffered, 20*time.Millisecond); n != buffered || !isTimeout(err) {
		t.Fatalf("Write = %d, %v; want %d and a timeout", n, err, buffered)
	}
	// The read deadline did not touch writes of the other end, nor the
	// write deadline its reads: b reads what a buffered.
	guard(t, b)
	if buffered > 0 {
		if n, err := io.ReadFull(b, make([]byte, buffered)); n != buffered || err != nil {
			t.Fatalf("the other end read %d, %v", n, err)
		}
	}
}

// testDeadlineMovedWhileWaiting: moving a deadline that has not passed
// to the past wakes the read or write waiting on it; moving it later
// keeps it waiting.
func testDeadlineMovedWhileWaiting(t *testing.T, a, b net.Conn, buffered int) {
	for _, dir := range []string{"read", "write"} {
		set, op := a.SetReadDeadline, func() (int, error) { return a.Read(make([]byte, 1)) }
		if dir == "write" {
			set, op = a.SetWriteDeadline, func() (int, error) { return a.Write(make([]byte, buffered+1)) }
		}
		if err := set(time.Now().Add(hang)); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		var written int // what the write buffered, read once done
		go func() {
			var err error
			written, err = op()
			done <- err
		}()
		time.Sleep(5 * time.Millisecond) // let it wait (not needed for the outcome)
		if err := set(time.Now().Add(2 * hang)); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			t.Fatalf("%s returned when its deadline moved later: %v", dir, err)
		case <-time.After(5 * time.Millisecond):
		}
		if err := set(time.Now().Add(-time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		if err := <-done; !isTimeout(err) {
			t.Fatalf("%s whose deadline moved to the past: %v", dir, err)
		}
		set(time.Time{})
		// Empty the buffer the write filled (a write held up until its
		// deadline passed, on a loaded machine, wrote nothing).
		if dir == "write" && written > 0 {
			guard(t, b)
			if _, err := io.ReadFull(b, make([]byte, written)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// testDeadlineSetWhileWaiting: a read or write waiting with no deadline
// is woken by a deadline set meanwhile, from another goroutine (as a
// watchdog interrupts a read), once it passes.
func testDeadlineSetWhileWaiting(t *testing.T, a, b net.Conn, buffered int) {
	for _, dir := range []string{"read", "write"} {
		set, op := a.SetReadDeadline, func() (int, error) { return a.Read(make([]byte, 1)) }
		if dir == "write" {
			set, op = a.SetWriteDeadline, func() (int, error) { return a.Write(make([]byte, buffered+1)) }
		}
		done := make(chan error, 1)
		var written int // what the write buffered, read once done
		go func() {
			var err error
			written, err = op()
			done <- err
		}()
		time.Sleep(5 * time.Millisecond) // let it wait (not needed for the outcome)
		if err := set(time.Now().Add(time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		var err error
		select {
		case err = <-done:
		case <-time.After(hang):
			a.Close() // the test fails; the op returns
			err = <-done
		}
		if !isTimeout(err) {
			t.Fatalf("%s waiting when its deadline was set: %v", dir, err)
		}
		set(time.Time{})
		if dir == "write" && written > 0 { // as above
			guard(t, b)
			if _, err := io.ReadFull(b, make([]byte, written)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// writeCut writes p, more than the buffered bytes that fit, to a with a
// write deadline d from now, which cuts the write once it filled the
// buffer. A deadline that passed before the write began (the goroutine
// held up for d on a loaded machine) cuts it with nothing written: the
// write is then tried again with a deadline twice as far, up to hang.
func writeCut(a net.Conn, p []byte, buffered int, d time.Duration) (int, error) {
	for {
		if err := a.SetWriteDeadline(time.Now().Add(d)); err != nil {
			return 0, err
		}
		n, err := a.Write(p)
		if n != 0 || buffered == 0 || !isTimeout(err) || d >= hang {
			return n, err
		}
		d *= 2
	}
}

// testWriteDeadlineKeepsWritten: a write cut by its deadline reports the
// bytes it buffered, and those reach the reader, followed by the next
// write's.
func testWriteDeadlineKeepsWritten(t *testing.T, a, b net.Conn, buffered int) {
	first := randomBytes(buffered + 10)
	n, err := writeCut(a, first, buffered, 10*time.Millisecond)
	if n != buffered || !isTimeout(err) {
		t.Fatalf("Write = %d, %v; want %d and a timeout", n, err, buffered)
	}
	guard(t, a, b)
	go a.Write([]byte("next"))
	got := make([]byte, buffered+4)
	if _, err := io.ReadFull(b, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, append(first[:buffered:buffered], "next"...)) {
		t.Fatal("the reader got other bytes than were written")
	}
}

// testCloseWakesReaders: Close fails the Read waiting on its own end
// with io.ErrClosedPipe, and gives the other end's io.EOF.
func testCloseWakesReaders(t *testing.T, a, b net.Conn, _ int) {
	closeWakes(t, a, []waiter{
		{"own Read", a.Read, nil, io.ErrClosedPipe},
		{"other end's Read", b.Read, nil, io.EOF},
	})
}

// testCloseWakesWriters: Close fails the Writes waiting on both ends
// (for a reader) with io.ErrClosedPipe.
func testCloseWakesWriters(t *testing.T, a, b net.Conn, buffered int) {
	closeWakes(t, a, []waiter{
		{"own Write", a.Write, make([]byte, buffered+1), io.ErrClosedPipe},
		{"other end's Write", b.Write, make([]byte, buffered+1), io.ErrClosedPipe},
	})
	if _, err := b.Write([]byte("x")); err != io.ErrClosedPipe {
		t.Errorf("other end's Write after Close: %v", err)
	}
}

// waiter is a Read or Write that waits until the Close of closeWakes.
type waiter struct {
	what string
	op   func([]byte) (int, error)
	buf  []byte
	want error
}

// closeWakes starts the waiters, closes c and checks their errors.
func closeWakes(t *testing.T, c net.Conn, waiters []waiter) {
	guard(t, c)
	errs := make([]error, len(waiters))
	var wg sync.WaitGroup
	for i, w := range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := w.buf
			if buf == nil {
				buf = make([]byte, 1)
			}
			_, errs[i] = w.op(buf)
		}()
	}
	time.Sleep(5 * time.Millisecond) // let them wait (not needed for the outcome)
	c.Close()
	wg.Wait()
	for i, w := range waiters {
		if errs[i] != w.want {
			t.Errorf("%s at Close: %v, want %v", w.what, errs[i], w.want)
		}
	}
}

// testPeerReadsBufferedAfterClose: what was written before Close is
// read by the other end, then io.EOF.
func testPeerReadsBufferedAfterClose(t *testing.T, a, b net.Conn, buffered int) {
	guard(t, a, b)
	want := randomBytes(buffered)
	if _, err := a.Write(want); err != nil {
		t.Fatal(err)
	}
	a.Close()
	got, err := io.ReadAll(b)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes of %d, %v", len(got), len(want), err)
	}
}

// testAfterClose: a closed end fails everything with io.ErrClosedPipe
// but Close, which returns nil again.
func testAfterClose(t *testing.T, a, _ net.Conn, _ int) {
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := a.Read(make([]byte, 1)); err != io.ErrClosedPipe {
		t.Errorf("Read: %v", err)
	}
	if _, err := a.Write([]byte("x")); err != io.ErrClosedPipe {
		t.Errorf("Write: %v", err)
	}
	for name, set := range map[string]func(time.Time) error{"SetDeadline": a.SetDeadline, "SetReadDeadline": a.SetReadDeadline, "SetWriteDeadline": a.SetWriteDeadline} {
		if err := set(time.Now()); err != io.ErrClosedPipe {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// testZeroLength: empty reads and writes return at once, without error.
func testZeroLength(t *testing.T, a, b net.Conn, _ int) {
	if n, err := a.Write(nil); n != 0 || err != nil {
		t.Fatalf("Write(nil) = %d, %v", n, err)
	}
	if n, err := b.Read(nil); n != 0 || err != nil {
		t.Fatalf("Read(nil) = %d, %v", n, err)
	}
}

// testWritesDoNotInterleave: the bytes of concurrent writes, each larger
// than the buffer, arrive each write's together.
func testWritesDoNotInterleave(t *testing.T, a, b net.Conn, buffered int) {
	guard(t, a, b)
	const writers, size = 4, 10_000
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := a.Write(bytes.Repeat([]byte{byte('a' + i)}, size+buffered)); err != nil {
				t.Error(err)
			}
		}()
	}
	got := make([]byte, writers*(size+buffered))
	if _, err := io.ReadFull(b, got); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i := 0; i < len(got); i += size + buffered {
		if run := got[i : i+size+buffered]; !bytes.Equal(run, bytes.Repeat(run[:1], len(run))) {
			t.Fatalf("the write at %d was interleaved with another", i)
		}
	}
}

// testConcurrentMethods: reads, writes and deadline changes from many
// goroutines at once, then Close, are safe (for the race detector) and
// all return.
func testConcurrentMethods(t *testing.T, a, b net.Conn, _ int) {
	guard(t, a, b)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(3)
		go func() {
			defer wg.Done()
			buf := make([]byte, 100)
			for {
				if _, err := b.Read(buf); err != nil && !isTimeout(err) {
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for {
				if _, err := a.Write(make([]byte, 1000)); err != nil && !isTimeout(err) {
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range 100 {
				a.SetDeadline(time.Now().Add(time.Duration(rand.IntN(1000)) * time.Microsecond))
				b.SetReadDeadline(time.Now().Add(hang))
				a.LocalAddr()
				b.RemoteAddr()
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	a.Close()
	b.Close()
	wg.Wait()
}

// TestPipeWriteReadThenPeerClose: a Write whose bytes were all buffered
// returns nil, also when the reader takes them and closes its end before
// the Write has returned (it looked at the ends again after buffering
// its last bytes, and returned io.ErrClosedPipe for bytes that had been
// read: the race detector's slowdown shows it within a few thousand
// turns, more rarely without).
func TestPipeWriteReadThenPeerClose(t *testing.T) {
	for i := range 20000 {
		a, b := rpctest.Pipe(rpctest.Options{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			b.Read(make([]byte, 8))
			b.Close()
		}()
		n, err := a.Write(make([]byte, 8))
		<-done
		a.Close()
		if n != 8 || err != nil {
			t.Fatalf("turn %d: a Write whose bytes the peer read before its Close returned %d, %v", i, n, err)
		}
	}
}
