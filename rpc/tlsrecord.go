package rpc

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"
)

// recordConn is the socket under a TLS connection the server made itself
// (WithTLSConfig): it follows the TLS records in the raw byte stream and
// bounds the wait for the rest of a record.
//
// Why: crypto/tls hands the read loop a record's bytes only once the
// record is whole, so the frame deadline (readtimeout.go) never sees a
// frame begin while a peer trickles the record that carries it: the wait
// stays under the idle limit, 5 minutes by default. Here a record that
// has begun must be whole within the read timeout, plus a second per
// WithMinReadRate bytes of the record (its length from its header),
// counted from the first Read that waits inside it, not from its first
// byte: bytes of the next record read along with the end of one may sit
// in crypto/tls's buffer while the server is busy, which is no fault of
// the peer (the frame clock starts the same way, at the loop's first
// wait inside the frame). When the limit passes, Read fails for good with
// errRecordTimeout: crypto/tls keeps a non-timeout error and fails every
// later read with it, and the read loop closes the connection. (A timeout
// would make the read loop re-arm its own deadline, see deadlineFired, and
// the record's past limit would end every wait at once.)
//
// Cost: between records no deadline is set (an idle connection keeps no
// timer); the first Read that waits inside a record sets the socket's
// deadline to the earlier of the record's limit and the deadline the
// server set (tls.Conn.SetReadDeadline forwards here; again if the
// record's header was split and is whole now), and the Read that makes
// the record whole sets the server's again. Records that arrive whole in
// a Read, as calls' records mostly do, cost nothing. A deadline the
// server sets (pokeRead's past one among them) applies at once, as on a
// plain socket. The handshake's records are bounded so too (the whole
// handshake gets the read timeout anyway).
//
// A listener that is already TLS (tls.NewListener) hands the server
// connections whose socket it cannot reach: there a trickled record is
// held to the idle limit only.
//
// Only the reading goroutine uses the record fields; crypto/tls runs one
// Read at a time.
type recordConn struct {
	net.Conn
	timeout time.Duration // the read timeout
	rate    int           // WithMinReadRate: bytes that earn a second

	// Where the raw stream is: hn bytes of a record header (in hdr), or
	// rem bytes of a record's body still to come; recLen is that record's
	// length, header included (0 while its header is not whole).
	hdr    [recordHeaderLen]byte
	hn     int
	rem    int
	recLen int
	// waitAt is when the first Read inside the current record began
	// (monoNow), 0 while no Read has waited inside it; limitLen is the
	// recLen its limit was set for.
	waitAt   int64
	limitLen int
	failed   error // errRecordTimeout, for every Read once returned

	mu      sync.Mutex
	server  time.Time // the read deadline the server set
	limit   int64     // the record's limit (monoNow) while waitAt != 0, else 0
	applied time.Time // the read deadline on the socket
}

const (
	recordHeaderLen = 5
	// maxRecordLen is the longest record TLS allows (1.2: 2^14 bytes of
	// plaintext + 2,048 of expansion), for a record whose header is not
	// whole yet.
	maxRecordLen = recordHeaderLen + 1<<14 + 2048
)

// errRecordTimeout is the error of a TLS record not whole in time.
var errRecordTimeout = errors.New("rpc: TLS record not received within the read timeout")

func newRecordConn(nc net.Conn, timeout time.Duration, rate int) *recordConn {
	return &recordConn{Conn: nc, timeout: timeout, rate: rate}
}

func (r *recordConn) inRecord() bool { return r.hn != 0 || r.rem != 0 }

func (r *recordConn) Read(b []byte) (int, error) {
	if r.failed != nil {
		return 0, r.failed
	}
	if r.waitAt == 0 && r.inRecord() {
		// The first wait inside this record: its clock starts.
		r.waitAt = monoNow()
		r.setLimit()
	}
	n, err := r.Conn.Read(b)
	if r.follow(b[:n]) && r.waitAt != 0 {
		// The record waited for is whole: the server's deadline again.
		r.waitAt, r.limitLen = 0, 0
		r.mu.Lock()
		r.limit = 0
		r.applyLocked()
		r.mu.Unlock()
	} else if r.waitAt != 0 && r.recLen != r.limitLen {
		// Its header, split across reads, is whole now: the limit
		// follows the record's length.
		r.setLimit()
	}
	if r.waitAt != 0 && errors.Is(err, os.ErrDeadlineExceeded) {
		if now := monoNow(); now >= r.limit {
			r.failed = fmt.Errorf("%w: %v after the server began waiting for the rest of it (%d bytes of the record still to come; WithReadTimeout %v, WithMinReadRate %d B/s)",
				errRecordTimeout, time.Duration(now-r.waitAt).Round(time.Millisecond), r.missing(), r.timeout, r.rate)
			return n, r.failed
		}
	}
	return n, err
}

// setLimit sets the limit of the record waited for (since r.waitAt): the
// read timeout plus a second per rate bytes of the record, of the longest
// one while its header is not whole.
func (r *recordConn) setLimit() {
	r.limitLen = r.recLen
	n := r.recLen
	if n == 0 {
		n = maxRecordLen
	}
	allow := int64(r.timeout)
	if r.rate > 0 {
		allow += int64(n) * int64(time.Second) / int64(r.rate)
	}
	r.mu.Lock()
	r.limit = r.waitAt + allow
	r.applyLocked()
	r.mu.Unlock()
}

// follow moves the record position over p, the bytes a Read returned. It
// reports whether a record that was begun before p ends in it.
func (r *recordConn) follow(p []byte) (ended bool) {
	for len(p) != 0 {
		if r.rem != 0 {
			k := min(r.rem, len(p))
			r.rem -= k
			p = p[k:]
			if r.rem == 0 {
				ended, r.recLen = true, 0
			}
			continue
		}
		k := copy(r.hdr[r.hn:], p)
		r.hn += k
		p = p[k:]
		if r.hn == recordHeaderLen {
			r.hn = 0
			r.rem = int(r.hdr[3])<<8 | int(r.hdr[4])
			r.recLen = recordHeaderLen + r.rem
			if r.rem == 0 {
				ended, r.recLen = true, 0
			}
		}
	}
	return ended
}

// missing is the number of bytes of the current record still to come
// (its header's, when that is not whole).
func (r *recordConn) missing() int {
	if r.hn != 0 {
		return recordHeaderLen - r.hn
	}
	return r.rem
}

func (r *recordConn) SetReadDeadline(t time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.server = t
	return r.applyLocked()
}

func (r *recordConn) SetDeadline(t time.Time) error {
	if err := r.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	return r.SetReadDeadline(t)
}

// applyLocked sets the socket's read deadline to the earlier of the
// server's and the record's, unless it is set so. Called with mu held.
func (r *recordConn) applyLocked() error {
	want := r.server
	if r.limit != 0 {
		if at := monoTime(r.limit); want.IsZero() || at.Before(want) {
			want = at
		}
	}
	if want.Equal(r.applied) {
		return nil
	}
	r.applied = want
	return r.Conn.SetReadDeadline(want)
}
