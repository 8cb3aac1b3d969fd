package rpc

import (
	"context"
	"errors"
	"testing"
	"unsafe"
)

// TestSendPooled: a promise of SendPooled reads its answer into the
// spare room of the pooled buffer it was given and hands the buffer back
// to the one WaitPooled that serves it; a second WaitPooled, or one after
// Release, gets neither the buffer nor its memory (which may be back in
// the pool already); a send that fails keeps neither.
func TestSendPooled(t *testing.T) {
	cl, _ := pipelineServer(t, func() error { return nil })
	c := dial(t, cl.Addr().String())
	ctx := context.Background()

	bp := GetBuffer()
	buf := append((*bp)[:0], "k"...)
	p, err := SendPooled(ctx, c, mLookup, bp, buf)
	if err != nil {
		t.Fatal(err)
	}
	out, got, err := p.WaitPooled(ctx)
	if err != nil || string(out) != "id:k" || got != bp {
		t.Fatalf("WaitPooled = %q, %p, %v; want id:k, %p", out, got, err, bp)
	}
	if string(*got) != "k" || unsafe.SliceData(out) != unsafe.SliceData((*got)[len(*got):cap(*got)]) {
		t.Fatal("the answer is not in the request's spare room")
	}
	PutBuffer(got, *got, out)
	for _, name := range []string{"again", "untyped"} {
		var out []byte
		var got *[]byte
		if name == "again" {
			out, got, err = p.WaitPooled(ctx)
		} else {
			out, err = p.Wait(ctx)
		}
		if out != nil || got != nil || !errors.Is(err, errNoPromise) {
			t.Fatalf("WaitPooled %s = %q, %p, %v", name, out, got, err)
		}
	}

	bp = GetBuffer()
	p, err = SendPooled(ctx, c, mLookup, bp, append((*bp)[:0], "r"...))
	if err != nil {
		t.Fatal(err)
	}
	p.Release()
	if out, got, err := p.WaitPooled(ctx); out != nil || got != nil || !errors.Is(err, errNoPromise) {
		t.Fatalf("WaitPooled after Release = %q, %p, %v", out, got, err)
	}

	// Not pooled: Wait and WaitPooled as before, no buffer.
	p, err = c.Send(ctx, mLookup, []byte("u"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if out, got, err := p.WaitPooled(ctx); err != nil || string(out) != "id:u" || got != nil {
		t.Fatalf("WaitPooled of Send = %q, %p, %v", out, got, err)
	}

	c.Close()
	bp = GetBuffer()
	if p, err := SendPooled(ctx, c, mLookup, bp, (*bp)[:0]); err == nil || p.bp != nil {
		t.Fatalf("SendPooled on a closed client: %v, buffer kept %v", err, p.bp != nil)
	}
}
