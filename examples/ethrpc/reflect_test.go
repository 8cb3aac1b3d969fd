package main

import (
	"context"
	"testing"

	"github.com/zapcodec/zapcodec/rpc"
)

// TestReflection: the demo's server serves reflection, so zapcodec call
// -list ADDR lists Eth at 0 and EthLogs at logsBase, with their schemas.
func TestReflection(t *testing.T) {
	c, err := rpc.Dial(context.Background(), "tcp", serveDemo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	svcs, err := rpc.Reflect(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if len(svcs) != 2 || svcs[0].Name != "eth.Eth" || svcs[0].Base != 0 || svcs[1].Name != "eth.EthLogs" || svcs[1].Base != logsBase || svcs[0].Schema == "" || svcs[1].Schema == "" {
		t.Fatalf("reflected %+v", svcs)
	}
}
