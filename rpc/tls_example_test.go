package rpc_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"log"
	"math/big"
	"net"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
)

// Mutual TLS: the server asks every client for a certificate signed by
// its CA, and an interceptor names the caller by its certificate
// (rpc.PeerFrom, as gRPC-go's peer.FromContext). Certificates come from
// files in production (tls.LoadX509KeyPair, x509.CertPool's
// AppendCertsFromPEM); this example makes its own.
func ExampleWithTLSConfig() {
	ca, caKey := exampleCA()
	serverCert := exampleIssue(ca, caKey, "inventory.internal", x509.ExtKeyUsageServerAuth)
	clientCert := exampleIssue(ca, caKey, "ops-laptop", x509.ExtKeyUsageClientAuth)
	pool := x509.NewCertPool()
	pool.AddCert(ca)

	logPeer := func(ctx context.Context, method uint32, req, resp []byte, next rpc.Handler) ([]byte, error) {
		p, _ := rpc.PeerFrom(ctx)
		if p.TLS != nil && len(p.TLS.PeerCertificates) > 0 {
			fmt.Printf("%s called by %s\n", rpc.MethodFrom(ctx), p.TLS.PeerCertificates[0].Subject.CommonName)
		}
		return next(ctx, req, resp)
	}
	s := rpc.NewServer(
		rpc.WithTLSConfig(&tls.Config{
			Certificates: []tls.Certificate{serverCert},
			ClientAuth:   tls.RequireAndVerifyClientCert, // no certificate, no call
			ClientCAs:    pool,
		}),
		rpc.WithInterceptors(logPeer),
	)
	s.MountNamed("inventory.Inventory", 1, func(uint32) string { return "getItem" }) // as generated code does
	s.Handle(1, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		return append(resp, "anvil"...), nil
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go s.Serve(l)
	defer s.Close()

	c, err := rpc.Dial(context.Background(), "tcp", l.Addr().String(), rpc.WithTLSConfig(&tls.Config{
		Certificates: []tls.Certificate{clientCert},
		RootCAs:      pool,
		ServerName:   "inventory.internal", // default: the dialed host, here 127.0.0.1
	}))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	out, err := c.Call(context.Background(), 1, nil, nil)
	fmt.Printf("%s %v\n", out, err)
	// Output:
	// /inventory.Inventory/getItem called by ops-laptop
	// anvil <nil>
}

// exampleCA makes a certificate authority.
func exampleCA() (*x509.Certificate, *ecdsa.PrivateKey) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		log.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "example CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		log.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		log.Fatal(err)
	}
	return ca, key
}

// exampleIssue makes a certificate for name, signed by ca, for usage.
func exampleIssue(ca *x509.Certificate, caKey *ecdsa.PrivateKey, name string, usage x509.ExtKeyUsage) tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		log.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		log.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		DNSNames:     []string{name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		log.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
