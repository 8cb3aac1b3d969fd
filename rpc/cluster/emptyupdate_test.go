package cluster

import (
	"strings"
	"testing"
)

// A watcher's update with no address keeps the replicas, as a
// resolution that gives none does, and says so in LastError as that one
// does: it was counted as a resolve error with nothing said of it.
func TestEmptyUpdateSaysWhy(t *testing.T) {
	r := startReplica(t, "127.0.0.1")
	p := NewPush(r.addr)
	c := dialT(t, "svc", WithResolver(p))
	await(t, "the watcher's first update", func() bool { return c.Stats().Resolves == 2 })
	p.Set()
	st := c.Stats()
	if st.ResolveErrors != 1 || readyCount(c) != 1 {
		t.Fatalf("after an empty update: %+v", st)
	}
	if st.LastError == nil || !strings.Contains(st.LastError.Error(), "no address") {
		t.Fatalf("after an empty update, LastError is %v", st.LastError)
	}
}
