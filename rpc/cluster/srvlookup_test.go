package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeLookup answers an SRV resolution: the records, and each target's
// lookup by a function of the test.
type fakeLookup struct {
	recs   []*net.SRV
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)
}

func (f *fakeLookup) LookupSRV(ctx context.Context, service, proto, name string) (string, []*net.SRV, error) {
	return name, f.recs, nil
}

func (f *fakeLookup) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	return f.lookup(ctx, host)
}

// targetAddr is the address the fake gives target number i.
func targetAddr(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, 0, byte(i)}) }

// The targets of an SRV resolution are looked up at the same time: one
// whose lookup hangs does not hold the others back. They were looked up
// one after another, each waiting for the one before, so a slow target
// delayed every target after it, and with the lookups sharing the
// resolution's time, made them fail.
func TestSRVTargetsConcurrent(t *testing.T) {
	const others = 3 * srvLookups // more than may run at once
	recs := []*net.SRV{{Target: "slow.test.", Port: 7700, Priority: 1, Weight: 10}}
	want := []Endpoint{{Addr: "10.0.0.200:7700", Weight: 10}}
	for i := 1; i <= others; i++ {
		recs = append(recs, &net.SRV{Target: fmt.Sprintf("t%d.test.", i), Port: 7700, Priority: 1, Weight: 10})
		want = append(want, Endpoint{Addr: targetAddr(i).String() + ":7700", Weight: 10})
	}
	// A backup target, never looked up; and a target that does not exist.
	recs = append(recs, &net.SRV{Target: "backup.test.", Port: 7700, Priority: 2, Weight: 10},
		&net.SRV{Target: "gone.test.", Port: 7700, Priority: 1, Weight: 10})
	slices.SortFunc(want, func(a, b Endpoint) int { return strings.Compare(a.Addr, b.Addr) })

	release := make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseOnce)
	started := make(chan string, len(recs))
	var running, most atomic.Int32
	f := &fakeLookup{recs: recs, lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		started <- host
		switch host {
		case "slow.test.":
			<-release
			return []netip.Addr{targetAddr(200)}, nil
		case "gone.test.":
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		case "backup.test.":
			return nil, errors.New("a backup target was looked up")
		}
		var i int
		fmt.Sscanf(host, "t%d.test.", &i)
		return []netip.Addr{targetAddr(i)}, nil
	}}
	type result struct {
		eps []Endpoint
		err error
	}
	done := make(chan result, 1)
	go func() {
		eps, err := (&SRV{Name: "_zap._tcp.c.test"}).resolveWeighted(context.Background(), f)
		done <- result{eps, err}
	}()
	// Every other target's lookup starts while the slow one hangs.
	seen := map[string]bool{}
	for len(seen) < others+2 {
		seen[receive(t, fmt.Sprintf("the lookups of the targets other than the slow one (%d of %d started)", len(seen), others+2), started)] = true
	}
	releaseOnce()
	res := receive(t, "the resolution", done)
	if res.err != nil || !slices.Equal(res.eps, want) {
		t.Fatalf("resolution: %v %v, want %v", res.eps, res.err, want)
	}
	if m := most.Load(); m > srvLookups {
		t.Fatalf("%d lookups ran at once, want at most %d", m, srvLookups)
	}
}

