package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
)

// A run asking for more connections than this process's limit of open
// files can hold fails at once with an error that says the limit and how
// to raise it, on a plain server as on a cluster target; it failed on the
// first dial past the limit with "socket: too many open files", which
// says neither. So does a run whose connections fit the limit but not
// beside the other files the process holds: its dial fails, saying the
// limit; and a cluster run whose connections to one replica fit, not
// those to both (it went on with one replica's connections, the client
// dialing the other's in vain). The run is a child process (this test binary) under sh's
// ulimit -n 64.
func TestConnsAboveFileLimit(t *testing.T) {
	if addr := os.Getenv("LOADGEN_FILELIMIT_ADDR"); addr != "" {
		fileLimitChild(addr, os.Getenv("LOADGEN_FILELIMIT_TARGET"), os.Getenv("LOADGEN_FILELIMIT_HOLD") != "")
		return
	}
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("uses sh's ulimit -n")
	}
	_, addr := startServer(t)
	_, addr2 := startServer(t)
	for _, tc := range []struct {
		target string // a cluster target, "" none
		hold   bool
		want   string
	}{
		{"", false, "limit of 64"},
		{"static:///" + addr, false, "limit of 64"},
		{"", true, "limit is 64"},
		{"static:///" + addr, true, "limit is 64"},
		{"static:///" + addr + "," + addr2, false, "limit is 64"},
	} {
		cmd := exec.Command("sh", "-c", `ulimit -n 64 && exec "$0" -test.run='^TestConnsAboveFileLimit$'`, os.Args[0])
		cmd.Env = append(os.Environ(), "LOADGEN_FILELIMIT_ADDR="+addr)
		cmd.Env = append(cmd.Env, "LOADGEN_FILELIMIT_TARGET="+tc.target)
		if tc.hold {
			cmd.Env = append(cmd.Env, "LOADGEN_FILELIMIT_HOLD=1")
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%+v: the child: %v, output:\n%s", tc, err, out)
		}
		got := string(out)
		if !strings.Contains(got, tc.want) || !strings.Contains(got, "ulimit -n") {
			t.Errorf("%+v: the error does not say the limit (64) and how to raise it:\n%s", tc, got)
		}
	}
}

// fileLimitChild is the child of TestConnsAboveFileLimit: it prints New's
// error for 100 connections to addr (or per replica of target); with
// hold, for 40, once it holds 20 files open (the connections fit the
// limit, not beside them); for 30 per replica of a target of two.
func fileLimitChild(addr, target string, hold bool) {
	conns := 100
	if strings.Contains(target, ",") {
		conns = 30
	}
	if hold {
		conns = 40
		for range 20 {
			if _, err := os.Open(os.DevNull); err != nil {
				fmt.Println(err)
				return
			}
		}
	}
	cfg := Config{Addr: addr, Conns: conns, Duration: time.Second, Method: mEcho}
	if target != "" {
		cfg = Config{Target: target, Conns: conns, Duration: time.Second, Method: mEcho}
	}
	r, err := New(context.Background(), cfg)
	if err == nil {
		r.Close()
		fmt.Printf("New took %d connections\n", conns)
		return
	}
	fmt.Println(err)
}

// A dial that fails for want of open files (other files of the process
// took them) says the limit and how to raise it.
func TestDialOutOfFilesSaysLimit(t *testing.T) {
	emfile, ok := emfileError()
	if !ok {
		t.Skip("no EMFILE here")
	}
	old := fileLimit
	fileLimit = func() (uint64, bool) { return 1000, true }
	defer func() { fileLimit = old }()
	_, err := New(context.Background(), Config{Addr: "x", Conns: 4, Calls: 1, Method: mEcho,
		Dial: func(context.Context) (net.Conn, error) { return nil, &net.OpError{Op: "dial", Net: "tcp", Err: emfile} }})
	if err == nil || !errors.Is(err, emfile) || !strings.Contains(err.Error(), "limit is 1000") || !strings.Contains(err.Error(), "ulimit -n 1004") {
		t.Fatalf("error %v, want it to say the limit (1000) and how to raise it (ulimit -n 1004)", err)
	}
}
