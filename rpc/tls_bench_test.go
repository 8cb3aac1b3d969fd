package rpc

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// BenchmarkUnaryTLS is BenchmarkUnary (64-byte echo, one connection) over
// TLS 1.3, with calls under context.Background and under a ctx with a
// deadline. Writes over TLS cannot be cut at a ctx's end and resumed (see
// resumableConn), so a flusher whose ctx can end hands its write to the
// connection's writer goroutine (outbox.handToWriter); ctx=deadline
// measures that. crypto/tls allocates once per read of the socket (the
// reader it passes to bytes.Buffer.ReadFrom): the allocations reported
// are those, on both ends.
func BenchmarkUnaryTLS(b *testing.B) {
	tlsServer, tlsClient := tlsOptions(b)
	for _, ctxKind := range []string{"background", "deadline"} {
		for _, callers := range []int{1, 256} {
			b.Run(fmt.Sprintf("ctx=%s/callers=%d", ctxKind, callers), func(b *testing.B) {
				_, addr, _ := testServer(b, tlsServer)
				c := dial(b, addr, tlsClient)
				ctx := context.Background()
				if ctxKind == "deadline" {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, time.Hour)
					defer cancel()
				}
				benchCallsCtx(b, c, ctx, mEcho, 64, callers)
			})
		}
	}
}

// BenchmarkFloorMuxTLS is the floor of BenchmarkUnaryTLS: BenchmarkFloorMux's
// hand-multiplexed client and raw echo server, over TLS 1.3.
func BenchmarkFloorMuxTLS(b *testing.B) {
	cert, roots := selfSigned(b)
	for _, callers := range []int{1, 256} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			tl := tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{cert}})
			b.Cleanup(func() { tl.Close() })
			go rawAccept(tl, echoFrames)
			nc, err := tls.Dial("tcp", l.Addr().String(), &tls.Config{RootCAs: roots})
			if err != nil {
				b.Fatal(err)
			}
			benchMuxConn(b, nc, 64+wire.RequestOverhead, callers, false)
		})
	}
}
