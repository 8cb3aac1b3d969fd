package rpc

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// A stream that a client stream interceptor opened with the caller's ctx
// and did not return shares the caller's response metadata receiver
// (WithResponseMetadata). Its end, read by the connection's read loop,
// used to write its trailer there whenever it came: as the interceptor
// opened the stream it did return ("another"), which empties the
// receiver, so the two wrote it at once (a data race, under -race) and
// the caller of a stream with no trailer could find the orphan's; or as
// the chain canceled it ("refused"), after which the caller reads the
// receiver or opens again with it (rpc/cluster sends an open refused
// unwritten to another connection so). A stream's end now writes the
// receiver only while no later open took it, and not once the stream
// was canceled, each decided under a lock the later open and the cancel
// take too (see rmdOwner). Run under -race: the rows that await the
// orphan's end without Recv (which would order its write) are the ones
// the race detector caught.
func TestOrphanStreamTrailer(t *testing.T) {
	s, addr, _ := testServer(t)
	s.HandleStream(7, func(ctx context.Context, init []byte, st *Stream) error {
		if string(init) != "none" {
			return SetResponseMetadata(ctx, "from", string(init))
		}
		return nil
	})
	errRefused := errors.New("refused by the interceptor")
	for _, tc := range []struct {
		name  string
		await bool // the orphan's end read (it left the set) before the interceptor goes on
		// refuse: the interceptor refuses the orphan, and the caller
		// opens again; else it opens another and returns that one.
		refuse bool
	}{
		{"another", false, false},
		{"another after the orphan's end", true, false},
		{"refused after the orphan's end", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c *Client
			var refuse atomic.Bool
			ic := func(ctx context.Context, method uint32, init []byte, open Streamer) (*Stream, error) {
				if _, err := open(ctx, method, []byte("orphan")); err != nil {
					return nil, err
				}
				if tc.await {
					await(t, "the orphan's end", func() bool { return c.Streams() == 0 })
				}
				if refuse.Load() {
					return nil, errRefused
				}
				return open(ctx, method, init)
			}
			c = dial(t, addr, WithStreamClientInterceptors(ic))
			var md Metadata
			ctx := WithResponseMetadata(context.Background(), &md)
			for i := range 50 {
				if tc.refuse {
					refuse.Store(true)
					if _, err := c.OpenStream(ctx, 7, nil); err != errRefused {
						t.Fatalf("open: %v, want the interceptor's refusal", err)
					}
					_ = md.Len() // the caller may look, and opens again
					refuse.Store(false)
				}
				init := "none"
				if i%2 == 1 {
					init = "returned"
				}
				st, err := c.OpenStream(ctx, 7, []byte(init))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := st.Recv(nil); err != io.EOF {
					t.Fatalf("end: %v", err)
				}
				switch got := string(md.Get("from")); {
				case init == "none" && md.Len() != 0:
					t.Fatalf("the receiver of a stream without a trailer holds %q", mdPairs(md))
				case init != "none" && (got != init || md.Len() != 1):
					t.Fatalf("the receiver holds %q, want from=%s alone", mdPairs(md), init)
				}
			}
		})
	}
}

// The end of a stream canceled as the read loop read it (the loop looked
// the stream up before the cancel took it out of the set) gives the
// trailer nothing: Recv returns the cancel, not this end, and the caller
// of an open whose chain canceled the stream may already read the
// receiver or open again with it. The read loop's step is driven by hand
// at the point where the cancel came.
func TestCanceledStreamTrailerNotGiven(t *testing.T) {
	c, peer := pipeClient(t)
	go io.Copy(io.Discard, peer)
	var md Metadata
	st, err := c.OpenStream(WithResponseMetadata(context.Background(), &md), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.streams.onTrailer(wire.AppendStreamTrailer(nil, st.id, encodeMD("from", "canceled")))
	st.clientCancel(context.Background(), errOpenOrphaned) // the chain's cancel
	if err := st.giveTrailer(io.EOF); err != io.EOF || md.Len() != 0 {
		t.Fatalf("the end after the cancel: %v, the receiver holds %q", err, mdPairs(md))
	}
	if _, err := st.Recv(nil); err != errOpenOrphaned {
		t.Fatalf("Recv: %v, want the cancel's error", err)
	}
}
