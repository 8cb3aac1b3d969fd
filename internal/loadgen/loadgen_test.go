package loadgen

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/zapcodec/zapcodec/rpc"
	"github.com/zapcodec/zapcodec/rpc/cluster"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

const (
	mEcho   = 1 // answers its request
	mReject = 2 // answers 403
	mLie    = 3 // answers a wrong body
	mHang   = 4 // never answers its first call (TestTimeoutThenAnswers)
	mHold   = 5 // answers once the test lets it (TestProgressOverdue)
)

// afterAnswers returns once s has answered 10 calls: a test that makes
// its server go away during a run does it then, not after a sleep (a
// slow machine may have made no call by then).
func afterAnswers(s *rpc.Server) {
	for s.Stats().OK < 10 {
		time.Sleep(time.Millisecond)
	}
}

func startServer(t *testing.T) (*rpc.Server, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := rpc.NewServer()
	s.Handle(mEcho, func(_ context.Context, req, resp []byte) ([]byte, error) {
		return append(resp, req...), nil
	})
	s.Handle(mReject, func(_ context.Context, req, resp []byte) ([]byte, error) {
		return resp, rpc.Errorf(rpc.StatusForbidden, "no")
	})
	s.Handle(mLie, func(_ context.Context, req, resp []byte) ([]byte, error) {
		return append(resp, "lie"...), nil
	})
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
	return s, l.Addr().String()
}

// request numbers every call, so Check can see each answer is its own.
func request(i uint64, dst []byte) []byte {
	return binary.LittleEndian.AppendUint64(dst, i)
}

func echoed(req, resp []byte) error {
	if !bytes.Equal(req, resp) {
		return fmt.Errorf("answer %x to request %x", resp, req)
	}
	return nil
}

