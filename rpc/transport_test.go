package rpc

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

func TestUnixSocket(t *testing.T) {
	s := NewServer()
	s.Handle(mEcho, echo)
	path := filepath.Join(t.TempDir(), "rpc.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Skipf("skipping: unix sockets unavailable: %v", err)
	}
	go s.Serve(l)
	defer s.Close()
	c, err := Dial(context.Background(), "unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if out, err := c.Call(context.Background(), mEcho, []byte("unix"), nil); err != nil || string(out) != "unix" {
		t.Fatalf("%q %v", out, err)
	}
}

func selfSigned(t testing.TB) (tls.Certificate, *x509.CertPool) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// tlsOptions returns the options of a TLS 1.3 server with a self-signed
// certificate and of a client that trusts it.
func tlsOptions(t testing.TB) (server, client Option) {
	cert, roots := selfSigned(t)
	return WithTLSConfig(&tls.Config{Certificates: []tls.Certificate{cert}}), WithTLSConfig(&tls.Config{RootCAs: roots})
}

func TestTLS(t *testing.T) {
	tlsServer, tlsClient := tlsOptions(t)
	_, addr, _ := testServer(t, tlsServer)
	c := dial(t, addr, tlsClient)
	tc := c.nc.(*tls.Conn)
	st := tc.ConnectionState()
	if st.Version != tls.VersionTLS13 {
		t.Fatalf("TLS version %x, want 1.3", st.Version)
	}
	for i := 0; i < 10; i++ {
		if out, err := c.Call(context.Background(), mEcho, []byte("secret"), nil); err != nil || string(out) != "secret" {
			t.Fatalf("%q %v", out, err)
		}
	}
	// A plain-text peer on the TLS port is dropped without harm.
	rc := rawDial(t, addr)
	rc.send(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 1}))
	io.Copy(io.Discard, rc)
	bystander(t, c)
}

// FuzzServerStream feeds arbitrary bytes to a server connection: it must
// never panic, and what it writes back must be well-formed answer frames.
func FuzzServerStream(f *testing.F) {
	f.Add(frameBytes(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: 1, Payload: []byte("x")})))
	f.Add(frameBytes(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: 9, PromiseID: 2, Target: 1})))
	f.Add(append(frameBytes(wire.KindGoAway, nil), frameBytes(wire.KindRequest, []byte("ZAP\x00\x02\x00\x00\xc8"))...))
	f.Add([]byte{0, 0, 0, 0})
	// Requests with the wire extensions (deadline, cap, metadata), to a
	// handler that reads them.
	f.Add(frameBytes(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: 5, PromiseID: 3, Timeout: 1, Cap: []byte("c"),
		Metadata: []byte{1, 0, 0, 0, 'k', 1, 0, 0, 0, 'v'}, Payload: []byte("p")})))
	f.Add(frameBytes(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: 5, PromiseID: 4, Timeout: 1 << 40, Target: 3})))
	f.Add(frameBytes(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: 5, PromiseID: 5, Metadata: []byte{9, 0, 0, 0}})))
	// The observers see every call and stream the server answers, also
	// those answered at once from what a broken envelope held; an event
	// no server may report is kept for the input's check (a panic in an
	// observer would be recovered).
	var bad atomic.Pointer[string]
	observed := func(ev CallEvent) {
		if ev.Client || ev.Status == 0 || ev.BytesIn < 0 || ev.BytesOut < 0 {
			msg := fmt.Sprintf("server call event %+v", ev)
			bad.Store(&msg)
		}
	}
	streamObserved := func(ev StreamEvent) {
		if ev.Client {
			msg := fmt.Sprintf("server stream event %+v", ev)
			bad.Store(&msg)
		}
	}
	s := NewServer(WithLogger(discardLogger()), WithFrameOptions(frame.WithMaxFrameSize(1<<16)), WithPipelining(4), WithMaxMetadata(64),
		WithObserver(observed), WithStreamObserver(streamObserved))
	s.Handle(mEcho, echo)
	s.Handle(mPanic, func(context.Context, []byte, []byte) ([]byte, error) { panic("fuzz") })
	s.Handle(5, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		resp = append(resp, CapFrom(ctx)...)
		MetadataFrom(ctx).Range(func(k, v []byte) bool { resp = append(append(resp, k...), v...); return true })
		if _, ok := ctx.Deadline(); ok && ctx.Done() != nil && ctx.Err() != nil {
			resp = append(resp, '!')
		}
		return append(resp, req...), nil
	})
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
		if msg := bad.Swap(nil); msg != nil {
			t.Fatal(*msg)
		}
		out := fc.written()
		for len(out) > 0 {
			if len(out) < 5 {
				t.Fatalf("truncated frame header %x", out)
			}
			n := int(uint32(out[0]) | uint32(out[1])<<8 | uint32(out[2])<<16 | uint32(out[3])<<24)
			if n < 1 || 4+n > len(out) {
				t.Fatalf("bad frame length %d of %d", n, len(out))
			}
			if out[4] == wire.KindPong && n-1 <= maxPingPayload {
				out = out[4+n:] // the answer to a ping in the input
				continue
			}
			if checkStreamFrame(t, out[4], out[5:4+n]) {
				out = out[4+n:] // a refused stream open, a hello's answer
				continue
			}
			if out[4] != wire.KindResponse {
				t.Fatalf("kind %d", out[4])
			}
			if _, err := wire.ParseResponse(out[5 : 4+n]); err != nil {
				t.Fatalf("server wrote a bad answer: %v", err)
			}
			out = out[4+n:]
		}
	})
}

