package rpc

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// checkStreamFrame reports whether a frame a server wrote is a stream
// frame, failing t when it is one that is malformed.
func checkStreamFrame(t *testing.T, kind byte, body []byte) bool {
	t.Helper()
	switch kind {
	case wire.KindStreamMsg:
		if _, _, err := wire.ParseStreamMsg(body); err != nil {
			t.Fatalf("server wrote a bad stream message %x: %v", body, err)
		}
	case wire.KindStreamEnd:
		if _, err := wire.ParseStreamEnd(body); err != nil {
			t.Fatalf("server wrote a bad stream end %x: %v", body, err)
		}
	case wire.KindStreamWindow:
		if _, _, ok := wire.ParseStreamWindow(body); !ok {
			t.Fatalf("server wrote a bad window frame %x", body)
		}
	default:
		return false
	}
	return true
}

// streamFuzzSeeds are frame streams a client could send to a server with
// the stream handlers of streamServer.
func streamFuzzSeeds() [][]byte {
	open := func(method, id uint32, init []byte) []byte {
		return frameBytes(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: method, PromiseID: id, Payload: init}))
	}
	hello := frameBytes(wire.KindStreamWindow, wire.AppendStreamWindow(nil, 0, 64))
	cat := func(fs ...[]byte) []byte { return bytes.Join(fs, nil) }
	return [][]byte{
		cat(open(sCount, 1, u32msg(5))),
		cat(hello, open(sCount, 1, u32msg(100)), frameBytes(wire.KindStreamWindow, wire.AppendStreamWindow(nil, 1, 32))),
		cat(open(sSum, 1, nil), frameBytes(wire.KindStreamMsg, wire.AppendStreamMsg(nil, 1, u32msg(3))),
			frameBytes(wire.KindStreamEnd, wire.AppendStreamEnd(nil, 1))),
		cat(hello, open(sEcho, 3, nil), frameBytes(wire.KindStreamMsg, wire.AppendStreamMsg(nil, 3, []byte("abc"))),
			frameBytes(wire.KindStreamEnd, wire.AppendStreamEndError(nil, 3, 499, "x"))),
		cat(hello, open(77, 5, nil), open(sFail, 7, nil), open(sPanic, 9, nil), open(sStatus, 9, nil)),
		cat(frameBytes(wire.KindStreamOpen, []byte("ZAP\x00\x02\x00\x00\xc8")), frameBytes(wire.KindStreamMsg, []byte{1}),
			frameBytes(wire.KindStreamEnd, []byte{1, 0, 0, 0, 9}), frameBytes(wire.KindStreamWindow, []byte{0})),
	}
}

// FuzzStreamFrames feeds arbitrary frames to a server connection with
// stream handlers: it never panics, every stream ends, and what it writes
// back is well-formed frames.
func FuzzStreamFrames(f *testing.F) {
	for _, s := range streamFuzzSeeds() {
		f.Add(s)
	}
	s := NewServer(WithLogger(discardLogger()), WithFrameOptions(frame.WithMaxFrameSize(1<<16)), WithStreamWindow(256), WithMaxStreams(4))
	registerStreamHandlers(s)
	s.HandleStream(sBlock, nil) // waits for its ctx: the connection would wait for it
	// The count comes from the input: at most 64 messages (a canonical
	// peer takes them all at once).
	s.HandleStream(sCount, func(ctx context.Context, init []byte, st *Stream) error {
		n := 0
		if len(init) >= 4 {
			n = int(init[0]) % 64
		}
		for range n {
			if err := st.Send(init); err != nil {
				return err
			}
		}
		return nil
	})
	s.Handle(mEcho, echo)
	f.Fuzz(func(t *testing.T, in []byte) {
		fc := &fakeConn{r: bytes.NewReader(in)}
		c := newServerConn(s, fc, context.Background())
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.connWG.Add(1)
		s.stats.active.Add(1)
		s.mu.Unlock()
		c.serve()
		<-c.done
		await(t, "c.inflight.Load() == 0", func() bool { return c.inflight.Load() == 0 })
		out := fc.written()
		for len(out) > 0 {
			if len(out) < 5 {
				t.Fatalf("truncated frame header %x", out)
			}
			n := int(uint32(out[0]) | uint32(out[1])<<8 | uint32(out[2])<<16 | uint32(out[3])<<24)
			if n < 1 || 4+n > len(out) {
				t.Fatalf("bad frame length %d of %d", n, len(out))
			}
			body := out[5 : 4+n]
			switch {
			case out[4] == wire.KindPong:
			case out[4] == wire.KindResponse:
				if _, err := wire.ParseResponse(body); err != nil {
					t.Fatalf("bad answer: %v", err)
				}
			case !checkStreamFrame(t, out[4], body):
				t.Fatalf("kind %d", out[4])
			}
			out = out[4+n:]
		}
	})
}

