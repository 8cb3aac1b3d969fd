// Command ethrpc is the end-to-end demo of zapcodec: an eth_getBalance
// server generated from eth.zap (package ethzap, made by `zapcodec gen`)
// answering from an in-memory table of accounts, a few seconds of load on it
// over loopback with several connections (package internal/loadgen), and a
// table of what it measured.
//
//	go run ./examples/ethrpc                  # the demo: load, then the table
//	go run ./examples/ethrpc -d 10s -c 8 -concurrency 32
//	go run ./examples/ethrpc -serve           # serve on 127.0.0.1:7700 until Ctrl-C
//	go run ./examples/ethrpc -serve -plain    # the same answers from a plain goroutine-per-connection server
//
// Allocations are counted with runtime.MemStats, which counts a whole
// process. So that the client's and the server's are told apart, the demo
// runs the server in a child process (this same program with -serve), and
// each side reports the change in its own Mallocs across the measured run,
// divided by the calls. With -inproc both run in one process and the table
// shows their sum. Wire bytes are the frame bytes counted at the client's
// connections (a net.Conn wrapper), checked against the server's own count.
//
// The server's getLogs reserves its answer's memory before building it
// (rpc.ReserveAnswer; see logCost in logs.go): a peer that pipelines calls
// of large ranges and never reads the answers holds one answer, not one
// per call.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/zapcodec/zapcodec/examples/ethrpc/ethzap"
	"github.com/zapcodec/zapcodec/internal/loadgen"
	"github.com/zapcodec/zapcodec/internal/plainserver"
	"github.com/zapcodec/zapcodec/rpc"
)

// defaultServeAddr is where -serve listens unless -addr says otherwise, so
// that the README's zapcodec load and dump examples work as written.
const defaultServeAddr = "127.0.0.1:7700"

// childEnv marks a child process started by the demo (or by the tests,
// whose binary is not this main): it runs run() with its arguments.
const childEnv = "ETHRPC_CHILD"

type options struct {
	network, addr string
	duration      time.Duration
	warm          time.Duration
	conns, conc   int
	serve         bool
	control       bool // -serve child of a demo: stats over stdin/stdout
	inproc        bool
	plain         bool // -serve: internal/plainserver instead of rpc.Server
	// eth_getLogs whole and streamed (logs.go); 0: the defaults.
	logBlocks, logChunk, logRounds int
	// shutdownTimeout bounds serve's Shutdown; 0: 5 s. Tests only.
	shutdownTimeout time.Duration
}

// Defaults of the getLogs comparison: 2,500 blocks of 8 logs (20,000
// logs, about 3.8 MB whole), streamed 500 logs a message, 5 rounds.
const (
	defaultLogBlocks = 2500
	defaultLogChunk  = 500
	defaultLogRounds = 5
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	var o options
	fs := flag.NewFlagSet("ethrpc", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.network, "network", "tcp", "tcp or unix")
	fs.StringVar(&o.addr, "addr", "", "listen address (default 127.0.0.1:0 for the demo, "+defaultServeAddr+" with -serve)")
	fs.DurationVar(&o.duration, "d", 3*time.Second, "length of the measured load")
	fs.DurationVar(&o.warm, "warmup", 500*time.Millisecond, "closed-loop warm-up before the measurement (not counted)")
	fs.IntVar(&o.conns, "c", 4, "client connections")
	fs.IntVar(&o.conc, "concurrency", 16, "calls in flight per connection")
	fs.BoolVar(&o.serve, "serve", false, "only serve: print the address and serve until interrupted")
	fs.BoolVar(&o.inproc, "inproc", false, "run the server in this process (allocations then show client+server together)")
	fs.BoolVar(&o.control, "control", false, "internal: serve as the demo's child process")
	fs.BoolVar(&o.plain, "plain", false, "with -serve: answer from a plain goroutine-per-connection server (the baseline of the many-sessions figures) instead of rpc.Server")
	fs.IntVar(&o.logBlocks, "log-blocks", defaultLogBlocks, "getLogs comparison: blocks asked for (8 logs each; 0 skips it)")
	fs.IntVar(&o.logChunk, "log-chunk", defaultLogChunk, "getLogs comparison: logs per streamed message")
	fs.IntVar(&o.logRounds, "log-rounds", defaultLogRounds, "getLogs comparison: rounds of each (medians)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "ethrpc: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if o.plain && (!o.serve || o.control) {
		fmt.Fprintln(stderr, "ethrpc: -plain goes with -serve only")
		return 2
	}
	if o.serve {
		if o.addr == "" {
			o.addr = defaultServeAddr
		}
		if o.plain {
			if err := servePlain(o, stdout); err != nil {
				fmt.Fprintln(stderr, "ethrpc:", err)
				return 1
			}
			return 0
		}
		if err := serve(o, os.Stdin, stdout); err != nil {
			fmt.Fprintln(stderr, "ethrpc:", err)
			return 1
		}
		return 0
	}
	if o.addr == "" {
		o.addr = "127.0.0.1:0"
	}
	res, err := demo(context.Background(), o, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "ethrpc:", err)
		return 1
	}
	res.print(stdout)
	if res.report.Failed > 0 {
		return 1
	}
	return 0
}