// FuzzClientStream feeds arbitrary bytes to a client as its server's
// output while calls are pending: no panic, and each call ends.
func FuzzClientStream(f *testing.F) {
	f.Add(frameBytes(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: 200, PromiseID: 1, Body: []byte("a")})))
	f.Add(frameBytes(wire.KindResponse, wire.AppendResponse(nil, &wire.Response{Status: 404, PromiseID: 2, Body: []byte("no")})))
	f.Add(frameBytes(wire.KindGoAway, nil))
	f.Add(frameBytes(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: 1, PromiseID: 1})))
	f.Fuzz(func(t *testing.T, in []byte) {
		a, b := net.Pipe()
		c := NewClient(a, WithFrameOptions(frame.WithMaxFrameSize(1<<16)))
		errs := make(chan error, 3)
		for i := 0; i < 3; i++ {
			go func() { _, err := c.Call(context.Background(), 1, []byte("q"), nil); errs <- err }()
		}
		go io.Copy(io.Discard, b)
		b.Write(in)
		b.Close()
		for i := 0; i < 3; i++ {
			<-errs
		}
		c.Close()
	})
}

// fakeConn reads from r and records what is written; Close makes later
// writes fail.
type fakeConn struct {
	r      *bytes.Reader
	mu     sync.Mutex
	out    bytes.Buffer
	closed bool
}

func (f *fakeConn) Read(p []byte) (int, error) { return f.r.Read(p) }
func (f *fakeConn) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return 0, net.ErrClosed
	}
	return f.out.Write(p)
}
func (f *fakeConn) written() []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]byte(nil), f.out.Bytes()...)
}
func (f *fakeConn) Close() error {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	return nil
}
func (f *fakeConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (f *fakeConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (f *fakeConn) SetDeadline(time.Time) error      { return nil }
func (f *fakeConn) SetReadDeadline(time.Time) error  { return nil }
func (f *fakeConn) SetWriteDeadline(time.Time) error { return nil }

// TestNewClientTLSConfig: NewClient runs TLS over a plain connection when
// given WithTLSConfig, as Dial does (it used to ignore the option and
// speak plain text to a TLS server), and not over one that is TLS
// already; without a ServerName (NewClient dialed no host) the handshake
// fails and the calls say why.
func TestNewClientTLSConfig(t *testing.T) {
	cert, roots := selfSigned(t)
	_, addr, _ := testServer(t, WithTLSConfig(&tls.Config{Certificates: []tls.Certificate{cert}}))
	named := &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}
	for _, tc := range []struct {
		name    string
		conn    func(t *testing.T) net.Conn
		cfg     *tls.Config
		wantErr string // "" the call works
	}{
		{"plain conn", plainConn(addr), named, ""},
		{"TLS conn already", func(t *testing.T) net.Conn {
			return tls.Client(plainConn(addr)(t), named)
		}, named, ""},
		{"no ServerName", plainConn(addr), &tls.Config{RootCAs: roots}, "ServerName"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewClient(tc.conn(t), WithTLSConfig(tc.cfg))
			defer c.Close()
			out, err := c.Call(context.Background(), mEcho, []byte("secret"), nil)
			if tc.wantErr == "" {
				if err != nil || string(out) != "secret" {
					t.Fatalf("Call: %q, %v; want the echo", out, err)
				}
				tc, ok := c.nc.(*tls.Conn)
				if !ok {
					t.Fatalf("the client runs over %T, want a *tls.Conn", c.nc)
				}
				if _, inner := tc.NetConn().(*tls.Conn); inner {
					t.Fatal("TLS run twice over the connection")
				}
				return
			}
			if !errors.Is(err, ErrClosed) || !contains(err.Error(), tc.wantErr) {
				t.Fatalf("Call: %v; want an error matching ErrClosed that names %s", err, tc.wantErr)
			}
		})
	}
}

// plainConn returns a function that dials addr over TCP.
func plainConn(addr string) func(t *testing.T) net.Conn {
	return func(t *testing.T) net.Conn {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		return nc
	}
}
