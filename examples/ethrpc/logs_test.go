package main

import (
	"context"
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/zapcodec/zapcodec/examples/ethrpc/ethzap"
	"github.com/zapcodec/zapcodec/rpc"
)

// The streamed logs are the whole answer's, in order, in messages of the
// chunk size (the last one shorter); compareLogs checks every log of both.
func TestLogsStreamedAndWhole(t *testing.T) {
	addr := serveDemo(t)
	res, err := compareLogs(context.Background(), "tcp", addr, 37, 50, 1)
	if err != nil {
		t.Fatal(err)
	}
	if res.logs != 37*logsPerBlock || res.chunks != 6 || res.bytes == 0 {
		t.Fatalf("%+v", res)
	}

	// A range beyond the limit: 400 for both, the stream's as its end.
	c, err := rpc.Dial(context.Background(), "tcp", addr)
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

// A chunk size beyond the range's logs sends them in one message, and
// costs the server the range's logs, not the chunk size: a ChunkSize of
// 4 billion made the server take a 512 GB chunk record (the process died
// out of memory), one of a million 128 MB.
func TestLogsHugeChunkSize(t *testing.T) {
	addr := serveDemo(t)
	c, err := rpc.Dial(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cli := ethzap.NewEthLogsClient(c, rpc.At(logsBase))
	stream := func(chunk uint32) (msgs, logs int) {
		t.Helper()
		req := ethzap.LogFilter{FromBlock: 5, ToBlock: 6, ChunkSize: chunk, ID: 3}
		st, err := cli.StreamLogs(context.Background(), &req)
		if err != nil {
			t.Fatal(err)
		}
		for {
			v, err := st.Recv()
			if errors.Is(err, io.EOF) {
				return msgs, logs
			}
			if err != nil {
				t.Fatalf("chunk size %d: %v", chunk, err)
			}
			msgs++
			for it := v.Items().Iter(); it.Next(); logs++ {
				if !checkLog(it.Value(), req.FromBlock, logs) {
					t.Fatalf("chunk size %d: log %d is wrong", chunk, logs)
				}
			}
		}
	}
	stream(1 << 20) // warm both sides up
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	msgs, logs := stream(1 << 20)
	runtime.ReadMemStats(&after)
	if msgs != 1 || logs != 2*logsPerBlock {
		t.Fatalf("chunk size 2^20: %d messages, %d logs; want 1 and %d", msgs, logs, 2*logsPerBlock)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
		t.Fatalf("a stream of %d logs with chunk size 2^20 allocated %d B (both sides), want at most 4 MiB", logs, grew)
	}
	if msgs, logs := stream(1<<32 - 1); msgs != 1 || logs != 2*logsPerBlock {
		t.Fatalf("chunk size 2^32-1: %d messages, %d logs; want 1 and %d", msgs, logs, 2*logsPerBlock)
	}
}
