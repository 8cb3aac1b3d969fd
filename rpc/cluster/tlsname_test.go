package cluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/internal/dnstest"
	"github.com/zapcodec/zapcodec/rpc"
)

// certName is the one name of the certificate of nameCert.
const certName = "replica.svc.test"

// nameCert returns a self-signed certificate for certName only (no IP
// SAN), and a pool that trusts it.
func nameCert(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: certName},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		DNSNames:     []string{certName},
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

// Over TLS, a replica of a dns:/// target is verified against the
// target's host name, as gRPC-go does, when the caller's config has no
// ServerName: a certificate for certName serves dns:///localhost:port.
// Each replica was verified against the IP it was dialed at ("x509:
// cannot validate certificate for 127.0.0.1 because it doesn't contain
// any IP SANs") unless the caller set ServerName. The caller's config is
// left as it was, and a ServerName the caller set still counts.
func TestTLSVerifiesTargetName(t *testing.T) {
	cert, pool := nameCert(t)
	s := rpc.NewServer(rpc.WithTLSConfig(&tls.Config{Certificates: []tls.Certificate{cert}}),
		rpc.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	s.Handle(mEcho, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		return append(resp, req...), nil
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
	_, port, _ := net.SplitHostPort(l.Addr().String())
	// The name from a DNS server of the test's, which gives the one
	// address the replica listens at (localhost may resolve to ::1 too).
	dns, err := dnstest.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer dns.Close()
	dns.SetAddrs(certName, netip.MustParseAddr("127.0.0.1"))
	target := "dns://" + dns.Addr() + "/" + certName + ":" + port

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := &tls.Config{RootCAs: pool}
	// firstTry dials target with cfg and returns the client once its one
	// replica has had its first try, with the replica's account.
	firstTry := func(cfg *tls.Config) (*Client, ReplicaStats) {
		c, err := Dial(ctx, target, WithClientOptions(rpc.WithTLSConfig(cfg)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		await(t, "the replica's first try", func() bool {
			rs := c.Stats().Replicas
			return len(rs) == 1 && rs[0].State != "connecting"
		})
		return c, c.Stats().Replicas[0]
	}
	c, r := firstTry(cfg)
	if r.State != "ready" {
		t.Fatalf("replica %s of %s with a certificate for its name: %s, %v", r.Addr, target, r.State, r.LastError)
	}
	if out, err := c.Call(ctx, mEcho, []byte("hi"), nil); err != nil || string(out) != "hi" {
		t.Fatalf("call: %q, %v", out, err)
	}
	if cfg.ServerName != "" {
		t.Errorf("the caller's config changed: ServerName %q", cfg.ServerName)
	}

	// The caller's ServerName counts: one the certificate is not for fails.
	_, r = firstTry(&tls.Config{RootCAs: pool, ServerName: "db.example"})
	if r.State == "ready" || r.LastError == nil || !strings.Contains(r.LastError.Error(), "db.example") {
		t.Errorf("replica %s with ServerName db.example: %s, %v; want not ready, the name's mismatch", r.Addr, r.State, r.LastError)
	}
}
