package cluster

import (
	"strings"
	"testing"
	"time"
)

// A replica whose new connection goes away (a graceful shutdown soon
// after the dial) is ejected saying its connection went away, even when
// a call met the go-away before it was written: such a call was marked
// as refused, and the ejection said "refused a call unrun", the mark of
// a server that refuses calls with no go-away (broken or hostile).
func TestGoAwaySoonSaysWentAway(t *testing.T) {
	c, a, _ := goAwayBeforeWrite(t, WithEjection(0, time.Hour, time.Hour))
	var why error
	await(t, "a ejected", func() bool {
		why = replicaOf(c, a.addr).lastErrOf()
		return why != nil
	})
	if !strings.Contains(why.Error(), "went away") {
		t.Fatalf("a's ejection says %q, want that its connection went away", why)
	}
}

// lastErrOf returns the replica's LastError.
func (r *replica) lastErrOf() error {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	return r.lastErr
}
