package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
)

// testPKI is a CA with a server certificate (127.0.0.1 and localhost)
// and a client certificate, written as PEM files in dir, and a second CA
// that signed neither.
type testPKI struct {
	dir                   string
	ca, otherCA           string // PEM files
	serverKey             string
	clientCert, clientKey string
	serverTLS             tls.Certificate
	clientCAs             *x509.CertPool
	caKey                 *ecdsa.PrivateKey
	caLeaf                *x509.Certificate
	serial                int64
	t                     *testing.T
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	p := &testPKI{dir: t.TempDir(), t: t}
	p.caKey, p.caLeaf = p.makeCA("zapcodec test CA")
	p.ca = p.writePEM("ca.pem", "CERTIFICATE", p.caLeaf.Raw)
	_, other := p.makeCA("another CA")
	p.otherCA = p.writePEM("other-ca.pem", "CERTIFICATE", other.Raw)
	p.clientCAs = x509.NewCertPool()
	p.clientCAs.AddCert(p.caLeaf)

	srv, srvKey := p.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "localhost"},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	p.serverKey = p.writeKey("server.key", srvKey)
	p.serverTLS = tls.Certificate{Certificate: [][]byte{srv}, PrivateKey: srvKey}

	cli, cliKey := p.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "test client"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	p.clientCert = p.writePEM("client.pem", "CERTIFICATE", cli)
	p.clientKey = p.writeKey("client.key", cliKey)
	return p
}

func (p *testPKI) makeCA(name string) (*ecdsa.PrivateKey, *x509.Certificate) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		p.t.Fatal(err)
	}
	p.serial++
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(p.serial),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		p.t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		p.t.Fatal(err)
	}
	return key, leaf
}

// issue signs tmpl with the CA and returns the certificate's DER and key.
func (p *testPKI) issue(tmpl *x509.Certificate) ([]byte, *ecdsa.PrivateKey) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		p.t.Fatal(err)
	}
	p.serial++
	tmpl.SerialNumber = big.NewInt(p.serial)
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(24 * time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caLeaf, &key.PublicKey, p.caKey)
	if err != nil {
		p.t.Fatal(err)
	}
	return der, key
}

func (p *testPKI) writePEM(name, typ string, der []byte) string {
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		p.t.Fatal(err)
	}
	return path
}

func (p *testPKI) writeKey(name string, key *ecdsa.PrivateKey) string {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		p.t.Fatal(err)
	}
	return p.writePEM(name, "PRIVATE KEY", der)
}

// serverConfig is a TLS server's configuration; with mutual, it asks
// for a client certificate signed by the CA and refuses a peer without.
func (p *testPKI) serverConfig(mutual bool) *tls.Config {
	cfg := &tls.Config{Certificates: []tls.Certificate{p.serverTLS}}
	if mutual {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		cfg.ClientCAs = p.clientCAs
	}
	return cfg
}

// mtlsFlags are the flags of a client that trusts the CA and shows its
// certificate.
func (p *testPKI) mtlsFlags() []string {
	return []string{"-cacert", p.ca, "-cert", p.clientCert, "-key", p.clientKey}
}

// tlsCallServer serves callServer's demo service over TLS (a listener
// that is TLS already) with, when mutual, a client certificate required.
func tlsCallServer(t *testing.T, p *testPKI, mutual bool) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	callServe(t, nil, tls.NewListener(l, p.serverConfig(mutual)))
	return l.Addr().String()
}

