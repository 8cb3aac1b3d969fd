package rpc

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// deafListener accepts connections and never reads from them; the
// connections are closed when the test ends.
func deafListener(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, nc)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, nc := range conns {
			nc.Close()
		}
		mu.Unlock()
	})
	return l.Addr().String()
}

// callsWithDeadline starts callers goroutines that each make calls echo
// calls of req on c, one at a time, each with a 200 ms deadline. Every
// call's error goes to errs (buffered for all of them); done closes once
// all have returned.
func callsWithDeadline(c *Client, req []byte, callers, calls int) (errs chan error, done chan struct{}) {
	errs = make(chan error, callers*calls)
	done = make(chan struct{})
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range calls {
				ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
				_, err := c.Call(ctx, mEcho, req, nil)
				cancel()
				errs <- err
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()
	return errs, done
}

// waitOrFail waits for done, failing the test with msg after 30 s (a hang,
// not a speed check).
func waitOrFail(t *testing.T, done <-chan struct{}, msg string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal(msg)
	}
}

// A peer that accepts and never reads: every call, each with a 200 ms
// deadline, returns (the deadline's error, or ErrClosed once the write
// timeout drops the connection), although the first requests fill the
// socket buffers and the write that follows can never finish. Before the
// write path kept callers out of blocked writes, the callers queued behind
// the blocked write on the outbox mutex, far past their deadlines. A fast
// call on another connection is not held up meanwhile.
func TestDeadlineWhilePeerNotReading(t *testing.T) {
	addr := deafListener(t)
	_, okAddr, _ := testServer(t)
	c := dial(t, addr)
	other := dial(t, okAddr)

	req := bytes.Repeat([]byte{7}, 256<<10)
	const callers, calls = 8, 10
	errs, done := callsWithDeadline(c, req, callers, calls)

	// Meanwhile, a call on another connection goes through.
	if out, err := other.Call(context.Background(), mEcho, []byte("hi"), nil); err != nil || string(out) != "hi" {
		t.Fatalf("call on a healthy connection: %q, %v", out, err)
	}

	waitOrFail(t, done, "callers to a peer that never reads did not all return within 30 s")
	close(errs)
	n := 0
	for err := range errs {
		n++
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrClosed) {
			t.Errorf("call %d: %v, want a deadline error or ErrClosed", n, err)
		}
	}
	if n != callers*calls {
		t.Fatalf("%d calls returned, want %d", n, callers*calls)
	}
	// The queue stayed bounded: the limit plus at most one frame.
	c.out.mu.Lock()
	q := c.out.queued()
	c.out.mu.Unlock()
	if q > outboxLimit+wire.RequestOverhead+len(req)+frameHeader {
		t.Fatalf("%d bytes queued for a peer that never reads, limit %d", q, outboxLimit)
	}
}

// The same with one 1 MiB request per caller and deadlines that run out
// while the first caller's write is blocked: no caller waits for another's
// write.
func TestDeadlineBigRequestsPeerNotReading(t *testing.T) {
	addr := deafListener(t)
	c := dial(t, addr)
	req := bytes.Repeat([]byte{1}, 1<<20)
	const callers = 6
	errs := make(chan error, callers)
	for range callers {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			_, err := c.Call(ctx, mEcho, req, nil)
			errs <- err
		}()
	}
	for i := range callers {
		select {
		case err := <-errs:
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrClosed) {
				t.Errorf("call: %v, want a deadline error or ErrClosed", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%d of %d callers still blocked after 30 s", callers-i, callers)
		}
	}
}

