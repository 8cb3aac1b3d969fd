package cluster

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/internal/dnstest"
)

// SRV weights as RFC 2782 gives them, within the lowest priority: a
// record's weight over the sum; the records of weight 0 share one part
// in sum+1; a record's weight split among its target's addresses;
// another priority left out.
func TestSRVWeights(t *testing.T) {
	dns, err := dnstest.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer dns.Close()
	dns.SetAddrs("a.test", netip.MustParseAddr("127.0.0.2"))
	dns.SetAddrs("b.test", netip.MustParseAddr("127.0.0.3"), netip.MustParseAddr("127.0.0.4"))
	dns.SetAddrs("c.test", netip.MustParseAddr("127.0.0.5"))
	dns.SetAddrs("d.test", netip.MustParseAddr("127.0.0.6"))
	dns.SetAddrs("e.test", netip.MustParseAddr("127.0.0.7"))
	dns.SetSRV("_zap._tcp.w.test",
		dnstest.SRV{Priority: 1, Weight: 60, Port: 7700, Target: "a.test"},
		dnstest.SRV{Priority: 1, Weight: 30, Port: 7700, Target: "b.test"},
		dnstest.SRV{Priority: 1, Weight: 0, Port: 7700, Target: "c.test"},
		dnstest.SRV{Priority: 1, Weight: 0, Port: 7700, Target: "d.test"},
		dnstest.SRV{Priority: 2, Weight: 100, Port: 7700, Target: "e.test"})
	srv := &SRV{Name: "_zap._tcp.w.test", Resolver: dns.Resolver()}
	eps, err := srv.ResolveWeighted(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []Endpoint{{"127.0.0.2:7700", 60}, {"127.0.0.3:7700", 15}, {"127.0.0.4:7700", 15}, {"127.0.0.5:7700", 0.5}, {"127.0.0.6:7700", 0.5}}
	if len(eps) != len(want) {
		t.Fatalf("got %v, want %v", eps, want)
	}
	for i := range want {
		if eps[i].Addr != want[i].Addr || math.Abs(eps[i].Weight-want[i].Weight) > 1e-9 {
			t.Fatalf("got %v, want %v", eps, want)
		}
	}
	addrs, err := srv.Resolve(context.Background())
	if err != nil || len(addrs) != 5 || addrs[0] != "127.0.0.2:7700" {
		t.Fatalf("Resolve: %v %v", addrs, err)
	}
	// All of weight 0: equal shares.
	dns.SetSRV("_zap._tcp.z.test",
		dnstest.SRV{Priority: 0, Port: 1, Target: "a.test"},
		dnstest.SRV{Priority: 0, Port: 1, Target: "c.test"})
	eps, err = (&SRV{Name: "_zap._tcp.z.test", Resolver: dns.Resolver()}).ResolveWeighted(context.Background())
	if err != nil || len(eps) != 2 || eps[0].Weight != eps[1].Weight || !(eps[0].Weight > 0) {
		t.Fatalf("weights 0: %v %v", eps, err)
	}
}

// Three replicas behind SRV records of weights 60, 30 and 10 (and a
// fourth of a higher priority number, a backup): sequential calls go to
// them in those shares under P2C (drawn at random) and round robin
// (spread evenly); the backup gets none.
func TestSRVWeightedShares(t *testing.T) {
	dns, err := dnstest.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer dns.Close()
	rs := []*replicaSrv{startReplica(t, "127.0.0.1"), startReplica(t, "127.0.0.1"), startReplica(t, "127.0.0.1"), startReplica(t, "127.0.0.1")}
	weights := []uint16{60, 30, 10, 100}
	var recs []dnstest.SRV
	for i, r := range rs {
		_, p, _ := splitHostPort(r.addr)
		port, _ := strconv.Atoi(p)
		name := fmt.Sprintf("r%d.w.test", i)
		dns.SetAddrs(name, netip.MustParseAddr("127.0.0.1"))
		prio := uint16(1)
		if i == 3 {
			prio = 2
		}
		recs = append(recs, dnstest.SRV{Priority: prio, Weight: weights[i], Port: uint16(port), Target: name})
	}
	dns.SetSRV("_zap._tcp.w.test", recs...)
	for _, tc := range []struct {
		name string
		bal  Balancer
		tol  float64
	}{{"p2c", P2C(), 0.05}, {"roundrobin", RoundRobin(), 0.01}} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialT(t, "dns+srv://"+dns.Addr()+"/_zap._tcp.w.test", WithBalancer(tc.bal), WithRefresh(time.Hour))
			if n := len(c.Stats().Replicas); n != 3 {
				t.Fatalf("%d replicas, want the 3 of the lowest priority", n)
			}
			var before [4]int64
			for i, r := range rs {
				before[i] = r.calls.Load()
			}
			const n = 3000
			for range n {
				if _, err := c.Call(context.Background(), mEcho, []byte("x"), nil); err != nil {
					t.Fatal(err)
				}
			}
			var got [4]float64
			for i, r := range rs {
				got[i] = float64(r.calls.Load()-before[i]) / n
			}
			t.Logf("%s: shares %.3f %.3f %.3f, backup %.3f", tc.name, got[0], got[1], got[2], got[3])
			for i, w := range []float64{0.6, 0.3, 0.1, 0} {
				if math.Abs(got[i]-w) > tc.tol {
					t.Fatalf("replica %d (weight %d) got %.3f of the calls, want %.2f ± %.2f", i, weights[i], got[i], w, tc.tol)
				}
			}
		})
	}
}