// call, health and load over mutual TLS with the shared flags, and what
// each says when the flags do not fit the server.
func TestTLSFlags(t *testing.T) {
	t.Parallel()
	p := newTestPKI(t)
	mtls := tlsCallServer(t, p, true)
	hostAddr := "localhost:" + mtls[strings.LastIndexByte(mtls, ':')+1:]
	plain := callServer(t, nil)
	alerting := tlsAlertServer(t)
	ctx := context.Background()
	hello := []string{"-schema", callSchemaPath, "-method", "hello", "-d", `{"Name":"tls"}`}
	callCase := func(extra []string, addr string) []string {
		return append(append(append([]string{}, hello...), extra...), addr)
	}
	mt := p.mtlsFlags()
	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		out, err string
	}{
		{"mtls", callCase(mt, mtls), 0, `"Message":"hello, tls"`, ""},
		{"mtls by name", callCase(mt, hostAddr), 0, `"Message":"hello, tls"`, ""},
		{"mtls -tls too", callCase(append([]string{"-tls"}, mt...), mtls), 0, `"Message":"hello, tls"`, ""},
		{"servername", callCase(append([]string{"-servername", "localhost"}, mt...), mtls), 0, `"Message":"hello, tls"`, ""},
		{"insecure", callCase([]string{"-insecure", "-cert", p.clientCert, "-key", p.clientKey}, mtls), 0, `"Message":"hello, tls"`, ""},
		{"no client cert", callCase([]string{"-cacert", p.ca}, mtls), 3, "", "certificate required (the server asked for a client certificate, and none was given: -cert and -key)"},
		{"unknown CA", callCase([]string{"-cacert", p.otherCA, "-cert", p.clientCert, "-key", p.clientKey}, mtls), 3, "", "certificate signed by unknown authority"},
		{"wrong name", callCase(append([]string{"-servername", "db.example"}, mt...), mtls), 3, "", "not db.example"},
		{"plain client", callCase(nil, mtls), 3, "", "(the server closed the connection without a byte of answer: if it serves TLS, dial with -tls;"},
		{"tls to plain", callCase([]string{"-tls", "-insecure"}, plain), 3, "", "the server did not answer in TLS: a plain server? then leave out the TLS flags"},
		{"alerting server", callCase(nil, alerting), 3, "", "(the server answered with a TLS record: dial with -tls)"},
		{"plain to plain", callCase(nil, plain), 0, `"Message":"hello, tls"`, ""},
	} {
		code, out, errOut := callRun(ctx, "", tc.args...)
		if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(errOut, tc.err) {
			t.Errorf("call %s: exit %d, stdout %q, stderr %q; want %d, stdout with %q, stderr with %q", tc.name, code, out, errOut, tc.code, tc.out, tc.err)
		}
	}

	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		out, err string
	}{
		{"mtls", mt, 0, "serving\n", ""},
		{"no client cert", []string{"-cacert", p.ca}, 1, "unknown\n", "none was given: -cert and -key"},
		{"plain client", nil, 1, "unknown\n", "if it serves TLS, dial with -tls"},
	} {
		code, out, errOut := runHealthCmd(append([]string{"-addr", mtls}, tc.args...)...)
		if code != tc.code || out != tc.out || !strings.Contains(errOut, tc.err) {
			t.Errorf("health %s: exit %d, stdout %q, stderr %q; want %d, %q, stderr with %q", tc.name, code, out, errOut, tc.code, tc.out, tc.err)
		}
	}
	code, out, errOut := runHealthCmd("-addr", plain, "-tls", "-insecure")
	if code != 1 || out != "unknown\n" || !strings.Contains(errOut, "a plain server? then leave out the TLS flags") {
		t.Errorf("health -tls of a plain server: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	for _, client := range []string{"rpc", "direct"} {
		args := append([]string{"-addr", mtls, "-method", "4", "-n", "40", "-c", "2", "-concurrency", "1", "-client", client, "-json"}, mt...)
		code, out, errOut := runLoadCmd(t, args...)
		if code != 0 || !strings.Contains(out, `"calls": 40`) || !strings.Contains(out, `"ok": 40`) {
			t.Errorf("load -client %s over mTLS: exit %d, stdout %q, stderr %q", client, code, out, errOut)
		}
	}
	for _, extra := range [][]string{nil, {"-servername", "localhost"}} {
		args := append([]string{"-addr", "static:///" + mtls, "-method", "4", "-n", "40", "-c", "1", "-json"}, mt...)
		code, out, errOut := runLoadCmd(t, append(args, extra...)...)
		if code != 0 || !strings.Contains(out, `"calls": 40`) || !strings.Contains(out, `"ok": 40`) {
			t.Errorf("load of a cluster target over mTLS %v: exit %d, stdout %q, stderr %q", extra, code, out, errOut)
		}
	}
	code, _, errOut = runLoadCmd(t, "-addr", mtls, "-method", "4", "-n", "10", "-cacert", p.ca)
	if code != 1 || !strings.Contains(errOut, "the server asked for a client certificate, and none was given (-cert and -key)") {
		t.Errorf("load over mTLS without a client certificate: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = runLoadCmd(t, "-addr", mtls, "-method", "4", "-n", "10", "-c", "1")
	if code != 1 || !strings.Contains(errOut, "zapcodec load: the server closed the connections without a byte of answer: if it serves TLS, dial with -tls") {
		t.Errorf("load of a TLS server without -tls: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = runLoadCmd(t, "-addr", "static:///"+mtls, "-method", "4", "-n", "10", "-c", "1")
	if code != 1 || !strings.Contains(errOut, "is up: ") || !strings.Contains(errOut, "(a replica closed the connection without answering: if the replicas serve TLS, dial with -tls)") {
		t.Errorf("load of a cluster target of TLS replicas without -tls: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = runLoadCmd(t, "-addr", plain, "-method", "4", "-n", "10", "-tls", "-insecure")
	if code != 1 || !strings.Contains(errOut, "connection 0: TLS handshake: ") || !strings.Contains(errOut, "a plain server? then leave out the TLS flags") {
		t.Errorf("load -tls of a plain server: exit %d, stderr %q", code, errOut)
	}
}

// Bad TLS flags are usage errors of every command, named by flag and
// file, and a PEM file is read no further than its bound.
func TestTLSFlagErrors(t *testing.T) {
	t.Parallel()
	p := newTestPKI(t)
	notPEM := filepath.Join(p.dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(p.dir, "huge.pem")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 40); err != nil { // sparse: a read of it all would not end
		t.Fatal(err)
	}
	f.Close()
	missing := filepath.Join(p.dir, "missing.pem")
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"-cacert", missing}, "-cacert: open " + missing},
		{[]string{"-cacert", notPEM}, "-cacert " + notPEM + ": no PEM certificate in it"},
		{[]string{"-cacert", huge}, "-cacert " + huge + ": more than 4194304 bytes (4 MiB), too large for a PEM file"},
		{[]string{"-cert", p.clientCert}, "-cert " + p.clientCert + ": needs -key"},
		{[]string{"-key", p.clientKey}, "-key " + p.clientKey + ": needs -cert"},
		{[]string{"-cert", p.clientCert, "-key", p.serverKey}, "private key does not match public key"},
		{[]string{"-cert", notPEM, "-key", p.clientKey}, "-cert " + notPEM + " -key " + p.clientKey + ": tls: "},
		{[]string{"-cert", p.clientCert, "-key", huge}, "-key " + huge + ": more than"},
	} {
		addr := "127.0.0.1:1"
		code, _, errOut := callRun(context.Background(), "", append([]string{"-schema", callSchemaPath, "-method", "ping", addr}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.err) {
			t.Errorf("call %v: exit %d, stderr %q; want 2, stderr with %q", tc.args, code, errOut, tc.err)
		}
		code, out, errOut := runHealthCmd(append([]string{"-addr", addr}, tc.args...)...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.err) {
			t.Errorf("health %v: exit %d, stdout %q, stderr %q; want 2, stderr with %q", tc.args, code, out, errOut, tc.err)
		}
		code, _, errOut = runLoadCmd(t, append([]string{"-addr", addr, "-method", "1", "-n", "1"}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.err) {
			t.Errorf("load %v: exit %d, stderr %q; want 2, stderr with %q", tc.args, code, errOut, tc.err)
		}
	}
}

// runLoadCmd runs zapcodec load with args.
func runLoadCmd(t *testing.T, args ...string) (code int, out, errOut string) {
	t.Helper()
	var o, e strings.Builder
	code = runLoadCtx(context.Background(), args, &o, &e)
	return code, o.String(), e.String()
}

// tlsAlertServer answers every connection with a TLS alert record
// (protocol version, fatal), as some TLS servers do to a peer that does
// not speak TLS, and closes it.
func tlsAlertServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Write([]byte{21, 3, 3, 0, 2, 2, 70})
			c.Close()
		}
	}()
	return l.Addr().String()
}

// A TLS handshake the server never answers ends at -timeout, and call
// and health say that bound passed.
func TestTLSDialTimeout(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		var conns []net.Conn // held open, silent, until the test's end
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	code, _, errOut := callRun(context.Background(), "", "-schema", callSchemaPath, "-method", "Demo.ping", "-tls", "-insecure", "-timeout", "300ms", l.Addr().String())
	if want := "not connected within -timeout 300ms ("; code != 3 || !strings.Contains(errOut, want) {
		t.Errorf("call to a silent TLS server: exit %d, stderr %q; want 3, stderr with %q", code, errOut, want)
	}
	code, out, errOut := runHealthCmd("-addr", l.Addr().String(), "-tls", "-insecure", "-timeout", "300ms")
	if want := "zapcodec health: not connected within -timeout 300ms ("; code != 1 || out != "unknown\n" || !strings.Contains(errOut, want) {
		t.Errorf("health of a silent TLS server: exit %d, stdout %q, stderr %q; want 1, unknown, stderr with %q", code, out, errOut, want)
	}
}

// A server at its connection limit (rpc.WithMaxConns) closes a new
// connection at once, before any byte, as a plain server closes a TLS
// client's and a TLS server a plain client's: the hint, which named only
// those, names the limit too (a full server was taken for a plain one).
func TestFullServerHint(t *testing.T) {
	t.Parallel()
	p := newTestPKI(t)
	for _, tc := range []struct {
		name string
		opts []rpc.ServerOption
		args []string
	}{
		{"plain", nil, nil},
		{"tls", []rpc.ServerOption{rpc.WithTLSConfig(p.serverConfig(false))}, []string{"-cacert", p.ca}},
	} {
		s := rpc.NewServer(append(tc.opts, rpc.WithMaxConns(1), rpc.WithReadTimeout(time.Hour),
			rpc.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))...)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go s.Serve(l)
		t.Cleanup(func() { s.Close() })
		held, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { held.Close() })
		for deadline := time.Now().Add(30 * time.Second); s.Stats().Active != 1; {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the held connection was not accepted within 30 s", tc.name)
			}
			time.Sleep(time.Millisecond) // polling the condition
		}
		code, out, errOut := runHealthCmd(append([]string{"-addr", l.Addr().String()}, tc.args...)...)
		if code != 1 || out != "unknown\n" || !strings.Contains(errOut, "at its connection limit (rpc.WithMaxConns)") {
			t.Errorf("health of a full %s server: exit %d, stdout %q, stderr %q; want the limit named", tc.name, code, out, errOut)
		}
		if r := s.Stats().Rejected; r != 1 {
			t.Errorf("%s: Stats().Rejected = %d, want 1", tc.name, r)
		}
	}
}
