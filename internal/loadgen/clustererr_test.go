package loadgen

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/rpc"
)

// closingListener accepts connections and ends each without a byte, as a
// TLS server does to a peer whose first bytes are no handshake: it shuts
// its side at once and reads the peer's until the peer closes, so that
// the peer reads EOF (a close with its bytes unread would reset the
// connection instead, at times).
func closingListener(t *testing.T) string {
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
			go func() {
				defer c.Close()
				c.(*net.TCPConn).CloseWrite()
				io.Copy(io.Discard, c)
			}()
		}
	}()
	return l.Addr().String()
}

// A cluster target none of whose replicas is up fails with the replicas'
// errors kept as errors: errors.Is sees the rpc.ErrClosed of a replica
// that closed the connection unanswered (zapcodec load's hint to dial
// with -tls reads it), and the text names every replica's failure. They
// were joined as plain text, and errors.Is saw nothing beneath.
func TestClusterNoReplicaKeepsErrors(t *testing.T) {
	a, b := closingListener(t), closingListener(t)
	_, err := New(context.Background(), Config{Target: "static:///" + a + "," + b, Conns: 1, Calls: 1, Method: mEcho})
	if err == nil {
		t.Fatal("dial of replicas that close every connection succeeded")
	}
	if !errors.Is(err, rpc.ErrClosed) {
		t.Errorf("errors.Is(%v, rpc.ErrClosed) = false", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "no replica of static:///"+a+","+b+" is up: ") || strings.Count(msg, ": EOF") != 2 || strings.Count(msg, "; ") != 1 {
		t.Errorf("error %q: want both replicas' failures, joined by \"; \"", msg)
	}
}
