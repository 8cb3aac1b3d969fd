package compare

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/zapcodec/zapcodec/rpc"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// BenchmarkIdleConns10k measures what an idle connection costs a server:
// 10,000 connections to a server in a child process (this test binary,
// re-executed; the process file limit cannot hold both ends), one call on
// each (a 100-byte echo from a raw socket, so nothing of a client library
// is measured), then the child's heap, goroutine stacks and resident set
// per connection after a collection. Arms: zaprpc (this repository's rpc
// package, default options), net/http (http.Server defaults, keep-alive),
// fasthttp (fasthttp.Server defaults) and fasthttp-lowmem (with
// ReduceMemoryUsage, the option fasthttp's docs give for a server of
// mostly idle keep-alive connections: it releases a connection's buffers
// while it waits). The rpc package has the same benchmark for its own
// server (rpc.BenchmarkIdleConns10k).
func BenchmarkIdleConns10k(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("reads /proc/self/statm")
	}
	for _, arm := range idleArms {
		b.Run("server="+arm, func(b *testing.B) {
			call := httpEcho
			if arm == "zaprpc" {
				call = zapEcho
			}
			for range b.N {
				heap, stack, rss := idleConns(b, arm, 10000, call)
				b.ReportMetric(heap, "heap-B/conn")
				b.ReportMetric(stack, "stack-B/conn")
				b.ReportMetric(rss, "rss-B/conn")
			}
		})
	}
}

// idleArms are the servers of BenchmarkIdleConns10k (serveIdleArm).
var idleArms = []string{"zaprpc", "nethttp", "fasthttp", "fasthttp-lowmem"}

const idleChildEnv = "COMPARE_IDLE_CHILD"

// TestIdleConnsChild is the child server of BenchmarkIdleConns10k; it does
// nothing in a normal run.
func TestIdleConnsChild(t *testing.T) {
	arm := os.Getenv(idleChildEnv)
	if arm == "" {
		t.Skip("the server half of BenchmarkIdleConns10k")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop, err := serveIdleArm(arm, l)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	fmt.Printf("ADDR %s\n", l.Addr())
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if in.Text() == "MEM" {
			var ms runtime.MemStats
			runtime.GC()
			runtime.GC()
			runtime.ReadMemStats(&ms)
			fmt.Printf("MEM %d %d %d\n", ms.HeapAlloc, ms.StackInuse, residentBytes())
		}
	}
}

// serveIdleArm serves arm's echo server on l and returns the function
// that stops it.
func serveIdleArm(arm string, l net.Listener) (stop func(), err error) {
	switch arm {
	case "zaprpc":
		s := rpc.NewServer()
		s.Handle(1, func(_ context.Context, req, resp []byte) ([]byte, error) { return append(resp, req...), nil })
		go s.Serve(l)
		return func() { s.Close() }, nil
	case "nethttp":
		s := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			w.Write(body)
		})}
		go s.Serve(l)
		return func() { s.Close() }, nil
	case "fasthttp", "fasthttp-lowmem":
		s := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) { ctx.SetBody(ctx.PostBody()) },
			ReduceMemoryUsage: arm == "fasthttp-lowmem"}
		go s.Serve(l)
		return func() { s.Shutdown() }, nil
	}
	return nil, fmt.Errorf("unknown arm %q", arm)
}

func residentBytes() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}

// idleConns runs one measurement against a child server of the given arm.
func idleConns(b *testing.B, arm string, n int, call func(net.Conn, int) error) (heap, stack, rss float64) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestIdleConnsChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), idleChildEnv+"="+arm)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer cmd.Wait()
	defer in.Close()
	out := bufio.NewScanner(outPipe)
	expect := func(word string) []string {
		for out.Scan() {
			if f := strings.Fields(out.Text()); len(f) > 0 && f[0] == word {
				return f[1:]
			}
		}
		b.Fatalf("%s child ended before %s", arm, word)
		return nil
	}
	mem := func() (h, s, r int64) {
		fmt.Fprintln(in, "MEM")
		f := expect("MEM")
		h, _ = strconv.ParseInt(f[0], 10, 64)
		s, _ = strconv.ParseInt(f[1], 10, 64)
		r, _ = strconv.ParseInt(f[2], 10, 64)
		return
	}
	addr := expect("ADDR")[0]
	h0, s0, r0 := mem()
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, nc := range conns {
			nc.Close()
		}
	}()
	for i := 0; i < n; i++ {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatalf("%s: dial %d: %v", arm, i, err)
		}
		conns = append(conns, nc)
		if err := call(nc, i); err != nil {
			b.Fatalf("%s: call %d: %v", arm, i, err)
		}
	}
	h1, s1, r1 := mem()
	return float64(h1-h0) / float64(n), float64(s1-s0) / float64(n), float64(r1-r0) / float64(n)
}

