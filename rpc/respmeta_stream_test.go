package rpc

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// A stream handler's response metadata (its trailer) reaches a caller
// that opened the stream with WithResponseMetadata at the stream's end:
// a clean end, an error end, the end sent by the handler's CloseSend;
// set from a ctx derived from the handler's too. A stream whose handler
// sets none empties the receiver; one that does not ask reads its end as
// before. After the end is decided SetResponseMetadata says so.
func TestStreamTrailerRoundTrip(t *testing.T) {
	s, addr, _ := testServer(t)
	late := make(chan error, 1)
	s.HandleStream(7, func(ctx context.Context, init []byte, st *Stream) error {
		if err := st.Send([]byte("m")); err != nil {
			return err
		}
		switch string(init) {
		case "none":
			return SetResponseMetadata(ctx) // no pairs: no trailer
		case "error":
			SetResponseMetadata(ctx, "why", "disk")
			return Errorf(StatusForbidden, "no")
		case "closesend":
			SetResponseMetadata(ctx, "k", "v")
			if err := st.CloseSend(); err != nil {
				return err
			}
			late <- SetResponseMetadata(ctx, "late", "x")
			return nil
		}
		type key struct{}
		if err := SetResponseMetadata(context.WithValue(ctx, key{}, 1), "server-timing", "db;dur=53", "k", ""); err != nil {
			return err
		}
		return SetResponseMetadata(ctx, "k2", "v2")
	})
	c := dial(t, addr)
	var md Metadata
	ctx := WithResponseMetadata(context.Background(), &md)
	open := func(ctx context.Context, init string) ([][]byte, error) {
		t.Helper()
		md = Metadata{encodeMD("stale", "1")}
		st, err := c.OpenStream(ctx, 7, []byte(init))
		if err != nil {
			t.Fatal(err)
		}
		st.CloseSend()
		return recvAll(st)
	}
	for range 3 {
		got, err := open(ctx, "clean")
		if err != io.EOF || len(got) != 1 || strings.Join(mdPairs(md), ",") != "server-timing=db;dur=53,k=,k2=v2" {
			t.Fatalf("clean end: %q %v, metadata %q", got, err, mdPairs(md))
		}
	}
	got, err := open(ctx, "error")
	var se *StatusError
	if !errors.As(err, &se) || se.Code != StatusForbidden || len(got) != 1 || string(md.Get("why")) != "disk" || md.Len() != 1 {
		t.Fatalf("error end: %q %v, metadata %q", got, err, mdPairs(md))
	}
	got, err = open(ctx, "closesend")
	if err != io.EOF || len(got) != 1 || strings.Join(mdPairs(md), ",") != "k=v" {
		t.Fatalf("CloseSend's end: %q %v, metadata %q", got, err, mdPairs(md))
	}
	if err := receive(t, "SetResponseMetadata after CloseSend", late); !errors.Is(err, ErrStreamClosed) {
		t.Fatalf("SetResponseMetadata after CloseSend: %v", err)
	}
	got, err = open(ctx, "none")
	if err != io.EOF || len(got) != 1 || md.Len() != 0 || md.Size() != 0 {
		t.Fatalf("no trailer: %q %v, metadata %q", got, err, mdPairs(md))
	}
	// Not asked: the end as before, and no receiver of an earlier stream
	// is written.
	if got, err := open(context.Background(), "clean"); err != io.EOF || len(got) != 1 || strings.Join(mdPairs(md), ",") != "stale=1" {
		t.Fatalf("not asked: %q %v, metadata %q", got, err, mdPairs(md))
	}
	// The caller's copy outlives the stream.
	open(ctx, "error")
	kept := md
	open(ctx, "clean")
	if string(kept.Get("why")) != "disk" {
		t.Fatalf("kept metadata changed: %q", mdPairs(kept))
	}
}

