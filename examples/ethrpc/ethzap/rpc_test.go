package ethzap

import (
	"bytes"
	"context"
	"errors"
	"net"
	"testing"

	"github.com/zapcodec/zapcodec/rpc"
)

// balances answers getBalance from the request view: the balance is the
// account repeated, the nonce the block, the hash the method name.
type balances struct{}

func (balances) GetBalance(ctx context.Context, req GetBalanceRequestView, resp *GetBalanceResponse) error {
	if req.Block() == 0 {
		return rpc.Errorf(rpc.StatusNotFound, "no block 0")
	}
	if *resp != (GetBalanceResponse{}) {
		return errors.New("result not reset")
	}
	copy(resp.Balance[:], req.AccountBytes())
	resp.Nonce = req.Block() + 1
	copy(resp.BlockHash[:], req.Method())
	resp.ID = req.ID()
	return nil
}

// serve starts a loopback server with the typed Eth handlers and returns a
// connected client.
func serve(t testing.TB) (*EthClient, *rpc.Client) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback TCP: %v", err)
	}
	s := rpc.NewServer()
	RegisterEthServer(s, balances{})
	go s.Serve(l)
	c, err := rpc.Dial(context.Background(), "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		s.Close()
	})
	return NewEthClient(c), c
}

func TestRPCRoundTrip(t *testing.T) {
	cli, raw := serve(t)
	ctx := context.Background()
	var resp GetBalanceResponse
	for i := range uint64(50) {
		req := GetBalanceRequest{Block: 19_000_000 + i, ID: i, Method: "eth_getBalance"}
		req.Account[0], req.Account[19] = byte(i), 0xee
		resp.Nonce = 12345 // stale values are overwritten
		if err := cli.GetBalance(ctx, &req, &resp); err != nil {
			t.Fatal(err)
		}
		want := GetBalanceResponse{Nonce: req.Block + 1, ID: i}
		copy(want.Balance[:], req.Account[:])
		copy(want.BlockHash[:], req.Method)
		if resp != want {
			t.Fatalf("call %d: got %+v, want %+v", i, resp, want)
		}
	}

	// A handler error travels as a status.
	var se *rpc.StatusError
	err := cli.GetBalance(ctx, &GetBalanceRequest{}, &resp)
	if !errors.As(err, &se) || se.Code != rpc.StatusNotFound || se.Message != "no block 0" {
		t.Fatalf("got %v, want status 404 no block 0", err)
	}

	// A request that is not a message is refused with 400 by the stub.
	_, err = raw.Call(ctx, EthGetBalanceOrdinal, []byte("not a zap message"), nil)
	if !errors.As(err, &se) || se.Code != rpc.StatusBadRequest || !bytes.Contains([]byte(se.Message), []byte("ethzap: Eth.getBalance: codec: invalid magic")) {
		t.Fatalf("got %v, want status 400", err)
	}
	// The connection is unaffected.
	if err := cli.GetBalance(ctx, &GetBalanceRequest{Block: 1}, &resp); err != nil || resp.Nonce != 2 {
		t.Fatalf("after a bad request: %v %+v", err, resp)
	}
}
