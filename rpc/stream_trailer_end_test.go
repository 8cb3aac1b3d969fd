package rpc

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// A trailer the client refuses (over WithMaxResponseMetadata) replaces
// the server's end as what Recv returns, and the stream observer sees
// what the caller got, as for a call whose response metadata is refused:
// Status 0 (the end's status is not the stream's outcome) and Err the
// refusal, after a clean end (not a 200 with an error) or an error end.
// A trailer taken keeps the end's status.
func TestStreamTrailerRefusedObserved(t *testing.T) {
	var mu sync.Mutex
	var ends []StreamEvent
	c, peer := pipeClient(t, WithMaxResponseMetadata(32), WithStreamObserver(func(ev StreamEvent) {
		if ev.End {
			mu.Lock()
			ends = append(ends, ev)
			mu.Unlock()
		}
	}))
	go io.Copy(io.Discard, peer)
	var md Metadata
	ctx := WithResponseMetadata(context.Background(), &md)
	for _, tc := range []struct {
		name       string
		trailer    []byte
		status     uint32
		wantStatus uint32
		refused    bool
	}{
		{"refused, clean end", encodeMD("k", strings.Repeat("v", 40)), 0, 0, true},
		{"refused, error end", encodeMD("k", strings.Repeat("v", 40)), StatusForbidden, 0, true},
		{"taken, clean end", encodeMD("k", "v"), 0, StatusOK, false},
		{"taken, error end", encodeMD("k", "v"), StatusForbidden, StatusForbidden, false},
	} {
		st, err := c.OpenStream(ctx, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		peer.send(wire.KindStreamTrailer, wire.AppendStreamTrailer(nil, st.id, tc.trailer))
		if tc.status == 0 {
			peer.send(wire.KindStreamEnd, wire.AppendStreamEnd(nil, st.id))
		} else {
			peer.send(wire.KindStreamEnd, wire.AppendStreamEndError(nil, st.id, tc.status, "no"))
		}
		_, err = recvAll(st)
		if errors.Is(err, ErrResponseMetadata) != tc.refused {
			t.Fatalf("%s: Recv's end %v", tc.name, err)
		}
		await(t, "the end's event", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(ends) > 0
		})
		mu.Lock()
		ev := ends[0]
		ends = ends[:0]
		mu.Unlock()
		if ev.Status != tc.wantStatus || ev.Err != err && !(err == io.EOF && ev.Err == nil) {
			t.Errorf("%s: event Status %d, Err %v; want %d and Recv's end (%v)", tc.name, ev.Status, ev.Err, tc.wantStatus, err)
		}
	}
}
