// Command rolling shows a rolling restart under load through package
// rpc/cluster. Several replicas of the Eth service (examples/ethrpc's
// schema, generated client and server) listen on 127.0.0.2, 127.0.0.3, ...
// behind one DNS name that a small in-process DNS server answers
// (internal/dnstest); the client dials "dns://<that server>/eth.svc.test:<port>".
// Load runs through the generated client on the cluster client; then each
// replica in turn is shut down gracefully (rpc.Server.Shutdown: go-away,
// running calls finish) and started again on its address, the next one
// only once the client has admitted it again, as a deployment waits for
// readiness. The table gives the calls made, failed (the target is 0) and
// retried, and the p99 latency before and during the restarts.
//
//	go run ./examples/rolling
//	go run ./examples/rolling -replicas 5 -callers 32 -down 500ms
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/zapcodec/zapcodec/examples/ethrpc/ethzap"
	"github.com/zapcodec/zapcodec/internal/dnstest"
	"github.com/zapcodec/zapcodec/rpc"
	"github.com/zapcodec/zapcodec/rpc/cluster"
)

type config struct {
	replicas int           // on 127.0.0.2 and up
	callers  int           // goroutines calling in a loop
	before   time.Duration // load before the restarts
	down     time.Duration // how long each replica stays down
	work     time.Duration // each call's handler sleeps this long
}

// report is what a run measured.
type report struct {
	Replicas                   int
	CallsBefore, CallsDuring   int64
	FailedBefore, FailedDuring int64
	Retried, RetriesDenied     int64
	Ejections                  int64
	P50Before, P99Before       time.Duration
	P50During, P99During       time.Duration
	RestartTime                time.Duration // the whole rolling restart
	FirstError                 error
	CallsPerReplica            []int64 // handler runs, in replica order
	ClientStatsAfter           cluster.Stats
	DNSQueries                 int64
	Target                     string
	ShutdownMax, ReadmitMax    time.Duration // slowest Shutdown; slowest wait for re-admission
}

func main() {
	var cfg config
	flag.IntVar(&cfg.replicas, "replicas", 3, "replicas, on 127.0.0.2, 127.0.0.3, ...")
	flag.IntVar(&cfg.callers, "callers", 16, "goroutines calling in a loop")
	flag.DurationVar(&cfg.before, "before", 2*time.Second, "load before the rolling restart")
	flag.DurationVar(&cfg.down, "down", 300*time.Millisecond, "how long each replica stays down")
	flag.DurationVar(&cfg.work, "work", 0, "time each call's handler sleeps")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r, err := run(ctx, cfg, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rolling:", err)
		os.Exit(1)
	}
	r.print(os.Stdout)
	if r.FailedBefore+r.FailedDuring != 0 {
		os.Exit(1)
	}
}

// replica is one server of the service, on a fixed address.
type replica struct {
	addr  string
	work  time.Duration
	mu    sync.Mutex
	s     *rpc.Server
	done  chan error
	calls int64 // handler runs, under mu
}

type ethImpl struct{ r *replica }

// GetBalance answers with the request's ID and block, so that the caller
// can check the answer is its own.
func (e ethImpl) GetBalance(ctx context.Context, req ethzap.GetBalanceRequestView, resp *ethzap.GetBalanceResponse) error {
	if e.r.work > 0 {
		time.Sleep(e.r.work)
	}
	e.r.mu.Lock()
	e.r.calls++
	e.r.mu.Unlock()
	resp.ID = req.ID()
	resp.Nonce = req.Block()
	acct := req.Account()
	copy(resp.Balance[:], acct[:])
	return nil
}

func (r *replica) start() error {
	var l net.Listener
	var err error
	for i := 0; i < 200; i++ { // the address of a listener just closed may linger a moment
		if l, err = net.Listen("tcp", r.addr); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	// Shutdown waits up to 30 s for the client to acknowledge its go-away
	// (the default grace is 500 ms): calls a client sends to a connection
	// the server already closed fail and cannot be retried (the client
	// cannot tell they did not run), and a client stalled for longer than
	// the grace (a loaded machine) would send some. The cluster client
	// acknowledges at once, so Shutdown is no slower for it.
	s := rpc.NewServer(rpc.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), rpc.WithShutdownGrace(30*time.Second))
	ethzap.RegisterEthServer(s, ethImpl{r})
	done := make(chan error, 1)
	go func() { done <- s.Serve(l) }()
	r.mu.Lock()
	r.addr, r.s, r.done = l.Addr().String(), s, done
	r.mu.Unlock()
	return nil
}