// FuzzStreamClient feeds arbitrary bytes to a client as its server's
// output while two streams are open and read, the second asking for its
// trailer (WithResponseMetadata): no panic, both Recvs end once the
// connection does, and the second's trailer is whole pairs within the
// client's limit, or its Recv's error says it was refused.
func FuzzStreamClient(f *testing.F) {
	f.Add(frameBytes(wire.KindStreamMsg, wire.AppendStreamMsg(nil, 1, []byte("a"))))
	f.Add(bytes.Join([][]byte{
		frameBytes(wire.KindStreamWindow, wire.AppendStreamWindow(nil, 0, 16)),
		frameBytes(wire.KindStreamMsg, wire.AppendStreamMsg(nil, 3, []byte("b"))),
		frameBytes(wire.KindStreamWindow, wire.AppendStreamWindow(nil, 3, 1<<31)),
		frameBytes(wire.KindStreamEnd, wire.AppendStreamEndError(nil, 1, 500, "bad")),
		frameBytes(wire.KindStreamEnd, []byte{3, 0, 0, 0, 1}),
		frameBytes(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: 1, PromiseID: 1})),
	}, nil))
	f.Add(bytes.Join([][]byte{
		frameBytes(wire.KindStreamTrailer, wire.AppendStreamTrailer(nil, 3, encodeMD("k", "v"))),
		frameBytes(wire.KindStreamTrailer, wire.AppendStreamTrailer(nil, 1, encodeMD("k", "v"))),
		frameBytes(wire.KindStreamEnd, wire.AppendStreamEnd(nil, 3)),
	}, nil))
	f.Add(bytes.Join([][]byte{
		frameBytes(wire.KindStreamTrailer, wire.AppendStreamTrailer(nil, 3, []byte{0xFF, 0xFF, 0xFF, 0xFF, 'k'})),
		frameBytes(wire.KindStreamTrailer, []byte{3, 0}),
		frameBytes(wire.KindStreamEnd, wire.AppendStreamEndError(nil, 3, 403, "no")),
	}, nil))
	f.Add(bytes.Join([][]byte{
		frameBytes(wire.KindStreamTrailer, wire.AppendStreamTrailer(nil, 3, encodeMD("k", strings.Repeat("v", 100)))),
		frameBytes(wire.KindStreamEnd, wire.AppendStreamEnd(nil, 3)),
	}, nil))
	f.Fuzz(func(t *testing.T, in []byte) {
		a, b := net.Pipe()
		const lim = 64
		c := NewClient(a, WithFrameOptions(frame.WithMaxFrameSize(1<<16)), WithStreamWindow(64), WithMaxResponseMetadata(lim))
		go io.Copy(io.Discard, b)
		var ends [2]chan error
		var md Metadata
		for i := range ends {
			ctx := context.Background()
			if i == 1 {
				ctx = WithResponseMetadata(ctx, &md)
			}
			st, err := c.OpenStream(ctx, 1, nil)
			if err != nil {
				t.Fatal(err)
			}
			ends[i] = make(chan error, 1)
			go func() {
				for {
					if _, err := st.Recv(nil); err != nil {
						ends[i] <- err
						return
					}
				}
			}()
			go st.Send([]byte("x"))
		}
		b.Write(in)
		b.Close()
		var err error
		for i := range ends {
			err = <-ends[i]
		}
		if !validMetadata(md.b) || md.Size() > lim {
			t.Fatalf("trailer of %d bytes, valid %v", md.Size(), validMetadata(md.b))
		}
		if errors.Is(err, ErrResponseMetadata) && md.Size() != 0 {
			t.Fatalf("a refused trailer reached the caller: %q", md.b)
		}
		c.Close()
	})
}
