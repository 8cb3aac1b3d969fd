package cluster_test

import (
	"context"
	"fmt"
	"log"

	"github.com/zapcodec/zapcodec/examples/ethrpc/ethzap"
	"github.com/zapcodec/zapcodec/rpc/cluster"
)

// The package doc's example: a generated client over a cluster client.
// It has no output to check (it needs the replicas of a real service), so
// go test compiles it and does not run it.
func ExampleDial() {
	ctx := context.Background()
	c, err := cluster.Dial(ctx, "dns:///eth.svc.cluster.local:7700")
	if err != nil {
		log.Fatal(err) // only a target it cannot read
	}
	defer c.Close()
	eth := ethzap.NewEthClient(c)

	var resp ethzap.GetBalanceResponse
	req := ethzap.GetBalanceRequest{Block: 19000000, ID: 1, Method: "eth_getBalance"}
	if err := eth.GetBalance(ctx, &req, &resp); err != nil {
		log.Fatal(err) // cluster.ErrNoReplica until a replica is admitted
	}
	fmt.Println(resp.Nonce)
}
