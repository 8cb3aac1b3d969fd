package cluster

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/rpc"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// closeAfterCall is a server that answers the health check 404 (serving)
// and echoes a call, then closes the connection: every connection serves
// one call. It counts the connections it accepted.
func closeAfterCall(t *testing.T, accepted *atomic.Int32) string {
	return rawReplica(t, accepted, func(req wire.Request) (wire.Response, rawNext) {
		if req.Method == rpc.HealthMethod {
			return wire.Response{Status: rpc.StatusNotFound, PromiseID: req.PromiseID}, rawKeep
		}
		return wire.Response{Status: rpc.StatusOK, PromiseID: req.PromiseID, Body: req.Payload}, rawClose
	})
}

// A replica whose server closes each connection as soon as it answered a
// call (its calls succeed) is ejected with a back-off, as a connection
// that goes away at once is, instead of being redialed for every call.
func TestClosedAtOnceBacksOff(t *testing.T) {
	var accepted atomic.Int32
	bad := closeAfterCall(t, &accepted)
	good := startReplica(t, "127.0.0.1")
	c := dialT(t, "static:///"+bad+","+good.addr, WithEjection(0, time.Minute, time.Minute))
	for i := range 500 {
		// A call sent as the server closed may fail (it may have run).
		if _, err := c.Call(t.Context(), mEcho, []byte("x"), nil); err != nil && !errors.Is(err, rpc.ErrClosed) {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if n := accepted.Load(); n > 10 {
		t.Fatalf("%d connections for 500 calls: the client redials a replica whose connections close at once", n)
	}
}

// A connection the server closed stays the server's close when the
// client retires it afterwards: the retirement used to mark it closed by
// the client, and a replica whose server closed its connections at once
// was then redialed without a back-off whenever the retirement came
// before the replica looked at the connection.
func TestServerClosedConnStaysServers(t *testing.T) {
	var accepted atomic.Int32
	bad := closeAfterCall(t, &accepted)
	c := dialT(t, bad, WithEjection(0, time.Minute, time.Minute))
	cn := c.ready.Load().conns[0]
	if _, err := c.Call(t.Context(), mEcho, []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	await(t, "the server's close", cn.rc.Closed)
	cn.close() // as its retirement does, when it comes before the replica looks
	if cn.closedUs.Load() {
		t.Fatal("a connection the server closed counts as closed by the client")
	}
}
