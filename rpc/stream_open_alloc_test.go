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
// server builds it in a pooled buffer. With a ctx that can end, 3 more
// (see the table).
func TestAllocsStreamOpen(t *testing.T) {
	if raceEnabled {
		t.Skip("-race allocates")
	}
	c := dial(t, oneMsgServer(t))
	buf := make([]byte, 0, 128)
	cancelable, cancel := context.WithCancel(context.Background())
	defer cancel()
	var md Metadata
	for _, tc := range []struct {
		name   string
		ctx    context.Context
		method uint32
		more   float64 // allocations besides an open with Background's
	}{
		{"Background", context.Background(), sOneMsg, 0},
		// The client's copy of the trailer, which md keeps.
		{"trailer", WithResponseMetadata(context.Background(), &md), sOneMsgTrailer, 1},
		// A ctx that can end costs the client's context.AfterFunc on it
		// (the context package's record and the stop function), as
		// OpenStream's doc says: a stream must be canceled when its ctx
		// ends even while nobody waits in Send or Recv.
		{"cancelable ctx", cancelable, sOneMsg, 3},
	} {
		open := func() {
			st, err := c.OpenStream(tc.ctx, tc.method, nil)
			if err != nil {
				t.Fatal(err)
			}
			if m, err := st.Recv(buf[:0]); err != nil || len(m) != 64 {
				t.Fatalf("Recv: %d bytes, %v", len(m), err)
			}
			if _, err := st.Recv(buf[:0]); err != io.EOF {
				t.Fatalf("Recv at the end: %v, want io.EOF", err)
			}
			if tc.method == sOneMsgTrailer && string(md.Get("k")) != "v" {
				t.Fatalf("trailer k=%q, want v", md.Get("k"))
			}
		}
		for range 200 { // warm: the hello, buffers
			open()
		}
		want := float64(streamOpenServerAllocs+streamOpenClientAllocs) + tc.more
		if n := testing.AllocsPerRun(2000, open); n != want {
			t.Fatalf("%s: %v allocations per stream (open, one message, end; both sides), want %v", tc.name, n, want)
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
