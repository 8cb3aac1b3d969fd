package cluster

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// panicResolver panics at its first Resolve, then gives addr.
type panicResolver struct {
	addr  string
	calls atomic.Int32
}

func (p *panicResolver) Resolve(context.Context) ([]string, error) {
	if p.calls.Add(1) == 1 {
		panic("registry client bug")
	}
	return []string{p.addr}, nil
}

// A resolver that panics fails that resolution, with an error that says
// so, instead of killing the program: it runs on a goroutine of the
// client's, where nobody can recover its panic. The next resolution is
// made as after any failed one.
func TestResolverPanicIsAnError(t *testing.T) {
	r := startReplica(t, "127.0.0.1")
	res := &panicResolver{addr: r.addr}
	c, err := Dial(context.Background(), "panicky", WithResolver(res), WithRefresh(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Call(context.Background(), mEcho, nil, nil)
	if !errors.Is(err, ErrNoReplica) || !strings.Contains(err.Error(), "registry client bug") {
		t.Fatalf("call after a resolver's panic: %v, want ErrNoReplica naming the panic", err)
	}
	await(t, "the replica admitted after the next resolution", func() bool { return readyCount(c) == 1 })
}
