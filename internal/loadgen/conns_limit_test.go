package loadgen

import (
	"context"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/rpc/cluster"
)

// A run on a cluster target that asks for more connections per replica
// than the cluster client keeps is refused, saying the bound: the client
// held it to cluster.MaxConnsPerReplica and the report gave the count
// asked for, which the run did not have.
func TestClusterConnsAboveMaxRefused(t *testing.T) {
	_, addr := startServer(t)
	r, err := New(context.Background(), Config{Target: "static:///" + addr, Conns: cluster.MaxConnsPerReplica + 1, Calls: 1, Method: mEcho})
	if err == nil {
		r.Close()
		t.Fatalf("New took %d connections per replica, want an error", cluster.MaxConnsPerReplica+1)
	}
	if !strings.Contains(err.Error(), "at most 1024") {
		t.Fatalf("error %q does not say the bound", err)
	}
	// A count within the bound is taken.
	r, err = New(context.Background(), Config{Target: "static:///" + addr, Conns: 2, Calls: 1, Method: mEcho})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
}