func run(t *testing.T, cfg Config) *Report {
	t.Helper()
	r, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rep, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func checkLatency(t *testing.T, rep *Report) {
	t.Helper()
	l := rep.Latency
	if !(l.Min <= l.P50 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max) || l.Max == 0 {
		t.Fatalf("latencies out of order or empty: %+v", l)
	}
}

func TestClosedLoopCallCount(t *testing.T) {
	s, addr := startServer(t)
	rep := run(t, Config{Addr: addr, Conns: 3, Concurrency: 4, Calls: 600, Method: mEcho, Request: request, Check: echoed})
	if rep.Calls != 600 || rep.OK != 600 || rep.Failed != 0 {
		t.Fatalf("calls %d ok %d failed %d, want 600/600/0; errors %v", rep.Calls, rep.OK, rep.Failed, rep.Errors)
	}
	if len(rep.Statuses) != 1 || rep.Statuses["200"] != 600 {
		t.Fatalf("statuses %v, want 200: 600", rep.Statuses)
	}
	checkLatency(t, rep)
	// Each request frame: 4+1 prefix, 44-byte envelope, 8-byte payload;
	// each answer: 4+1, 36, 8. Counted at the client's connections.
	if want := uint64(600 * (5 + wire.RequestOverhead + 8)); rep.BytesOut != want {
		t.Errorf("bytes out %d, want %d", rep.BytesOut, want)
	}
	if want := uint64(600 * (5 + wire.ResponseOverhead + 8)); rep.BytesIn != want {
		t.Errorf("bytes in %d, want %d", rep.BytesIn, want)
	}
	if st := s.Stats(); st.Accepted != 3 {
		t.Errorf("server accepted %d connections, want 3", st.Accepted)
	}
}

// An open-loop run sends exactly ceil(rate*duration) calls, whatever the
// server's speed: call k is due at k/rate.
func TestOpenLoopSendsOnSchedule(t *testing.T) {
	_, addr := startServer(t)
	rep := run(t, Config{Addr: addr, Conns: 2, Concurrency: 2, Rate: 2000, Duration: 150 * time.Millisecond,
		Method: mEcho, Request: request, Check: echoed})
	if rep.Calls != 300 || rep.OK != 300 {
		t.Fatalf("calls %d ok %d, want 300 (2000/s for 150 ms); errors %v", rep.Calls, rep.OK, rep.Errors)
	}
	if rep.TargetRate != 2000 {
		t.Fatalf("target rate %v", rep.TargetRate)
	}
	checkLatency(t, rep)
}

func TestStatusesAndBadAnswers(t *testing.T) {
	_, addr := startServer(t)
	rep := run(t, Config{Addr: addr, Calls: 50, Method: mReject, Payload: []byte("x")})
	if rep.Failed != 50 || rep.OK != 0 || rep.Statuses["403"] != 50 || len(rep.Errors) != 0 {
		t.Fatalf("403 run: failed %d ok %d statuses %v errors %v", rep.Failed, rep.OK, rep.Statuses, rep.Errors)
	}
	rep = run(t, Config{Addr: addr, Calls: 20, Method: mLie, Request: request, Check: echoed})
	if rep.Failed != 20 || rep.Statuses["200"] != 20 || len(rep.Errors) != 20 {
		t.Fatalf("lying server: failed %d statuses %v, %d error classes (one per distinct request)", rep.Failed, rep.Statuses, len(rep.Errors))
	}
	for class := range rep.Errors {
		if !strings.HasPrefix(class, "check: answer 6c6965") {
			t.Fatalf("error class %q", class)
		}
	}
	rep = run(t, Config{Addr: addr, Calls: 20, Method: 9})
	if rep.Statuses["404"] != 20 {
		t.Fatalf("unknown method: statuses %v", rep.Statuses)
	}
}

func TestProgressAndWarm(t *testing.T) {
	_, addr := startServer(t)
	var mu sync.Mutex
	var seen []Progress
	r, err := New(context.Background(), Config{Addr: addr, Conns: 2, Concurrency: 2, Duration: 120 * time.Millisecond,
		Method: mEcho, Payload: []byte("p"), Interval: 10 * time.Millisecond,
		Progress: func(p Progress) { mu.Lock(); seen = append(seen, p); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Warm(context.Background(), 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	rep, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 {
		t.Fatal("no progress reported")
	}
	for i := 1; i < len(seen); i++ {
		if seen[i].Calls < seen[i-1].Calls || seen[i].Elapsed <= seen[i-1].Elapsed {
			t.Fatalf("progress not monotonic: %+v then %+v", seen[i-1], seen[i])
		}
	}
	if last := seen[len(seen)-1]; last.Calls > rep.Calls {
		t.Fatalf("progress saw %d calls, report %d", last.Calls, rep.Calls)
	}
	if rep.Calls == 0 || rep.Failed != 0 {
		t.Fatalf("report: %d calls, %d failed", rep.Calls, rep.Failed)
	}
}

func TestServerGoneEndsRun(t *testing.T) {
	s, addr := startServer(t)
	r, err := New(context.Background(), Config{Addr: addr, Conns: 2, Concurrency: 2, Duration: time.Hour, Method: mEcho})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() {
		afterAnswers(s) // calls in flight when it closes
		s.Close()
	}()
	rep, err := r.Run(context.Background())
	if !errors.Is(err, ErrNoConns) {
		t.Fatalf("run against a closed server: err %v, want ErrNoConns", err)
	}
	if rep.Errors["connection closed"] == 0 {
		t.Fatalf("errors %v, want connection closed counted", rep.Errors)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Addr: "127.0.0.1:1", Method: 0}, "ordinal 0"},
		{Config{Addr: "127.0.0.1:1", Method: 1, Rate: -1}, "finite number"},
		{Config{Addr: "127.0.0.1:1", Method: 1, Rate: math.NaN()}, "finite number"},
		{Config{Addr: "127.0.0.1:1", Method: 1, Rate: math.Inf(1)}, "finite number"},
		{Config{Addr: "127.0.0.1:1", Method: 1, Rate: 1e-12}, "30 years"},
		{Config{Addr: "127.0.0.1:1", Method: 1, Rate: 1e21}, "above one call a nanosecond"},
		{Config{Addr: "127.0.0.1:1", Method: 1, Rate: MaxRate * 1.0000001}, "above one call a nanosecond"},
		{Config{Addr: "127.0.0.1:1", Method: 1, Concurrency: 1 << 20}, "concurrency"},
		// More calls in flight than a run keeps fail before any dial
		// (they used to make a worker each: 1,000 connections at the
		// largest concurrency took 65 million, and the process ran out of
		// memory).
		{Config{Network: "unix", Addr: "/nonexistent/sock", Method: 1, Conns: 5, Concurrency: 60000}, "MaxInFlight"},
		{Config{Network: "unix", Addr: "/nonexistent/sock", Method: 1, Conns: math.MaxInt, Concurrency: 2}, "MaxInFlight"},
		{Config{Network: "unix", Addr: "/nonexistent/sock", Method: 1}, "connection 0"},
	} {
		_, err := New(context.Background(), tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

func TestReportText(t *testing.T) {
	_, addr := startServer(t)
	rep := run(t, Config{Addr: addr, Calls: 10, Method: mEcho, Payload: []byte("abc")})
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"calls      10 (10 ok, 0 failed)", "statuses   200: 10", "p99.9"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, b.String())
		}
	}
}

// TestCancelStopsGracefully: ending ctx stops new calls, and the calls in
// flight get their answers instead of being abandoned.
func TestCancelStopsGracefully(t *testing.T) {
	_, addr := startServer(t)
	r, err := New(context.Background(), Config{Addr: addr, Conns: 2, Concurrency: 4, Duration: time.Hour,
		Method: mEcho, Request: request, Check: echoed})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	rep, err := r.Run(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if rep.Calls == 0 || rep.Failed != 0 || len(rep.Errors) != 0 {
		t.Fatalf("calls %d failed %d errors %v", rep.Calls, rep.Failed, rep.Errors)
	}
}

func TestErrorClassesBounded(t *testing.T) {
	_, addr := startServer(t)
	rep := run(t, Config{Addr: addr, Calls: 200, Method: mLie, Request: request, Check: echoed})
	if rep.Failed != 200 || len(rep.Errors) > maxErrorClasses+1 || rep.Errors["other errors"] != 200-maxErrorClasses {
		t.Fatalf("failed %d, %d classes, other %d", rep.Failed, len(rep.Errors), rep.Errors["other errors"])
	}
}

// A closed-loop run against a cluster target whose replicas all went
// away waits a little after each call that found no replica, instead of
// spinning on them: each worker fails at most one such call per backoff.
func TestClusterTargetGoneBacksOff(t *testing.T) {
	s, addr := startServer(t)
	const workers = 2
	r, err := New(context.Background(), Config{Target: "static:///" + addr, Conns: 1, Concurrency: workers, Duration: 2 * time.Second, Method: mEcho})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() {
		afterAnswers(s) // the rest of the run finds no replica
		s.Close()
	}()
	rep, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var noReplica uint64
	for class, n := range rep.Errors {
		if strings.Contains(class, "no replica") {
			noReplica += n
		}
	}
	if noReplica == 0 {
		t.Fatalf("errors %v: no call found the cluster without a replica", rep.Errors)
	}
	elapsed := time.Duration(rep.Seconds * float64(time.Second))
	if most := uint64(workers * (elapsed/noReplicaBackoff + 1)); noReplica > most {
		t.Fatalf("%d calls found no replica in %v: more than %d, the workers spun", noReplica, elapsed, most)
	}
	t.Logf("%d calls found no replica in %v; errors %v", noReplica, elapsed, rep.Errors)
}

// TestCancelStopsOpenLoopWaits: ending ctx stops an open-loop run at
// once, also while its workers wait for calls due much later (here 1000 s
// apart): they stop waiting, and the report covers the calls made.
func TestCancelStopsOpenLoopWaits(t *testing.T) {
	s, addr := startServer(t)
	r, err := New(context.Background(), Config{Addr: addr, Conns: 1, Concurrency: 4, Rate: 0.001, Duration: time.Hour,
		Method: mEcho, Payload: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		rep *Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := r.Run(ctx)
		done <- result{rep, err}
	}()
	for s.Stats().OK < 1 { // call 0, due at the start; calls 1-3 are due 1000, 2000 and 3000 s later
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case res := <-done:
		if !errors.Is(res.err, context.Canceled) {
			t.Fatalf("err %v, want context.Canceled", res.err)
		}
		if res.rep.Calls != 1 || res.rep.OK != 1 {
			t.Fatalf("calls %d ok %d, want the 1 call due before ctx ended", res.rep.Calls, res.rep.OK)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("gave up after 30 s: Run still waits for calls due later after its ctx ended")
	}
}

// TestOpenLoopCountsCallsNeverSent: against a server that stops
// answering, an open-loop run's workers all wait on calls in flight, and
// the calls due after those could not be sent before the grace ran out.
// They count as abandoned, each with its latency from its due time, as
// the calls in flight do: the report shows every call the rate asked
// for, not only the few sent (no coordinated omission).
func TestOpenLoopCountsCallsNeverSent(t *testing.T) {
	addr := silentServer(t)
	for _, tc := range []struct {
		name   string
		direct bool
		conc   int
		calls  uint64
		want   uint64
	}{
		{"rpc", false, 3, 0, 100},   // 1000/s for 100 ms
		{"direct", true, 1, 0, 100}, // the same, one call in flight
		{"calls", false, 3, 40, 40}, // -n caps the calls due
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := New(context.Background(), Config{Addr: addr, Direct: tc.direct, Conns: 2, Concurrency: tc.conc,
				Rate: 1000, Duration: 100 * time.Millisecond, Calls: tc.calls, Grace: 50 * time.Millisecond,
				Method: mEcho, Payload: []byte("x")})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			rep, err := r.Run(context.Background())
			if err != nil { // a direct call cut at the end keeps its connection too
				t.Fatal(err)
			}
			if rep.Calls != tc.want || rep.Failed != tc.want || rep.Errors["abandoned (no answer in time)"] != tc.want {
				t.Fatalf("calls %d failed %d errors %v, want all %d calls due abandoned", rep.Calls, rep.Failed, rep.Errors, tc.want)
			}
			if n := rep.Histogram.Count(); n != tc.want {
				t.Fatalf("%d latencies recorded, want %d", n, tc.want)
			}
			// The last call was due before the end (100 ms), and abandoned
			// after the grace (150 ms): at least 50 ms late.
			if rep.Latency.Min < uint64(50*time.Millisecond) {
				t.Fatalf("latency min %v, want at least the grace", time.Duration(rep.Latency.Min))
			}
		})
	}
}

// runGuarded runs r and returns its report and error, failing the test
// if Run has not returned after two minutes (it should within a second:
// the guard only keeps a broken run from hanging the test).
func runGuarded(t *testing.T, r *Runner) (*Report, error) {
	t.Helper()
	type result struct {
		rep *Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := r.Run(context.Background())
		done <- result{rep, err}
	}()
	select {
	case res := <-done:
		return res.rep, res.err
	case <-time.After(2 * time.Minute):
		t.Fatal("Run had not returned after 2 minutes")
		return nil, nil
	}
}

// TestTimeoutEndsCallsNeverAnswered: a run bounded by a count of calls
// alone (no duration) against a server that never answers used to wait
// for the first answers forever. Each call is now given up at the
// Timeout and counted as failed ("timed out"), with its latency, and the
// worker goes on with its next call on the same connection, an rpc
// client's or a direct one (a direct connection was closed at its first
// timeout, and its worker stopped).
func TestTimeoutEndsCallsNeverAnswered(t *testing.T) {
	addr := silentServer(t)
	const timeout = 50 * time.Millisecond
	for _, tc := range []struct {
		name    string
		direct  bool
		conc    int
		rate    float64
		want    uint64 // calls made, each timed out
		wantErr error
	}{
		{"rpc", false, 2, 0, 10, nil},
		{"rpc open loop", false, 2, 1000, 10, nil},
		{"direct", true, 1, 0, 10, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := New(context.Background(), Config{Addr: addr, Direct: tc.direct, Conns: 2, Concurrency: tc.conc,
				Rate: tc.rate, Calls: 10, Timeout: timeout, Method: mEcho, Payload: []byte("x")})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			rep, err := runGuarded(t, r)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Run: %v, want %v", err, tc.wantErr)
			}
			if rep.Calls != tc.want || rep.Failed != tc.want || rep.Errors["timed out"] != tc.want {
				t.Fatalf("calls %d failed %d errors %v, want %d calls, all timed out", rep.Calls, rep.Failed, rep.Errors, tc.want)
			}
			if n := rep.Histogram.Count(); n != tc.want {
				t.Fatalf("%d latencies recorded, want %d", n, tc.want)
			}
			if rep.Latency.Min < uint64(timeout) {
				t.Fatalf("latency min %v: a call was given up before its timeout %v", time.Duration(rep.Latency.Min), timeout)
			}
		})
	}
}

// A call that timed out does not take the worker's next calls with it,
// nor its connection: against a server that answers the first call late
// (once the second is answered) and the others at once, the first times
// out, the rest are answered on the same connection, and the late answer
// goes to none of them. A direct connection was closed at the timeout
// (one slow answer cost a connection), and the run ended with its worker.
func TestTimeoutThenAnswers(t *testing.T) {
	for _, direct := range []bool{false, true} {
		t.Run(fmt.Sprintf("direct=%v", direct), func(t *testing.T) {
			s, addr := startServer(t)
			var n atomic.Int32
			second := make(chan struct{})
			s.Handle(mHang, func(ctx context.Context, req, resp []byte) ([]byte, error) {
				switch n.Add(1) {
				case 1:
					select {
					case <-second: // a late answer, after the next call's
					case <-ctx.Done():
					}
					return append(resp, "late"...), nil
				case 2:
					defer close(second)
				}
				return append(resp, req...), nil
			})
			r, err := New(context.Background(), Config{Addr: addr, Conns: 1, Concurrency: 1, Direct: direct, Calls: 5,
				Timeout: 50 * time.Millisecond, Method: mHang, Request: request, Check: echoed})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			rep, err := runGuarded(t, r)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Calls != 5 || rep.OK != 4 || rep.Errors["timed out"] != 1 {
				t.Fatalf("calls %d ok %d errors %v, want 5 calls: 1 timed out, 4 answered", rep.Calls, rep.OK, rep.Errors)
			}
			if st := s.Stats(); st.Accepted != 1 {
				t.Fatalf("the server accepted %d connections, want the one kept", st.Accepted)
			}
		})
	}
}

// silentServer accepts connections and holds them open without reading
// or answering, until the test ends; it returns its address.
func silentServer(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, nc := range conns {
			nc.Close()
		}
		mu.Unlock()
	})
	go func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, nc)
			mu.Unlock()
		}
	}()
	return l.Addr().String()
}