// A target whose lookup failed (not "not found") fails the resolution at
// once: the lookups still running are canceled, and the error names the
// target that failed. A target named by several records is looked up
// once; those that do not exist are left out, and when none has an
// address the error is the first record's.
func TestSRVTargetErrors(t *testing.T) {
	t.Run("failure", func(t *testing.T) {
		var canceled atomic.Bool
		f := &fakeLookup{
			recs: []*net.SRV{
				{Target: "slow.test.", Port: 1, Priority: 1},
				{Target: "bad.test.", Port: 1, Priority: 1},
			},
			lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
				if host == "bad.test." {
					return nil, &net.DNSError{Err: "server misbehaving", Name: host, IsTemporary: true}
				}
				<-ctx.Done() // hangs until the resolution gives up on it
				canceled.Store(true)
				return nil, ctx.Err()
			},
		}
		// The timeout only keeps a broken resolution from hanging.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		eps, err := (&SRV{Name: "_zap._tcp.e.test"}).resolveWeighted(ctx, f)
		var de *net.DNSError
		if err == nil || !errors.As(err, &de) || de.Name != "bad.test." || !canceled.Load() {
			t.Fatalf("a target failed: %v %v (canceled %v), want bad.test.'s error and the slow lookup canceled", eps, err, canceled.Load())
		}
	})
	t.Run("not found", func(t *testing.T) {
		var lookups sync.Map
		f := &fakeLookup{
			recs: []*net.SRV{
				{Target: "none.test.", Port: 1, Priority: 1, Weight: 1},
				{Target: "gone.test.", Port: 1, Priority: 1, Weight: 1},
				{Target: "none.test.", Port: 2, Priority: 1, Weight: 1},
			},
			lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
				if _, again := lookups.LoadOrStore(host, true); again {
					return nil, errors.New("looked up twice: " + host)
				}
				if host == "gone.test." {
					return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
				}
				return nil, nil
			},
		}
		_, err := (&SRV{Name: "_zap._tcp.n.test"}).resolveWeighted(context.Background(), f)
		if err == nil || !strings.Contains(err.Error(), "none.test. has no address") {
			t.Fatalf("no target has an address: %v, want the first record's error", err)
		}
		// Two records of one target: looked up once, weights added.
		f.recs = []*net.SRV{
			{Target: "a.test.", Port: 1, Priority: 1, Weight: 3},
			{Target: "gone.test.", Port: 1, Priority: 1, Weight: 5},
			{Target: "a.test.", Port: 1, Priority: 1, Weight: 1},
		}
		lookups.Clear()
		f.lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			if _, again := lookups.LoadOrStore(host, true); again {
				return nil, errors.New("looked up twice: " + host)
			}
			if host == "gone.test." {
				return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
			}
			return []netip.Addr{targetAddr(1), targetAddr(2)}, nil
		}
		eps, err := (&SRV{Name: "_zap._tcp.n.test"}).resolveWeighted(context.Background(), f)
		want := []Endpoint{{Addr: "10.0.0.1:1", Weight: 2}, {Addr: "10.0.0.2:1", Weight: 2}}
		if err != nil || !slices.Equal(eps, want) {
			t.Fatalf("%v %v, want %v", eps, err, want)
		}
	})
}

// An SRV record whose target is "." says the service is not available
// there (RFC 2782): it is left out without a lookup. Its target was
// looked up as a name (the root's addresses), and a server that answered
// for it gave the client a replica the records said was not there.
func TestSRVTargetRoot(t *testing.T) {
	f := &fakeLookup{
		recs: []*net.SRV{{Target: ".", Port: 1, Priority: 1}, {Target: "a.test.", Port: 1, Priority: 1}},
		lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
			if host == "." {
				return []netip.Addr{targetAddr(9)}, nil // as a hostile server may answer
			}
			return []netip.Addr{targetAddr(1)}, nil
		},
	}
	eps, err := (&SRV{Name: "_zap._tcp.r.test"}).resolveWeighted(context.Background(), f)
	if want := []Endpoint{{Addr: "10.0.0.1:1", Weight: 1}}; err != nil || !slices.Equal(eps, want) {
		t.Fatalf("%v %v, want %v", eps, err, want)
	}
	f.recs = f.recs[:1]
	eps, err = (&SRV{Name: "_zap._tcp.r.test"}).resolveWeighted(context.Background(), f)
	if err == nil || !strings.Contains(err.Error(), "not available") {
		t.Fatalf("only the target \".\": %v %v, want an error", eps, err)
	}
}