// A stream handler's trailer above the server's metadata limit turns its
// end into a 500 that says so, without the trailer, as a call's answer;
// from CloseSend too, which returns the error. The stream observer sees
// the 500 (the handler returns nil). After a panic the panic's 500 stays.
func TestStreamTrailerTooLargeServer(t *testing.T) {
	ends := make(chan uint32, 8)
	obs := func(ev StreamEvent) {
		if ev.End {
			ends <- ev.Status
		}
	}
	s, addr, logs := testServer(t, WithMaxMetadata(64), WithStreamObserver(obs))
	closeErr := make(chan error, 1)
	s.HandleStream(7, func(ctx context.Context, init []byte, st *Stream) error {
		SetResponseMetadata(ctx, "k", strings.Repeat("v", 100))
		switch string(init) {
		case "closesend":
			closeErr <- st.CloseSend()
		case "panic":
			panic("boom")
		}
		return nil
	})
	c := dial(t, addr)
	var md Metadata
	ctx := WithResponseMetadata(context.Background(), &md)
	for _, init := range []string{"return", "closesend"} {
		st, err := c.OpenStream(ctx, 7, []byte(init))
		if err != nil {
			t.Fatal(err)
		}
		_, err = recvAll(st)
		var se *StatusError
		want := "rpc: response metadata too large: 109 bytes encoded, over the server's limit of 64 bytes (WithMaxMetadata)"
		if !errors.As(err, &se) || se.Code != StatusInternal || se.Message != want || md.Len() != 0 {
			t.Fatalf("%s: %v, metadata %q", init, err, mdPairs(md))
		}
		if got := receive(t, "the observer's end", ends); got != StatusInternal {
			t.Fatalf("%s: the observer saw status %d, want 500", init, got)
		}
	}
	if err := receive(t, "CloseSend's error", closeErr); err == nil || !strings.Contains(err.Error(), "response metadata too large") {
		t.Fatalf("CloseSend: %v", err)
	}
	st, _ := c.OpenStream(ctx, 7, []byte("panic"))
	_, err := recvAll(st)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != StatusInternal || se.Message != streamPanicText {
		t.Fatalf("panic: %v", err)
	}
	if !strings.Contains(logs.String(), "response metadata too large") {
		t.Fatalf("not logged: %s", logs.String())
	}
}

