package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/examples/ethrpc/ethzap"
	"github.com/zapcodec/zapcodec/internal/plainserver"
	"github.com/zapcodec/zapcodec/rpc"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// TestMain lets the demo start this test binary as its server process.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func shortOptions(inproc bool) options {
	return options{network: "tcp", addr: "127.0.0.1:0", duration: 200 * time.Millisecond, warm: 50 * time.Millisecond,
		conns: 2, conc: 4, inproc: inproc, logBlocks: 100, logChunk: 64, logRounds: 2}
}

// checkResult: every call answered 200 with the table's values (the load's
// Check compares each answer with the table), bytes as computed by hand.
func checkResult(t *testing.T, res *result) {
	t.Helper()
	rep := res.report
	if rep.Calls == 0 || rep.Failed != 0 || rep.OK != rep.Calls {
		t.Fatalf("calls %d ok %d failed %d errors %v", rep.Calls, rep.OK, rep.Failed, rep.Errors)
	}
	if len(rep.Statuses) != 1 || rep.Statuses["200"] != rep.Calls {
		t.Fatalf("statuses %v, want only 200", rep.Statuses)
	}
	// request frame: 5 + envelope 44 + GetBalanceRequest message
	// (16 + 44 + len("eth_getBalance")); answer: 5 + 36 + (16 + 80).
	if rep.BytesOut != rep.Calls*123 || rep.BytesIn != rep.Calls*137 {
		t.Fatalf("bytes out %d in %d for %d calls, want 123 and 137 per call", rep.BytesOut, rep.BytesIn, rep.Calls)
	}
	// The server counts requests when read (all of them are, by the time
	// the client has every answer) but an answer's bytes just after writing
	// it, so a few answers of the warm-up may be counted in the run and a
	// few of the run's last ones not yet.
	slack := uint64(res.o.conns*res.o.conc) * 137
	if res.serverCalls != rep.Calls || res.serverBytes > rep.Calls*260+slack || res.serverBytes+slack < rep.Calls*260 {
		t.Fatalf("server counted %d calls and %d bytes, client %d calls (%d bytes)", res.serverCalls, res.serverBytes, rep.Calls, rep.Calls*260)
	}
	l := rep.Latency
	if !(l.P50 <= l.P99 && l.P99 <= l.Max && l.Max > 0) {
		t.Fatalf("latency %+v", l)
	}
	if !strings.Contains(res.sample, "= 1000000000000000000 wei, nonce 0") {
		t.Fatalf("sample %q", res.sample)
	}
}

func TestDemoInProcess(t *testing.T) {
	var stderr bytes.Buffer
	res, err := demo(context.Background(), shortOptions(true), &stderr)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, res)
}

