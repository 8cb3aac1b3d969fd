package rpc

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/frame"
)

// The HTTP framing has no kind byte: given to rpc it would turn every
// frame into a protocol violation. Dial and Serve refuse it with a clear
// error, and a client over a given connection is closed at once and says
// why.
func TestHTTPFramingRefused(t *testing.T) {
	bad := WithFrameOptions(frame.WithMaxFrameSize(1<<20), frame.WithHTTPFraming())

	// The server: Serve returns at once and closes the listener.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(bad)
	if err := s.Serve(l); !errors.Is(err, ErrHTTPFraming) {
		t.Fatalf("Serve with the HTTP framing: %v", err)
	}
	if _, err := l.Accept(); err == nil {
		t.Fatal("the listener is still open")
	}

	// The client: Dial fails before dialing.
	_, addr, _ := testServer(t)
	if _, err := Dial(context.Background(), "tcp", addr, bad); !errors.Is(err, ErrHTTPFraming) {
		t.Fatalf("Dial with the HTTP framing: %v", err)
	}
	if !strings.Contains(ErrHTTPFraming.Error(), "WithHTTPFraming") {
		t.Fatalf("the error does not name the option: %v", ErrHTTPFraming)
	}

	// A client over a given connection: closed, calls say why.
	a, b := net.Pipe()
	defer b.Close()
	c := NewClient(a, bad)
	defer c.Close()
	_, err = c.Call(context.Background(), mEcho, nil, nil)
	if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "WithHTTPFraming") {
		t.Fatalf("a call on a NewClient with the HTTP framing: %v", err)
	}

	// The canonical framing's options still pass.
	c2 := dial(t, addr, WithFrameOptions(frame.WithMaxFrameSize(1<<20)))
	if _, err := c2.Call(context.Background(), mEcho, nil, nil); err != nil {
		t.Fatal(err)
	}
}
