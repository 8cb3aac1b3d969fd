package loadgen

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/rpc"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// callConn is a connection workers call through: an *rpc.Client, or a
// directConn.
type callConn interface {
	Call(ctx context.Context, method uint32, req, resp []byte) ([]byte, error)
	Closed() bool
	Close() error
}

// directConn makes one call at a time on its connection, on the caller's
// goroutine: it writes the request frame and reads frames until the
// answer. It is what a run with Concurrency 1 needs of a client, without
// rpc.Client's read goroutine, table of pending calls and hand-off of
// each answer between two goroutines: with thousands of connections on
// few cores, the load tool then takes less of the CPU the server needs.
// The bytes on the wire are rpc.Client's (the canonical envelope).
type directConn struct {
	nc      net.Conn
	r       *frame.Reader
	buf     []byte
	md      []byte // the metadata extension of every request (Config.Metadata), nil without
	pid     uint32
	broken  bool
	goAway  bool
	ctx     context.Context // the ctx whose end cuts the connection's I/O
	stopCtx func() bool
	// cutMu orders a ctx's cut of the I/O (a past deadline, set from
	// the ctx's AfterFunc) against its undoing when the call is
	// abandoned: a cut registered before the last undoing (cutGen) does
	// nothing.
	cutMu  sync.Mutex
	cutGen uint64
}

func newDirectConn(nc net.Conn) *directConn {
	return &directConn{nc: nc, r: frame.NewReader(nc), buf: make([]byte, 0, 256)}
}

// past is a deadline that has passed: it makes blocked I/O return.
var past = time.Unix(1, 0)

// Call sends the request and waits for its answer. A non-200 answer is an
// *rpc.StatusError. When ctx ends first (the call's Timeout, or the run's
// grace is over), the wait is cut and the call abandoned, as rpc.Client
// abandons one: ctx's error is returned and the connection kept, the
// late answer skipped by the next call (it reads past answers to other
// promise ids). Only a request cut partway through its write (the
// stream then holds half a frame) closes the connection.
func (d *directConn) Call(ctx context.Context, method uint32, req, resp []byte) ([]byte, error) {
	if d.broken {
		return resp, rpc.ErrClosed
	}
	if d.goAway {
		return resp, rpc.ErrGoAway
	}
	if err := ctx.Err(); err != nil {
		return resp, err
	}
	if ctx != d.ctx && ctx.Done() != nil {
		if d.stopCtx != nil && !d.stopCtx() {
			// The last ctx ended after its call returned (the run's
			// watch gave the call up as it was answered): undo its
			// cut, made or to come, or the next call's I/O would fail.
			d.uncut()
		}
		d.ctx = ctx
		gen := d.cutGen // written only on this goroutine
		d.stopCtx = context.AfterFunc(ctx, func() {
			d.cutMu.Lock()
			if d.cutGen == gen {
				d.nc.SetDeadline(past)
			}
			d.cutMu.Unlock()
		})
	}
	d.pid++
	if d.pid == 0 {
		d.pid = 1
	}
	b := append(d.buf[:0], 0, 0, 0, 0, wire.KindRequest)
	b = wire.AppendRequest(b, &wire.Request{Method: method, PromiseID: d.pid, Payload: req, Metadata: d.md})
	if n := len(b) - 4; n > frame.DefaultMaxFrameSize {
		// As rpc.Client refuses it: nothing written, the connection
		// kept. (Written, the server closed the connection at its
		// header, and the call failed as "connection closed".)
		d.buf = d.buf[:0]
		return resp, fmt.Errorf("%w (len:%d max:%d)", frame.ErrFrameTooLarge, n, frame.DefaultMaxFrameSize)
	}
	binary.LittleEndian.PutUint32(b, uint32(len(b)-4))
	d.buf = b
	if n, err := d.nc.Write(b); err != nil {
		if n == 0 && d.cut(ctx, err) {
			return resp, d.abandon(ctx) // nothing written
		}
		return resp, d.fail(ctx, err)
	}
	for {
		kind, p, err := d.r.Next()
		if err != nil {
			if d.cut(ctx, err) {
				return resp, d.abandon(ctx)
			}
			return resp, d.fail(ctx, err)
		}
		switch kind {
		case wire.KindResponse:
			r, err := wire.ParseResponse(p)
			if err != nil {
				return resp, d.fail(ctx, err)
			}
			if r.PromiseID != d.pid {
				continue // not ours: a canonical server answers only what it was asked
			}
			resp = append(resp, r.Body...)
			if d.goAway {
				// The last call on this connection: let the server close.
				d.nc.Close()
			}
			if r.Status != rpc.StatusOK {
				msg := r.Body[:min(len(r.Body), rpc.MaxErrorMessage)]
				return resp, &rpc.StatusError{Code: r.Status, Message: string(msg)}
			}
			return resp, nil
		case wire.KindGoAway:
			// Acknowledge (no request of ours follows), then wait for the
			// answer of the call in flight; later calls fail fast.
			if !d.goAway {
				d.goAway = true
				if _, err := d.nc.Write([]byte{1, 0, 0, 0, wire.KindGoAway}); err != nil {
					return resp, d.fail(ctx, err)
				}
			}
		}
	}
}

// cut reports whether err is the past deadline ctx's end set.
func (d *directConn) cut(ctx context.Context, err error) bool {
	return ctx.Err() != nil && errors.Is(err, os.ErrDeadlineExceeded)
}

// abandon gives up the call whose I/O ctx's end cut, keeping the
// connection: it undoes the cut and returns ctx's error. Frames the cut
// read only in part stay buffered in the frame reader, which the next
// call resumes.
func (d *directConn) abandon(ctx context.Context) error {
	if d.stopCtx != nil {
		d.stopCtx()
	}
	d.stopCtx, d.ctx = nil, nil
	d.uncut()
	return ctx.Err()
}

// uncut undoes a ctx's cut of the I/O, and makes a cut registered before
// it do nothing.
func (d *directConn) uncut() {
	d.cutMu.Lock()
	d.cutGen++
	d.nc.SetDeadline(time.Time{})
	d.cutMu.Unlock()
}

// fail breaks the connection; the error is ctx's when ctx cut it.
func (d *directConn) fail(ctx context.Context, err error) error {
	d.broken = true
	d.nc.Close()
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return &net.OpError{Op: "call", Net: "tcp", Err: rpcClosed{err}}
}

// rpcClosed wraps an I/O error so that it matches rpc.ErrClosed.
type rpcClosed struct{ err error }

func (e rpcClosed) Error() string   { return "rpc: connection closed: " + e.err.Error() }
func (e rpcClosed) Unwrap() []error { return []error{rpc.ErrClosed, e.err} }

// Closed reports whether the connection broke or the server told it to go
// away (a Runner's worker then stops using it).
func (d *directConn) Closed() bool { return d.broken || d.goAway }

// Close closes the connection.
func (d *directConn) Close() error {
	if d.stopCtx != nil {
		d.stopCtx()
	}
	d.broken = true
	return d.nc.Close()
}

// encodeMetadata returns the pairs kv (key, value, key, value...) in the
// encoding of the request's metadata extension (rpc.Metadata: each string
// a u32 little-endian length and its bytes), nil for none.
func encodeMetadata(kv []string) []byte {
	var b []byte
	for _, s := range kv {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
	}
	return b
}