func (r *replica) shutdown(ctx context.Context) error {
	r.mu.Lock()
	s, done := r.s, r.done
	r.s = nil
	r.mu.Unlock()
	if s == nil {
		return nil
	}
	err := s.Shutdown(ctx)
	<-done
	return err
}

func (r *replica) count() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

// startReplicas starts n replicas on 127.0.0.2, 127.0.0.3, ... all on one
// port (A records carry no port).
func startReplicas(n int, work time.Duration) ([]*replica, string, error) {
	var lastErr error
	for attempt := 0; attempt < 20; attempt++ {
		first := &replica{addr: "127.0.0.2:0", work: work}
		if err := first.start(); err != nil {
			return nil, "", err
		}
		_, port, _ := net.SplitHostPort(first.addr)
		rs := []*replica{first}
		for i := 1; i < n; i++ {
			r := &replica{addr: fmt.Sprintf("127.0.0.%d:%s", i+2, port), work: work}
			l, err := net.Listen("tcp", r.addr) // taken by someone else? try another port
			if err != nil {
				lastErr = err
				break
			}
			l.Close()
			if err := r.start(); err != nil {
				lastErr = err
				break
			}
			rs = append(rs, r)
		}
		if len(rs) == n {
			return rs, port, nil
		}
		for _, r := range rs {
			r.shutdown(context.Background())
		}
	}
	return nil, "", fmt.Errorf("no port free on %d loopback addresses: %v", n, lastErr)
}

// load calls GetBalance in a loop from callers goroutines until stop is
// closed, checking each answer, and gathers the latencies.
type loadStats struct {
	calls, failed int64
	firstErr      error
	lat           []time.Duration
}

func load(eth *ethzap.EthClient, callers int, stop <-chan struct{}) *loadStats {
	var mu sync.Mutex
	var wg sync.WaitGroup
	st := &loadStats{}
	for g := 0; g < callers; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			var calls, failed int64
			var first error
			lat := make([]time.Duration, 0, 1<<14)
			req := ethzap.GetBalanceRequest{Method: "eth_getBalance"}
			req.Account[0] = byte(g)
			var resp ethzap.GetBalanceResponse
			for i := uint64(0); ; i++ {
				select {
				case <-stop:
					mu.Lock()
					st.calls += calls
					st.failed += failed
					if st.firstErr == nil {
						st.firstErr = first
					}
					st.lat = append(st.lat, lat...)
					mu.Unlock()
					return
				default:
				}
				req.ID, req.Block = uint64(g)<<40|i, i
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				t0 := time.Now()
				err := eth.GetBalance(ctx, &req, &resp)
				lat = append(lat, time.Since(t0))
				cancel()
				calls++
				if err == nil && (resp.ID != req.ID || resp.Nonce != req.Block) {
					err = fmt.Errorf("answer for call %d came to call %d", resp.ID, req.ID)
				}
				if err != nil {
					failed++
					if first == nil {
						first = err
					}
				}
			}
		}(g)
	}
	wg.Wait()
	return st
}

func quantile(lat []time.Duration, q float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*q))]
}

