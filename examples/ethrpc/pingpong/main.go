// Command pingpong measures what one call costs a server process in CPU
// when calls are sparse: over N connections it makes calls one at a time
// (write a request, read its answer, go to the next connection), so the
// server handles every call alone, waking for it and going idle after it,
// which is what a server with many mostly idle sessions does on a quiet
// machine. Per round (one call on every connection) it prints the
// server's CPU time per call, read with nanosecond resolution from
// /proc/PID/task/*/schedstat (Linux), and the median round trip. Unlike an
// open-loop load at a fixed rate, the figure hardly depends on what else
// the machine runs, so two servers can be compared on a busy machine.
// examples/ethrpc/sessions.sh runs it with PINGPONG=ROUNDS.
//
//	pingpong -addr HOST:PORT -pid PID -c N -rounds R -method M -payload-hex HEX
//
// The first round is reported apart: it includes each connection's first
// call (buffers, jobs and deadlines taken on first use).
package main

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "pingpong:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("pingpong", flag.ContinueOnError)
	addr := fs.String("addr", "", "server address (tcp)")
	pid := fs.Int("pid", 0, "server process id (its CPU time is read from /proc)")
	n := fs.Int("c", 1000, "connections")
	rounds := fs.Int("rounds", 3, "rounds after the first (one call on every connection each)")
	method := fs.Uint("method", 1, "method ordinal")
	payloadHex := fs.String("payload-hex", "", "request payload, hex")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *addr == "" || *pid <= 0 || *n <= 0 || *rounds < 0 {
		return errors.New("need -addr, -pid, -c > 0 and -rounds >= 0")
	}
	payload, err := hex.DecodeString(*payloadHex)
	if err != nil {
		return fmt.Errorf("-payload-hex: %v", err)
	}
	env := wire.AppendRequest(nil, &wire.Request{Method: uint32(*method), PromiseID: 1, Payload: payload})
	req := binary.LittleEndian.AppendUint32(nil, uint32(1+len(env)))
	req = append(append(req, wire.KindRequest), env...)
	if _, err := serverCPU(*pid); err != nil {
		return err
	}

	conns := make([]net.Conn, 0, *n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range *n {
		c, err := net.Dial("tcp", *addr)
		if err != nil {
			return err
		}
		conns = append(conns, c)
	}
	buf := make([]byte, 64<<10)
	lat := make([]time.Duration, 0, *n)
	round := func() (cpuPerCall, p50 time.Duration, err error) {
		lat = lat[:0]
		c0, err := serverCPU(*pid)
		if err != nil {
			return 0, 0, err
		}
		for _, c := range conns {
			t := time.Now()
			if _, err := c.Write(req); err != nil {
				return 0, 0, err
			}
			if err := readAnswer(c, buf); err != nil {
				return 0, 0, err
			}
			lat = append(lat, time.Since(t))
		}
		c1, err := serverCPU(*pid)
		if err != nil {
			return 0, 0, err
		}
		slices.Sort(lat)
		return (c1 - c0) / time.Duration(len(conns)), lat[len(lat)/2], nil
	}
	cpu, p50, err := round()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "first %.2f µs/call p50 %.0f µs\n", micros(cpu), micros(p50))
	for r := 1; r <= *rounds; r++ {
		if cpu, p50, err = round(); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "round %d %.2f µs/call p50 %.0f µs\n", r, micros(cpu), micros(p50))
	}
	return nil
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// readAnswer reads one frame (the answer) from c into buf.
func readAnswer(c net.Conn, buf []byte) error {
	var h [5]byte
	if _, err := io.ReadFull(c, h[:]); err != nil {
		return err
	}
	m := int(binary.LittleEndian.Uint32(h[:4]))
	if m < 1 || m-1 > len(buf) {
		return fmt.Errorf("answer frame of %d bytes", m)
	}
	if h[4] != wire.KindResponse {
		return fmt.Errorf("frame kind %d, want an answer", h[4])
	}
	_, err := io.ReadFull(c, buf[:m-1])
	return err
}

// serverCPU is the CPU time the process pid has used so far: the sum over
// its threads of the first field of /proc/PID/task/TID/schedstat (ns).
func serverCPU(pid int) (time.Duration, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		return 0, fmt.Errorf("no /proc/%d/task/*/schedstat (Linux only)", pid)
	}
	var sum int64
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // a thread that just ended
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %v", t, err)
		}
		sum += v
	}
	return time.Duration(sum), nil
}
