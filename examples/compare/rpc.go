package compare

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Arm is one RPC stack serving the eth_getBalance handler.
type Arm struct {
	Name string
	// Echo marks the floor: its server echoes the request frame instead of
	// answering it, so a call checks the echo, not a Response.
	Echo bool
	// Start serves t on a fresh loopback listener.
	Start func(t *Table) (Server, error)
}

// Server is a running arm.
type Server interface {
	// Connect makes the client side: the connections that workers share
	// (or, for arms without multiplexing, the dialer workers use).
	Connect(ctx context.Context) (Client, error)
	Close() error
}

// Client is the shared client side of an arm.
type Client interface {
	// NewCaller returns one worker's caller: per-worker scratch state and,
	// for arms without multiplexing, its own connection.
	NewCaller(ctx context.Context) (Caller, error)
	Close() error
}

// Caller makes calls from one goroutine.
type Caller interface {
	// Call sends req and fills resp with the answer (for an Echo arm it
	// checks the echoed bytes and leaves resp alone).
	Call(ctx context.Context, req *Request, resp *Response) error
	Close() error
}

// Arms lists the RPC arms, zapcodec first and the floor last.
func Arms() []Arm {
	return []Arm{
		{Name: "zapcodec rpc", Start: startZapRPC},
		{Name: "gRPC-go (protobuf)", Start: startGRPC},
		{Name: "gRPC-go (protobuf), stream workers", Start: startGRPCWorkers},
		{Name: "net/rpc (gob)", Start: startNetRPC},
		{Name: "fasthttp + goccy JSON-RPC", Start: startFastHTTP},
		{Name: "fasthttp + goccy JSON-RPC, pipelined", Start: startFastHTTPPipelined},
		{Name: "floor: raw echo, 1 conn", Echo: true, Start: startFloorMux},
		{Name: "floor: raw echo, conn per worker", Echo: true, Start: startFloor},
	}
}

func listen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

// LoadOptions shape a load run.
type LoadOptions struct {
	Workers  int           // concurrent callers, each with one call in flight
	Duration time.Duration // measured time
}

// LoadResult is one measured run.
type LoadResult struct {
	Calls    int
	Elapsed  time.Duration
	P50, P99 time.Duration
	// Allocs is heap allocations per call in the whole process (client and
	// server together: both run here).
	Allocs float64
}

// PerSec is calls per second.
func (r LoadResult) PerSec() float64 { return float64(r.Calls) / r.Elapsed.Seconds() }

// Load runs opt.Workers callers against c for opt.Duration, cycling
// through f's requests and checking every answer, each field against f's
// response (an Echo arm checks the echo itself). Each call is given a
// poisoned answer, so a field the arm leaves unset fails the check. The
// first wrong answer or error ends the run and is returned. Latencies of
// all calls are kept (the check is outside them); p50/p99 are exact.
func Load(ctx context.Context, c Client, f *Fixture, echo bool, opt LoadOptions) (LoadResult, error) {
	callers := make([]Caller, opt.Workers)
	for i := range callers {
		cl, err := c.NewCaller(ctx)
		if err != nil {
			for _, x := range callers[:i] {
				x.Close()
			}
			return LoadResult{}, err
		}
		callers[i] = cl
	}
	defer func() {
		for _, x := range callers {
			x.Close()
		}
	}()
	lat := make([][]time.Duration, opt.Workers)
	for i := range lat {
		lat[i] = make([]time.Duration, 0, 1<<16)
	}
	var (
		stop    atomic.Bool
		wg      sync.WaitGroup
		errOnce sync.Once
		first   error
		start   = make(chan struct{})
	)
	for w, cl := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var resp Response
			<-start
			for i := w; !stop.Load(); i++ {
				k := i % len(f.Requests)
				resp = poisoned
				t0 := time.Now()
				err := cl.Call(ctx, &f.Requests[k], &resp)
				lat[w] = append(lat[w], time.Since(t0))
				if err == nil && !echo {
					if err = checkResponse(&resp, &f.Responses[k]); err != nil {
						err = fmt.Errorf("call %d: %w", f.Requests[k].ID, err)
					}
				}
				if err != nil {
					errOnce.Do(func() { first = err })
					stop.Store(true)
					return
				}
			}
		}()
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	t0 := time.Now()
	close(start)
	timer := time.NewTimer(opt.Duration)
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
	stop.Store(true)
	wg.Wait()
	elapsed := time.Since(t0)
	runtime.ReadMemStats(&m1)
	if first != nil {
		return LoadResult{}, first
	}
	if err := ctx.Err(); err != nil {
		return LoadResult{}, err
	}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	if len(all) == 0 {
		return LoadResult{}, errors.New("compare: no call finished")
	}
	slices.Sort(all)
	return LoadResult{
		Calls:   len(all),
		Elapsed: elapsed,
		P50:     all[len(all)/2],
		P99:     all[len(all)*99/100],
		Allocs:  float64(m1.Mallocs-m0.Mallocs) / float64(len(all)),
	}, nil
}
