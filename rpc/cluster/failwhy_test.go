package cluster

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A replica ejected for failed calls says what the calls failed with,
// not only how many failed: "5 calls in a row failed" left an operator
// to guess between a handler's 500, a wedged handler's deadlines and
// broken connections.
func TestEjectionForFailuresSaysWhy(t *testing.T) {
	a, b := startReplica(t, "127.0.0.1"), startReplica(t, "127.0.0.1")
	c := dialT(t, "static:///"+a.addr+","+b.addr, WithBalancer(firstAddr{a.addr}),
		WithEjection(3, time.Hour, time.Hour))
	for range 3 {
		if _, err := c.Call(context.Background(), mFail, nil, nil); err == nil {
			t.Fatal("mFail succeeded")
		}
	}
	var why error
	await(t, "a ejected", func() bool {
		why = replicaOf(c, a.addr).lastErrOf()
		return why != nil
	})
	if !strings.Contains(why.Error(), "3 calls in a row failed") || !strings.Contains(why.Error(), "broken replica") {
		t.Fatalf("a's ejection says %q, want the count and the calls' error", why)
	}
}
