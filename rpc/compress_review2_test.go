package rpc

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// withRequestFlags returns the request envelope of r (which must set
// AcceptDeflate, so that it carries the flags word) with its flags word
// replaced by flags.
func withRequestFlags(r wire.Request, flags uint32) []byte {
	r.AcceptDeflate = true
	env := wire.AppendRequest(nil, &r)
	binary.LittleEndian.PutUint32(env[16+44:], flags)
	return env
}

// A request whose flags word sets only bits this server does not know
// (not bit 0) is answered as a request without the word: the canonical
// envelope, byte for byte, never compressed nor with a flag; with bit 0
// and unknown bits, compressed as with bit 0 alone. Seen from a
// canonical peer.
func TestCompressionUnknownRequestFlags(t *testing.T) {
	_, addr := compressServer(t)
	peer := rawDial(t, addr)
	body := logRecords(50000)
	want := wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: 5, Body: body})
	for _, flags := range []uint32{0, 0xFFFF_FFFC, 1 << 31, 4} {
		peer.send(wire.KindRequest, withRequestFlags(wire.Request{Method: mLogs, PromiseID: 5, Payload: []byte("50000")}, flags))
		kind, env, ok := peer.recv()
		if !ok || kind != wire.KindResponse || !bytes.Equal(env, want) {
			t.Fatalf("flags %#x: kind %d ok %v, %d bytes: want the canonical answer (%d bytes)", flags, kind, ok, len(env), len(want))
		}
	}
	for _, flags := range []uint32{1 | 0xFFFF_FFF8, 1 | 1<<31} {
		peer.send(wire.KindRequest, withRequestFlags(wire.Request{Method: mLogs, PromiseID: 6, Payload: []byte("50000")}, flags))
		a := peer.recvResponse()
		if a.Status != StatusOK || !a.Deflated || !bytes.Equal(inflateBytes(t, a.Body), body) {
			t.Fatalf("flags %#x: status %d deflated %v", flags, a.Status, a.Deflated)
		}
	}
}

// An answer whose flags word sets bits the client does not know is read
// as without them, by a client with the option and one without.
func TestCompressionUnknownAnswerFlags(t *testing.T) {
	body := logRecords(3000)
	for _, opts := range [][]ClientOption{nil, {WithCompression(0)}} {
		c, raw := pipeClient(t, opts...)
		done := make(chan error, 1)
		go func() {
			out, err := c.Call(context.Background(), mEcho, nil, nil)
			if err == nil && !bytes.Equal(out, body) {
				err = errors.New("wrong body")
			}
			done <- err
		}()
		r := raw.recvRequest()
		env := wire.AppendResponse(nil, &wire.Response{Status: StatusOK, PromiseID: r.PromiseID, Body: body, TakesDeflate: true})
		binary.LittleEndian.PutUint32(env[16+20:], 0xFFFF_FFF8)
		raw.send(wire.KindResponse, env)
		if err := receive(t, "the call", done); err != nil {
			t.Fatalf("options %d: %v", len(opts), err)
		}
	}
}

// A compressed answer is inflated for a promise (Send, Wait), and the
// answer a pipelined call reads as its request is the handler's, plain;
// an error answer (a 404, a handler's 500) is never compressed, however
// long its text.
func TestCompressionPromisesAndErrors(t *testing.T) {
	s, addr := compressServer(t, WithPipelining(0))
	long := string(logRecords(8000))
	s.Handle(75, func(context.Context, []byte, []byte) ([]byte, error) {
		return nil, errors.New(long)
	})
	c := dial(t, addr, WithCompression(0))
	ctx := context.Background()
	body := logRecords(200000)
	p, err := c.Send(ctx, mLogs, []byte("200000"), nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Call(ctx, mEcho, nil)
	if err != nil || !bytes.Equal(out, body) {
		t.Fatalf("pipelined on a compressed answer: %d bytes, %v", len(out), err)
	}
	if out, err := p.Wait(ctx); err != nil || !bytes.Equal(out, body) {
		t.Fatalf("the promise's own answer: %d bytes, %v", len(out), err)
	}
	peer := rawDial(t, addr)
	for _, m := range []uint32{75, 999} {
		peer.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: m, PromiseID: 1, AcceptDeflate: true}))
		if a := peer.recvResponse(); a.Status == StatusOK || a.Deflated {
			t.Fatalf("method %d: status %d deflated %v", m, a.Status, a.Deflated)
		}
	}
}

// Compressed calls from many goroutines through a server that runs two
// at a time, some canceled midway: every call that ends without error
// has its answer whole, and the connection serves calls after.
func TestCompressionInFlightAndCancel(t *testing.T) {
	s, addr := compressServer(t, WithMaxInFlight(2))
	release := make(chan struct{})
	s.Handle(76, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return append(resp, logRecords(atoi(req))...), nil
	})
	c := dial(t, addr, WithCompression(0))
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 48 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 2000 + i*3000
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			m := uint32(mLogs)
			if i%3 == 0 {
				m = 76
				cancel() // gone before or after it was sent: either way no answer
			}
			out, err := c.Call(ctx, m, []byte(strconv.Itoa(n)), nil)
			switch {
			case m == 76 && err == nil:
				errs <- errors.New("a canceled call returned no error")
			case m == 76:
			case err != nil:
				errs <- err
			case !bytes.Equal(out, logRecords(n)):
				errs <- errors.New("an answer differs from the handler's")
			}
		}()
	}
	wg.Wait()
	close(release)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if out, err := c.Call(context.Background(), mLogs, []byte("100000"), nil); err != nil || !bytes.Equal(out, logRecords(100000)) {
		t.Fatalf("after: %d bytes, %v", len(out), err)
	}
}