// TestTimeoutDefault: a run bounded by a count of calls alone gets
// DefaultTimeout, which nothing else would bound; a run with a duration
// gets no bound of its own (its end gives its calls up), so its calls
// share the run's ctx; a Timeout given is kept.
func TestTimeoutDefault(t *testing.T) {
	addr := silentServer(t)
	for _, tc := range []struct {
		name     string
		duration time.Duration
		calls    uint64
		timeout  time.Duration
		want     time.Duration
	}{
		{"calls alone", 0, 10, 0, DefaultTimeout},
		{"duration", time.Second, 0, 0, 0},
		{"duration and calls", time.Second, 10, 0, 0},
		{"neither (default duration)", 0, 0, 0, 0},
		{"given, calls alone", 0, 10, time.Second, time.Second},
		{"given, duration", time.Second, 0, time.Second, time.Second},
		{"none, calls alone", 0, 10, -1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := New(context.Background(), Config{Addr: addr, Conns: 1, Concurrency: 1,
				Duration: tc.duration, Calls: tc.calls, Timeout: tc.timeout, Method: mEcho, Payload: []byte("x")})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.cfg.Timeout != tc.want {
				t.Fatalf("Timeout %v, want %v", r.cfg.Timeout, tc.want)
			}
		})
	}
}

