package rpc

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// mGate blocks until its gate opens.
const mGate = 93

// requestFrame is the frame of a request for method with promise pid.
func requestFrame(method, pid uint32, payload []byte) []byte {
	return frameBytes(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: method, PromiseID: pid, Payload: payload}))
}

// recvWithin reads one response, failing the test after 30 s.
func (r *rawConn) recvWithin(what string) (wire.Response, bool) {
	r.t.Helper()
	r.SetReadDeadline(time.Now().Add(30 * time.Second))
	defer r.SetReadDeadline(time.Time{})
	kind, env, ok := r.recv()
	if !ok {
		return wire.Response{}, false
	}
	if kind != wire.KindResponse {
		r.t.Fatalf("%s: frame kind %d, want a response", what, kind)
	}
	resp, err := wire.ParseResponse(env)
	if err != nil {
		r.t.Fatalf("%s: %v", what, err)
	}
	return resp, true
}

// Two requests read in one batch: the first answers at once (inline, its
// answer queued in the read loop's buffer), the second blocks until the
// peer has that answer. The answer must not wait for the blocked handler:
// the watchdog takes the read loop over and the new holder writes it.
func TestInlineAnswerNotHeldByBlockedHandler(t *testing.T) {
	s, addr, _ := testServer(t)
	gate := make(chan struct{})
	s.Handle(mGate, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		select {
		case <-gate:
		case <-ctx.Done():
		}
		return append(resp, req...), nil
	})
	r := rawDial(t, addr)
	b := append(requestFrame(mEcho, 1, []byte("first")), requestFrame(mGate, 2, []byte("second"))...)
	if _, err := r.Write(b); err != nil {
		t.Fatal(err)
	}
	resp, ok := r.recvWithin("first answer")
	if !ok || resp.PromiseID != 1 || string(resp.Body) != "first" {
		t.Fatalf("first answer: %+v ok %v (held behind the blocked handler for 30 s?)", resp, ok)
	}
	close(gate)
	if resp, ok = r.recvWithin("second answer"); !ok || resp.PromiseID != 2 || string(resp.Body) != "second" {
		t.Fatalf("second answer: %+v ok %v", resp, ok)
	}
}

