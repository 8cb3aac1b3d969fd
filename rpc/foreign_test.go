package rpc

import (
	"context"
	"net"
	"strings"
	"testing"
)

// TestServerNamesForeignProtocol: a plaintext server reached by an HTTP
// client, or by a TLS client, logs that the peer sent an HTTP request or
// a TLS handshake, not a frame length nobody can make sense of.
func TestServerNamesForeignProtocol(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"get", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "the peer sent an HTTP request"},
		{"post", "POST /rpc HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", "the peer sent an HTTP request"},
		{"h2", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "the peer sent an HTTP/2 connection preface"},
		{"tls", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", "the peer sent a TLS handshake"},
		// A record under 256 bytes is a length within the limit; the
		// client waits for our answer, and the server used to wait for
		// the read deadline.
		{"short tls", "\x16\x03\x01\x00\x40\x01\x00\x00\x3c\x03\x03", "the peer sent a TLS handshake"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, addr, logs := testServer(t)
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			if _, err := nc.Write([]byte(tc.in)); err != nil {
				t.Fatal(err)
			}
			await(t, "the closing connection in the log", func() bool { return contains(logs.String(), "rpc: closing connection") })
			if l := logs.String(); !contains(l, tc.want) {
				t.Fatalf("log does not say %q:\n%s", tc.want, l)
			}
		})
	}
}

// TestClientNamesForeignProtocol: a client whose peer answers with an
// HTTP response, or a TLS alert (a TLS server that got plaintext), fails
// its call with an error that says so.
func TestClientNamesForeignProtocol(t *testing.T) {
	for _, tc := range []struct{ name, reply, want string }{
		{"http", "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", "the peer sent an HTTP response"},
		{"tls alert", "\x15\x03\x03\x00\x02\x02\x46", "the peer sent a TLS alert"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := net.Pipe()
			go func() {
				buf := make([]byte, 4096)
				b.Read(buf) // the request, in part or whole
				b.Write([]byte(tc.reply))
				b.Close()
			}()
			c := NewClient(a)
			defer c.Close()
			_, err := c.Call(context.Background(), mEcho, []byte("hi"), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Call: %v; want an error saying %q", err, tc.want)
			}
		})
	}
}