// TestHugeDuration: a Duration so long that the run's end plus its grace
// overflows a time.Duration still runs (here until its count of calls).
// The sum used to wrap to a negative time, which ended every call at the
// start: a report of no calls and no error.
func TestHugeDuration(t *testing.T) {
	_, addr := startServer(t)
	for _, d := range []time.Duration{math.MaxInt64, math.MaxInt64 - 5*time.Second} {
		rep := run(t, Config{Addr: addr, Conns: 1, Concurrency: 2, Duration: d, Calls: 20, Method: mEcho, Payload: []byte("x")})
		if rep.Calls != 20 || rep.OK != 20 {
			t.Fatalf("duration %v: calls %d ok %d errors %v, want 20 calls answered", d, rep.Calls, rep.OK, rep.Errors)
		}
	}
}

// TestTinyRate: at a rate so low that the due time of the later calls is
// beyond a time.Duration after the start (here one call in about 29
// years, 16 calls taken at once by 16 workers), those calls are not due
// before the run's end. Their due times used to wrap to long before the
// start: each was sent at once, with a latency of centuries, and the run
// turned into a closed loop of such calls.
func TestTinyRate(t *testing.T) {
	_, addr := startServer(t)
	rep := run(t, Config{Addr: addr, Conns: 1, Concurrency: 16, Rate: 1.1e-9, Duration: 50 * time.Millisecond,
		Grace: 50 * time.Millisecond, Method: mEcho, Payload: []byte("x")})
	if rep.Calls != 1 || rep.OK != 1 {
		t.Fatalf("calls %d ok %d errors %v, want only call 0 (due at the start)", rep.Calls, rep.OK, rep.Errors)
	}
	if rep.Latency.Max > uint64(time.Minute) {
		t.Fatalf("latency max %v", time.Duration(rep.Latency.Max))
	}
}

