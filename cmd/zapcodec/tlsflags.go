package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/zapcodec/zapcodec/rpc"
)

// The TLS flags of call, load and health: one set, registered by
// tlsFlags.register and described by tlsUsage in each command's usage.
const tlsUsage = `  -tls                dial over TLS, verifying the server's certificate
                      against the system's roots (or -cacert); implied by
                      any of the flags below
  -cacert FILE        PEM certificates of the CAs to trust instead of the
                      system's
  -cert FILE -key FILE
                      a client certificate and its key, PEM (mutual TLS:
                      for a server that asks for one)
  -servername NAME    the name to verify the server's certificate against
                      (default: the host of the address; with a cluster
                      target, whose replicas are IP addresses, give it)
  -insecure           do not verify the server's certificate (testing
                      only: anyone on the path can read and change the
                      calls)
`

// tlsMaxFile bounds each PEM file the TLS flags read: a certificate
// chain or a key is a few KiB, a CA bundle a few hundred.
const tlsMaxFile = 4 << 20

// tlsFlags holds the TLS flags of one command line.
type tlsFlags struct {
	on                  bool
	caFile, certFile    string
	keyFile, serverName string
	insecure            bool
	// askedForCert is set when a server asked for a client certificate.
	askedForCert atomic.Bool
}

// register adds the TLS flags to fs.
func (t *tlsFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&t.on, "tls", false, "dial over TLS")
	fs.StringVar(&t.caFile, "cacert", "", "PEM file of the CAs to trust")
	fs.StringVar(&t.certFile, "cert", "", "PEM file of the client certificate")
	fs.StringVar(&t.keyFile, "key", "", "PEM file of the client certificate's key")
	fs.StringVar(&t.serverName, "servername", "", "name to verify the server's certificate against")
	fs.BoolVar(&t.insecure, "insecure", false, "do not verify the server's certificate")
}

// enabled reports whether the command dials over TLS: -tls, or any other
// TLS flag given.
func (t *tlsFlags) enabled() bool {
	return t.on || t.caFile != "" || t.certFile != "" || t.keyFile != "" || t.serverName != "" || t.insecure
}

// config returns the client's TLS configuration, nil without TLS. addr
// is the address dialed (its host is the default server name), or ""
// for several (a cluster target: each replica's own host is taken, as
// rpc.Dial does, unless -servername is given). Its errors name the flag
// and the file at fault and are usage errors.
func (t *tlsFlags) config(addr string) (*tls.Config, error) {
	if !t.enabled() {
		return nil, nil
	}
	cfg := &tls.Config{ServerName: t.serverName, InsecureSkipVerify: t.insecure}
	if cfg.ServerName == "" && addr != "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		cfg.ServerName = host
	}
	if t.caFile != "" {
		pem, err := tlsReadFile("-cacert", t.caFile)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("-cacert %s: no PEM certificate in it", t.caFile)
		}
		cfg.RootCAs = pool
	}
	switch {
	case t.certFile != "" && t.keyFile != "":
		certPEM, err := tlsReadFile("-cert", t.certFile)
		if err != nil {
			return nil, err
		}
		keyPEM, err := tlsReadFile("-key", t.keyFile)
		if err != nil {
			return nil, err
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("-cert %s -key %s: %v", t.certFile, t.keyFile, err)
		}
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			t.askedForCert.Store(true)
			return &cert, nil
		}
	case t.certFile != "":
		return nil, fmt.Errorf("-cert %s: needs -key, the file of its private key", t.certFile)
	case t.keyFile != "":
		return nil, fmt.Errorf("-key %s: needs -cert, the file of its certificate", t.keyFile)
	default:
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			t.askedForCert.Store(true)
			return new(tls.Certificate), nil // none: the server decides
		}
	}
	return cfg, nil
}

// tlsReadFile reads a PEM file of at most tlsMaxFile bytes for flag.
func tlsReadFile(flag, name string) ([]byte, error) {
	b, err := readFileAtMost(name, tlsMaxFile)
	if errors.Is(err, errTooLarge) {
		return nil, fmt.Errorf("%s %s: more than %d bytes (4 MiB), too large for a PEM file", flag, name, tlsMaxFile)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v", flag, err)
	}
	return b, nil
}

