package cluster

import (
	"context"
	"sync"
	"testing"

	"github.com/zapcodec/zapcodec/examples/ethrpc/ethzap"
	"github.com/zapcodec/zapcodec/rpc"
)

type ethImpl struct{}

func (ethImpl) GetBalance(ctx context.Context, req ethzap.GetBalanceRequestView, resp *ethzap.GetBalanceResponse) error {
	resp.ID = req.ID()
	return nil
}

// A generated client made on a cluster client names its methods in the
// cluster's table (WithMethodNames), which its connections share: the
// cluster's interceptors and those of its connections (WithClientOptions)
// both name the ordinal they see.
func TestClusterInterceptorsSeeMethodName(t *testing.T) {
	a := startReplica(t, "127.0.0.1")
	ethzap.RegisterEthServer(a.server(), ethImpl{}, rpc.At(200))
	names := new(rpc.MethodNames)
	var mu sync.Mutex
	var seen []string
	ic := func(who string) rpc.ClientInterceptor {
		return func(ctx context.Context, method uint32, req, resp []byte, invoke rpc.Invoker) ([]byte, error) {
			name, _ := names.Name(method)
			if name != rpc.HealthMethodName { // the connections' health checks
				mu.Lock()
				seen = append(seen, who+" "+name)
				mu.Unlock()
			}
			return invoke(ctx, method, req, resp)
		}
	}
	c := dialT(t, "static:///"+a.addr, WithMethodNames(names), WithInterceptors(ic("cluster")),
		WithClientOptions(rpc.WithClientInterceptors(ic("conn"))))
	if c.MethodNames() != names {
		t.Fatal("the cluster does not keep its names in the table given")
	}
	eth := ethzap.NewEthClient(c, rpc.At(200))
	var resp ethzap.GetBalanceResponse
	if err := eth.GetBalance(context.Background(), &ethzap.GetBalanceRequest{ID: 3}, &resp); err != nil || resp.ID != 3 {
		t.Fatalf("GetBalance: %+v %v", resp, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0] != "cluster /eth.Eth/getBalance" || seen[1] != "conn /eth.Eth/getBalance" {
		t.Fatalf("interceptors saw %q", seen)
	}
	if got := c.MethodName(201); got != "/eth.Eth/getBalance" {
		t.Fatalf("MethodName(201) = %q", got)
	}
}