// TestSecondsExcludeGrace: the report's interval, and its calls/s, leave
// out the wait at the end for calls the grace then gave up, and the
// abandoned calls, which never ended, are not counted in calls/s. Both
// used to be in: against a server that answers nothing, a run reported
// calls/s near its rate; against one that stopped answering, the calls it
// answered spread over the grace as well.
func TestSecondsExcludeGrace(t *testing.T) {
	t.Run("silent server", func(t *testing.T) {
		addr := silentServer(t)
		for _, rate := range []float64{0, 1000} {
			const d = 100 * time.Millisecond
			r, err := New(context.Background(), Config{Addr: addr, Conns: 2, Concurrency: 2, Rate: rate,
				Duration: d, Grace: 50 * time.Millisecond, Method: mEcho, Payload: []byte("x")})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := runGuarded(t, r)
			r.Close()
			if err != nil {
				t.Fatal(err)
			}
			if rep.Calls == 0 || rep.OK != 0 || rep.Errors[abandoned] != rep.Calls {
				t.Fatalf("rate %v: calls %d ok %d errors %v, want every call abandoned", rate, rep.Calls, rep.OK, rep.Errors)
			}
			if rep.Seconds != d.Seconds() || rep.CallsPerSec != 0 {
				t.Fatalf("rate %v: %v s, %v calls/s; want the duration, %v s, and 0 calls/s (no call ended)", rate, rep.Seconds, rep.CallsPerSec, d.Seconds())
			}
			var b strings.Builder
			rep.WriteText(&b)
			if want := fmt.Sprintf("calls/s    0 (the %d abandoned not counted)", rep.Calls); !strings.Contains(b.String(), want) {
				t.Fatalf("rate %v: text report lacks %q:\n%s", rate, want, b.String())
			}
		}
	})
	t.Run("server stops answering", func(t *testing.T) {
		s, addr := startServer(t)
		var calls, hung atomic.Int64
		s.Handle(mHang, func(ctx context.Context, req, resp []byte) ([]byte, error) {
			if calls.Add(1) > 20 {
				hung.Add(1)
				<-ctx.Done()
			}
			return resp, nil
		})
		const grace = 200 * time.Millisecond
		r, err := New(context.Background(), Config{Addr: addr, Conns: 1, Concurrency: 2, Duration: time.Hour,
			Grace: grace, Method: mHang})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			for hung.Load() < 2 { // both workers wait on a call never answered
				time.Sleep(time.Millisecond)
			}
			cancel() // stops the run; the 2 calls are abandoned after the grace
		}()
		started := time.Now()
		rep, err := r.Run(ctx)
		returned := time.Now()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v", err)
		}
		if rep.Calls != 22 || rep.OK != 20 || rep.Errors[abandoned] != 2 {
			t.Fatalf("calls %d ok %d errors %v, want 20 answered and 2 abandoned", rep.Calls, rep.OK, rep.Errors)
		}
		// The run's interval ends when ctx ended (every answer came
		// before), which is at least the grace before Run returned.
		if most := (returned.Sub(started) - grace).Seconds(); rep.Seconds > most {
			t.Fatalf("%v s measured: more than the %v s from Run until the grace before it returned", rep.Seconds, most)
		}
		if want := 20 / rep.Seconds; math.Abs(rep.CallsPerSec-want) > 1e-9*want {
			t.Fatalf("%v calls/s, want the 20 answered over %v s: %v", rep.CallsPerSec, rep.Seconds, want)
		}
	})
}

// TestStatusCodesBounded: a server answering with ever new statuses (any
// uint32) does not grow the counts without bound: a worker counts 32
// codes apart, and the answers with others under "other".
func TestStatusCodesBounded(t *testing.T) {
	s, addr := startServer(t)
	var n atomic.Uint32
	s.Handle(mHang, func(_ context.Context, req, resp []byte) ([]byte, error) {
		return resp, rpc.Errorf(1000+n.Add(1), "status of its own")
	})
	rep := run(t, Config{Addr: addr, Conns: 1, Concurrency: 1, Calls: 200, Method: mHang})
	if rep.Failed != 200 || len(rep.Statuses) != maxStatusCodes+1 || rep.Statuses["other"] != 200-maxStatusCodes {
		t.Fatalf("failed %d, %d statuses, other %d; want 200, %d and %d", rep.Failed, len(rep.Statuses), rep.Statuses["other"], maxStatusCodes+1, 200-maxStatusCodes)
	}
}

// TestDialTimeout: a connection that cannot be opened (an address that
// drops the attempts: the system takes minutes to give up) fails New
// after DialTimeout, saying so. New used to wait as long as the dial did.
func TestDialTimeout(t *testing.T) {
	done := make(chan error, 1)
	go func() {
		_, err := New(context.Background(), Config{Addr: "blackhole", Method: mEcho, DialTimeout: 20 * time.Millisecond,
			Dial: func(ctx context.Context) (net.Conn, error) {
				<-ctx.Done() // as a dial to an address that drops the attempts
				return nil, ctx.Err()
			}})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "connection 0: not connected within 20ms") {
			t.Fatalf("New: %v, want the dial timeout of connection 0", err)
		}
	case <-time.After(time.Minute): // only keeps a broken New from hanging the test
		t.Fatal("New had not returned after a minute")
	}
}

