package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
	"unsafe"

	"github.com/zapcodec/zapcodec/examples/ethrpc/ethzap"
	"github.com/zapcodec/zapcodec/rpc"
)

// eth_getLogs, two ways: getLogs answers a block range's logs whole in one
// message, streamLogs (a zapcodec streaming method) sends the same logs
// in chunks, so the caller holds the first ones long before the last
// leave the server. The demo times both (compareLogs).

// logsBase is where the EthLogs interface is mounted beside Eth (rpc.At).
const logsBase = 100

// logsPerBlock is how many logs every block of the demo has.
const logsPerBlock = 8

// maxLogBlocks bounds a request's block range (the whole answer must fit in
// a frame: 16 MiB holds about 90,000 logs).
const maxLogBlocks = 10_000

// Answer memory. A getLogs answer is built whole before it is written (the
// Logs record, then its encoding), and held until the peer takes it, so a
// peer that pipelined calls of the largest range and never read their
// answers made the server hold one answer per call it let run (256 by
// default: some 4 GB). Each call reserves its answer's memory before
// building it (rpc.ReserveAnswer), and waits, on its ctx, until that fits
// both its connection's budget (one answer of the largest range: a
// connection's answers leave one after another anyway) and the server's
// (logsAnswerShares of them); the server gives the bytes back once the
// answer has left. So a peer that never reads holds one answer, and it
// takes logsAnswerShares such peers to make other callers wait (until the
// write timeout drops them).
var (
	// logCost is the memory one log of an answer takes: its record in
	// Logs.Items and its bytes in the encoded answer.
	logCost = int(unsafe.Sizeof(ethzap.Log{})) + logEncodedBytes()
	// largestAnswerCost is the memory of an answer of the largest range.
	largestAnswerCost = maxLogBlocks * logsPerBlock * logCost
)

// logsAnswerShares is how many answers of the largest range the server
// builds or holds at once (the server's budget).
const logsAnswerShares = 4

// logEncodedBytes returns the bytes one log adds to an encoded Logs.
func logEncodedBytes() int {
	var l ethzap.Log
	makeLog(&l, 1, 1)
	one := (&ethzap.Logs{Items: []ethzap.Log{l}}).AppendZAP(nil)
	two := (&ethzap.Logs{Items: []ethzap.Log{l, l}}).AppendZAP(nil)
	return len(two) - len(one)
}

// answerBudget is the demo server's answer budget (see logCost).
func answerBudget() rpc.ServerOption {
	return rpc.WithAnswerBudget(largestAnswerCost, logsAnswerShares*largestAnswerCost)
}

// Demo log shapes: an ERC-20 Transfer event.
var (
	transferTopic = func() (h [32]byte) {
		copy(h[:], "Transfer(address,address,uint256)")
		return h
	}()
	logData = make([]byte, 64) // the amount, padded as the EVM does
)

// makeLog fills l with log i of block b: a pure function, so a client can
// check every log it gets.
func makeLog(l *ethzap.Log, b uint64, i uint32) {
	l.Address = accountAddr(int(b%numAccounts) + int(i))
	l.Topic0 = transferTopic
	l.Topic1 = [32]byte{}
	binary.BigEndian.PutUint64(l.Topic1[24:], b)
	l.BlockNumber, l.TxIndex, l.LogIndex = b, i/2, i
	l.Data = logData
}

// logsServer answers EthLogs.
type logsServer struct{}

var _ ethzap.EthLogsServer = logsServer{}

func logRange(req ethzap.LogFilterView) (from, to uint64, err error) {
	from, to = req.FromBlock(), req.ToBlock()
	if to < from || to-from >= maxLogBlocks {
		return 0, 0, rpc.Errorf(rpc.StatusBadRequest, "block range %d..%d: at most %d blocks", from, to, maxLogBlocks)
	}
	return from, to, nil
}

// GetLogs answers the range's logs in one message, once the memory of
// the answer is reserved (see logCost): a call that waits for it and
// whose ctx ends (its deadline, its connection closed) returns ctx's
// error, answered 504 (or not at all: the connection is gone).
func (logsServer) GetLogs(ctx context.Context, req ethzap.LogFilterView, resp *ethzap.Logs) error {
	from, to, err := logRange(req)
	if err != nil {
		return err
	}
	if err := rpc.ReserveAnswer(ctx, int(to-from+1)*logsPerBlock*logCost); err != nil {
		return err
	}
	resp.Items = slices.Grow(resp.Items[:0], int(to-from+1)*logsPerBlock)
	for b := from; b <= to; b++ {
		for i := range uint32(logsPerBlock) {
			resp.Items = append(resp.Items, ethzap.Log{})
			makeLog(&resp.Items[len(resp.Items)-1], b, i)
		}
	}
	resp.ID = req.ID()
	return nil
}

