// Package plainserver is the baseline a zapcodec rpc.Server is measured
// against with many connections: a plain goroutine-per-connection ZAP-RPC
// server, as one would write it by hand with the standard library. Each
// connection has its own goroutine, a bufio.Reader and a bufio.Writer (4
// KiB each); it reads a request frame, runs the handler on that goroutine,
// appends the answer, and flushes when no further request is buffered. It
// has no multiplexing of slow calls, no timeouts, no in-flight bound, no
// go-away: only the bytes a canonical client expects. Not for production.
// Its memory follows the bytes received all the same: a frame's buffer
// grows as its bytes arrive, not to the length its header declares.
package plainserver

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"sync"

	"github.com/zapcodec/zapcodec/rpc"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// Func answers one call: it appends the answer body for the request
// payload req of the given method to resp and returns it with the
// status. req and resp are valid only during the call.
type Func func(method uint32, req, resp []byte) (status uint32, body []byte)

// maxFrame bounds a request frame (rpc's default maximum).
const maxFrame = 16 << 20

// Serve accepts connections on l and serves each on a goroutine of its
// own until l is closed; it returns the accept error.
func Serve(l net.Listener, f Func) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		nc, err := l.Accept()
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			serveConn(nc, f)
		}()
	}
}

// serveConn serves one connection until it ends or breaks.
func serveConn(nc net.Conn, f Func) {
	defer nc.Close()
	br := bufio.NewReader(nc)
	bw := bufio.NewWriter(nc)
	var hdr [5]byte
	var frame, resp, out []byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return
		}
		n := int(binary.LittleEndian.Uint32(hdr[:]))
		if n == 0 || n > maxFrame {
			return
		}
		var err error
		if frame, err = readBody(br, frame, n-1); err != nil {
			return
		}
		if hdr[4] != wire.KindRequest {
			continue
		}
		req, err := wire.ParseRequest(frame)
		if err != nil {
			var ee *wire.EnvelopeError
			if !errors.As(err, &ee) || !ee.HasPromise {
				return
			}
			out = append(out[:0], ee.Reason...)
			if !answer(bw, rpc.StatusBadRequest, ee.PromiseID, out) {
				return
			}
			continue
		}
		status, body := f(req.Method, req.Payload, resp[:0])
		if cap(body) > cap(resp) {
			resp = body[:0]
		}
		if !answer(bw, status, req.PromiseID, body) {
			return
		}
		if br.Buffered() == 0 {
			if bw.Flush() != nil {
				return
			}
		}
	}
}

// readBody reads a frame body of n bytes into buf (reused when its
// capacity holds n) and returns it. A body larger than buf grows with
// the bytes that arrive, at most doubling what has arrived, never to the
// declared length at once: a peer that declares 16 MiB and sends a byte
// costs no 16 MiB buffer.
func readBody(br *bufio.Reader, buf []byte, n int) ([]byte, error) {
	if n <= cap(buf) {
		buf = buf[:n]
		_, err := io.ReadFull(br, buf)
		return buf, err
	}
	buf = buf[:0]
	for len(buf) < n {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(n-len(buf), max(len(buf), 4<<10)))
		}
		m, err := br.Read(buf[len(buf):min(cap(buf), n)])
		buf = buf[:len(buf)+m]
		if err != nil && len(buf) < n {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return buf, err
		}
	}
	return buf, nil
}

// answer writes one response frame to bw.
func answer(bw *bufio.Writer, status, pid uint32, body []byte) bool {
	var h [5 + wire.ResponseOverhead]byte
	b := binary.LittleEndian.AppendUint32(h[:0], uint32(1+wire.ResponseOverhead+len(body)))
	b = append(b, wire.KindResponse)
	b = wire.AppendResponseHeader(b, status, pid, len(body))
	bw.Write(b)
	_, err := bw.Write(body)
	return err == nil
}
