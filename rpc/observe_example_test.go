package rpc_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
)

// callKey is the labels of a metric series: the method's full name and
// the answer's status, as gRPC's grpc_server_handled_total is labelled by
// method and code.
type callKey struct {
	method string
	status uint32
}

// callSeries holds a series' counters: calls, payload bytes each way and
// a histogram of handler latency.
type callSeries struct {
	calls, bytesIn, bytesOut uint64
	buckets                  []uint64 // one per bound of latencyBounds, then +Inf
}

var latencyBounds = []time.Duration{time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond, time.Second}

// serverMetrics is an Observer that keeps what a dashboard graphs, by
// method and status. It closes over its server for the method names.
type serverMetrics struct {
	s      *rpc.Server
	mu     sync.Mutex
	series map[callKey]*callSeries
}

func (m *serverMetrics) observe(ev rpc.CallEvent) {
	k := callKey{m.s.MethodName(ev.Method), ev.Status}
	if k.method == "" {
		k.method = "unknown" // an ordinal no generated service names
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	sr := m.series[k]
	if sr == nil {
		sr = &callSeries{buckets: make([]uint64, len(latencyBounds)+1)}
		m.series[k] = sr
	}
	sr.calls++
	sr.bytesIn += uint64(ev.BytesIn)
	sr.bytesOut += uint64(ev.BytesOut)
	sr.buckets[sort.Search(len(latencyBounds), func(i int) bool { return ev.Duration <= latencyBounds[i] })]++
}

// An observer that exports the metrics one graphs for a service: calls by
// method and status (errors by code), handler latency as a histogram,
// payload bytes each way, and connections from Server.Stats. In a
// service, the series would be written out in the format of the metrics
// system (Prometheus text, OpenTelemetry) rather than printed. The
// observer sees health checks too, which probes make: a dashboard may
// leave out rpc.HealthMethodName.
func ExampleWithObserver() {
	m := &serverMetrics{series: map[callKey]*callSeries{}}
	s := rpc.NewServer(rpc.WithObserver(m.observe))
	m.s = s
	base := s.MountNamed("demo.Users", 1, func(uint32) string { return "get" })
	s.Handle(base+1, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		if len(req) == 0 {
			return resp, rpc.Errorf(rpc.StatusBadRequest, "empty id")
		}
		return append(resp, "user "...), nil
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go s.Serve(l)
	defer s.Close()

	ctx := context.Background()
	c, err := rpc.Dial(ctx, "tcp", l.Addr().String())
	if err != nil {
		panic(err)
	}
	defer c.Close()
	c.Call(ctx, base+1, []byte("7"), nil)
	c.Call(ctx, base+1, []byte("42"), nil)
	c.Call(ctx, base+1, nil, nil)
	c.Call(ctx, 99, nil, nil)
	rpc.CheckHealth(ctx, c, "")

	// The observer runs before each answer is written, so every call
	// above has been seen.
	m.mu.Lock()
	keys := make([]callKey, 0, len(m.series))
	for k := range m.series {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b callKey) int {
		if a.method != b.method {
			if a.method < b.method {
				return -1
			}
			return 1
		}
		return int(a.status) - int(b.status)
	})
	for _, k := range keys {
		sr := m.series[k]
		var inBuckets uint64
		for _, n := range sr.buckets {
			inBuckets += n
		}
		fmt.Printf("%s %d: calls %d, bytes in %d out %d, latency observations %d\n",
			k.method, k.status, sr.calls, sr.bytesIn, sr.bytesOut, inBuckets)
	}
	m.mu.Unlock()
	st := s.Stats()
	fmt.Printf("connections open %d, accepted %d\n", st.Active, st.Accepted)
	// Output:
	// /demo.Users/get 200: calls 2, bytes in 3 out 10, latency observations 2
	// /demo.Users/get 400: calls 1, bytes in 0 out 8, latency observations 1
	// /rpc.Health/check 200: calls 1, bytes in 0 out 20, latency observations 1
	// unknown 404: calls 1, bytes in 0 out 14, latency observations 1
	// connections open 1, accepted 1
}