// The edges: a body of exactly the threshold is compressed, one byte
// less is not; a body whose compressed answer would be exactly as long
// as the plain one goes plain, one byte shorter goes compressed (the
// flags word takes wire.DeflatedOverhead bytes).
func TestCompressionEdges(t *testing.T) {
	_, addr := compressServer(t, WithCompression(4000))
	peer := rawDial(t, addr)
	for _, n := range []int{3999, 4000} {
		peer.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mLogs, PromiseID: 1, Payload: []byte(strconv.Itoa(n)), AcceptDeflate: true}))
		if a := peer.recvResponse(); a.Deflated != (n >= 4000) {
			t.Fatalf("a body of %d bytes, threshold 4000: deflated %v", n, a.Deflated)
		}
	}
	// Bodies of every length from 64 bytes to 3 KiB, of records and of
	// random bytes of 128 values: deflate says "shorter" exactly when
	// the compressed answer, flags word included, is shorter than the
	// plain one (compress/flate at BestSpeed gives the same bytes here
	// as in the server's compressor).
	noise := make([]byte, 3<<10)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range noise {
		noise[i] = byte(rng.IntN(128))
	}
	var ref bytes.Buffer
	w, _ := flate.NewWriter(&ref, flate.BestSpeed)
	shorter := 0
	for _, src := range [][]byte{logRecords(3 << 10), noise} {
		for n := 64; n <= len(src); n++ {
			body := src[:n]
			ref.Reset()
			w.Reset(&ref)
			w.Write(body)
			w.Close()
			d := getDeflater()
			got := d.deflate(body)
			if want := ref.Len()+wire.DeflatedOverhead < n; got != want || got && !bytes.Equal(d.out, ref.Bytes()) {
				t.Fatalf("%d bytes compressing to %d: deflate says %v, want %v", n, ref.Len(), got, want)
			}
			putDeflater(d)
			if got {
				shorter++
			}
		}
	}
	if shorter == 0 {
		t.Fatal("no body compressed shorter")
	}
}

// A stream open whose payload is marked compressed (streams are never
// compressed: docs/wire.md §8) is refused 400 before its handler runs,
// on a server with the option and one without; the handler never sees
// the compressed bytes as its first message. The connection goes on.
func TestCompressionStreamOpenRefused(t *testing.T) {
	for _, opts := range [][]ServerOption{nil, {WithCompression(0)}} {
		_, addr, _ := streamServer(t, opts...)
		rc := rawDial(t, addr)
		rc.SetReadDeadline(time.Now().Add(30 * time.Second)) // a broken test must not hang
		rc.send(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: sEcho, PromiseID: 1, Payload: deflateBytes(t, []byte("hello")), PayloadDeflated: true}))
		kind, body, ok := rc.recv()
		if !ok || kind != wire.KindStreamEnd {
			t.Fatalf("options %d: frame kind %d (%q) ok %v, want the end of stream 1", len(opts), kind, body, ok)
		}
		if e, err := wire.ParseStreamEnd(body); err != nil || e.ID != 1 || e.Status != StatusBadRequest {
			t.Fatalf("options %d: end %+v (%v), want stream 1's 400", len(opts), e, err)
		}
		rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 3, Payload: []byte("next")}))
		if a := rc.recvResponse(); a.Status != StatusOK || string(a.Body) != "next" {
			t.Fatalf("options %d: next call %d %q", len(opts), a.Status, a.Body)
		}
	}
}

// Many connections with compression, each making compressed calls both
// ways, then closed: nothing of compression is kept per connection
// (compressors and decompressors are the process's, 4 idle of each at
// most), so once they are closed the heap is back near where it was.
func TestCompressionManyConnectionsKeepNothing(t *testing.T) {
	srv, addr := compressServer(t)
	payload := logRecords(64 << 10)
	c0 := dial(t, addr, WithCompression(0))
	if _, err := c0.Call(context.Background(), mEcho, payload, nil); err != nil { // warm: pools filled
		t.Fatal(err)
	}
	if _, err := c0.Call(context.Background(), mEcho, payload, nil); err != nil {
		t.Fatal(err)
	}
	before := heapInUse()
	const conns = 40
	var wg sync.WaitGroup
	for range conns {
		c, err := Dial(context.Background(), "tcp", addr, WithCompression(0))
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			for range 3 {
				out, err := c.Call(context.Background(), mEcho, payload, nil)
				if err != nil || !bytes.Equal(out, payload) {
					t.Errorf("%d bytes, %v", len(out), err)
					return
				}
			}
		}()
	}
	wg.Wait()
	await(t, "the server to close the connections", func() bool { return srv.Stats().Active == 1 })
	grown := int64(heapInUse()) - int64(before)
	t.Logf("after %d connections closed: the heap grew %d KiB", conns, grown>>10)
	if limit := int64(8 << 20); grown > limit {
		t.Errorf("after %d compressing connections closed, the heap grew %d KiB: want at most %d KiB (the pools)", conns, grown>>10, limit>>10)
	}
}
