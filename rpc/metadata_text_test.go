package rpc

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// tooLargeText is the body of the 431 answer to metadata of n encoded
// bytes over the limit lim, as a string of its own.
func tooLargeText(n, lim int) string {
	var b [metadataTextSize]byte
	return strings.Clone(metadataTooLarge(&b, n, lim))
}

// TestMetadataTooLargeSaysSizes: the 431 answer to metadata over the
// server's limit, on a call and on a stream open, says how large the
// metadata was and what the limit is, and stays a not-run refusal.
func TestMetadataTooLargeSaysSizes(t *testing.T) {
	md := metadataPair("x", strings.Repeat("v", 100))
	want := "metadata too large: " + strconv.Itoa(len(md)) + " bytes encoded, over the server's limit of 64 bytes"

	_, addr, _ := testServer(t, WithMaxMetadata(64))
	c := dial(t, addr)
	ctx := WithMetadata(context.Background(), "x", strings.Repeat("v", 100))
	_, err := c.Call(ctx, mEcho, nil, nil)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != StatusMetadataTooLarge || !strings.Contains(err.Error(), want) {
		t.Errorf("Call: %v; want 431 saying %q", err, want)
	}
	if IsRetryable(err) {
		t.Errorf("Call: %v is retryable", err)
	}

	// The largest numbers fit the buffer.
	big := strconv.Itoa(math.MaxInt)
	if got, w := tooLargeText(math.MaxInt, math.MaxInt), "metadata too large: "+big+" bytes encoded, over the server's limit of "+big+" bytes"; got != w {
		t.Errorf("text %q, want %q", got, w)
	}

	// A stream open: the refusal's end carries the same text, after the
	// not-run mark.
	_, saddr, _ := streamServer(t, WithMaxMetadata(64))
	rc := rawDial(t, saddr)
	rc.send(wire.KindStreamOpen, wire.AppendRequest(nil, &wire.Request{Method: sEcho, PromiseID: 1, Metadata: md}))
	kind, p, ok := rc.recv()
	if !ok || kind != wire.KindStreamNotRun {
		t.Errorf("stream open refused with kind %d ok %v body %q; want the not-run mark first", kind, ok, p)
	}
	kind, p, ok = rc.recv()
	if !ok || kind != wire.KindStreamEnd || !strings.Contains(string(p), want) {
		t.Errorf("stream open refused with kind %d ok %v body %q; want an end saying %q", kind, ok, p, want)
	}
}