func TestDemoChildProcess(t *testing.T) {
	var stderr bytes.Buffer
	res, err := demo(context.Background(), shortOptions(false), &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	checkResult(t, res)
	if res.clientAllocs < 0 || res.serverAlloc < 0 {
		t.Fatalf("allocs %v %v", res.clientAllocs, res.serverAlloc)
	}
	var out bytes.Buffer
	res.print(&out)
	if l := res.logs; l == nil || l.logs != 800 || l.chunks != 13 || l.rounds != 2 {
		t.Fatalf("getLogs comparison %+v", res.logs)
	}
	for _, want := range []string{"| calls/s", "| allocs/call client", "| allocs/call server", "| wire bytes/call      | 260 = 123 request + 137 answer (server counted 260)",
		"eth_getLogs of 800 logs", "| getLogs: one answer, decoded", "| streamLogs: 13 messages of 64, views"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

func TestRunFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"-inproc", "-d", "100ms", "-warmup", "10ms", "-c", "1", "-concurrency", "2"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "allocs/call          |") || !strings.Contains(out.String(), "client+server") {
		t.Fatalf("in-process table:\n%s", out.String())
	}
	if code := run([]string{"-bogus"}, &out, &errOut); code != 2 {
		t.Fatalf("bad flag: exit %d", code)
	}
	if code := run([]string{"extra"}, &out, &errOut); code != 2 {
		t.Fatalf("stray argument: exit %d", code)
	}
}

// serveDemo serves the demo's server (newServer, with opts) on a
// loopback port for the test's length and returns its address.
func serveDemo(t *testing.T, opts ...rpc.ServerOption) string {
	t.Helper()
	_, addr := serveDemoServer(t, opts...)
	return addr
}

// serveDemoServer is serveDemo that returns the server too.
func serveDemoServer(t *testing.T, opts ...rpc.ServerOption) (*rpc.Server, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := newServer(opts...)
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
	return s, l.Addr().String()
}

// TestAnswersMatchTable calls through the generated client, as an
// application does, and checks values against the table by hand.
func TestAnswersMatchTable(t *testing.T) {
	c, err := rpc.Dial(context.Background(), "tcp", serveDemo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	eth := ethzap.NewEthClient(c)
	for _, i := range []int{0, 1, 7, numAccounts - 1} {
		req := ethzap.GetBalanceRequest{Account: accountAddr(i), Block: 42, ID: uint64(1000 + i), Method: "eth_getBalance"}
		var resp ethzap.GetBalanceResponse
		if err := eth.GetBalance(context.Background(), &req, &resp); err != nil {
			t.Fatal(err)
		}
		// (i+1) ether plus i wei, big-endian in the low 16 bytes.
		var want [32]byte
		v := new(bigNat).mulAdd(uint64(i+1), 1_000_000_000_000_000_000, uint64(i))
		copy(want[16:], v[:])
		if resp.Balance != want || resp.Nonce != uint64(i) || resp.ID != uint64(1000+i) || resp.BlockHash != blockHash(42) {
			t.Errorf("account %d: got %+v", i, resp)
		}
	}
	req := ethzap.GetBalanceRequest{Account: [20]byte{0xff}, Method: "eth_getBalance"}
	var resp ethzap.GetBalanceResponse
	if err := eth.GetBalance(context.Background(), &req, &resp); rpc.Code(err) != rpc.StatusNotFound {
		t.Fatalf("unknown account: %v, want 404", err)
	}
	if _, err := c.Call(context.Background(), ethzap.EthGetBalanceOrdinal, []byte("not a message"), nil); rpc.Code(err) != rpc.StatusBadRequest {
		t.Fatalf("garbage request: %v, want 400", err)
	}
}

// bigNat is a 128-bit big-endian number, computed digit by digit so the
// test does not share the table's arithmetic.
type bigNat [16]byte

func (n *bigNat) mulAdd(x, y, add uint64) *bigNat {
	var acc [16]uint64 // base-256 digits, little-endian
	for i := 0; i < 8; i++ {
		for j := 0; j < 8; j++ {
			if i+j < 16 {
				acc[i+j] += ((x >> (8 * i)) & 0xff) * ((y >> (8 * j)) & 0xff)
			}
		}
	}
	for i := 0; i < 8; i++ {
		acc[i] += (add >> (8 * i)) & 0xff
	}
	var carry uint64
	for i := 0; i < 16; i++ {
		v := acc[i] + carry
		n[15-i] = byte(v)
		carry = v >> 8
	}
	return n
}

// TestCheckCatchesWrongAnswers: the load's answer check is not vacuous.
func TestCheckCatchesWrongAnswers(t *testing.T) {
	tb := newTable()
	req := tb.request(5, nil)
	var good ethzap.GetBalanceResponse
	q, _ := ethzap.ReadGetBalanceRequest(req)
	if err := (ethServer{tb}).GetBalance(context.Background(), q, &good); err != nil {
		t.Fatal(err)
	}
	if err := tb.check(req, good.AppendZAP(nil)); err != nil {
		t.Fatalf("good answer rejected: %v", err)
	}
	for _, tc := range []struct {
		mutate func(r *ethzap.GetBalanceResponse)
		want   error
	}{
		{func(r *ethzap.GetBalanceResponse) { r.Balance[31]++ }, errBadBalance},
		{func(r *ethzap.GetBalanceResponse) { r.Nonce++ }, errBadNonce},
		{func(r *ethzap.GetBalanceResponse) { r.ID = 0 }, errBadID},
		{func(r *ethzap.GetBalanceResponse) { r.BlockHash[0] = 0 }, errBadHash},
	} {
		bad := good
		tc.mutate(&bad)
		if err := tb.check(req, bad.AppendZAP(nil)); !errors.Is(err, tc.want) {
			t.Errorf("got %v, want %v", err, tc.want)
		}
	}
	if err := tb.check(req, []byte("junk")); err == nil {
		t.Error("junk answer accepted")
	}
}

// The plain server (-serve -plain, the baseline of the many-sessions
// figures) answers the same bytes as rpc.Server with the generated
// handler: for a known account, an unknown one, an undecodable request
// and an unknown method.
func TestPlainServerSameBytes(t *testing.T) {
	tab := newTable()
	addr := serveDemo(t)
	lp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go plainserver.Serve(lp, plainEth(ethServer{t: tab}))
	defer lp.Close()

	unknown := ethzap.GetBalanceRequest{Account: [20]byte{0xee}, Method: "eth_getBalance"}
	reqs := []struct {
		method  uint32
		payload []byte
	}{
		{ethzap.EthGetBalanceOrdinal, tab.request(7, nil)},
		{ethzap.EthGetBalanceOrdinal, unknown.AppendZAP(nil)},
		{ethzap.EthGetBalanceOrdinal, []byte{1, 2, 3}},
		{99, tab.request(1, nil)},
	}
	answers := func(addr string) [][]byte {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(30 * time.Second))
		var out [][]byte
		for i, r := range reqs {
			env := wire.AppendRequest(nil, &wire.Request{Method: r.method, PromiseID: uint32(i + 1), Payload: r.payload})
			fr := append(binary.LittleEndian.AppendUint32(nil, uint32(len(env)+1)), wire.KindRequest)
			if _, err := nc.Write(append(fr, env...)); err != nil {
				t.Fatal(err)
			}
			var h [5]byte
			if _, err := io.ReadFull(nc, h[:]); err != nil {
				t.Fatalf("%s: request %d: %v", addr, i, err)
			}
			b := make([]byte, binary.LittleEndian.Uint32(h[:])-1)
			if _, err := io.ReadFull(nc, b); err != nil {
				t.Fatal(err)
			}
			out = append(out, append(h[:], b...))
		}
		return out
	}
	want, got := answers(addr), answers(lp.Addr().String())
	for i := range want {
		if i == 2 {
			// The text of a decode error is the generated code's
			// (its wording may change): the status must match.
			w, _ := wire.ParseResponse(want[i][5:])
			g, _ := wire.ParseResponse(got[i][5:])
			if w.Status != rpc.StatusBadRequest || g.Status != w.Status {
				t.Errorf("undecodable request: plain server answered %d, rpc.Server %d", g.Status, w.Status)
			}
			continue
		}
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("request %d: plain server answered\n%x\nrpc.Server\n%x", i, got[i], want[i])
		}
	}
}