// A caller whose context is canceled (no deadline) while it is the one
// writing to a peer that never reads returns too.
func TestCancelWhileWriteBlocked(t *testing.T) {
	addr := deafListener(t)
	c := dial(t, addr)
	req := bytes.Repeat([]byte{1}, 1<<20)
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			_, err := c.Call(ctx, mEcho, req, nil)
			errs <- err
		}()
	}
	time.Sleep(100 * time.Millisecond) // let the writes block
	cancel()
	for i := range 8 {
		select {
		case err := <-errs:
			if !errors.Is(err, context.Canceled) && !errors.Is(err, ErrClosed) {
				t.Errorf("call: %v, want context.Canceled or ErrClosed", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%d of 8 canceled callers still blocked after 30 s", 8-i)
		}
	}
}

// A peer that stops reading is dropped after the write timeout: the
// pending calls (without deadlines) fail with ErrClosed and the client
// reports Closed.
func TestWriteTimeoutDropsNonReadingServer(t *testing.T) {
	addr := deafListener(t)
	c := dial(t, addr, WithWriteTimeout(300*time.Millisecond))
	req := bytes.Repeat([]byte{1}, 1<<20)
	errs := startCalls(c, req, 8)
	for i := range 8 {
		select {
		case err := <-errs:
			if !errors.Is(err, ErrClosed) {
				t.Errorf("call: %v, want ErrClosed", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%d of 8 callers still blocked after 30 s", 8-i)
		}
	}
	if !c.Closed() {
		t.Fatal("client not Closed after its write timed out")
	}
}

func TestDefaultWriteTimeout(t *testing.T) {
	if DefaultWriteTimeout <= 0 {
		t.Fatal("no default write timeout")
	}
	if o := buildClientOptions(nil); o.writeTimeout != DefaultWriteTimeout {
		t.Fatalf("client write timeout %v, want %v", o.writeTimeout, DefaultWriteTimeout)
	}
	if o := buildServerOptions(nil); o.writeTimeout != DefaultWriteTimeout {
		t.Fatalf("server write timeout %v, want %v", o.writeTimeout, DefaultWriteTimeout)
	}
	if o := buildClientOptions([]ClientOption{WithWriteTimeout(0)}); o.writeTimeout != 0 {
		t.Fatalf("WithWriteTimeout(0): %v, want no limit", o.writeTimeout)
	}
}

// Over TLS a timed-out write cannot be resumed (crypto/tls fails every
// write after it), so a caller with a ctx leaves the write to a goroutine
// of its own: callers still return by their deadlines when the peer
// completes the handshake and then never reads.
func TestDeadlineWhilePeerNotReadingTLS(t *testing.T) {
	cert, roots := selfSigned(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	held := make(chan net.Conn, 4)
	go func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			tc := tls.Server(nc, &tls.Config{Certificates: []tls.Certificate{cert}})
			if tc.Handshake() == nil {
				held <- tc // never read again
			}
		}
	}()
	defer func() {
		for {
			select {
			case nc := <-held:
				nc.Close()
			default:
				return
			}
		}
	}()
	c := dial(t, l.Addr().String(), WithTLSConfig(&tls.Config{RootCAs: roots}))
	errs, done := callsWithDeadline(c, bytes.Repeat([]byte{3}, 256<<10), 8, 3)
	waitOrFail(t, done, "TLS callers to a peer that never reads did not all return within 30 s")
	close(errs)
	for err := range errs {
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrClosed) {
			t.Errorf("call: %v, want a deadline error or ErrClosed", err)
		}
	}
}

// The server side reads its maximum frame size out of frame options; a
// change in package frame that broke that would silently fall back to the
// default.
// slowProxy forwards client→server bytes in 32 KiB steps with a pause
// between steps (a slow link), and server→client bytes freely. rcvBuf > 0
// shrinks the proxy's receive buffer (writes to it block sooner).
func slowProxy(t *testing.T, to string, pause time.Duration, rcvBuf int) string {
	t.Helper()
	return slowProxyGaps(t, to, pause, rcvBuf, nil)
}

// sendBufDialer dials TCP connections whose send buffer is set to its
// size in bytes (SetWriteBuffer).
type sendBufDialer int

func (d sendBufDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var nd net.Dialer
	nc, err := nd.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if err := nc.(*net.TCPConn).SetWriteBuffer(int(d)); err != nil {
		nc.Close()
		return nil, err
	}
	return nc, nil
}

// linkGaps keeps the times at which a slowProxy read client bytes.
type linkGaps struct {
	last atomic.Int64 // time.Now().UnixNano() of the latest read
	max  atomic.Int64 // the longest time between two reads, in ns
}

func (g *linkGaps) read() {
	now := time.Now().UnixNano()
	if last := g.last.Swap(now); last != 0 && now-last > g.max.Load() {
		g.max.Store(now - last)
	}
}

// stood says how long the link stood still at most, from its first read
// on: the longest time between two reads, or since the latest read if
// that is longer.
func (g *linkGaps) stood() time.Duration {
	d := g.max.Load()
	if last := g.last.Load(); last != 0 {
		d = max(d, time.Now().UnixNano()-last)
	}
	return time.Duration(d)
}

// slowProxyGaps is slowProxy that also notes in gap (when not nil) when
// it reads client bytes: how long the link stood still (a pause held up
// by a busy machine, a slow server).
func slowProxyGaps(t *testing.T, to string, pause time.Duration, rcvBuf int, gap *linkGaps) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			a, err := l.Accept()
			if err != nil {
				return
			}
			if rcvBuf > 0 {
				a.(*net.TCPConn).SetReadBuffer(rcvBuf)
			}
			b, err := net.Dial("tcp", to)
			if err != nil {
				a.Close()
				return
			}
			mu.Lock()
			conns = append(conns, a, b)
			mu.Unlock()
			go func() {
				buf := make([]byte, 32<<10)
				for {
					n, err := a.Read(buf)
					if n > 0 && gap != nil {
						gap.read()
					}
					if n > 0 {
						if _, werr := b.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						b.Close()
						return
					}
					time.Sleep(pause)
				}
			}()
			go func() {
				buf := make([]byte, 64<<10)
				for {
					n, err := b.Read(buf)
					if n > 0 {
						if _, werr := a.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						a.Close()
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, nc := range conns {
			nc.Close()
		}
		mu.Unlock()
	})
	return l.Addr().String()
}

// Over a slow link, callers with short deadlines give up in the middle of
// their writes again and again; the goroutines that finish those writes
// keep the stream whole: the server never sees a broken frame, the calls
// that get an answer get their own, and the connection still works
// afterwards.
func TestHandOffKeepsStreamWhole(t *testing.T) {
	s, addr, logs := testServer(t)
	c := dial(t, slowProxy(t, addr, time.Millisecond, 0))
	c.nc.(*net.TCPConn).SetWriteBuffer(16 << 10) // writes block soon
	handed := handOffs.Load()
	const callers, calls = 8, 12
	var wg sync.WaitGroup
	var ok, late atomic.Int32
	for g := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				req := bytes.Repeat([]byte{byte(g*calls + i)}, 100<<10+g*1000+i)
				d := time.Duration(2+(g*calls+i)%40) * time.Millisecond
				if i%3 == 2 {
					d = 10 * time.Second // these get their answers
				}
				ctx, cancel := context.WithTimeout(context.Background(), d)
				out, err := c.Call(ctx, mEcho, req, nil)
				cancel()
				switch {
				case err == nil:
					if !bytes.Equal(out, req) {
						t.Errorf("caller %d call %d: answer of %d bytes is not its own", g, i, len(out))
					}
					ok.Add(1)
				case errors.Is(err, context.DeadlineExceeded):
					late.Add(1)
				default:
					t.Errorf("caller %d call %d: %v", g, i, err)
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	waitOrFail(t, done, "callers over a slow link did not all return within 30 s")
	t.Logf("%d answered, %d gave up, %d writes handed over", ok.Load(), late.Load(), handOffs.Load()-handed)
	if ok.Load() == 0 || handOffs.Load() == handed {
		t.Fatal("the test did not exercise both answers and hand-offs")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := c.Call(ctx, mEcho, []byte("after"), nil); err != nil || string(out) != "after" {
		t.Fatalf("call after the storm: %q, %v; server log: %s", out, err, logs)
	}
	if st := s.Stats(); st.Dropped != 0 {
		t.Fatalf("server dropped %d connections (broken stream); log: %s", st.Dropped, logs)
	}
}

// The write deadline armed by an earlier write expires while the
// connection is idle; the next writes re-arm it and go through (no
// spurious drop on either side). (300 ms, not less: a reader starved of
// CPU that long on a loaded machine would end a megabyte's write.)
func TestWriteTimeoutAfterIdle(t *testing.T) {
	s, addr, logs := testServer(t, WithWriteTimeout(300*time.Millisecond))
	c := dial(t, addr, WithWriteTimeout(300*time.Millisecond))
	big := bytes.Repeat([]byte{5}, 1<<20)
	for i := range 3 {
		if out, err := c.Call(context.Background(), mEcho, big, nil); err != nil || !bytes.Equal(out, big) {
			t.Fatalf("round %d: %d bytes, %v", i, len(out), err)
		}
		time.Sleep(400 * time.Millisecond) // the deadlines pass meanwhile
	}
	if c.Closed() || s.Stats().Dropped != 0 {
		t.Fatalf("connection dropped; log: %s", logs)
	}
}

// A slow but live reader is not cut by the write timeout: a 12 MiB request
// crosses a link taking 32 KiB every 6 ms (at most about 5 MiB/s), a
// write of 2.3 s or more, far longer than the 500 ms timeout, which
// restarts on every byte taken. (The proxy keeps its default socket buffers: tiny buffers on
// loopback, whose MSS is 64 KiB, stall TCP itself for hundreds of ms.)
//
// The client's socket has a send buffer of 128 KiB (256 KiB as Linux
// counts it): the kernel takes a writer's bytes, and wakes it, only once a
// third of the send buffer is free, and one grown by the kernel to 4 MiB
// took no byte for over 500 ms while the proxy read 32 KiB at least every
// 213 ms (the write cut so: "write timeout: the peer does not read", 1 of
// about 40 -race runs with GOMAXPROCS=1 under load, 1 of 3 -race runs of
// the package). A loaded machine can also starve the proxy (or the server
// behind it) of CPU for longer than the timeout, and the link then stood
// still, so that the cut was right: an attempt cut when the proxy's reads
// had stopped for half a timeout or more (two reads so far apart, or none
// since) proves nothing, and another is made (at most 10); one cut while
// the link kept moving fails.
func TestWriteTimeoutSparesSlowReader(t *testing.T) {
	const timeout = 500 * time.Millisecond
	_, addr, _ := testServer(t)
	req := bytes.Repeat([]byte{9}, 12<<20)
	for attempt := 1; ; attempt++ {
		var gap linkGaps
		c := dial(t, slowProxyGaps(t, addr, 6*time.Millisecond, 0, &gap), WithWriteTimeout(timeout),
			WithDialer(sendBufDialer(128<<10)))
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		out, err := c.Call(ctx, mEcho, req, nil)
		cancel()
		c.Close()
		if err == nil && bytes.Equal(out, req) {
			return
		}
		stood := gap.stood()
		if err == nil || stood < timeout/2 || attempt == 10 {
			t.Fatalf("12 MiB over a slow link (attempt %d, the link still for %v at most): %d bytes, %v",
				attempt, stood, len(out), err)
		}
		t.Logf("attempt %d: %v, the link still for %v: the machine, not the client", attempt, err, stood)
	}
}

// A server that takes one byte of the client's write now and then, each
// before the write timeout is up, no longer holds the write (and the call
// without a deadline behind it) for ever: a write has the write timeout
// plus a second per 16 KiB it carries, in all, however its bytes are
// taken; then the connection is closed and the call fails with ErrClosed.
// Before, the timeout restarted on every byte taken: this 4 KiB request
// would have taken some ten minutes to leave, and the call then waited
// for an answer that never came. (net.Pipe: no socket buffer between the
// client's write and the reader; the answer check is off, so that only
// the write's bound can end the call.)
func TestWriteTimeoutBoundsTrickleReader(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		var one [1]byte
		for {
			if _, err := b.Read(one[:]); err != nil {
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(150 * time.Millisecond):
			}
		}
	}()
	c := NewClient(a, WithWriteTimeout(200*time.Millisecond), WithAnswerTimeout(0))
	defer c.Close()
	errc := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), mEcho, bytes.Repeat([]byte{7}, 4<<10), nil)
		errc <- err
	}()
	if err := receive(t, "the call whose request the server trickles in", errc); !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "write timeout") {
		t.Fatalf("call: %v, want ErrClosed (write timeout)", err)
	}
}
