package rpc

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/frame"
)

// Stats().Streams.Active is never negative, even while streams start and
// end as it is read: the snapshot read opened before the ends, so a
// stream that started and ended between the two reads was counted as
// ended and not as opened (Active -1). Here one goroutine starts and
// ends streams as fast as it can (the counters' own operations, in the
// order runStream makes them) while snapshots are taken.
func TestStreamStatsActiveNeverNegative(t *testing.T) {
	var sc streamCounters
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			sc.opened.Add(1)
			sc.ended[endedIndex(StatusOK)].Add(1)
		}
	}()
	defer func() { stop.Store(true); <-done }()
	// Wait (bounded) for the writer to run, so that the snapshots overlap it.
	for deadline := time.Now().Add(30 * time.Second); sc.opened.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("after 30 s the writer goroutine has not run")
		}
		time.Sleep(time.Millisecond)
	}
	// Snapshots until the writer has gone round many times meanwhile (on
	// one core, many of its time slices), or 30 s.
	start := sc.opened.Load()
	deadline := time.Now().Add(30 * time.Second)
	for i := 1; ; i++ {
		if st := sc.snapshot(); st.Active < 0 {
			t.Fatalf("snapshot %d: Active %d (opened %d, ended %d)", i, st.Active, st.Opened,
				st.OK+st.Canceled+st.Internal+st.Unavailable+st.OtherStatus)
		}
		if i%4096 != 0 {
			continue
		}
		if n := sc.opened.Load() - start; n >= 5_000_000 {
			return
		} else if time.Now().After(deadline) {
			t.Logf("30 s of snapshots: the writer went round %d times", n)
			return
		}
	}
}

// A client stream's end can be reported before OpenStream reports its
// start: the connection fails (closeAll ends every stream in the set)
// between OpenStream publishing the stream and reporting its start. The
// observer must still see the start first, then the end, once each. Here
// the two reports are made in that order by hand.
func TestClientStreamEndBeforeStartReported(t *testing.T) {
	_, addr, _ := testServer(t)
	log := &streamLog{}
	c := dial(t, addr, WithStreamObserver(log.observe))
	s := newStream(&c.streams, 99, 7)
	s.acct.start = monoNow()
	s.clientEnd(0, ErrClosed) // closeAll, from the read loop
	c.clientStreamStart(s)    // OpenStream, just after
	evs := log.take()
	if len(evs) != 2 || evs[0].End || !evs[1].End || evs[0].ID != 99 || evs[1].ID != 99 || evs[1].Err != ErrClosed {
		t.Fatalf("events %+v, want the start and then the end", evs)
	}
}

// A message Send refuses as too large is not counted in Stats().Streams,
// also when it is the one whose count would have been published (every
// publishEvery messages): it was published with the others and not taken
// back, so MsgsOut counted one message too many and BytesOut the size of
// a message never sent.
func TestStreamStatsTooLargeNotCounted(t *testing.T) {
	s, addr, _ := testServer(t, WithFrameOptions(frame.WithMaxFrameSize(4<<10)))
	sendErr := make(chan error, 1)
	const method = 40
	s.HandleStream(method, func(ctx context.Context, init []byte, st *Stream) error {
		for range publishEvery - 1 {
			if err := st.Send([]byte{1}); err != nil {
				return err
			}
		}
		sendErr <- st.Send(make([]byte, 8<<10)) // the publishEvery-th: too large
		return nil
	})
	c := dial(t, addr)
	st, err := c.OpenStream(context.Background(), method, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf []byte
	n := 0
	for {
		m, err := st.Recv(buf[:0])
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
		buf = m
	}
	if err := <-sendErr; !errors.Is(err, frame.ErrFrameTooLarge) {
		t.Fatalf("Send of 8 KiB with a 4 KiB frame limit: %v", err)
	}
	await(t, "the stream's end on the server", func() bool { return s.Stats().Streams.OK == 1 })
	got := s.Stats().Streams
	if n != publishEvery-1 || got.MsgsOut != publishEvery-1 || got.BytesOut != publishEvery-1 {
		t.Fatalf("%d messages received; Stats: %d messages, %d bytes out; want %d of each", n, got.MsgsOut, got.BytesOut, publishEvery-1)
	}
}
