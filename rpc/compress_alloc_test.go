//go:build !race

package rpc

import (
	"bytes"
	"compress/flate"
	"context"
	"io"
	"testing"
)

// A warm compressed call allocates what the same call allocates without
// compression (nothing, but for 1 MiB: the server does not keep a
// handler's result buffer above 256 KiB, so the handler's append makes
// one each call), plus exactly what compress/flate allocates to inflate
// its answer by hand with a reused reader (its floor: the decompressor
// makes link tables for each block whose Huffman codes are longer than 9
// bits; 0 for 2 KiB of records, 180 for 200 KiB, 931 for 1 MiB), and
// nothing more, on both sides (client and server in this process over
// loopback TCP): the compressor and the decompressor come from their
// pools, the compressed bytes go into the compressor's kept buffer, and
// the answer is inflated into the caller's buffer. Sizes: an inline
// answer, writev answers of the compressed bytes.
func TestAllocsCompressedCall(t *testing.T) {
	for _, size := range []int{2 << 10, 200 << 10, 1 << 20} {
		body := logRecords(size)
		var allocs [2]float64
		for i, opts := range [][]Option{nil, {WithCompression(0)}} {
			var sopts []ServerOption
			var copts []ClientOption
			for _, o := range opts {
				sopts, copts = append(sopts, o), append(copts, o)
			}
			s, addr, _ := testServer(t, sopts...)
			s.Handle(mLogs, func(_ context.Context, req, resp []byte) ([]byte, error) {
				return append(resp, body...), nil
			})
			c := dial(t, addr, copts...)
			resp := make([]byte, 0, size)
			ctx := context.Background()
			call := func() {
				out, err := c.Call(ctx, mLogs, nil, resp[:0])
				if err != nil || len(out) != size {
					t.Fatalf("call: %d bytes, %v", len(out), err)
				}
			}
			for range 20 {
				call()
			}
			allocs[i] = testing.AllocsPerRun(50, call)
		}
		floor := inflateFloor(t, body)
		if allocs[1] != allocs[0]+floor {
			t.Errorf("%d-byte compressed call: %v allocs, want %v (%v without compression + %v of compress/flate's inflate by hand)",
				size, allocs[1], allocs[0]+floor, allocs[0], floor)
		}
		t.Logf("%d bytes: %v allocs without compression, %v with, %v of them compress/flate's inflate", size, allocs[0], allocs[1], floor)
	}
}

// inflateFloor returns what compress/flate allocates to inflate body,
// compressed as a server compresses it, with a reader reused.
func inflateFloor(t *testing.T, body []byte) float64 {
	d := getDeflater()
	if !d.deflate(body) {
		t.Fatal("records did not compress")
	}
	comp := bytes.Clone(d.out)
	putDeflater(d)
	var src bytes.Reader
	src.Reset(comp)
	zr := flate.NewReader(&src)
	out := make([]byte, len(body)+1)
	run := func() {
		src.Reset(comp)
		zr.(flate.Resetter).Reset(&src, nil)
		if n, err := io.ReadFull(zr, out); err != io.ErrUnexpectedEOF || n != len(body) {
			t.Fatalf("inflate by hand: %d bytes, %v", n, err)
		}
	}
	run()
	return testing.AllocsPerRun(50, run)
}

// An echo whose payload and answer both travel compressed allocates
// exactly what compress/flate allocates to inflate each by hand: the
// server inflates the request into its job's buffer, the client the
// answer into the caller's.
func TestAllocsCompressedEcho(t *testing.T) {
	const size = 200 << 10
	payload := logRecords(size)
	s, addr, _ := testServer(t, WithCompression(0))
	c := dial(t, addr, WithCompression(0))
	resp := make([]byte, 0, size)
	ctx := context.Background()
	call := func() {
		out, err := c.Call(ctx, mEcho, payload, resp[:0])
		if err != nil || len(out) != size {
			t.Fatalf("call: %d bytes, %v", len(out), err)
		}
	}
	for range 20 {
		call()
	}
	before := s.Stats().BytesIn
	call()
	if in := s.Stats().BytesIn - before; in > size/4 {
		t.Fatalf("the request was not compressed: %d bytes read", in)
	}
	floor := inflateFloor(t, payload)
	if n := testing.AllocsPerRun(50, call); n != 2*floor {
		t.Errorf("%d-byte compressed echo: %v allocs, want %v (compress/flate's inflate by hand, twice)", size, n, 2*floor)
	}
}
