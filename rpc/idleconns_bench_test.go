package rpc

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// The idle-connection benchmark runs the server in a child process (this
// test binary, re-executed with idleChildEnv set): the process file limit
// (20,000 here) cannot hold both ends of 10,000 connections. The child
// serves until its stdin closes and answers each "MEM" line with its heap,
// goroutine stacks and resident set after a collection.
const idleChildEnv = "ZAPRPC_IDLE_CHILD"

// TestIdleConnsChild is the child's body; it does nothing in a normal run.
func TestIdleConnsChild(t *testing.T) {
	if os.Getenv(idleChildEnv) != "1" {
		t.Skip("the server half of BenchmarkIdleConns10k")
	}
	s := NewServer(WithLogger(discardLogger()))
	s.Handle(mEcho, echo)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(l)
	defer s.Close()
	serveMemChild(l.Addr().String())
}

// serveMemChild prints the address, then answers MEM lines on stdin
// (heap, goroutine stacks and resident set after a collection) and CPU
// lines (the process's user and system CPU time so far, in ns).
func serveMemChild(addr string) {
	fmt.Printf("ADDR %s\n", addr)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "MEM":
			heap, stack := heapAfterGC()
			fmt.Printf("MEM %d %d %d\n", heap, stack, residentBytes())
		case "CPU":
			fmt.Printf("CPU %d\n", cpuTime())
		}
	}
}

// residentBytes is the resident set of this process (Linux), 0 elsewhere.
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

// memChild is the parent's handle on a child server.
type memChild struct {
	cmd  *exec.Cmd
	in   *os.File
	out  *bufio.Scanner
	addr string
}

func startMemChild(b *testing.B, run string) *memChild {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+run+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), idleChildEnv+"=1")
	cmd.Stderr = os.Stderr
	pr, pw, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stdin = pr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	pr.Close()
	m := &memChild{cmd: cmd, in: pw, out: bufio.NewScanner(stdout)}
	m.addr = m.expect(b, "ADDR")[0]
	return m
}

// expect returns the fields of the next line that starts with word.
func (m *memChild) expect(b *testing.B, word string) []string {
	for m.out.Scan() {
		if f := strings.Fields(m.out.Text()); len(f) > 0 && f[0] == word {
			return f[1:]
		}
	}
	b.Fatalf("child server ended before %s", word)
	return nil
}

// mem asks the child for its heap, stack and resident bytes.
func (m *memChild) mem(b *testing.B) (heap, stack, rss int64) {
	fmt.Fprintln(m.in, "MEM")
	f := m.expect(b, "MEM")
	heap, _ = strconv.ParseInt(f[0], 10, 64)
	stack, _ = strconv.ParseInt(f[1], 10, 64)
	rss, _ = strconv.ParseInt(f[2], 10, 64)
	return
}

// cpu asks the child for the CPU time it used so far.
func (m *memChild) cpu(b *testing.B) time.Duration {
	fmt.Fprintln(m.in, "CPU")
	ns, _ := strconv.ParseInt(m.expect(b, "CPU")[0], 10, 64)
	return time.Duration(ns)
}

func (m *memChild) stop() {
	m.in.Close()
	m.cmd.Wait()
}

// BenchmarkIdleConns10k opens 10,000 connections to a server in a child
// process, makes one call on each (100-byte echo, from a raw socket: no
// client state on this side), and reports the server's heap, goroutine
// stacks and resident set per connection while they sit idle. The same
// measurement of net/http and fasthttp is in examples/compare
// (BenchmarkIdleConns10k there).
func BenchmarkIdleConns10k(b *testing.B) {
	benchIdleConns(b, 10000, "TestIdleConnsChild", func(nc net.Conn, i int) error {
		return rawEcho(nc, uint32(i+1), make([]byte, 100))
	})
}

func benchIdleConns(b *testing.B, n int, childTest string, call func(net.Conn, int) error) {
	if runtime.GOOS != "linux" {
		b.Skip("reads /proc/self/statm")
	}
	b.ReportAllocs()
	for range b.N {
		m := startMemChild(b, childTest)
		heap0, stack0, rss0 := m.mem(b)
		conns := make([]net.Conn, 0, n)
		for i := 0; i < n; i++ {
			nc, err := net.Dial("tcp", m.addr)
			if err != nil {
				b.Fatalf("dial %d: %v", i, err)
			}
			conns = append(conns, nc)
			if err := call(nc, i); err != nil {
				b.Fatalf("call %d: %v", i, err)
			}
		}
		heap1, stack1, rss1 := m.mem(b)
		for _, nc := range conns {
			nc.Close()
		}
		m.stop()
		b.ReportMetric(float64(heap1-heap0)/float64(n), "heap-B/conn")
		b.ReportMetric(float64(stack1-stack0)/float64(n), "stack-B/conn")
		b.ReportMetric(float64(rss1-rss0)/float64(n), "rss-B/conn")
	}
}

// rawEcho makes one echo call on a raw socket.
func rawEcho(nc net.Conn, pid uint32, payload []byte) error {
	if _, err := nc.Write(frameBytes(wire.KindRequest, wire.AppendRequest(nil, &wire.Request{Method: mEcho, PromiseID: pid, Payload: payload}))); err != nil {
		return err
	}
	var h [5]byte
	if _, err := io.ReadFull(nc, h[:]); err != nil {
		return err
	}
	body := make([]byte, int(h[0])|int(h[1])<<8|int(h[2])<<16|int(h[3])<<24-1)
	_, err := io.ReadFull(nc, body)
	return err
}

// idleWindow is how long BenchmarkIdleCPU watches an idle server.
const idleWindow = 10 * time.Second

// BenchmarkIdleCPU measures what idle connections cost a server in CPU:
// a server in a child process gets 10 or 10,000 connections, one echo
// call on each (from raw sockets: this side holds no client state), and
// then nothing. A read timeout later (each connection is woken once then,
// to give its jobs back) the child's CPU time (user plus system) is read,
// and again idleWindow later; the metric is the difference. A server
// whose idle cost grows with its connections (a scan of every connection
// each tick, a timer per connection firing every few seconds) shows it
// here; the target is 10,000 within twice 10.
func BenchmarkIdleCPU(b *testing.B) {
	for _, n := range []int{10, 10000} {
		b.Run(fmt.Sprintf("conns=%d", n), func(b *testing.B) {
			if runtime.GOOS != "linux" {
				b.Skip("Getrusage semantics")
			}
			b.ReportAllocs()
			for range b.N {
				m := startMemChild(b, "TestIdleConnsChild")
				conns := make([]net.Conn, 0, n)
				for i := 0; i < n; i++ {
					nc, err := net.Dial("tcp", m.addr)
					if err != nil {
						b.Fatalf("dial %d: %v", i, err)
					}
					conns = append(conns, nc)
					if err := rawEcho(nc, uint32(i+1), make([]byte, 100)); err != nil {
						b.Fatalf("call %d: %v", i, err)
					}
				}
				// A connection is woken once, a read timeout after its last
				// call, to give its jobs back: the window starts after that.
				time.Sleep(DefaultReadTimeout + time.Second)
				cpu0 := m.cpu(b)
				time.Sleep(idleWindow)
				cpu1 := m.cpu(b)
				for _, nc := range conns {
					nc.Close()
				}
				m.stop()
				b.ReportMetric(float64(cpu1-cpu0)/1e6, "cpu-ms/10s")
			}
		})
	}
}
