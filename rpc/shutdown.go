package rpc

import (
	"context"
	"fmt"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// States of serverConn.handshake.
const (
	hsNone    = iota // no TLS handshake under way (a plain connection, or it is done)
	hsPending        // the TLS handshake has not finished
	hsGoAway         // it has not, and a go-away waits for it (serve writes it)
)

// goAway sends the go-away frame once. On a TLS connection whose
// handshake has not finished, the frame waits for it (serve writes it):
// a write would wait there too, and the outbox's flush with it, so the
// connection, which cannot have sent a call yet, would not count as
// drained until the handshake ended (its limit is the read timeout).
func (c *serverConn) goAway() {
	if c.goAwaySent.Load() {
		return
	}
	c.quietSince.Store(monoNow()) // before the flag: drained reads both
	if !c.goAwaySent.CompareAndSwap(false, true) {
		return
	}
	if c.handshake.CompareAndSwap(hsPending, hsGoAway) {
		return
	}
	c.writeGoAway()
}

// writeGoAway writes the go-away frame (goAway, or serve for one sent
// during the TLS handshake).
func (c *serverConn) writeGoAway() {
	err := c.out.lock().WriteFrame(wire.KindGoAway, nil)
	err = c.out.flushIf(c.out.unlock(), err)
	if err != nil {
		c.close(nil) // the peer is gone already
	}
}

// drained reports whether a connection told to go away can be closed at
// now (monoNow): no call is running and the peer acknowledged, or ran no
// call for the grace period (calls refused after the go-away do not
// count).
func (c *serverConn) drained(now int64) bool {
	if !c.goAwaySent.Load() || c.inflight.Load() != 0 {
		return false
	}
	if c.acked.Load() {
		return c.outIdle()
	}
	return now-c.quietSince.Load() >= int64(c.s.opts.shutdownGrace) && c.outIdle()
}

// outIdle reports whether every frame appended to the outbox has been
// written (nothing buffered, no flush in progress): closing now loses no
// answer.
func (c *serverConn) outIdle() bool {
	c.out.mu.Lock()
	idle := !c.out.flushing && c.out.cur.Buffered() == 0
	c.out.mu.Unlock()
	return idle
}

// beginClose marks the server closing and closes its listeners. It
// reports false when it was already closing.
func (s *Server) beginClose() (conns []*serverConn, first bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	first = !s.closing
	if first {
		s.closing = true
		close(s.done)
	}
	for l := range s.listeners {
		(*l).Close()
	}
	for c := range s.conns {
		conns = append(conns, c)
	}
	return conns, first
}

// Shutdown stops accepting, sends every connection a go-away frame (kind
// 6), lets in-flight calls finish and their answers go out, then closes
// each connection: at once when the peer acknowledged the go-away (this
// package's client does), else after [WithShutdownGrace] without running
// calls (a TLS connection still in its handshake counts as one without
// calls; should the handshake finish first, the go-away is its first
// frame). A call the server reads after it sent the go-away is not run: it
// is answered at once with 503 and the not-run flag, which this package's
// client reports as [ErrGoAway] (retryable; rpc/cluster sends it to
// another replica).
// Shutdown returns nil once every connection is closed with all its
// answers written. When ctx ends first, it closes the rest at once
// (their handlers' ctx is done; answers not yet written are lost) and
// returns an error that matches ctx's (errors.Is) and says what it cut:
// the connections still open, how many of them had calls running or
// answers not yet written, and the streams open on them. [Server.Close],
// called while Shutdown runs (or before it), cuts it short: Shutdown then
// returns an error matching [ErrServerClosed] (within a few
// milliseconds; Close's own return says when the connections are
// closed), as the connections did not drain.
func (s *Server) Shutdown(ctx context.Context) error {
	conns, _ := s.beginClose()
	for _, c := range conns {
		go c.goAway() // a peer that does not read must not stall Shutdown
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		s.mu.Lock()
		n, closed := len(s.conns), s.closed
		conns = conns[:0]
		for c := range s.conns {
			conns = append(conns, c)
		}
		s.mu.Unlock()
		if closed {
			return errShutdownCut
		}
		if n == 0 {
			return nil
		}
		now := monoNow()
		for _, c := range conns {
			if !c.goAwaySent.Load() { // accepted meanwhile
				go c.goAway()
			}
			if c.goAwaySent.Load() {
				c.shutdownStreams(now, s.opts.shutdownGrace)
			}
			if c.drained(monoNow()) {
				c.close(nil) // the socket's Close runs on its own (see close)
			}
		}
		select {
		case <-ctx.Done():
			err := s.undrained(ctx.Err())
			s.Close()
			return err
		case <-tick.C:
		}
	}
}

// undrained returns Shutdown's error when its ctx ended (cause) before
// every connection drained: it wraps cause and says what is about to be
// cut, the connections still open, how many of them had calls running
// or answers not yet written, and the streams open on them (the others
// waited for their peers to acknowledge the go-away, or for the grace).
func (s *Server) undrained(cause error) error {
	s.mu.Lock()
	conns := make([]*serverConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	busy, streams := 0, 0
	for _, c := range conns {
		if c.inflight.Load() != 0 || !c.outIdle() {
			busy++
		}
		c.streams.mu.Lock()
		streams += len(c.streams.m)
		c.streams.mu.Unlock()
	}
	return fmt.Errorf("rpc: Shutdown: %w: %d connections closed undrained (%d with calls running or answers not yet written; %d streams open)",
		cause, len(conns), busy, streams)
}

// errShutdownCut is what Shutdown returns when Close cut it short.
var errShutdownCut = fmt.Errorf("rpc: Shutdown cut short by Close: %w", ErrServerClosed)

// Close closes the listeners and every connection at once; pending calls
// on them fail at their clients with ErrClosed. Handlers still running get
// a done ctx; their answers are dropped. It returns once every
// connection's Close has returned; the connections are closed in
// parallel, since one Close may block (a TLS connection sends its
// close-notify alert, with a 5 s deadline, to a peer that may not read).
// A Shutdown under way returns an error matching [ErrServerClosed].
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	conns, _ := s.beginClose()
	for _, c := range conns {
		c.close(nil)
	}
	s.connWG.Wait()
	return nil
}