// clientOptions returns the rpc client options that dial as the flags
// say: rpc.WithTLSConfig(cfg) with TLS; without it, a dialer that
// watches the first bytes the server sends, so that explain can tell a
// TLS server, which answers a plain peer with a TLS alert, from a
// failure of another kind.
func (t *tlsFlags) clientOptions(cfg *tls.Config) ([]rpc.ClientOption, *tlsSniffer) {
	if cfg != nil {
		return []rpc.ClientOption{rpc.WithTLSConfig(cfg)}, nil
	}
	s := &tlsSniffer{}
	return []rpc.ClientOption{rpc.WithDialer(s)}, s
}

// explainDial adds to err, the failure of a dial, what the TLS flags
// suggest about it: with TLS, a failure after the connection was made is
// the handshake's, and a server that drops the connection or answers
// other than in TLS may be a plain one, or one at its connection limit.
func (t *tlsFlags) explainDial(err error) error {
	if err == nil || !t.enabled() {
		return err
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return err // no connection: nothing TLS about it
	}
	var rec tls.RecordHeaderError
	if errors.As(err, &rec) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
		return fmt.Errorf("%w (the TLS handshake failed, the server did not answer in TLS: a plain server? then leave out the TLS flags; or one at its connection limit (rpc.WithMaxConns), which closes new connections at once)", err)
	}
	return t.explainRefused(err)
}

// explain adds to err, the failure of a call on a connection made, what
// the TLS flags suggest about it: with TLS, a server that refused the
// client (TLS 1.3 tells the client only at its first read, after its
// side of the handshake); without, a server that closed the connection
// without a byte of answer, or answered in TLS. sniff is clientOptions'
// sniffer (nil with TLS).
func (t *tlsFlags) explain(err error, sniff *tlsSniffer) error {
	if err == nil || t == nil {
		return err
	}
	if t.enabled() {
		return t.explainRefused(err)
	}
	switch {
	case sniff == nil:
	case sniff.sawTLS():
		return fmt.Errorf("%w (the server answered with a TLS record: dial with -tls)", err)
	case sniff.silent() && (errors.Is(err, rpc.ErrClosed) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)):
		return fmt.Errorf("%w (the server closed the connection without a byte of answer: if it serves TLS, dial with -tls; a server at its connection limit (rpc.WithMaxConns) closes new connections so too)", err)
	}
	return err
}

// explainRefused adds to err what a TLS alert from the server suggests:
// that it wants a client certificate, when it asked for one and none was
// given.
func (t *tlsFlags) explainRefused(err error) error {
	if t.askedForCert.Load() && t.certFile == "" {
		return fmt.Errorf("%w (the server asked for a client certificate, and none was given: -cert and -key)", err)
	}
	if strings.Contains(err.Error(), "remote error: tls: ") {
		return fmt.Errorf("%w (the server refused the TLS connection)", err)
	}
	return err
}

// askedNoCert reports whether a server asked for a client certificate
// that the flags did not give.
func (t *tlsFlags) askedNoCert() bool { return t.askedForCert.Load() && t.certFile == "" }

// tlsSniffer is an rpc.Dialer for plain connections that remembers
// whether the first bytes the server sent look like a TLS record (an
// alert or a handshake message: content type 21 or 22, version 3.x).
type tlsSniffer struct {
	mu    sync.Mutex
	tls   bool
	bytes bool // a byte was read
}

func (s *tlsSniffer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &sniffConn{Conn: nc, s: s}, nil
}

func (s *tlsSniffer) sawTLS() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tls
}

func (s *tlsSniffer) silent() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.bytes
}

// sniffConn looks at the first two bytes read from its connection.
type sniffConn struct {
	net.Conn
	s    *tlsSniffer
	head [2]byte
	n    int
}

func (c *sniffConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.n < len(c.head) && n > 0 {
		c.n += copy(c.head[c.n:], p[:n])
		c.s.mu.Lock()
		c.s.bytes = true
		if c.n == len(c.head) && (c.head[0] == 21 || c.head[0] == 22) && c.head[1] == 3 {
			c.s.tls = true
		}
		c.s.mu.Unlock()
	}
	return n, err
}

// NetConn returns the socket, so that rpc cuts a blocked write short on
// it as it does on the socket itself.
func (c *sniffConn) NetConn() net.Conn { return c.Conn }
