package rpc

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// Pool spreads calls over several client connections, to one or several
// addresses, so that one process can use several cores and servers. It is
// safe for concurrent use and implements [Caller].
//
// Calls go round-robin over the connections. A connection that broke,
// received a go-away, or was closed by its client as hung (write timeout,
// answer timeout, see [WithAnswerTimeout]) is replaced by a new one
// (dialed on the next call that picks it), and a call refused with a
// retryable error ([IsRetryable]) is sent again, once, on the next
// connection; other errors are returned as they are.
type Pool struct {
	network string
	addrs   []string
	opts    []ClientOption

	next   atomic.Uint32
	closed atomic.Bool
	conns  []poolConn
	chain  Invoker // the interceptors around call, nil without
}

type poolConn struct {
	mu sync.Mutex // serialises redials of this entry
	c  atomic.Pointer[Client]
}

// NewPool dials size connections (size <= 0: one per address), spread
// round-robin over addrs, and returns a pool of them. ctx bounds the
// initial dials; opts apply to every connection.
func NewPool(ctx context.Context, network string, addrs []string, size int, opts ...ClientOption) (*Pool, error) {
	if len(addrs) == 0 {
		return nil, errors.New("rpc: NewPool needs at least one address")
	}
	if size <= 0 {
		size = len(addrs)
	}
	p := &Pool{
		network: network,
		addrs:   append([]string(nil), addrs...),
		opts:    append([]ClientOption(nil), opts...),
		conns:   make([]poolConn, size),
	}
	p.chain = chainInvoker(buildClientOptions(opts).interceptors, p.call)
	for i := range p.conns {
		c, err := p.dial(ctx, i)
		if err != nil {
			p.Close()
			return nil, err
		}
		p.conns[i].c.Store(c)
	}
	return p, nil
}

func (p *Pool) dial(ctx context.Context, i int) (*Client, error) {
	return Dial(ctx, p.network, p.addrs[i%len(p.addrs)], p.opts...)
}

// Call sends the call on the next usable connection (see [Client.Call] for
// the buffers and errors). It fails with ErrClosed after Close.
//
// A call is sent again, once, on the next connection only when it
// certainly did not run ([IsRetryable]: the server refused it unrun, or
// announced go-away before it was sent); a call that may have run (any
// answer a handler gave, ErrClosed, a ctx error) is never sent again. A
// connection that cannot be dialed is skipped (nothing was sent on it).
//
// Interceptors ([WithClientInterceptors]) run once around the whole call,
// retry included; the observer sees each attempt.
func (p *Pool) Call(ctx context.Context, method uint32, req, resp []byte) ([]byte, error) {
	if p.chain != nil {
		return p.chain(ctx, method, req, resp)
	}
	return p.call(ctx, method, req, resp)
}

// call is Call without the interceptors.
func (p *Pool) call(ctx context.Context, method uint32, req, resp []byte) ([]byte, error) {
	n := uint32(len(p.conns))
	start := p.next.Add(1)
	var lastErr error = ErrClosed
	lastOut := resp
	retried := false
	for i := uint32(0); i <= n; i++ {
		if p.closed.Load() {
			return resp, ErrClosed
		}
		k := (start + i) % n
		c, err := p.get(ctx, int(k))
		if err != nil {
			lastErr = err
			continue
		}
		out, err := c.unary(ctx, method, req, resp)
		if err != nil && IsRetryable(err) && !retried {
			retried = true
			lastOut, lastErr = out, err
			continue
		}
		return out, err
	}
	return lastOut, lastErr
}

// get returns connection k, redialing it when it is closed or draining.
// The old client is not closed here: a draining one still receives the
// answers of its pending calls and is closed by its server.
func (p *Pool) get(ctx context.Context, k int) (*Client, error) {
	pc := &p.conns[k]
	c := pc.c.Load()
	if c != nil && !c.Closed() && !c.Draining() {
		return c, nil
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if c2 := pc.c.Load(); c2 != c && c2 != nil && !c2.Closed() && !c2.Draining() {
		return c2, nil // redialed by another caller
	}
	nc, err := p.dial(ctx, k)
	if err != nil {
		return nil, err
	}
	if p.closed.Load() {
		nc.Close()
		return nil, ErrClosed
	}
	pc.c.Store(nc)
	if c != nil && c.Closed() {
		c.Close()
	}
	return nc, nil
}

// Close closes every connection; pending calls fail with ErrClosed.
func (p *Pool) Close() error {
	p.closed.Store(true)
	for i := range p.conns {
		pc := &p.conns[i]
		pc.mu.Lock()
		if c := pc.c.Load(); c != nil {
			c.Close()
		}
		pc.mu.Unlock()
	}
	return nil
}
