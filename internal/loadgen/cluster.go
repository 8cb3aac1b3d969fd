package loadgen

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
	"github.com/zapcodec/zapcodec/rpc/cluster"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// clusterConn is a run's one rpc/cluster client (Config.Target): every
// worker calls through it, and it spreads the calls over the replicas.
type clusterConn struct {
	c *cluster.Client
	// Wire bytes of the calls, counted from the calls (payloads, envelope
	// and frame headers) since the cluster's sockets are its own.
	in, out atomic.Uint64
	// mdLen is what Config.Metadata adds to each request envelope of
	// the run's method (the cluster's health checks carry none).
	mdLen  int
	method uint32
}

func (cc *clusterConn) Call(ctx context.Context, method uint32, req, resp []byte) ([]byte, error) {
	return cc.c.Call(ctx, method, req, resp)
}

// Closed is false: the cluster client replaces the connections that
// break, and its calls fail with cluster.ErrNoReplica while none is up.
func (cc *clusterConn) Closed() bool { return false }

func (cc *clusterConn) Close() error { return cc.c.Close() }

// connecting reports whether a replica of c has not had its first try
// yet.
func connecting(c *cluster.Client) bool {
	for _, r := range c.Stats().Replicas {
		if r.State == "connecting" {
			return true
		}
	}
	return false
}

// observe counts a call's wire bytes (each attempt on the wire).
func (cc *clusterConn) observe(ev rpc.CallEvent) {
	n := 5 + wire.RequestOverhead + ev.BytesOut
	if ev.Method == cc.method {
		n += cc.mdLen
	}
	cc.out.Add(uint64(n))
	if ev.Status != 0 {
		cc.in.Add(uint64(5 + wire.ResponseOverhead + ev.BytesIn))
	}
}

// dialCluster dials cfg.Target with cfg.Conns connections per replica
// and waits, within ctx, until a replica is admitted: a load run against
// a service none of whose replicas answers fails at once, saying why. It
// then waits, within ctx and cfg.DialTimeout, until every replica has had
// its first try (admitted or not), so that the first calls spread over
// all the replicas that are up: cluster.Dial returns at the first one
// admitted, and a short run could make every call before the next.
func dialCluster(ctx context.Context, cfg Config) (*clusterConn, error) {
	cc := &clusterConn{method: cfg.Method}
	if md := encodeMetadata(cfg.Metadata); md != nil {
		cc.mdLen = wire.RequestLen(&wire.Request{Metadata: md}) - wire.RequestLen(&wire.Request{})
	}
	opts := append([]rpc.ClientOption{rpc.WithObserver(cc.observe)}, cfg.ClientOptions...)
	if cfg.TLS != nil {
		opts = append(opts, rpc.WithTLSConfig(cfg.TLS))
	}
	c, err := cluster.Dial(ctx, cfg.Target,
		cluster.WithNetwork(cfg.Network),
		cluster.WithConnsPerReplica(cfg.Conns),
		cluster.WithClientOptions(opts...))
	if err != nil {
		return nil, err
	}
	wctx := ctx
	if cfg.DialTimeout > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, cfg.DialTimeout)
		defer cancel()
	}
	for connecting(c) {
		if !sleepCtx(wctx, 5*time.Millisecond) {
			break
		}
	}
	st := c.Stats()
	for _, r := range st.Replicas {
		if r.LastError == nil {
			continue
		}
		if x := explainOutOfFiles(r.LastError, cfg.Conns*len(st.Replicas)); x != r.LastError {
			// Some replicas may be up, but the run would go on with
			// fewer connections than it says, the client dialing the
			// others again and again in vain.
			c.Close()
			return nil, fmt.Errorf("replica %s: %w", r.Addr, x)
		}
	}
	for _, r := range st.Replicas {
		if r.State == "ready" {
			cc.c = c
			return cc, nil
		}
	}
	var why replicaErrors
	for _, r := range st.Replicas {
		if r.LastError != nil {
			// Out of open files, the error says the limit and how to
			// raise it.
			why = append(why, explainOutOfFiles(r.LastError, cfg.Conns*len(st.Replicas)))
		}
	}
	c.Close()
	if len(why) == 0 && st.LastError != nil {
		why = append(why, st.LastError)
	}
	if len(why) == 0 {
		why = append(why, errors.New("no address resolved"))
	}
	return nil, fmt.Errorf("no replica of %s is up: %w", cfg.Target, why)
}

// replicaErrors are the errors of the replicas of a target none of which
// is up, each kept as it came (errors.Is and errors.As see every one,
// the EOF of a TLS replica dialed plain, say), read as their texts
// joined by "; ".
type replicaErrors []error

func (e replicaErrors) Error() string {
	var b strings.Builder
	for i, err := range e {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(err.Error())
	}
	return b.String()
}

func (e replicaErrors) Unwrap() []error { return e }
