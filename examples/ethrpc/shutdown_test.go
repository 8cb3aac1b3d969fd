package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/examples/ethrpc/ethzap"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// TestServeReportsShutdownError: a Shutdown whose time runs out (a
// connection that never answers the go-away is kept for the shutdown
// grace, 500 ms, far beyond the 1 ms given here) cut connections, and serve
// says so instead of returning nil (an exit status of 0).
func TestServeReportsShutdownError(t *testing.T) {
	control, stop := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	o := options{network: "tcp", addr: "127.0.0.1:0", serve: true, control: true, shutdownTimeout: time.Millisecond}
	done := make(chan error, 1)
	go func() {
		done <- serve(o, control, stdoutW)
		stdoutW.Close()
	}()
	sc := bufio.NewScanner(stdoutR)
	if !sc.Scan() {
		t.Fatalf("no address line (%v)", sc.Err())
	}
	f := strings.Fields(sc.Text())
	if len(f) != 3 || f[0] != "addr" {
		t.Fatalf("first line %q, want the address", sc.Text())
	}
	c, err := net.Dial("tcp", f[2])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A call and its answer make sure the server has accepted the
	// connection before the shutdown begins.
	c.SetDeadline(time.Now().Add(30 * time.Second)) // a broken server fails the test, not hangs it
	env := wire.AppendRequest(nil, &wire.Request{Method: ethzap.EthGetBalanceOrdinal, PromiseID: 1, Payload: newTable().request(1, nil)})
	fr := append(binary.LittleEndian.AppendUint32(nil, uint32(len(env)+1)), wire.KindRequest)
	if _, err := c.Write(append(fr, env...)); err != nil {
		t.Fatal(err)
	}
	var h [5]byte
	if _, err := io.ReadFull(c, h[:]); err != nil {
		t.Fatalf("no answer to a call: %v", err)
	}
	go io.Copy(io.Discard, stdoutR)
	stop.Close() // the control input ends: serve shuts down
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "shutdown") {
			t.Fatalf("serve = %v, want the shutdown's context.DeadlineExceeded", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not return")
	}
}
