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
// (20,000 here) cannot hold both ends of 10,000 connections. Under a limit
// too low for one end (skipUnlessFiles) the benchmarks skip. The child
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

// idleFilesBesides is a generous count of the files a process of the
// idle-connection benchmarks holds besides its connections: the standard
// files, the pipes to the child, the listener, the poller, the test binary.
const idleFilesBesides = 64

// skipUnlessFiles skips b unless this process may hold n connections and the
// files it needs besides. Each end of the connections lives in its own
// process, the child (this binary again) under the same hard limit, so the
// check of this one stands for both. Without it a low limit failed the
// benchmark part-way, on a dial or in the child, with "too many open files".
func skipUnlessFiles(b *testing.B, n int) {
	b.Helper()
	limit, ok := openFileLimit()
	if !ok {
		return
	}
	if need := uint64(n + idleFilesBesides); limit < need {
		b.Skipf("%d connections need about %d open files in each of two processes (the connections and %d besides), and the limit here is %d (the hard limit, which Go raises the soft one to): raise it (ulimit -n %d) to run this", n, need, idleFilesBesides, limit, need)
	}
}

func benchIdleConns(b *testing.B, n int, childTest string, call func(net.Conn, int) error) {
	if runtime.GOOS != "linux" {
		b.Skip("reads /proc/self/statm")
	}
	skipUnlessFiles(b, n)
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
			skipUnlessFiles(b, n)
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

// Under a file limit too low for 10,000 connections, BenchmarkIdleConns10k
// skips and says why, where it used to fail part-way with "too many open
// files". The benchmark runs in this binary again, under a shell's lower
// limit (soft and hard: Go raises the soft one to the hard one); once
// skipped it dials nothing.
func TestIdleConnsSkipsUnderLowFileLimit(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("uses sh's ulimit -n and a Linux-only benchmark")
	}
	if os.Getenv(idleChildEnv) != "" {
		t.Skip("not in the child")
	}
	if limit, ok := openFileLimit(); !ok || limit < 256 {
		t.Skip("the file limit is below 256 already, or unknown")
	}
	cmd := exec.Command("sh", "-c", `ulimit -n 256 && exec "$0" -test.run='^$' -test.bench='^BenchmarkIdleConns10k$' -test.benchtime=1x -test.v`, os.Args[0])
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- SKIP: BenchmarkIdleConns10k") || !strings.Contains(string(out), "limit here is 256") {
		t.Fatalf("BenchmarkIdleConns10k under ulimit -n 256: %v, output:\n%s", err, out)
	}
}