var echoBody = strings.Repeat("x", 100)

// zapEcho makes call i with a hand-built request envelope (method 1) and
// checks the answer: a response frame for promise i+1, status OK, the
// body echoed.
func zapEcho(nc net.Conn, i int) error {
	env := wire.AppendRequest(nil, &wire.Request{Method: 1, PromiseID: uint32(i + 1), Payload: []byte(echoBody)})
	frame := binary.LittleEndian.AppendUint32(nil, uint32(len(env)+1))
	frame = append(append(frame, wire.KindRequest), env...)
	if _, err := nc.Write(frame); err != nil {
		return err
	}
	var h [5]byte
	if _, err := io.ReadFull(nc, h[:]); err != nil {
		return err
	}
	n := binary.LittleEndian.Uint32(h[:])
	if h[4] != wire.KindResponse || n < 1 || n > 1<<16 {
		return fmt.Errorf("answer frame of kind %d, %d bytes", h[4], n)
	}
	b := make([]byte, n-1)
	if _, err := io.ReadFull(nc, b); err != nil {
		return err
	}
	r, err := wire.ParseResponse(b)
	if err != nil {
		return err
	}
	if r.Status != rpc.StatusOK || r.PromiseID != uint32(i+1) || string(r.Body) != echoBody {
		return fmt.Errorf("answer status %d, promise %d, body %q; want %d, %d, the echo", r.Status, r.PromiseID, r.Body, rpc.StatusOK, i+1)
	}
	return nil
}

// httpEcho makes one keep-alive POST of the same body and checks the
// answer: status 200, the body echoed.
func httpEcho(nc net.Conn, i int) error {
	if _, err := fmt.Fprintf(nc, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(echoBody), echoBody); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReaderSize(nc, 512), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || string(body) != echoBody {
		return fmt.Errorf("answer %s, body %q; want 200, the echo", resp.Status, body)
	}
	return nil
}

// TestIdleEchoChecks: the calls BenchmarkIdleConns10k makes on its
// connections pass against each arm's echo server and fail against a
// server that answers wrong, so a broken arm fails the benchmark rather
// than reporting the memory of connections that never made a call.
func TestIdleEchoChecks(t *testing.T) {
	call := func(arm string) func(net.Conn, int) error {
		if arm == "zaprpc" {
			return zapEcho
		}
		return httpEcho
	}
	try := func(t *testing.T, serve func(net.Listener) (func(), error), call func(net.Conn, int) error) error {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		stop, err := serve(l)
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		for i := range 3 {
			nc, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			nc.SetDeadline(time.Now().Add(time.Minute)) // only against a hang
			err = call(nc, i)
			nc.Close()
			if err != nil {
				return err
			}
		}
		return nil
	}
	for _, arm := range idleArms {
		serve := func(l net.Listener) (func(), error) { return serveIdleArm(arm, l) }
		if err := try(t, serve, call(arm)); err != nil {
			t.Errorf("%s: %v", arm, err)
		}
	}
	zapWith := func(h rpc.Handler) func(net.Listener) (func(), error) {
		return func(l net.Listener) (func(), error) {
			s := rpc.NewServer()
			s.Handle(1, h)
			go s.Serve(l)
			return func() { s.Close() }, nil
		}
	}
	httpWith := func(code int, body string) func(net.Listener) (func(), error) {
		return func(l net.Listener) (func(), error) {
			s := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.WriteHeader(code)
				io.WriteString(w, body)
			})}
			go s.Serve(l)
			return func() { s.Close() }, nil
		}
	}
	for name, c := range map[string]struct {
		serve func(net.Listener) (func(), error)
		call  func(net.Conn, int) error
	}{
		"zaprpc, another body": {zapWith(func(_ context.Context, req, resp []byte) ([]byte, error) {
			return append(resp, req[1:]...), nil
		}), zapEcho},
		"zaprpc, an error": {zapWith(func(context.Context, []byte, []byte) ([]byte, error) {
			return nil, errors.New("no")
		}), zapEcho},
		"http, status 500":   {httpWith(http.StatusInternalServerError, echoBody), httpEcho},
		"http, another body": {httpWith(http.StatusOK, echoBody[1:]), httpEcho},
	} {
		if err := try(t, c.serve, c.call); err == nil {
			t.Errorf("%s: the call passed", name)
		}
	}
}