// A peer trickling its frames: a request, then the first bytes of the
// next. The read loop blocks in the middle of the second frame; the
// first's answer must be written before it does.
func TestInlineAnswerFlushedBeforePartialFrame(t *testing.T) {
	_, addr, _ := testServer(t)
	r := rawDial(t, addr)
	next := requestFrame(mEcho, 2, []byte("second"))
	b := append(requestFrame(mEcho, 1, []byte("first")), next[:3]...)
	if _, err := r.Write(b); err != nil {
		t.Fatal(err)
	}
	resp, ok := r.recvWithin("first answer")
	if !ok || resp.PromiseID != 1 || string(resp.Body) != "first" {
		t.Fatalf("first answer: %+v ok %v", resp, ok)
	}
	for i := 3; i < len(next); i++ { // a byte at a time
		if _, err := r.Write(next[i : i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if resp, ok = r.recvWithin("second answer"); !ok || resp.PromiseID != 2 || string(resp.Body) != "second" {
		t.Fatalf("second answer: %+v ok %v", resp, ok)
	}
}

// A peer writes many requests in one go and half-closes: every request
// is answered (from the read loop's buffer too) before the server closes.
func TestInlineAnswersBeforeHalfClose(t *testing.T) {
	_, addr, _ := testServer(t)
	r := rawDial(t, addr)
	const n = 500
	var b []byte
	for i := 1; i <= n; i++ {
		b = append(b, requestFrame(mEcho, uint32(i), []byte{byte(i)})...)
	}
	if _, err := r.Write(b); err != nil {
		t.Fatal(err)
	}
	r.Conn.(*net.TCPConn).CloseWrite()
	seen := make(map[uint32]bool)
	for {
		resp, ok := r.recvWithin("answers")
		if !ok {
			break
		}
		if seen[resp.PromiseID] || resp.Status != StatusOK || len(resp.Body) != 1 || resp.Body[0] != byte(resp.PromiseID) {
			t.Fatalf("answer %+v (seen before: %v)", resp, seen[resp.PromiseID])
		}
		seen[resp.PromiseID] = true
	}
	if len(seen) != n {
		t.Fatalf("%d answers before the close, want %d", len(seen), n)
	}
}

// Shutdown while a batch of requests is being read: every request gets
// exactly one answer (run, or refused as not run), none stays in the read
// loop's buffer.
func TestInlineAnswersAtShutdown(t *testing.T) {
	full := 0
	defer func() { t.Logf("%d rounds of 20 with every request answered (the others none)", full) }()
	for round := 0; round < 20; round++ {
		// A long grace: the connection closes on our acknowledgement,
		// not because a loaded machine kept its read loop from running.
		s, addr, _ := testServer(t, WithShutdownGrace(time.Minute))
		r := rawDial(t, addr)
		const n = 300
		var b []byte
		for i := 1; i <= n; i++ {
			b = append(b, requestFrame(mEcho, uint32(i), []byte{byte(i)})...)
		}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := s.Shutdown(ctx); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
		}()
		if _, err := r.Write(b); err != nil {
			// The server may be gone already (nothing was read): fine.
			wg.Wait()
			continue
		}
		seen := make(map[uint32]bool)
		r.SetReadDeadline(time.Now().Add(30 * time.Second))
		for {
			kind, env, ok := r.recv()
			if !ok {
				break
			}
			if kind == wire.KindGoAway {
				// Acknowledge, as a zapcodec client does.
				r.send(wire.KindGoAway, env)
				continue
			}
			if kind != wire.KindResponse {
				continue
			}
			resp, err := wire.ParseResponse(env)
			if err != nil {
				t.Fatal(err)
			}
			if seen[resp.PromiseID] {
				t.Fatalf("round %d: two answers for %d", round, resp.PromiseID)
			}
			seen[resp.PromiseID] = true
		}
		wg.Wait()
		if len(seen) == n {
			full++
		} else if len(seen) != 0 {
			// Some requests read and answered, the rest lost: every
			// request before our acknowledgement must be answered. (None
			// at all: the server closed before reading, fine.)
			t.Fatalf("round %d: %d of %d requests answered", round, len(seen), n)
		}
	}
}

// A peer that sends many calls with large answers and never reads: the
// answers the read loop queues are bounded, the connection is dropped at
// the write timeout, and another connection's calls go on meanwhile.
func TestPeerNeverReads(t *testing.T) {
	s, addr, _ := testServer(t, WithWriteTimeout(200*time.Millisecond))
	s.Handle(mFat, fat)
	r := rawDial(t, addr)
	wrote := make(chan error, 1)
	go func() {
		var b []byte
		for i := 1; i <= 64; i++ {
			b = append(b, requestFrame(mFat, uint32(i), []byte("0123456789abcdef"))...)
		}
		for k := 0; k < 200; k++ { // 12,800 answers of 16 KiB: 200 MiB unread
			if _, err := r.Write(b); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}()
	other := dial(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 50; i++ {
		if out, err := other.Call(ctx, mEcho, []byte("x"), nil); err != nil || string(out) != "x" {
			t.Fatalf("other connection, call %d: %q %v", i, out, err)
		}
	}
	await(t, "the non-reading peer dropped", func() bool { return s.Stats().Dropped >= 1 })
	select {
	case err := <-wrote:
		t.Logf("the peer's writes ended: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the peer's writes still block 30 s after the server dropped it")
	}
}

// Many sparse connections, each with two callers: one makes calls that
// block (each until the other caller's next call on the same connection
// is answered), the other quick ones. A blocked handler holds its
// connection's read loop until the watchdog takes it over: every call
// completes, on every connection, while the connections come and go
// between quiet (jobs given back, watchdog parked) and busy.
func TestSparseConnsBlockingHandlers(t *testing.T) {
	s, addr, _ := testServer(t)
	var mu sync.Mutex
	gates := make(map[string]chan struct{})
	gate := func(id string) chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		g := gates[id]
		if g == nil {
			g = make(chan struct{})
			gates[id] = g
		}
		return g
	}
	s.Handle(mGate, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		select {
		case <-gate(string(req)):
		case <-ctx.Done():
			return resp, ctx.Err()
		}
		return append(resp, req...), nil
	})
	const conns, rounds = 40, 5
	var wg sync.WaitGroup
	errs := make(chan error, 2*conns)
	for k := range conns {
		c := dial(t, addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				id := []byte{byte(k), byte(r)}
				blocked := make(chan error, 1)
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					_, err := c.Call(ctx, mGate, id, nil)
					blocked <- err
				}()
				// The quick call behind it opens the gate once answered.
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				out, err := c.Call(ctx, mEcho, id, nil)
				cancel()
				if err != nil || string(out) != string(id) {
					errs <- err
					close(gate(string(id)))
					<-blocked
					return
				}
				close(gate(string(id)))
				if err := <-blocked; err != nil {
					errs <- err
					return
				}
				if r%2 == 1 {
					time.Sleep(time.Duration(k%7) * time.Millisecond) // quiet spells
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// A hostile stream peer: opens streams by hand, sends messages, ends some
// with odd statuses (0xFFFFFFFF, 200, 0 after an error end), opens an id
// twice, sends to ids never opened, then drops the connection. The server
// counts every stream that ran once, Active comes back to 0, and the
// counts by status add up to the streams opened.
func TestHostileStreamPeerStats(t *testing.T) {
	s, addr, _ := streamServer(t)
	r := rawDial(t, addr)
	open := func(id uint32) {
		r.send(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: sEcho, PromiseID: id}))
	}
	for id := uint32(1); id <= 6; id++ {
		open(id)
		r.send(wire.KindStreamMsg, wire.AppendStreamMsg(nil, id, []byte("m")))
	}
	open(3) // again
	r.send(wire.KindStreamMsg, wire.AppendStreamMsg(nil, 77, []byte("to nobody")))
	r.send(wire.KindStreamEnd, wire.AppendStreamEndError(nil, 1, 0xFFFFFFFF, "odd"))
	r.send(wire.KindStreamEnd, wire.AppendStreamEndError(nil, 2, 200, "ok?"))
	r.send(wire.KindStreamEnd, wire.AppendStreamEndError(nil, 4, StatusCanceled, "bye"))
	r.send(wire.KindStreamEnd, wire.AppendStreamEnd(nil, 4))
	r.send(wire.KindStreamEnd, wire.AppendStreamEnd(nil, 5))
	r.Close()
	await(t, "every stream handler ended", func() bool {
		st := s.Stats().Streams
		return st.Opened > 0 && st.Active == 0
	})
	st := s.Stats().Streams
	if ended := st.OK + st.Canceled + st.Internal + st.Unavailable + st.OtherStatus; ended != st.Opened || st.Active != 0 {
		t.Fatalf("stats %+v: %d ended of %d opened", st, ended, st.Opened)
	}
	t.Logf("%+v", st)
	// The server goes on.
	c := dial(t, addr)
	if out, err := c.Call(context.Background(), mEcho, []byte("after"), nil); err != nil || string(out) != "after" {
		t.Fatalf("a call after the hostile peer: %q %v", out, err)
	}
}

// Shutdown while the read loop is stuck in a handler with the answer of
// the call before it in its buffer: that answer and the go-away reach
// the peer while the handler still runs, the handler's answer follows
// when it returns, and Shutdown returns once the peer acknowledges.
func TestShutdownWithBlockedInlineHandler(t *testing.T) {
	s, addr, _ := testServer(t, WithShutdownGrace(time.Minute))
	gate := make(chan struct{})
	s.Handle(mGate, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		<-gate
		return append(resp, req...), nil
	})
	r := rawDial(t, addr)
	if _, err := r.Write(append(requestFrame(mEcho, 1, []byte("first")), requestFrame(mGate, 2, []byte("second"))...)); err != nil {
		t.Fatal(err)
	}
	if resp, ok := r.recvWithin("first answer"); !ok || resp.PromiseID != 1 {
		t.Fatalf("first answer: %+v %v", resp, ok)
	}
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		shut <- s.Shutdown(ctx)
	}()
	r.SetReadDeadline(time.Now().Add(30 * time.Second))
	if kind, _, ok := r.recv(); !ok || kind != wire.KindGoAway {
		t.Fatalf("frame kind %d ok %v, want the go-away while the handler runs", kind, ok)
	}
	close(gate)
	if resp, ok := r.recvWithin("second answer"); !ok || resp.PromiseID != 2 || string(resp.Body) != "second" {
		t.Fatalf("second answer: %+v %v", resp, ok)
	}
	r.send(wire.KindGoAway, nil)
	select {
	case err := <-shut:
		if err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Shutdown still waits 30 s after the acknowledgement")
	}
}

// Two thousand connections, each making a call now and then with quiet
// spells between (their jobs given back as they wait, the watchdog
// parking and waking): every call is answered, each on its own
// connection, and once they close the server holds no connection.
func TestThousandsOfSparseConns(t *testing.T) {
	s, addr, _ := testServer(t, WithReadTimeout(20*time.Millisecond))
	const n = 2000
	conns := make([]*rawConn, n)
	for i := range conns {
		conns[i] = rawDial(t, addr)
	}
	for round := 0; round < 3; round++ {
		for i, r := range conns {
			if _, err := r.Write(requestFrame(mEcho, uint32(round+1), []byte{byte(i), byte(i >> 8)})); err != nil {
				t.Fatal(err)
			}
		}
		for i, r := range conns {
			resp, ok := r.recvWithin("answer")
			if !ok || resp.PromiseID != uint32(round+1) || len(resp.Body) != 2 || int(resp.Body[0])|int(resp.Body[1])<<8 != i {
				t.Fatalf("round %d conn %d: %+v %v", round, i, resp, ok)
			}
		}
		time.Sleep(50 * time.Millisecond) // past the read timeout: quiet
	}
	for _, r := range conns {
		r.Close()
	}
	await(t, "every connection gone", func() bool { return s.Stats().Active == 0 })
}
