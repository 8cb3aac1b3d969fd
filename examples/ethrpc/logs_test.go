package main

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"

	"github.com/zapcodec/zapcodec/examples/ethrpc/ethzap"
	"github.com/zapcodec/zapcodec/rpc"
)

// The streamed logs are the whole answer's, in order, in messages of the
// chunk size (the last one shorter); compareLogs checks every log of both.
func TestLogsStreamedAndWhole(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := newServer()
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
	res, err := compareLogs(context.Background(), "tcp", l.Addr().String(), 37, 50, 1)
	if err != nil {
		t.Fatal(err)
	}
	if res.logs != 37*logsPerBlock || res.chunks != 6 || res.bytes == 0 {
		t.Fatalf("%+v", res)
	}

	// A range beyond the limit: 400 for both, the stream's as its end.
	c, err := rpc.Dial(context.Background(), "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cli := ethzap.NewEthLogsClient(c, rpc.At(logsBase))
	req := ethzap.LogFilter{FromBlock: 1, ToBlock: maxLogBlocks + 1}
	var se *rpc.StatusError
	if err := cli.GetLogs(context.Background(), &req, &ethzap.Logs{}); !errors.As(err, &se) || se.Code != rpc.StatusBadRequest {
		t.Fatalf("getLogs of too many blocks: %v", err)
	}
	st, err := cli.StreamLogs(context.Background(), &req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); !errors.As(err, &se) || se.Code != rpc.StatusBadRequest || errors.Is(err, io.EOF) {
		t.Fatalf("streamLogs of too many blocks: %v", err)
	}
}
