package rpc

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

type streamLog struct {
	mu  sync.Mutex
	evs []StreamEvent
}

func (l *streamLog) observe(ev StreamEvent) {
	l.mu.Lock()
	l.evs = append(l.evs, ev)
	l.mu.Unlock()
}

func (l *streamLog) take() []StreamEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	evs := l.evs
	l.evs = nil
	return evs
}

func (l *streamLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.evs)
}

// byID pairs each stream's start and end events, checking that every
// start comes before its end and that there is exactly one of each.
func byID(t *testing.T, side string, evs []StreamEvent) map[uint32][2]StreamEvent {
	t.Helper()
	m := make(map[uint32][2]StreamEvent)
	seen := make(map[uint32]int)
	for _, ev := range evs {
		p := m[ev.ID]
		switch {
		case !ev.End && seen[ev.ID] == 0:
			p[0] = ev
		case ev.End && seen[ev.ID] == 1:
			p[1] = ev
		default:
			t.Fatalf("%s: event out of order for stream %d: %+v", side, ev.ID, ev)
		}
		seen[ev.ID]++
		m[ev.ID] = p
	}
	for id, n := range seen {
		if n != 2 {
			t.Fatalf("%s: stream %d has %d events", side, id, n)
		}
	}
	return m
}

// The stream observer sees each stream's start and end on both sides:
// method, status (clean, a handler's error, a panic, the client's
// cancel), messages and bytes each way, duration and peer; Stats counts
// the streams by how they ended, their messages, and the refused opens.
func TestStreamObserverAndStats(t *testing.T) {
	var srv, cli streamLog
	s, addr, _ := streamServer(t, WithStreamObserver(srv.observe))
	c := dial(t, addr, WithStreamObserver(cli.observe))
	ctx := context.Background()

	// Server stream: 100 messages of 4 bytes, init of 4 bytes.
	st, err := c.OpenStream(ctx, sCount, u32msg(100))
	if err != nil {
		t.Fatal(err)
	}
	if msgs, err := recvAll(st); err != io.EOF || len(msgs) != 100 {
		t.Fatalf("%d %v", len(msgs), err)
	}
	countID := st.ID()
	// Client stream: 10 messages in, one out.
	st, err = c.OpenStream(ctx, sSum, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		st.Send(u32msg(uint32(i)))
	}
	st.CloseSend()
	if msgs, err := recvAll(st); err != io.EOF || len(msgs) != 1 {
		t.Fatalf("%d %v", len(msgs), err)
	}
	sumID := st.ID()
	// A handler error with a status, a plain error, a panic.
	for _, m := range []uint32{sStatus, sFail, sPanic} {
		st, err := c.OpenStream(ctx, m, nil)
		if err != nil {
			t.Fatal(err)
		}
		recvAll(st)
	}
	// The client cancels.
	cctx, cancel := context.WithCancel(ctx)
	st, err = c.OpenStream(cctx, sBlock, []byte("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(nil); err != nil {
		t.Fatal(err)
	}
	cancel()
	blockID := st.ID()
	// A method nobody serves: refused, no handler; the server's observer
	// sees its start and its end all the same.
	st, err = c.OpenStream(ctx, 99, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(nil); Code(err) != StatusNotFound {
		t.Fatal(err)
	}
	refusedID := st.ID()
	await(t, "7 stream ends on the server", func() bool { return s.Stats().Streams.Active == 0 && srv.count() == 14 })
	await(t, "7 stream ends on the client", func() bool { return cli.count() == 14 })

	ss := byID(t, "server", srv.take())
	cs := byID(t, "client", cli.take())
	type want struct {
		method, status          uint32
		msgsIn, msgsOut         int64
		bytesIn, bytesOut       int64
		cliStatus               uint32
		cliMsgsIn, cliBytesIn   int64
		cliMsgsOut, cliBytesOut int64
	}
	check := func(id uint32, w want) {
		t.Helper()
		se, ce := ss[id], cs[id]
		e := se[1]
		if e.Client || e.Method != w.method || e.Status != w.status || e.MsgsIn != w.msgsIn || e.MsgsOut != w.msgsOut ||
			e.BytesIn != w.bytesIn || e.BytesOut != w.bytesOut || e.Err != nil {
			t.Errorf("server end of stream %d: %+v, want %+v", id, e, w)
		}
		if se[0].Method != w.method || se[0].Start != e.Start || e.Duration < 0 || e.Peer == nil || e.Peer.String() != c.nc.LocalAddr().String() {
			t.Errorf("server events of stream %d: %+v %+v", id, se[0], e)
		}
		e = ce[1]
		if !e.Client || e.Method != w.method || e.Status != w.cliStatus || e.MsgsIn != w.cliMsgsIn || e.BytesIn != w.cliBytesIn ||
			e.MsgsOut != w.cliMsgsOut || e.BytesOut != w.cliBytesOut {
			t.Errorf("client end of stream %d: %+v, want %+v", id, e, w)
		}
		if (e.Err == nil) != (w.cliStatus == StatusOK) || !ce[0].Client || ce[0].Start != e.Start || e.Peer.String() != addr {
			t.Errorf("client events of stream %d: %+v %+v", id, ce[0], e)
		}
	}
	check(countID, want{method: sCount, status: 200, msgsOut: 100, bytesIn: 4, bytesOut: 400,
		cliStatus: 200, cliMsgsIn: 100, cliBytesIn: 400, cliBytesOut: 4})
	check(sumID, want{method: sSum, status: 200, msgsIn: 10, bytesIn: 40, msgsOut: 1, bytesOut: 4,
		cliStatus: 200, cliMsgsIn: 1, cliBytesIn: 4, cliMsgsOut: 10, cliBytesOut: 40})
	check(sumID+2, want{method: sStatus, status: 418, cliStatus: 418})
	check(sumID+4, want{method: sFail, status: 500, msgsOut: 1, bytesOut: 3, cliStatus: 500, cliMsgsIn: 1, cliBytesIn: 3})
	check(sumID+6, want{method: sPanic, status: 500, msgsOut: 1, bytesOut: 3, cliStatus: 500, cliMsgsIn: 1, cliBytesIn: 3})
	check(blockID, want{method: sBlock, status: StatusCanceled, bytesIn: 2, msgsOut: 1, bytesOut: 2,
		cliStatus: StatusCanceled, cliMsgsIn: 1, cliBytesIn: 2, cliBytesOut: 2})
	if e := cs[blockID][1]; !errors.Is(e.Err, context.Canceled) {
		t.Errorf("the canceled stream's client event: %v", e.Err)
	}
	check(refusedID, want{method: 99, status: StatusNotFound, cliStatus: StatusNotFound})

	got := s.Stats().Streams
	want2 := StreamStats{Opened: 6, Refused: 1, OK: 2, Canceled: 1, Internal: 2, OtherStatus: 1,
		MsgsIn: 10, MsgsOut: 104, BytesIn: 4 + 40 + 2, BytesOut: 400 + 4 + 3 + 3 + 2}
	if got != want2 {
		t.Fatalf("Stats().Streams = %+v\nwant %+v", got, want2)
	}
	if st := s.Stats(); st.Calls != 0 {
		t.Fatalf("streams counted as calls: %+v", st)
	}
}

// A long stream adds its message counts to Stats as it goes, not only at
// its end; Shutdown's end is counted as Unavailable.
func TestStreamStatsWhileOpen(t *testing.T) {
	var srv streamLog
	s, addr, _ := streamServer(t, WithStreamObserver(srv.observe), WithShutdownGrace(0))
	c := dial(t, addr)
	st, err := c.OpenStream(context.Background(), sEcho, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if err := st.Send(u32msg(uint32(i))); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Recv(nil); err != nil {
			t.Fatal(err)
		}
	}
	got := s.Stats().Streams
	if got.Active != 1 || got.MsgsIn < 128 || got.MsgsOut < 128 {
		t.Fatalf("an open stream's 200 messages each way are not counted: %+v", got)
	}
	go s.Shutdown(context.Background())
	if _, err := st.Recv(nil); Code(err) != StatusUnavailable {
		t.Fatalf("Recv after Shutdown's grace: %v", err)
	}
	// The end is counted in Stats before the observer is told of it:
	// wait for both.
	await(t, "the stream's end on the server", func() bool { return s.Stats().Streams.Active == 0 && srv.count() == 2 })
	got = s.Stats().Streams
	if got.Unavailable != 1 || got.MsgsIn != 200 || got.MsgsOut != 200 || got.BytesIn != 800 {
		t.Fatalf("after Shutdown: %+v", got)
	}
	if evs := srv.take(); len(evs) != 2 || evs[1].Status != StatusUnavailable {
		t.Fatalf("events: %+v", evs)
	}
}

// With a stream observer and taps on both sides, a message each way
// still allocates nothing.
func TestAllocsStreamMessageObservedTapped(t *testing.T) {
	var n atomic.Int64
	count := func([]byte) error { n.Add(1); return nil }
	tap := StreamTap{Send: count, Recv: count}
	var srv, cli streamLog
	_, addr, _ := streamServer(t, WithStreamObserver(srv.observe),
		WithStreamInterceptors(func(ctx context.Context, method uint32, init []byte, s *Stream, next StreamHandler) error {
			s.Tap(tap)
			return next(ctx, init, s)
		}))
	c := dial(t, addr, WithStreamObserver(cli.observe),
		WithStreamClientInterceptors(func(ctx context.Context, method uint32, init []byte, open Streamer) (*Stream, error) {
			st, err := open(ctx, method, init)
			if err == nil {
				st.Tap(tap)
			}
			return st, err
		}))
	st, err := c.OpenStream(context.Background(), sEcho, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkEchoAllocs(t, st)
	if n.Load() < 4*7000 {
		t.Fatalf("the taps saw %d messages, want at least %d", n.Load(), 4*7000)
	}
}

// A client's error end counts as a cancel whatever status it carries: a
// peer cannot make Stats count its streams as the handler's failures.
func TestStreamPeerErrorEndCountsAsCanceled(t *testing.T) {
	var srv streamLog
	s, addr, _ := streamServer(t, WithStreamObserver(srv.observe))
	rc := rawDial(t, addr)
	rc.send(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: sBlock, PromiseID: 1}))
	await(t, "the handler to start", func() bool { return s.Stats().Streams.Active == 1 })
	rc.send(wire.KindStreamEnd, wire.AppendStreamEndError(nil, 1, StatusInternal, "posing as a failure"))
	// The end is counted in Stats before the observer is told of it:
	// wait for both.
	await(t, "the handler to end", func() bool { return s.Stats().Streams.Active == 0 && srv.count() >= 2 })
	if st := s.Stats().Streams; st.Canceled != 1 || st.Internal != 0 {
		t.Fatalf("a client's error end of status 500 counted as %+v", st)
	}
	if evs := srv.take(); len(evs) != 2 || evs[1].Status != StatusCanceled {
		t.Fatalf("events: %+v", evs)
	}
}