// The server's frames of the canonical "server_stream" exchange are the
// fixture's when its handler sets no trailer (TestStreamFixturesServer,
// whose handlers call SetResponseMetadata with no pairs) and, when it
// sets one, the fixture's with one kind 10 frame just before the end (a
// kind a canonical client ignores, WIRE.md §6): the end itself is the
// canonical clean end.
func TestStreamTrailerFixtureFrames(t *testing.T) {
	scen := loadStreamFixtures(t)["server_stream"]
	s, addr, _ := testServer(t)
	s.HandleStream(5, func(ctx context.Context, _ []byte, st *Stream) error {
		SetResponseMetadata(ctx, "k", "v")
		for v := uint32(100); v <= 102; v++ {
			if err := st.Send(msgU32(v)); err != nil {
				return err
			}
		}
		return nil
	})
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	trailers := 0
	for i, f := range scen {
		if f.toServer {
			if _, err := nc.Write(f.raw); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := readRawFrame(nc)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if got[4] == wire.KindStreamTrailer {
			trailers++
			if f.raw[4] != wire.KindStreamEnd {
				t.Fatalf("frame %d: a trailer before %x, not before the end", i, f.raw)
			}
			id := binary.LittleEndian.Uint32(f.raw[5:])
			if want := frameBytes(wire.KindStreamTrailer, wire.AppendStreamTrailer(nil, id, encodeMD("k", "v"))); !bytes.Equal(got, want) {
				t.Fatalf("trailer %x, want %x", got, want)
			}
			if got, err = readRawFrame(nc); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(got, f.raw) {
			t.Fatalf("frame %d:\n got %x\nwant %x", i, got, f.raw)
		}
	}
	if trailers != 1 {
		t.Fatalf("%d trailer frames, want 1", trailers)
	}
}

// A hostile server's trailer frames: not whole pairs, huge declared
// lengths, over the client's limit: Recv returns an error matching
// ErrResponseMetadata at the end (a clean or an error end), the receiver
// stays empty, and the connection goes on. Frames shorter than an id,
// for a stream not open or after the end, are ignored; a second trailer
// replaces the first; a stream that did not ask ignores them all.
func TestStreamTrailerHostile(t *testing.T) {
	c, peer := pipeClient(t, WithMaxResponseMetadata(32))
	go io.Copy(io.Discard, peer) // the hello, opens, ends
	var md Metadata
	ctx := WithResponseMetadata(context.Background(), &md)
	huge := binary.LittleEndian.AppendUint32(nil, 0xFFFFFFFF)
	// stream runs a stream opened with ctx whose server sends frames
	// (their stream id 0 replaced by the stream's) then end (a clean end
	// when status is 0) and returns what its Recv returned.
	stream := func(ctx context.Context, status uint32, frames ...[]byte) error {
		t.Helper()
		md = Metadata{encodeMD("stale", "1")}
		st, err := c.OpenStream(ctx, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range frames {
			f = bytes.Clone(f)
			if len(f) >= 4 && binary.LittleEndian.Uint32(f) == 0 {
				binary.LittleEndian.PutUint32(f, st.id)
			}
			peer.send(wire.KindStreamTrailer, f)
		}
		if status == 0 {
			peer.send(wire.KindStreamEnd, wire.AppendStreamEnd(nil, st.id))
		} else {
			peer.send(wire.KindStreamEnd, wire.AppendStreamEndError(nil, st.id, status, "bad"))
		}
		_, err = recvAll(st)
		// A trailer after the end is dropped.
		peer.send(wire.KindStreamTrailer, wire.AppendStreamTrailer(nil, st.id, encodeMD("after", "end")))
		return err
	}
	tr := func(md []byte) []byte { return wire.AppendStreamTrailer(nil, 0, md) }
	for _, tc := range []struct {
		name string
		md   []byte
		want string
	}{
		{"odd items", encodeMD("k", "v")[:9], "not a whole number"},
		{"one item", binary.LittleEndian.AppendUint32(nil, 0), "not a whole number"},
		{"truncated length", []byte{1, 0}, "not a whole number"},
		{"huge declared key", append(huge, 'k', 'v'), "not a whole number"},
		{"huge declared value", append(binary.LittleEndian.AppendUint32([]byte{1, 0, 0, 0, 'k'}, 0x7FFFFFFF), 'v'), "not a whole number"},
		{"over the limit", encodeMD("k", strings.Repeat("v", 30)), "39 bytes encoded, over the client's limit of 32 bytes"},
		{"over the limit by far", encodeMD("k", strings.Repeat("v", 60000)), "60009 bytes encoded, over the client's limit of 32 bytes"},
	} {
		for _, status := range []uint32{0, StatusForbidden} {
			err := stream(ctx, status, tr(tc.md))
			if !errors.Is(err, ErrResponseMetadata) || !strings.Contains(err.Error(), tc.want) || md.Size() != 0 {
				t.Fatalf("%s, status %d: %v (want %q), metadata %q", tc.name, status, err, tc.want, mdPairs(md))
			}
			// Not asked: the end as it is.
			if err := stream(context.Background(), status, tr(tc.md)); (status == 0) != (err == io.EOF) {
				t.Fatalf("%s, status %d, not asked: %v", tc.name, status, err)
			}
		}
	}
	if err := stream(ctx, 0, []byte{1, 0}, wire.AppendStreamTrailer(nil, 1<<30, encodeMD("other", "stream"))); err != io.EOF || md.Len() != 0 {
		t.Fatalf("short and foreign trailers: %v, metadata %q", err, mdPairs(md))
	}
	if err := stream(ctx, 0, tr(encodeMD("first", "1")), tr(encodeMD("second", "2"))); err != io.EOF || strings.Join(mdPairs(md), ",") != "second=2" {
		t.Fatalf("two trailers: %v, metadata %q", err, mdPairs(md))
	}
	if err := stream(ctx, 0, tr(encodeMD("k", "v"+strings.Repeat("v", 60000))), tr(encodeMD("k", "v"))); err != io.EOF || strings.Join(mdPairs(md), ",") != "k=v" {
		t.Fatalf("a refused trailer, then a good one: %v, metadata %q", err, mdPairs(md))
	}
	if c.Closed() {
		t.Fatal("client closed")
	}
}

// A trailer frame costs a stream that did not ask for it no allocation
// (it is dropped, as a canonical client drops the kind), and one that
// asked one: the caller's copy. The open and the end of a stream that
// does not ask look up nothing more than before (wireFrom, as for a
// deadline or a cap), and its Send and Recv are unchanged (their
// AllocsPerRun in stream_flow_test.go).
func TestAllocsStreamTrailer(t *testing.T) {
	c, peer := pipeClient(t)
	go io.Copy(io.Discard, peer)
	var md Metadata
	for _, tc := range []struct {
		ctx  context.Context
		want float64
	}{
		{context.Background(), 0},
		{WithResponseMetadata(context.Background(), &md), 1},
	} {
		st, err := c.OpenStream(tc.ctx, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		body := wire.AppendStreamTrailer(nil, st.id, encodeMD("k", "v"))
		if n := testing.AllocsPerRun(1000, func() { c.streams.onTrailer(body) }); n != tc.want {
			t.Fatalf("asked %v: %v allocations a trailer frame, want %v", st.rmd != nil, n, tc.want)
		}
	}
}
