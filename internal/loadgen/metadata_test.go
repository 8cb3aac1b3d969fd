package loadgen

import (
	"context"
	"net"
	"testing"

	"github.com/zapcodec/zapcodec/rpc"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// mdServer answers method 1 with its request when the call carried the
// metadata tenant=blue and trace=a=b, and 400 otherwise.
func mdServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := rpc.NewServer()
	s.Handle(1, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		md := rpc.MetadataFrom(ctx)
		if string(md.Get("tenant")) != "blue" || string(md.Get("trace")) != "a=b" || md.Len() != 2 {
			return resp, rpc.Errorf(rpc.StatusBadRequest, "metadata %d pairs", md.Len())
		}
		return append(resp, req...), nil
	})
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
	return l.Addr().String()
}

// Every call of a run carries Config.Metadata, whichever client makes
// it (rpc.Client, direct, cluster; with a Timeout, each call's ctx is a
// worker's scope), and the report's bytes out count its bytes.
func TestMetadataEveryCall(t *testing.T) {
	t.Parallel()
	addr := mdServer(t)
	md := []string{"tenant", "blue", "trace", "a=b"}
	mdLen := uint64(wire.RequestLen(&wire.Request{Metadata: encodeMetadata(md)}) - wire.RequestLen(&wire.Request{}))
	const calls = 40
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"rpc", Config{Addr: addr, Conns: 2, Concurrency: 4}},
		{"rpc with a timeout", Config{Addr: addr, Conns: 1, Concurrency: 2, Timeout: DefaultTimeout}},
		{"direct", Config{Addr: addr, Conns: 2, Concurrency: 1, Direct: true}},
		{"direct with a timeout", Config{Addr: addr, Conns: 1, Concurrency: 1, Direct: true, Timeout: DefaultTimeout}},
		{"cluster", Config{Target: "static:///" + addr, Conns: 1, Concurrency: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Calls, cfg.Method, cfg.Payload = calls, 1, []byte("x")
			without := run(t, cfg)
			cfg.Metadata = md
			with := run(t, cfg)
			if with.OK != calls {
				t.Fatalf("with metadata: %d of %d calls OK (statuses %v, errors %v)", with.OK, calls, with.Statuses, with.Errors)
			}
			if without.Statuses["400"] != calls {
				t.Fatalf("without metadata: statuses %v, want %d answered 400", without.Statuses, calls)
			}
			// The requests are the same but for the metadata: the
			// bytes out (of the sockets) differ by its bytes. (A
			// cluster's count is TestClusterCountsMetadata's.)
			if tc.cfg.Target == "" {
				if d := with.BytesOut - without.BytesOut; d != calls*mdLen {
					t.Errorf("bytes out %d with metadata, %d without: %d more, want %d (%d a call)", with.BytesOut, without.BytesOut, d, calls*mdLen, mdLen)
				}
			}
		})
	}
}

func TestMetadataOddCount(t *testing.T) {
	t.Parallel()
	_, err := New(context.Background(), Config{Addr: "127.0.0.1:1", Method: 1, Metadata: []string{"k"}})
	if err == nil || err.Error() != "loadgen: 1 metadata strings: want key, value pairs" {
		t.Fatalf("New with an odd metadata count: %v", err)
	}
}

// A cluster run counts its bytes out from the calls: the metadata's
// share is added to the run's method's requests, not to the health checks.
func TestClusterCountsMetadata(t *testing.T) {
	t.Parallel()
	cc := &clusterConn{method: 7, mdLen: 30}
	cc.observe(rpc.CallEvent{Client: true, Method: 7, Status: 200, BytesOut: 3})
	cc.observe(rpc.CallEvent{Client: true, Method: rpc.HealthMethod, Status: 200, BytesOut: 0})
	if got, want := cc.out.Load(), uint64(2*(5+wire.RequestOverhead)+3+30); got != want {
		t.Fatalf("bytes out %d, want %d", got, want)
	}
}
