package rpc

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"
)

// tlsWrapper is a connection a caller may give NewClient: a *tls.Conn
// embedded in a type of its own.
type tlsWrapper struct{ *tls.Conn }

// netConnWrapper unwraps to the connection it wraps with NetConn.
type netConnWrapper struct{ net.Conn }

func (w netConnWrapper) NetConn() net.Conn { return w.Conn }

// Which connections a write cut off by its deadline can go on over.
func TestResumableConn(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	tcp, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	p1, p2 := net.Pipe()
	defer p1.Close()
	defer p2.Close()
	ul, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	unix, err := net.Dial("unix", ul.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close()
	tc := tls.Client(tcp, &tls.Config{})
	type plainWrapper struct{ net.Conn } // a metrics wrapper's, say
	for _, tt := range []struct {
		name string
		nc   net.Conn
		want bool
	}{
		{"tcp", tcp, true},
		{"unix", unix, true},
		{"pipe", p1, true},
		{"tcp unwrapped by NetConn", netConnWrapper{tcp}, true},
		{"pipe unwrapped twice", netConnWrapper{netConnWrapper{p1}}, true},
		{"tls", tc, false},
		{"tls embedded", tlsWrapper{tc}, false},
		{"tls unwrapped by NetConn", netConnWrapper{tc}, false},
		{"tls embedded, unwrapped twice", netConnWrapper{netConnWrapper{tlsWrapper{tc}}}, false},
		// Not known to be resumable: whatever a wrapper that does not
		// unwrap holds (a *tls.Conn, for one) is hidden.
		{"tls in a plain wrapper", plainWrapper{tc}, false},
		{"tcp in a plain wrapper", plainWrapper{tcp}, false},
		{"pipe in a plain wrapper", plainWrapper{p1}, false},
		{"NetConn returning nil", netConnWrapper{nil}, false},
		{"nil", nil, false},
	} {
		if got := resumableConn(tt.nc); got != tt.want {
			t.Errorf("%s: resumable %v, want %v", tt.name, got, tt.want)
		}
	}
}

// A call whose deadline passes while its write to a TLS peer that does
// not read is blocked, on a client given a *tls.Conn wrapped in a type of
// its own: the write is not cut off at the deadline (crypto/tls fails
// every write after a timed-out one, so the rest, handed over, failed at
// once again and again, a core busy for the write timeout); it goes on
// in a goroutine of its own, as over a plain *tls.Conn.
func TestDeadlineWrappedTLSNotCut(t *testing.T) {
	cert, roots := selfSigned(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	held := make(chan net.Conn, 1)
	go func() {
		nc, err := l.Accept()
		if err != nil {
			return
		}
		tc := tls.Server(nc, &tls.Config{Certificates: []tls.Certificate{cert}})
		tc.Handshake()
		held <- tc // never read again
	}()
	raw, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	tc := tls.Client(raw, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	c := NewClient(tlsWrapper{tc})
	defer c.Close()
	defer func() { (<-held).Close() }()
	handed := handOffs.Load()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := c.Call(ctx, mEcho, bytes.Repeat([]byte{3}, 8<<20), nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("call: %v, want the deadline", err)
	}
	if n := handOffs.Load() - handed; n != 0 {
		t.Fatalf("%d writes cut off at the deadline and handed over", n)
	}
}