// newServer returns a server with the Eth service on a fresh table, and
// EthLogs beside it (at rpc.At(logsBase)), serving reflection (a demo's
// API is no secret: zapcodec call -list ADDR lists both); opts are the
// tests'.
func newServer(opts ...rpc.ServerOption) *rpc.Server {
	s := rpc.NewServer(append([]rpc.ServerOption{answerBudget(), rpc.WithReflection()}, opts...)...)
	ethzap.RegisterEthServer(s, ethServer{t: newTable()})
	ethzap.RegisterEthLogsServer(s, logsServer{}, rpc.At(logsBase))
	return s
}

// sideStats is one process's counters at a moment.
type sideStats struct {
	Mallocs  uint64 `json:"mallocs"`
	Calls    uint64 `json:"calls"`     // server only: requests read
	BytesIn  uint64 `json:"bytes_in"`  // server only: frame bytes
	BytesOut uint64 `json:"bytes_out"` // server only
}

func mallocs() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.Mallocs
}

// serve runs -serve. With -control (the demo's child) it writes
// "addr NETWORK ADDRESS" as its first line, answers each "stats" line read
// from control with a JSON sideStats line, and stops when control ends.
// Otherwise it prints where it listens and stops on SIGINT or SIGTERM.
func serve(o options, control io.Reader, stdout io.Writer) error {
	l, err := net.Listen(o.network, o.addr)
	if err != nil {
		return err
	}
	s := newServer()
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(l) }()
	stop := func() error {
		timeout := o.shutdownTimeout
		if timeout == 0 {
			timeout = 5 * time.Second
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		// Shutdown fails when its time ran out and it closed connections
		// at once, calls on them perhaps cut: serve reports that.
		shutErr := s.Shutdown(ctx)
		if err := <-errc; !errors.Is(err, rpc.ErrServerClosed) {
			return err
		}
		if shutErr != nil {
			return fmt.Errorf("shutdown: %w", shutErr)
		}
		return nil
	}
	addr := l.Addr().String()
	if o.control {
		fmt.Fprintf(stdout, "addr %s %s\n", o.network, addr)
		sc := bufio.NewScanner(control)
		for sc.Scan() {
			if sc.Text() != "stats" {
				continue
			}
			st := s.Stats()
			line, _ := json.Marshal(sideStats{Mallocs: mallocs(), Calls: st.Calls, BytesIn: st.BytesIn, BytesOut: st.BytesOut})
			fmt.Fprintf(stdout, "%s\n", line)
		}
		return stop()
	}
	fmt.Fprintf(stdout, "ethrpc: serving Eth (getBalance is method %d) from %d accounts on %s %s; Ctrl-C stops\n",
		ethzap.EthGetBalanceOrdinal, numAccounts, o.network, addr)
	fmt.Fprintf(stdout, "accounts: 0x%x .. 0x%x\n", accountAddr(0), accountAddr(numAccounts-1))
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	select {
	case <-ctx.Done():
		return stop()
	case err := <-errc:
		return err
	}
}

