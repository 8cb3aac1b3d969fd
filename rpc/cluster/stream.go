package cluster

import (
	"context"

	"github.com/zapcodec/zapcodec/rpc"
)

var _ rpc.StreamOpener = (*Client)(nil)

// OpenStream opens a stream (see rpc.Client.OpenStream) on a connection
// the balancer picks; the stream stays on that connection. An open refused
// because the connection was going away is tried once more elsewhere,
// under the same rules as Call. A connection the client retires (its
// replica left the resolver's answer, or was ejected) is closed only once
// its streams have ended too, or after the drain timeout
// ([WithDrainTimeout]), which ends them with an error matching
// rpc.ErrClosed. Interceptors do not run around streams.
func (c *Client) OpenStream(ctx context.Context, method uint32, init []byte) (*rpc.Stream, error) {
	c.calls.Add(1)
	c.budget.call()
	retried := false
	var avoid *replica
	for {
		cn, err := c.pick(ctx, avoid)
		if err != nil {
			c.failed.Add(1)
			return nil, err
		}
		st, err := cn.rc.OpenStream(ctx, method, init)
		cn.inflight.Add(-1)
		if err == nil {
			return st, nil
		}
		c.account(cn, err)
		if c.mayRetry(ctx, err, &retried) {
			avoid = cn.r
			continue
		}
		c.failed.Add(1)
		return nil, err
	}
}