// A plain resolver's duplicate address counts once: it does not double
// that replica's share.
func TestDuplicateAddressCountsOnce(t *testing.T) {
	a, b := startReplica(t, "127.0.0.1"), startReplica(t, "127.0.0.1")
	c := dialT(t, "static:///"+a.addr+","+a.addr+","+b.addr)
	if n := len(c.Stats().Replicas); n != 2 {
		t.Fatalf("%d replicas", n)
	}
	if cum := c.ready.Load().cum; cum != nil {
		t.Fatalf("the duplicate made the weights unequal: %v", cum)
	}
}

// weightedPush is a registry's glue that pushes weights (WatchWeighted),
// and addresses alone to a client that reads no weights (Watch).
type weightedPush struct {
	weighted
	sets    chan []Endpoint // the sets after the first
	updated chan struct{}   // an update returned
}

func (w *weightedPush) Watch(ctx context.Context, update func([]string)) {
	w.WatchWeighted(ctx, func(eps []Endpoint) {
		addrs := make([]string, len(eps))
		for i, ep := range eps {
			addrs[i] = ep.Addr
		}
		update(addrs)
	})
}

func (w *weightedPush) WatchWeighted(ctx context.Context, update func([]Endpoint)) {
	update(w.weighted)
	w.updated <- struct{}{}
	for {
		select {
		case <-ctx.Done():
			return
		case eps := <-w.sets:
			update(eps)
			w.updated <- struct{}{}
		}
	}
}

