package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/rpc"
)

// pingpong against a server in this process: a first line and one line per
// round, each with a CPU figure and a latency.
func TestPingpong(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/PID/task/*/schedstat")
	}
	s := rpc.NewServer()
	s.Handle(1, func(ctx context.Context, req, resp []byte) ([]byte, error) { return append(resp, req...), nil })
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(l)
	defer s.Close()
	var out bytes.Buffer
	err = run([]string{"-addr", l.Addr().String(), "-pid", strconv.Itoa(os.Getpid()), "-c", "20", "-rounds", "2", "-payload-hex", "0102"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []*regexp.Regexp{
		regexp.MustCompile(`^first [0-9.]+ µs/call p50 [0-9]+ µs$`),
		regexp.MustCompile(`^round 1 [0-9.]+ µs/call p50 [0-9]+ µs$`),
		regexp.MustCompile(`^round 2 [0-9.]+ µs/call p50 [0-9]+ µs$`),
	}
	if len(lines) != len(want) {
		t.Fatalf("output %q: want %d lines", out.String(), len(want))
	}
	for i, re := range want {
		if !re.MatchString(lines[i]) {
			t.Errorf("line %d %q does not match %v", i, lines[i], re)
		}
	}
}

func TestPingpongBadArgs(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-addr", "127.0.0.1:1", "-pid", "1", "-c", "0"},
		{"-addr", "127.0.0.1:1", "-pid", strconv.Itoa(os.Getpid()), "-payload-hex", "zz"},
	} {
		if err := run(args, new(bytes.Buffer)); err == nil {
			t.Errorf("run(%q): no error", args)
		}
	}
}
