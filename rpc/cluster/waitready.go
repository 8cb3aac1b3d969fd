package cluster

import (
	"context"
	"fmt"
)

// WaitReady waits until n replicas are ready, or with n <= 0 until every
// replica the resolver names is (and it names at least one). A replica is
// ready when it is admitted and has a connection that takes calls:
// [Stats] lists it "ready", with Conns above 0. It returns nil at once
// when that holds already, and otherwise wakes at each admission,
// ejection, lost connection or change of the resolver's set, not on a
// timer. For n above the replicas named, it waits for the resolver to
// name more.
//
// It is the cluster's WaitForStateChange: [Dial] returns at the first
// admitted replica (or once each address had its first try), and a
// caller that wants more of them before it starts, such as a test that
// counts the calls each replica gets (ExampleDial_inMemory), waits here.
// A call that should wait for a replica rather than fail with
// [ErrNoReplica] needs no WaitReady: [WithWaitForReady] makes it wait.
//
// When ctx ends first, the error matches ctx's error and says how many
// replicas were ready, of how many named, and what last went wrong (a
// resolution, a dial, a health check: [Stats].LastError). After [Close],
// or when Close is called meanwhile, the error matches rpc.ErrClosed.
// While no replica is ready, a WaitReady wants one as a call waiting
// with WithWaitForReady does: the replicas' back-offs are cut short (see
// [WithEjection]).
func (c *Client) WaitReady(ctx context.Context, n int) error {
	waiting, counted := false, false
	defer func() {
		if counted {
			c.mu.Lock()
			c.readyWaits--
			if waiting {
				c.waiting--
			}
			c.mu.Unlock()
		}
	}()
	ready, named, looked := 0, 0, false
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			if !looked {
				return errClientClosed
			}
			return fmt.Errorf("%w: closed while %d of %d replicas were ready", errClientClosed, ready, named)
		}
		ready, named, looked = c.readyCountLocked(), c.namedLocked(), true
		if n > 0 && ready >= n || n <= 0 && named > 0 && ready == named {
			c.mu.Unlock()
			return nil
		}
		if err := ctx.Err(); err != nil {
			last := c.lastErr
			c.mu.Unlock()
			want := "all"
			if n > 0 {
				want = fmt.Sprint(n)
			}
			if last != nil {
				return fmt.Errorf("cluster: %d of %d replicas ready, waiting for %s (last error: %v): %w", ready, named, want, last, err)
			}
			return fmt.Errorf("cluster: %d of %d replicas ready, waiting for %s: %w", ready, named, want, err)
		}
		if ready == 0 {
			// As a call waiting for a replica does (waitReady): the
			// back-offs are cut short while none is ready.
			c.wantLocked()
			if !waiting {
				c.waiting++
				waiting = true
			}
		}
		if !counted {
			c.readyWaits++
			counted = true
		}
		if c.stateCh == nil {
			c.stateCh = make(chan struct{})
		}
		ch := c.stateCh
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
		}
	}
}

// readyCountLocked returns how many replicas have connections in the
// ready set (see publishLocked, which puts a replica's connections side
// by side).
func (c *Client) readyCountLocked() int {
	n := 0
	var last *replica
	for _, cn := range c.ready.Load().conns {
		if cn.r != last {
			n++
			last = cn.r
		}
	}
	return n
}

// namedLocked returns how many replicas the resolver names: those it
// dropped aside.
func (c *Client) namedLocked() int {
	n := 0
	for _, r := range c.replicas {
		if !r.removed.Load() {
			n++
		}
	}
	return n
}
