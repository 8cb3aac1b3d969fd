package rpc

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"

	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// What a stream's open and end allocate, once the connection is warm: a
// stream opened without an initial message, whose handler sends one
// 64-byte message and returns, read to its end. The process's
// allocations are counted, so both sides' are in.
const (
	// streamOpenServerAllocs: the Stream (the handler runs on an idle
	// worker; its ctx is the Stream, whose Done channel it did not ask
	// for).
	streamOpenServerAllocs = 1
	// streamOpenClientAllocs: the Stream OpenStream returns.
	streamOpenClientAllocs = 1
)

// sOneMsg sends one 64-byte message and returns; sOneMsgTrailer sets a
// trailer of one pair first.
const (
	sOneMsg        = 78
	sOneMsgTrailer = 80
)

func oneMsgServer(t *testing.T) string {
	t.Helper()
	s, addr, _ := testServer(t)
	msg := make([]byte, 64)
	s.HandleStream(sOneMsg, func(ctx context.Context, init []byte, st *Stream) error {
		return st.Send(msg)
	})
	s.HandleStream(sOneMsgTrailer, func(ctx context.Context, init []byte, st *Stream) error {
		if err := SetResponseMetadata(ctx, "k", "v"); err != nil {
			return err
		}
		return st.Send(msg)
	})
	return addr
}

// Client and server: the stream costs both sides' counts together. With
// a trailer of one pair asked for, one more: the client's copy of it,
// which the caller's Metadata keeps (as a call's response metadata); the
// server builds it in a pooled buffer.
func TestAllocsStreamOpen(t *testing.T) {
	if raceEnabled {
		t.Skip("-race allocates")
	}
	c := dial(t, oneMsgServer(t))
	buf := make([]byte, 0, 128)
	for _, trailer := range []bool{false, true} {
		ctx, method := context.Background(), uint32(sOneMsg)
		var md Metadata
		want := float64(streamOpenServerAllocs + streamOpenClientAllocs)
		if trailer {
			ctx, method = WithResponseMetadata(ctx, &md), sOneMsgTrailer
			want++
		}
		open := func() {
			st, err := c.OpenStream(ctx, method, nil)
			if err != nil {
				t.Fatal(err)
			}
			if m, err := st.Recv(buf[:0]); err != nil || len(m) != 64 {
				t.Fatalf("Recv: %d bytes, %v", len(m), err)
			}
			if _, err := st.Recv(buf[:0]); err != io.EOF {
				t.Fatalf("Recv at the end: %v, want io.EOF", err)
			}
			if trailer && string(md.Get("k")) != "v" {
				t.Fatalf("trailer k=%q, want v", md.Get("k"))
			}
		}
		for range 200 { // warm: the hello, buffers
			open()
		}
		if n := testing.AllocsPerRun(2000, open); n != want {
			t.Fatalf("trailer %v: %v allocations per stream (open, one message, end; both sides), want %v", trailer, n, want)
		}
	}
}

// The server alone: a peer that writes the open by hand and reads the
// message and the end with a frame.Reader allocates nothing itself.
func TestAllocsStreamOpenServer(t *testing.T) {
	if raceEnabled {
		t.Skip("-race allocates")
	}
	nc, err := net.Dial("tcp", oneMsgServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	// The stream's id is free again once the server's end is read: every
	// open may use id 1.
	open := frameBytes(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: sOneMsg, PromiseID: 1}))
	r := frame.NewReader(nc)
	one := func() {
		if _, err := nc.Write(open); err != nil {
			t.Fatal(err)
		}
		for _, want := range []byte{wire.KindStreamMsg, wire.KindStreamEnd} {
			kind, p, err := r.Next()
			if err != nil || kind != want || len(p) < 4 || binary.LittleEndian.Uint32(p) != 1 {
				t.Fatalf("frame kind %d (%d bytes), %v; want kind %d of stream 1", kind, len(p), err, want)
			}
		}
	}
	for range 200 {
		one()
	}
	if n := testing.AllocsPerRun(2000, one); n != streamOpenServerAllocs {
		t.Fatalf("%v allocations per stream on the server (open, one message, end), want %v", n, streamOpenServerAllocs)
	}
}

// A stream opened with a ctx that can end costs its AfterFunc on that
// ctx besides (3 allocations: the context package's record of it and the
// stop function), documented on OpenStream: a stream must be canceled
// when its ctx ends even while nobody waits in Send or Recv, and the
// context package has no hook for that which allocates nothing.
func TestAllocsStreamOpenCancelableCtx(t *testing.T) {
	if raceEnabled {
		t.Skip("-race allocates")
	}
	c := dial(t, oneMsgServer(t))
	buf := make([]byte, 0, 128)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	open := func() {
		st, err := c.OpenStream(ctx, sOneMsg, nil)
		if err != nil {
			t.Fatal(err)
		}
		if m, err := st.Recv(buf[:0]); err != nil || len(m) != 64 {
			t.Fatalf("Recv: %d bytes, %v", len(m), err)
		}
		if _, err := st.Recv(buf[:0]); err != io.EOF {
			t.Fatalf("Recv at the end: %v, want io.EOF", err)
		}
	}
	for range 200 { // warm: the hello, buffers
		open()
	}
	want := float64(streamOpenServerAllocs + streamOpenClientAllocs + 3)
	if n := testing.AllocsPerRun(2000, open); n != want {
		t.Fatalf("%v allocations per stream opened with a cancelable ctx (open, one message, end; both sides), want %v", n, want)
	}
}