// StreamLogs sends the range's logs in messages of ChunkSize logs
// (default 256; one message when it is more than the range's logs); the
// chunk record and its encoding buffer are reused.
func (logsServer) StreamLogs(ctx context.Context, req ethzap.LogFilterView, s *ethzap.EthLogsStreamLogsServerStream) error {
	from, to, err := logRange(req)
	if err != nil {
		return err
	}
	// A chunk holds at most the range's logs: the chunk record is made
	// at its size, and a peer's ChunkSize of 4 billion made a 512 GB one
	// (the process died out of memory on one 30-byte request).
	size := int(min(req.ChunkSize(), uint32(to-from+1)*logsPerBlock))
	if size <= 0 {
		size = 256
	}
	chunk := ethzap.Logs{ID: req.ID(), Items: make([]ethzap.Log, 0, size)}
	for b := from; b <= to; b++ {
		for i := range uint32(logsPerBlock) {
			chunk.Items = append(chunk.Items, ethzap.Log{})
			makeLog(&chunk.Items[len(chunk.Items)-1], b, i)
			if len(chunk.Items) == size {
				if err := s.Send(&chunk); err != nil {
					return err
				}
				chunk.Items = chunk.Items[:0]
			}
		}
	}
	if len(chunk.Items) > 0 {
		return s.Send(&chunk)
	}
	return nil
}

// logsResult is what compareLogs measured: medians over its rounds.
type logsResult struct {
	logs, bytes, chunk, chunks int
	rounds                     int
	wholeAll                   time.Duration // getLogs: the first log is in hand when all are
	streamFirst, streamAll     time.Duration
}

// checkLog reports whether v is log number n of a range starting at from.
func checkLog(v ethzap.LogView, from uint64, n int) bool {
	var want ethzap.Log
	makeLog(&want, from+uint64(n/logsPerBlock), uint32(n%logsPerBlock))
	return v.BlockNumber() == want.BlockNumber && v.LogIndex() == want.LogIndex &&
		v.Address() == want.Address && v.Topic1() == want.Topic1 && len(v.Data()) == len(want.Data)
}

// compareLogs asks for the same blocks' logs whole and streamed, rounds
// times each, alternating, and checks every log.
func compareLogs(ctx context.Context, network, addr string, blocks, chunk, rounds int) (*logsResult, error) {
	// A 1 MiB window: a chunk of a few hundred logs is ~100 KB, and the
	// default 64 KiB window would let only one travel at a time.
	c, err := rpc.Dial(ctx, network, addr, rpc.WithStreamWindow(1<<20))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	cli := ethzap.NewEthLogsClient(c, rpc.At(logsBase))
	req := ethzap.LogFilter{FromBlock: demoBlock, ToBlock: demoBlock + uint64(blocks) - 1, ChunkSize: uint32(chunk), ID: 7}
	res := &logsResult{logs: blocks * logsPerBlock, chunk: chunk, rounds: rounds}
	var whole ethzap.Logs
	var wholeAll, streamFirst, streamAll []time.Duration
	for r := 0; r <= rounds; r++ { // round 0 warms up
		start := time.Now()
		if err := cli.GetLogs(ctx, &req, &whole); err != nil {
			return nil, fmt.Errorf("getLogs: %w", err)
		}
		all := time.Since(start)
		if len(whole.Items) != res.logs {
			return nil, fmt.Errorf("getLogs: %d logs, want %d", len(whole.Items), res.logs)
		}
		enc := whole.AppendZAP(nil)
		v, _ := ethzap.ReadLogs(enc)
		for it, n := v.Items().Iter(), 0; it.Next(); n++ {
			if !checkLog(it.Value(), req.FromBlock, n) {
				return nil, fmt.Errorf("getLogs: log %d is wrong", n)
			}
		}
		res.bytes = len(enc)

		start = time.Now()
		s, err := cli.StreamLogs(ctx, &req)
		if err != nil {
			return nil, fmt.Errorf("streamLogs: %w", err)
		}
		var first time.Duration
		n, chunks := 0, 0
		for {
			v, err := s.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("streamLogs: %w", err)
			}
			if chunks == 0 {
				first = time.Since(start)
			}
			chunks++
			it := v.Items().Iter()
			for it.Next() {
				if !checkLog(it.Value(), req.FromBlock, n) {
					return nil, fmt.Errorf("streamLogs: log %d is wrong", n)
				}
				n++
			}
		}
		total := time.Since(start)
		if n != res.logs {
			return nil, fmt.Errorf("streamLogs: %d logs, want %d", n, res.logs)
		}
		res.chunks = chunks
		if r > 0 {
			wholeAll, streamFirst, streamAll = append(wholeAll, all), append(streamFirst, first), append(streamAll, total)
		}
	}
	res.wholeAll, res.streamFirst, res.streamAll = median(wholeAll), median(streamFirst), median(streamAll)
	return res, nil
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
