//go:build !race

package ethzap

import (
	"context"
	"testing"
)

var sink uint64

func TestAllocs(t *testing.T) {
	req := fixtureRequest()
	resp := GetBalanceResponse{Nonce: 7, ID: 1}
	buf := make([]byte, 0, 256)
	msg := req.AppendZAP(nil)
	respMsg := resp.AppendZAP(nil)
	var dreq GetBalanceRequest
	var dresp GetBalanceResponse
	if err := dreq.DecodeZAP(msg); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		f    func()
	}{
		{"AppendZAP request", func() { buf = req.AppendZAP(buf[:0]) }},
		{"AppendZAP response", func() { buf = resp.AppendZAP(buf[:0]) }},
		{"AppendBinary", func() { buf, _ = req.AppendBinary(buf[:0]) }},
		{"SizeZAP", func() { sink += uint64(req.SizeZAP()) }},
		{"view request", func() {
			v, err := ReadGetBalanceRequest(msg)
			if err != nil {
				panic(err)
			}
			a := v.Account()
			sink += uint64(a[3]) + uint64(len(v.AccountBytes())) + v.Block() + v.ID() + uint64(len(v.Method())) + uint64(len(v.MethodBytes()))
		}},
		{"view response", func() {
			v, _ := ReadGetBalanceResponse(respMsg)
			b, h := v.Balance(), v.BlockHash()
			sink += uint64(b[0]+h[0]) + v.Nonce() + v.ID()
		}},
		{"DecodeZAP request, same text", func() { _ = dreq.DecodeZAP(msg) }},
		{"DecodeZAP response", func() { _ = dresp.DecodeZAP(respMsg) }},
	}
	for _, tt := range tests {
		if n := testing.AllocsPerRun(200, tt.f); n != 0 {
			t.Errorf("%s: %v allocations, want 0", tt.name, n)
		}
	}
}

// TestRPCAllocs: a warm typed call allocates nothing, client and server
// together (both run in this process).
func TestRPCAllocs(t *testing.T) {
	cli, _ := serve(t)
	ctx := context.Background()
	req := fixtureRequest()
	var resp GetBalanceResponse
	call := func() {
		if err := cli.GetBalance(ctx, &req, &resp); err != nil {
			panic(err)
		}
	}
	for range 100 {
		call()
	}
	if n := testing.AllocsPerRun(500, call); n != 0 {
		t.Errorf("typed call: %v allocations, want 0", n)
	}
}