// run starts the DNS server and the replicas, runs the load and the
// rolling restart, and reports. Progress goes to logw.
func run(ctx context.Context, cfg config, logw io.Writer) (*report, error) {
	if cfg.replicas < 2 {
		return nil, errors.New("a rolling restart without failed calls needs at least 2 replicas")
	}
	dns, err := dnstest.Listen("127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer dns.Close()
	rs, port, err := startReplicas(cfg.replicas, cfg.work)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, r := range rs {
			r.shutdown(context.Background())
		}
	}()
	var ips []netip.Addr
	for _, r := range rs {
		h, _, _ := net.SplitHostPort(r.addr)
		ips = append(ips, netip.MustParseAddr(h))
	}
	dns.SetAddrs("eth.svc.test", ips...)
	target := "dns://" + dns.Addr() + "/eth.svc.test:" + port
	fmt.Fprintf(logw, "%d replicas on %v port %s; target %s\n", len(rs), ips, port, target)

	c, err := cluster.Dial(ctx, target, cluster.WithEjection(0, 100*time.Millisecond, 2*time.Second))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	allReady := func() bool {
		n := 0
		for _, r := range c.Stats().Replicas {
			if r.State == "ready" {
				n++
			}
		}
		return n == len(rs)
	}
	if err := poll(ctx, allReady); err != nil {
		return nil, fmt.Errorf("waiting for every replica to be admitted: %w", err)
	}
	eth := ethzap.NewEthClient(c)

	rep := &report{Replicas: len(rs), Target: target}
	// Warm up (connections' buffers, the goroutines' stacks), unmeasured.
	stop := make(chan struct{})
	res := make(chan *loadStats, 1)
	go func() { res <- load(eth, cfg.callers, stop) }()
	time.Sleep(cfg.before / 2)
	close(stop)
	<-res

	// Before: steady load.
	stop = make(chan struct{})
	go func() { res <- load(eth, cfg.callers, stop) }()
	time.Sleep(cfg.before)
	close(stop)
	before := <-res
	rep.CallsBefore, rep.FailedBefore = before.calls, before.failed
	rep.P50Before, rep.P99Before = quantile(before.lat, 0.5), quantile(before.lat, 0.99)
	statsBefore := c.Stats()

	// During: the same load while each replica restarts in turn.
	stop = make(chan struct{})
	go func() { res <- load(eth, cfg.callers, stop) }()
	t0 := time.Now()
	for i, r := range rs {
		time.Sleep(cfg.down) // some load between restarts
		fmt.Fprintf(logw, "replica %d (%s): shutdown", i+1, r.addr)
		ts := time.Now()
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := r.shutdown(sctx)
		cancel()
		if err != nil {
			close(stop)
			<-res
			return nil, fmt.Errorf("shutdown of %s: %w", r.addr, err)
		}
		rep.ShutdownMax = max(rep.ShutdownMax, time.Since(ts))
		time.Sleep(cfg.down)
		if err := r.start(); err != nil {
			close(stop)
			<-res
			return nil, fmt.Errorf("restart of %s: %w", r.addr, err)
		}
		tr := time.Now()
		if err := poll(ctx, allReady); err != nil {
			close(stop)
			<-res
			return nil, fmt.Errorf("waiting for %s to be admitted again: %w", r.addr, err)
		}
		rep.ReadmitMax = max(rep.ReadmitMax, time.Since(tr))
		fmt.Fprintf(logw, ", restarted, admitted again after %v\n", time.Since(tr).Round(time.Millisecond))
	}
	time.Sleep(cfg.down)
	rep.RestartTime = time.Since(t0)
	close(stop)
	during := <-res
	rep.CallsDuring, rep.FailedDuring = during.calls, during.failed
	rep.P50During, rep.P99During = quantile(during.lat, 0.5), quantile(during.lat, 0.99)
	rep.FirstError = before.firstErr
	if rep.FirstError == nil {
		rep.FirstError = during.firstErr
	}
	after := c.Stats()
	rep.Retried = after.Retries - statsBefore.Retries
	rep.RetriesDenied = after.RetriesDenied - statsBefore.RetriesDenied
	rep.Ejections = after.Ejections - statsBefore.Ejections
	rep.ClientStatsAfter = after
	rep.DNSQueries = dns.Queries()
	for _, r := range rs {
		rep.CallsPerReplica = append(rep.CallsPerReplica, r.count())
	}
	return rep, nil
}

// poll waits for cond, checking every 5 ms, until ctx ends.
func poll(ctx context.Context, cond func() bool) error {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "\n%d replicas behind %s\n\n", r.Replicas, r.Target)
	fmt.Fprintf(w, "| phase | calls | failed | retried | p50 | p99 |\n|---|---|---|---|---|---|\n")
	fmt.Fprintf(w, "| before | %d | %d | — | %v | %v |\n", r.CallsBefore, r.FailedBefore, r.P50Before.Round(time.Microsecond), r.P99Before.Round(time.Microsecond))
	fmt.Fprintf(w, "| rolling restart (%v) | %d | %d | %d (denied %d) | %v | %v |\n", r.RestartTime.Round(time.Millisecond), r.CallsDuring, r.FailedDuring, r.Retried, r.RetriesDenied, r.P50During.Round(time.Microsecond), r.P99During.Round(time.Microsecond))
	fmt.Fprintf(w, "\nejections during the restarts: %d; slowest Shutdown %v; slowest re-admission %v; DNS queries %d\n",
		r.Ejections, r.ShutdownMax.Round(time.Millisecond), r.ReadmitMax.Round(time.Millisecond), r.DNSQueries)
	fmt.Fprintf(w, "calls run per replica: %v\n", r.CallsPerReplica)
	if r.FirstError != nil {
		fmt.Fprintf(w, "first error: %v\n", r.FirstError)
	}
}