// servePlain runs -serve -plain: the Eth service on a plain
// goroutine-per-connection server (internal/plainserver), answering the
// same bytes as rpc.Server with the generated handler, until SIGINT or
// SIGTERM.
func servePlain(o options, stdout io.Writer) error {
	l, err := net.Listen(o.network, o.addr)
	if err != nil {
		return err
	}
	impl := ethServer{t: newTable()}
	errc := make(chan error, 1)
	go func() { errc <- plainserver.Serve(l, plainEth(impl)) }()
	fmt.Fprintf(stdout, "ethrpc: serving Eth (getBalance is method %d) from a plain goroutine-per-connection server on %s %s; Ctrl-C stops\n",
		ethzap.EthGetBalanceOrdinal, o.network, l.Addr())
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	select {
	case <-ctx.Done():
		l.Close()
		return nil
	case err := <-errc:
		return err
	}
}

// plainEth is the Eth service as a plainserver.Func: what the generated
// handler does (read the view, call GetBalance, append the answer).
func plainEth(impl ethServer) plainserver.Func {
	return func(method uint32, req, out []byte) (uint32, []byte) {
		if method != ethzap.EthGetBalanceOrdinal {
			return rpc.StatusNotFound, append(out, "no such method"...)
		}
		in, err := ethzap.ReadGetBalanceRequest(req)
		if err != nil {
			return rpc.StatusBadRequest, append(out, err.Error()...)
		}
		var r ethzap.GetBalanceResponse
		if err := impl.GetBalance(context.Background(), in, &r); err != nil {
			var se *rpc.StatusError
			if errors.As(err, &se) {
				return se.Code, append(out, se.Message...)
			}
			return rpc.StatusInternal, append(out, err.Error()...)
		}
		return rpc.StatusOK, r.AppendZAP(out)
	}
}

// server is the demo's server, in this process or in a child.
type server interface {
	stats() (sideStats, error)
	close() error
}

type inprocServer struct{ s *rpc.Server }

func (p inprocServer) stats() (sideStats, error) {
	st := p.s.Stats()
	return sideStats{Mallocs: mallocs(), Calls: st.Calls, BytesIn: st.BytesIn, BytesOut: st.BytesOut}, nil
}

func (p inprocServer) close() error { return p.s.Close() }

// childServer is this program run with -serve -control.
type childServer struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

func (c *childServer) stats() (sideStats, error) {
	var st sideStats
	if _, err := io.WriteString(c.in, "stats\n"); err != nil {
		return st, fmt.Errorf("server process: %w", err)
	}
	if !c.out.Scan() {
		return st, fmt.Errorf("server process: no stats (%v)", c.out.Err())
	}
	return st, json.Unmarshal(c.out.Bytes(), &st)
}

func (c *childServer) close() error {
	c.in.Close() // the child shuts down when its stdin ends
	return c.cmd.Wait()
}

