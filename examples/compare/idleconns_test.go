package compare

import (
	"bufio"
	"context"
	"encoding/binary"
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
// package, default options), net/http (http.Server defaults, keep-alive)
// and fasthttp (fasthttp.Server defaults). The rpc package has the same
// benchmark for its own server (rpc.BenchmarkIdleConns10k).
func BenchmarkIdleConns10k(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("reads /proc/self/statm")
	}
	for _, arm := range []string{"zaprpc", "nethttp", "fasthttp"} {
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
	switch arm {
	case "zaprpc":
		s := rpc.NewServer()
		s.Handle(1, func(_ context.Context, req, resp []byte) ([]byte, error) { return append(resp, req...), nil })
		go s.Serve(l)
		defer s.Close()
	case "nethttp":
		s := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			w.Write(body)
		})}
		go s.Serve(l)
		defer s.Close()
	case "fasthttp":
		s := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) { ctx.SetBody(ctx.PostBody()) }}
		go s.Serve(l)
		defer s.Shutdown()
	default:
		t.Fatalf("unknown arm %q", arm)
	}
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

// zapEcho makes one call with a hand-built request envelope (method 1).
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
	_, err := io.CopyN(io.Discard, nc, int64(binary.LittleEndian.Uint32(h[:]))-1)
	return err
}

// httpEcho makes one keep-alive POST of the same body and reads the answer.
func httpEcho(nc net.Conn, i int) error {
	if _, err := fmt.Fprintf(nc, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(echoBody), echoBody); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReaderSize(nc, 512), nil)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return err
}