// TestOpenLoopCallsAloneEnds: an open-loop run bounded by a count of
// calls alone ends as one whose duration ends with its last call's due
// time: against a server that never answers, the calls still unanswered
// or unsent the grace after that are abandoned, each with its latency
// from its due time. Without a per-call Timeout such a run never ended
// (with the default one of 20 s, it sent one round of calls per 20 s),
// and against a server that answers, every call is made.
func TestOpenLoopCallsAloneEnds(t *testing.T) {
	addr := silentServer(t)
	const grace = 50 * time.Millisecond
	r, err := New(context.Background(), Config{Addr: addr, Conns: 2, Concurrency: 2, Rate: 1000, Calls: 40,
		Timeout: -1, Grace: grace, Method: mEcho, Payload: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rep, err := runGuarded(t, r)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Calls != 40 || rep.Errors[abandoned] != 40 || rep.Histogram.Count() != 40 {
		t.Fatalf("calls %d errors %v, %d latencies; want all 40 calls abandoned", rep.Calls, rep.Errors, rep.Histogram.Count())
	}
	if rep.Latency.Min < uint64(grace) {
		t.Fatalf("latency min %v, want at least the grace", time.Duration(rep.Latency.Min))
	}

	_, addr = startServer(t)
	rep = run(t, Config{Addr: addr, Conns: 2, Concurrency: 2, Rate: 2000, Calls: 100, Method: mEcho, Request: request, Check: echoed})
	if rep.Calls != 100 || rep.OK != 100 {
		t.Fatalf("answering server: calls %d ok %d errors %v, want 100 answered", rep.Calls, rep.OK, rep.Errors)
	}
}

// TestRecordLate: the latencies of a range of calls never sent, recorded
// a bucket at a time, are those recorded one call at a time.
func TestRecordLate(t *testing.T) {
	start := time.Now()
	for _, interval := range []float64{0.001, 0.37, 1, 333.333, 1e3, 1e6 + 0.5} {
		s := &schedule{start: start, interval: interval}
		for _, r := range [][2]uint64{{0, 1}, {0, 5000}, {17, 100000}, {99999, 100000}} {
			now := s.dueAt(r[1]).Add(time.Duration(r[0] % 7))
			one, bulk := new(Histogram), new(Histogram)
			for i := r[0]; i < r[1]; i++ {
				one.RecordDuration(now.Sub(s.dueAt(i)))
			}
			s.recordLate(bulk, now, r[0], r[1])
			if bulk.counts != one.counts || bulk.Count() != one.Count() || bulk.Min() != one.Min() || bulk.Max() != one.Max() {
				t.Fatalf("interval %v, calls %v: bulk count %d min %d max %d, one at a time %d %d %d",
					interval, r, bulk.Count(), bulk.Min(), bulk.Max(), one.Count(), one.Min(), one.Max())
			}
			if d := math.Abs(bulk.Mean() - one.Mean()); d > 1e-6*one.Mean()+1 {
				t.Fatalf("interval %v, calls %v: mean %v, one at a time %v", interval, r, bulk.Mean(), one.Mean())
			}
		}
	}
}

// TestOpenLoopManyCallsNeverSent: an open-loop run at a rate far above
// what its server answers, which stalled, leaves billions of calls due
// and never sent (here 1e9 calls/s, MaxRate, for 50 ms: 5e7); each
// counts as abandoned with its latency, which Run records a histogram
// bucket at a time: one record per call took minutes after the grace at
// 1e12 calls/s, a rate since refused.
func TestOpenLoopManyCallsNeverSent(t *testing.T) {
	addr := silentServer(t)
	r, err := New(context.Background(), Config{Addr: addr, Conns: 2, Concurrency: 2, Rate: MaxRate,
		Duration: 50 * time.Millisecond, Grace: 50 * time.Millisecond, Method: mEcho, Payload: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rep, err := runGuarded(t, r)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Calls != 5e7 || rep.Errors[abandoned] != rep.Calls || rep.Histogram.Count() != rep.Calls {
		t.Fatalf("calls %d errors %v, %d latencies; want the 5e7 calls due, all abandoned", rep.Calls, rep.Errors, rep.Histogram.Count())
	}
	if rep.Latency.Min < uint64(50*time.Millisecond) || rep.Latency.Max < uint64(100*time.Millisecond) {
		t.Fatalf("latency min %v max %v, want at least the grace and the run", time.Duration(rep.Latency.Min), time.Duration(rep.Latency.Max))
	}
}

// TestReportTextLowRates: the text report gives a rate below 1 (or with
// a fraction) as the JSON does, not rounded to a whole number: a run at
// 0.2 calls/s read "open loop at 0 calls/s" and "calls/s 0".
func TestReportTextLowRates(t *testing.T) {
	for _, tc := range []struct {
		target, got float64
		want        []string
	}{
		{0.2, 0.19, []string{"open loop at 0.2 calls/s", "calls/s    0.19\n"}},
		{2.5, 2.4567, []string{"open loop at 2.5 calls/s", "calls/s    2.46\n"}},
		{20000, 19876.4, []string{"open loop at 20000 calls/s", "calls/s    19876\n"}},
		{0, 123.4, []string{"closed loop", "calls/s    123\n"}},
		{0, 0, []string{"calls/s    0\n"}},
	} {
		rep := &Report{Network: "tcp", Addr: "x", Method: 1, TargetRate: tc.target, CallsPerSec: tc.got}
		var b strings.Builder
		if err := rep.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("target %v, calls/s %v: text lacks %q:\n%s", tc.target, tc.got, w, b.String())
			}
		}
	}
}

// TestCancelCountsCallsNeverSent: ending the ctx of an open-loop run
// whose server stopped answering (Ctrl-C on a stalled server) counts the
// calls due before then that no worker could send as abandoned, each
// with its latency from its due time until then, as the end of the grace
// does. They used to be dropped: the report showed the few calls in
// flight alone (coordinated omission).
func TestCancelCountsCallsNeverSent(t *testing.T) {
	s, addr := startServer(t)
	var hung atomic.Int64
	s.Handle(mHang, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		hung.Add(1)
		<-ctx.Done()
		return resp, nil
	})
	r, err := New(context.Background(), Config{Addr: addr, Conns: 1, Concurrency: 2, Rate: 1000, Duration: time.Hour,
		Grace: 50 * time.Millisecond, Method: mHang})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for hung.Load() < 2 { // both workers wait on a call never answered
			time.Sleep(time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond) // 50 more calls fall due, and no worker is free
		cancel()
	}()
	rep, err := r.Run(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	// Calls 0 and 1 went out at once, 1 ms apart: at least 50 ms later,
	// more than 50 calls were due.
	if rep.Calls < 50 || rep.Errors[abandoned] != rep.Calls || rep.Histogram.Count() != rep.Calls {
		t.Fatalf("calls %d errors %v, %d latencies; want the 50 or more calls due, all abandoned", rep.Calls, rep.Errors, rep.Histogram.Count())
	}
	if rep.Latency.Max < uint64(50*time.Millisecond) {
		t.Fatalf("latency max %v, want at least the 50 ms the server held the calls", time.Duration(rep.Latency.Max))
	}
}

// TestCheckErrorClassCut: a Check error that carries the answer (here 4
// KB of it) is cut to 120 bytes, between whole characters, as transport
// errors are: a worker keeps up to 32 classes, and the report all of
// them, which such errors used to make as long as the answers.
func TestCheckErrorClassCut(t *testing.T) {
	_, addr := startServer(t)
	payload := bytes.Repeat([]byte("é"), 2048)
	rep := run(t, Config{Addr: addr, Calls: 3, Method: mEcho, Payload: payload,
		Check: func(req, resp []byte) error { return fmt.Errorf("%s", resp) }})
	if rep.Failed != 3 || len(rep.Errors) != 1 {
		t.Fatalf("failed %d errors %d classes, want 3 in 1", rep.Failed, len(rep.Errors))
	}
	for class := range rep.Errors {
		if len(class) > 120 || !strings.HasPrefix(class, "check: é") || !utf8.ValidString(class) {
			t.Fatalf("class of %d bytes (valid UTF-8: %v): %.40q...", len(class), utf8.ValidString(class), class)
		}
	}
}

// TestOpenLoopClientBehind: when the load tool itself falls behind (here
// its Request stalls 60 ms on call 0, as a pause of the tool's process
// would), the calls due meanwhile go out late, each with its latency from
// its due time, not from when it went out: call k of the first 60 waits
// at least 60-k ms, so at least 51 of the 100 calls wait 10 ms or more.
func TestOpenLoopClientBehind(t *testing.T) {
	_, addr := startServer(t)
	for _, direct := range []bool{false, true} {
		rep := run(t, Config{Addr: addr, Direct: direct, Conns: 1, Concurrency: 1, Rate: 1000, Duration: 100 * time.Millisecond,
			Method: mEcho, Check: echoed, Request: func(i uint64, dst []byte) []byte {
				if i == 0 {
					time.Sleep(60 * time.Millisecond)
				}
				return request(i, dst)
			}})
		if rep.Calls != 100 || rep.OK != 100 {
			t.Fatalf("direct %v: calls %d ok %d errors %v, want 100 answered", direct, rep.Calls, rep.OK, rep.Errors)
		}
		if rep.Latency.Max < uint64(60*time.Millisecond) || rep.Latency.P50 < uint64(10*time.Millisecond) {
			t.Fatalf("direct %v: latency p50 %v max %v, want at least 10 and 60 ms (from the due times)", direct,
				time.Duration(rep.Latency.P50), time.Duration(rep.Latency.Max))
		}
	}
}

// Progress counts the calls overdue: in open loop against a server that
// holds its first call, the one worker waits on it while the calls due
// pile up unsent, each of them overdue; once the run's duration is over,
// the call in flight is overdue too (the grace waits for it), and so
// every call due is. The progress line showed only calls completed and
// failed, both standing still. The reports before the server lets the
// call go are checked (it does once it has seen some after the end).
func TestProgressOverdue(t *testing.T) {
	s, addr := startServer(t)
	release := make(chan struct{})
	s.Handle(mHold, func(_ context.Context, req, resp []byte) ([]byte, error) {
		<-release
		return append(resp, req...), nil
	})
	const duration = 100 * time.Millisecond // at 1000 calls/s: 100 due
	// dueBy is how many calls are due before e into the run.
	dueBy := func(e time.Duration) uint64 { return uint64((e + time.Millisecond - 1) / time.Millisecond) }
	var mu sync.Mutex
	var seen []Progress
	var released atomic.Bool
	r, err := New(context.Background(), Config{Addr: addr, Conns: 1, Concurrency: 1, Rate: 1000, Duration: duration,
		Grace: time.Minute, Method: mHold, Payload: []byte("x"), Interval: 5 * time.Millisecond,
		Progress: func(p Progress) {
			if !released.Load() {
				mu.Lock()
				seen = append(seen, p)
				mu.Unlock()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ran := make(chan error, 1)
	go func() {
		_, err := r.Run(context.Background())
		ran <- err
	}()
	await := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("after 30 s still waiting for %s", what)
			}
		}
	}
	await("3 progress reports after the end", func() bool {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, p := range seen {
			if p.Elapsed >= duration {
				n++
			}
		}
		return n >= 3
	})
	released.Store(true)
	close(release)
	if err := receiveErr(t, ran); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	during := 0
	for _, p := range seen {
		if p.Elapsed < duration {
			// Due, less the one the worker took (if it took it yet).
			if due := dueBy(p.Elapsed); p.Overdue+1 < due || p.Overdue > due {
				t.Fatalf("at %v, %d calls due and at most one sent: %d overdue", p.Elapsed, due, p.Overdue)
			}
			during++
		} else if p.Overdue != dueBy(duration) {
			t.Fatalf("at %v, after the end: %d overdue, want all %d calls due", p.Elapsed, p.Overdue, dueBy(duration))
		}
	}
	if during == 0 {
		t.Fatal("no progress report during the run")
	}
}

// receiveErr waits for Run's error on ch, failing the test after 2
// minutes (the guard only keeps a broken run from hanging the test).
func receiveErr(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(2 * time.Minute):
		t.Fatal("Run had not returned after 2 minutes")
		return nil
	}
}

// Config.Warmup makes the run's own calls first and counts them nowhere:
// the server answers more calls than the report and the progress count,
// which hold the measured ones only; Progress is not called during the
// warm-up.
func TestWarmup(t *testing.T) {
	for _, rate := range []float64{0, 2000} {
		t.Run(fmt.Sprintf("rate=%v", rate), func(t *testing.T) {
			s, addr := startServer(t)
			var mu sync.Mutex
			var seen []Progress
			r, err := New(context.Background(), Config{Addr: addr, Conns: 2, Concurrency: 2, Rate: rate, Calls: 100,
				Warmup: 60 * time.Millisecond, Method: mEcho, Request: request, Check: echoed, Interval: time.Millisecond,
				Progress: func(p Progress) { mu.Lock(); seen = append(seen, p); mu.Unlock() }})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			rep, err := runGuarded(t, r)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Calls != 100 || rep.OK != 100 || rep.Histogram.Count() != 100 {
				t.Fatalf("report: %d calls, %d ok, %d latencies; want the 100 measured", rep.Calls, rep.OK, rep.Histogram.Count())
			}
			answered := s.Stats().OK
			if answered <= 100 {
				t.Fatalf("the server answered %d calls: no warm-up", answered)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, p := range seen {
				if p.Calls > 100 {
					t.Fatalf("progress counted %d calls, the warm-up's among them", p.Calls)
				}
			}
		})
	}
}

// A warm-up that ends with Run's ctx returns no report, saying so.
func TestWarmupCanceled(t *testing.T) {
	_, addr := startServer(t)
	r, err := New(context.Background(), Config{Addr: addr, Calls: 10, Warmup: time.Hour, Method: mEcho, Payload: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	rep, err := r.Run(ctx)
	if rep != nil || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "warm-up") {
		t.Fatalf("Run canceled during its warm-up: %v, %v", rep, err)
	}
}

// Bytes per call are the bytes of the calls sent: in an open-loop run
// against a server that never answers, each worker sends one call and
// the rest of the calls due are never sent (abandoned); the bytes are
// those of the calls sent, one request frame each, and divide by those
// (Report.Sent). They were divided by every call due, sent or not.
func TestBytesPerCallSent(t *testing.T) {
	addr := silentServer(t)
	for _, direct := range []bool{false, true} {
		t.Run(fmt.Sprintf("direct=%v", direct), func(t *testing.T) {
			conc := 3
			if direct {
				conc = 1
			}
			r, err := New(context.Background(), Config{Addr: addr, Direct: direct, Conns: 2, Concurrency: conc,
				Rate: 1000, Duration: 100 * time.Millisecond, Grace: 50 * time.Millisecond,
				Method: mEcho, Payload: []byte("x")})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			rep, err := runGuarded(t, r)
			if err != nil {
				t.Fatal(err)
			}
			workers := uint64(2 * conc)
			if rep.Calls != 100 || rep.Sent != workers {
				t.Fatalf("%d calls, %d sent; want 100 due, one sent by each of the %d workers", rep.Calls, rep.Sent, workers)
			}
			frame := uint64(5 + wire.RequestOverhead + 1)
			out := workers * frame
			if !direct {
				// rpc.Client asks, at the first call abandoned on each
				// connection, whether the server takes cancels (a ping,
				// rpc's cancel.go); this server never answers, so no
				// cancel follows.
				out += 2 * (5 + uint64(len(wire.CancelQuestion)))
			}
			if rep.BytesOut != out || rep.BytesIn != 0 {
				t.Fatalf("bytes out %d in %d, want %d out (a request frame a call sent)", rep.BytesOut, rep.BytesIn, out)
			}
			if got := rep.BytesPerCall(); got != float64(out)/float64(workers) {
				t.Fatalf("%v bytes per call, want %d/%d: the bytes of the calls sent", got, out, workers)
			}
			var b strings.Builder
			rep.WriteText(&b)
			if want := fmt.Sprintf("(%.1f per call sent)", float64(out)/float64(workers)); !strings.Contains(b.String(), want) {
				t.Fatalf("text report lacks %q:\n%s", want, b.String())
			}
		})
	}
}

// A call refused before it was written (no replica ready, a full
// connection) is not sent; one whose connection closed may have been.
func TestNotWritten(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("%w (last error: x)", cluster.ErrNoReplica), true},
		{rpc.ErrTooManyPending, true},
		{rpc.ErrClosed, false},
		{rpc.ErrGoAway, false},
		{context.Canceled, false},
	} {
		if got := notWritten(tc.err); got != tc.want {
			t.Errorf("notWritten(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