func startChild(o options, stderr io.Writer) (*childServer, string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	cmd := exec.Command(exe, "-serve", "-control", "-network", o.network, "-addr", o.addr)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, "", err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	c := &childServer{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	if !c.out.Scan() {
		c.close()
		return nil, "", errors.New("server process exited before printing its address")
	}
	f := strings.Fields(c.out.Text())
	if len(f) != 3 || f[0] != "addr" {
		c.close()
		return nil, "", fmt.Errorf("server process printed %q, want its address", c.out.Text())
	}
	return c, f[2], nil
}

// result is what one demo run measured.
type result struct {
	o                            options
	addr                         string
	report                       *loadgen.Report
	clientAllocs, serverAlloc    float64 // per call; in-process: clientAllocs is the sum
	clientMallocs, serverMallocs uint64  // totals over the measured run
	serverCalls                  uint64
	serverBytes                  uint64
	sample                       string
	logs                         *logsResult // nil when skipped
}

func demo(ctx context.Context, o options, stderr io.Writer) (*result, error) {
	// The child process, the progress callback and this goroutine all write
	// to stderr.
	stderr = &lockedWriter{w: stderr}
	var srv server
	var addr string
	if o.inproc {
		l, err := net.Listen(o.network, o.addr)
		if err != nil {
			return nil, err
		}
		s := newServer()
		go s.Serve(l)
		srv, addr = inprocServer{s}, l.Addr().String()
	} else {
		c, a, err := startChild(o, stderr)
		if err != nil {
			return nil, err
		}
		srv, addr = c, a
	}
	defer srv.close()

	t := newTable()
	res := &result{o: o, addr: addr}
	sample, err := sampleCall(ctx, o.network, addr)
	if err != nil {
		return nil, err
	}
	res.sample = sample

	r, err := loadgen.New(ctx, loadgen.Config{
		Network: o.network, Addr: addr,
		Conns: o.conns, Concurrency: o.conc, Duration: o.duration,
		Method: ethzap.EthGetBalanceOrdinal, Request: t.request, Check: t.check,
		Progress: func(p loadgen.Progress) {
			fmt.Fprintf(stderr, "  %4.1fs  %8.0f calls/s  %9d calls  %d failed\n",
				(p.Elapsed + o.warm).Seconds(), p.Rate, p.Calls, p.Failed)
		},
	})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	fmt.Fprintf(stderr, "ethrpc: %d connections x %d in flight to %s %s: %v warm-up, then %v measured\n",
		o.conns, o.conc, o.network, addr, o.warm, o.duration)
	if err := r.Warm(ctx, o.warm); err != nil {
		return nil, err
	}
	s0, err := srv.stats()
	if err != nil {
		return nil, err
	}
	c0 := mallocs()
	rep, err := r.Run(ctx)
	c1 := mallocs()
	if err != nil {
		return nil, err
	}
	s1, err := srv.stats()
	if err != nil {
		return nil, err
	}
	res.report = rep
	if rep.Calls > 0 {
		n := float64(rep.Calls)
		res.clientMallocs = c1 - c0
		res.clientAllocs = float64(res.clientMallocs) / n
		if !o.inproc {
			res.serverMallocs = s1.Mallocs - s0.Mallocs
			res.serverAlloc = float64(res.serverMallocs) / n
		}
	}
	res.serverCalls = s1.Calls - s0.Calls
	res.serverBytes = (s1.BytesIn - s0.BytesIn) + (s1.BytesOut - s0.BytesOut)
	if o.logBlocks > 0 {
		chunk, rounds := o.logChunk, o.logRounds
		if chunk <= 0 {
			chunk = defaultLogChunk
		}
		if rounds <= 0 {
			rounds = defaultLogRounds
		}
		fmt.Fprintf(stderr, "ethrpc: eth_getLogs of %d blocks, whole and streamed, %d rounds each\n", o.logBlocks, rounds)
		if res.logs, err = compareLogs(ctx, o.network, addr, o.logBlocks, chunk, rounds); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// sampleCall makes one call with the generated client, as an application
// would, and describes its answer.
func sampleCall(ctx context.Context, network, addr string) (string, error) {
	c, err := rpc.Dial(ctx, network, addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	req := ethzap.GetBalanceRequest{Account: accountAddr(0), Block: demoBlock, ID: 1, Method: "eth_getBalance"}
	var resp ethzap.GetBalanceResponse
	if err := ethzap.NewEthClient(c).GetBalance(ctx, &req, &resp); err != nil {
		return "", fmt.Errorf("sample call: %w", err)
	}
	wei := new(big.Int).SetBytes(resp.Balance[:])
	return fmt.Sprintf("getBalance(0x%x, block %d) = %s wei, nonce %d", req.Account, req.Block, wei, resp.Nonce), nil
}

func (res *result) print(w io.Writer) {
	rep := res.report
	mode := "server in a child process"
	if res.o.inproc {
		mode = "server in this process"
	}
	fmt.Fprintf(w, "\neth_getBalance over ZAP-RPC: %s %s, %s\n", res.o.network, res.addr, mode)
	fmt.Fprintf(w, "%d connections x %d in flight, %.2fs measured after %v warm-up; %d CPUs, GOMAXPROCS %d, %s\n",
		rep.Conns, rep.Concurrency, rep.Seconds, res.o.warm, runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version())
	fmt.Fprintf(w, "sample: %s\n\n", res.sample)
	rows := [][2]string{
		{"calls", fmt.Sprintf("%d (%d ok, %d failed; answers checked against the table)", rep.Calls, rep.OK, rep.Failed)},
		{"calls/s", fmt.Sprintf("%.0f", rep.CallsPerSec)},
		{"latency p50", dur(rep.Latency.P50)},
		{"latency p99", dur(rep.Latency.P99)},
		{"latency p99.9 / max", dur(rep.Latency.P999) + " / " + dur(rep.Latency.Max)},
	}
	if res.o.inproc {
		rows = append(rows, [2]string{"allocs/call", fmt.Sprintf("%.4f client+server (one process: %d allocations in all)", res.clientAllocs, res.clientMallocs)})
	} else {
		rows = append(rows,
			[2]string{"allocs/call client", fmt.Sprintf("%.4f (%d allocations in the client process)", res.clientAllocs, res.clientMallocs)},
			[2]string{"allocs/call server", fmt.Sprintf("%.4f (%d allocations in the server process)", res.serverAlloc, res.serverMallocs)})
	}
	if rep.Sent > 0 {
		rows = append(rows, [2]string{"wire bytes/call", fmt.Sprintf("%.0f = %.0f request + %.0f answer (server counted %.0f)",
			rep.BytesPerCall(), float64(rep.BytesOut)/float64(rep.Sent), float64(rep.BytesIn)/float64(rep.Sent),
			float64(res.serverBytes)/float64(rep.Sent))})
	}
	if len(rep.Errors) > 0 || len(rep.Statuses) != 1 {
		rows = append(rows, [2]string{"statuses / errors", fmt.Sprintf("%v / %v", rep.Statuses, rep.Errors)})
	}
	fmt.Fprintf(w, "| %-20s | %s |\n|%s|%s|\n", "metric", "value", strings.Repeat("-", 22), strings.Repeat("-", 7))
	for _, r := range rows {
		fmt.Fprintf(w, "| %-20s | %s |\n", r[0], r[1])
	}
	if l := res.logs; l != nil {
		rounds := fmt.Sprintf("medians of %d rounds each", l.rounds)
		if l.rounds == 1 {
			rounds = "one round"
		}
		fmt.Fprintf(w, "\neth_getLogs of %d logs (%.1f MB whole), %s:\n", l.logs, float64(l.bytes)/1e6, rounds)
		fmt.Fprintf(w, "| %-40s | %-18s | %s |\n|%s|%s|%s|\n", "delivery", "first log in hand", "all logs in hand",
			strings.Repeat("-", 42), strings.Repeat("-", 20), strings.Repeat("-", 18))
		fmt.Fprintf(w, "| %-40s | %-18s | %s |\n", "getLogs: one answer, decoded", dur(uint64(l.wholeAll)), dur(uint64(l.wholeAll)))
		fmt.Fprintf(w, "| %-40s | %-18s | %s |\n", fmt.Sprintf("streamLogs: %d messages of %d, views", l.chunks, l.chunk),
			dur(uint64(l.streamFirst)), dur(uint64(l.streamAll)))
	}
}

func dur(ns uint64) string {
	d := time.Duration(ns)
	switch {
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	case d >= time.Microsecond:
		return d.Round(time.Microsecond).String()
	}
	return d.String()
}

// lockedWriter serialises writes from several goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