// A WeightedWatcher's updates keep their weights. A Watcher that is also
// a WeightedResolver had its weights at Dial only: its first update (at
// the start of Watch) made them all 1.
func TestWeightedWatcher(t *testing.T) {
	a, b := startReplica(t, "127.0.0.1"), startReplica(t, "127.0.0.1")
	w := &weightedPush{weighted: weighted{{a.addr, 3}, {b.addr, 1}}, sets: make(chan []Endpoint), updated: make(chan struct{}, 2)}
	c := dialT(t, "svc", WithResolver(w))
	weights := func() (wa, wb float64) {
		for _, rs := range c.Stats().Replicas {
			switch rs.Addr {
			case a.addr:
				wa = rs.Weight
			case b.addr:
				wb = rs.Weight
			}
		}
		return wa, wb
	}
	// Bounded at 30 s: a guard against a hang.
	updated := func() {
		select {
		case <-w.updated:
		case <-time.After(30 * time.Second):
			t.Fatal("no update after 30 s")
		}
	}
	updated() // the watch's first one
	if wa, wb := weights(); wa != 3 || wb != 1 {
		t.Fatalf("weights %v and %v after the watch's first update, want 3 and 1", wa, wb)
	}
	select {
	case w.sets <- []Endpoint{{a.addr, 1}, {b.addr, 4}}:
	case <-time.After(30 * time.Second):
		t.Fatal("the watch took no set after 30 s")
	}
	updated()
	if wa, wb := weights(); wa != 1 || wb != 4 {
		t.Fatalf("weights %v and %v after an update, want 1 and 4", wa, wb)
	}
	if cum := c.ready.Load().cum; cum == nil {
		t.Fatal("unequal weights, but no running sums")
	}
}

// blackholeConn drops the queries that name a label "slow": the server
// never answers them, as a DNS server that lost the packet or hangs. It
// is a net.PacketConn (the UDP connection's methods), as Go's resolver
// wants of a connection that carries queries in datagrams.
type blackholeConn struct{ *net.UDPConn }

func (c blackholeConn) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte("\x04slow")) {
		return len(b), nil
	}
	return c.UDPConn.Write(b)
}

// An SRV target whose addresses could not be looked up (the query timed
// out: the DNS server did not answer) fails the resolution, which keeps
// the replicas the client has; a partial set would remove the replicas
// of that target, answering calls, from the client. Only a target that
// does not exist (NXDOMAIN) or has no address is left out. The target
// lookups share the resolution's ctx, so one that hung until it ended
// made those after it fail too, and the set came back cut to the targets
// looked up first.
func TestSRVTargetTimeoutFailsResolution(t *testing.T) {
	dns, err := dnstest.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer dns.Close()
	dns.SetAddrs("a.test", netip.MustParseAddr("127.0.0.2"))
	dns.SetAddrs("slow.test", netip.MustParseAddr("127.0.0.3"))
	// The lookup of the slow target goes on after the resolution gave up
	// (Go's resolver waits out its own timeouts, 5 s a try), past the
	// test's end: the test closes its connections when it ends, which
	// ends it.
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, nc := range conns {
			nc.Close()
		}
	})
	res := &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			nc, err := d.DialContext(ctx, "udp", dns.Addr())
			if err != nil {
				return nil, err
			}
			mu.Lock()
			conns = append(conns, nc)
			mu.Unlock()
			return blackholeConn{nc.(*net.UDPConn)}, nil
		},
	}
	// Weight 0 sorts the slow target last in Go's shuffle of the records.
	dns.SetSRV("_zap._tcp.s.test",
		dnstest.SRV{Priority: 1, Weight: 10, Port: 7700, Target: "a.test"},
		dnstest.SRV{Priority: 1, Weight: 0, Port: 7700, Target: "slow.test"},
		dnstest.SRV{Priority: 1, Weight: 10, Port: 7700, Target: "gone.test"})
	srv := &SRV{Name: "_zap._tcp.s.test", Resolver: res}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	eps, err := srv.ResolveWeighted(ctx)
	if err == nil {
		t.Fatalf("a target timed out, and the resolution gave %v and no error", eps)
	}
	// Without the slow target: the one that does not exist is left out.
	dns.SetSRV("_zap._tcp.s.test",
		dnstest.SRV{Priority: 1, Weight: 10, Port: 7700, Target: "a.test"},
		dnstest.SRV{Priority: 1, Weight: 10, Port: 7700, Target: "gone.test"})
	eps, err = srv.ResolveWeighted(context.Background())
	if err != nil || len(eps) != 1 || eps[0].Addr != "127.0.0.2:7700" {
		t.Fatalf("with a target that does not exist: %v %v", eps, err)
	}
}
