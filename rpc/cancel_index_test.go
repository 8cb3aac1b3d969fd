package rpc

import (
	"context"
	"sync"
	"testing"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

// bucketLen is the number of jobs in bucket b of c's index.
func bucketLen(c *serverConn, b int) int {
	n := 0
	for j := c.cx.b[b]; j != nil; j = j.jnext {
		n++
	}
	return n
}

// checkIndex fails t unless every job of c is in exactly one of its
// lists, with jb, jprev and the count of jobs agreeing, and every job
// that runs a call is in the bucket of its promise id.
func checkIndex(t *testing.T, c *serverConn) {
	t.Helper()
	seen := map[*job]bool{}
	walk := func(head *job, b int32) {
		var prev *job
		for j := head; j != nil; j = j.jnext {
			if seen[j] {
				t.Fatalf("job %p in two lists, or twice in one", j)
			}
			seen[j] = true
			if j.jb != b || j.jprev != prev {
				t.Fatalf("job %p: list %d (want %d), prev %p (want %p)", j, j.jb, b, j.jprev, prev)
			}
			if j.live.Load() != 0 && b == 0 && c.cx != nil && !j.canceled.Load() {
				// A running call the index lost: only a job taken on
				// and not yet indexed, or one a cancel found, may be
				// here.
				t.Fatalf("job %p runs a call (promise %d) but is in no bucket", j, j.pid)
			}
			if b != 0 && j.live.Load() != 0 && int32(c.bucket(j.pid))+1 != b {
				t.Fatalf("job %p of promise %d in bucket %d, want %d", j, j.pid, b-1, c.bucket(j.pid))
			}
			prev = j
		}
	}
	walk(c.jobs, 0)
	if c.cx != nil {
		for b, head := range c.cx.b {
			walk(head, int32(b)+1)
		}
	}
	if len(seen) != c.nJobs {
		t.Fatalf("%d jobs in the lists, the connection holds %d", len(seen), c.nJobs)
	}
}

// The index of a connection's jobs by promise id (cancel.go) exists only
// once its peer asked about cancels (or sent one); it then holds the
// calls that ran before the ask, a cancel finds each running call it
// names (two running under one id both), and only those, and a cancel
// of an id no call runs looks at one short bucket however many jobs the
// connection holds: a cancel costs nothing in proportion to the
// in-flight limit (it scanned every job before). Calls taken on later
// move to the bucket of their id; jobs given back to the pool leave it,
// and the index shrinks with them.
func TestCancelIndex(t *testing.T) {
	const n = 4096
	// Ids as a zapcodec client makes them, and one id twice (a peer may
	// run two calls under one id).
	pid := func(i int) uint32 { return uint32(i)<<16 | 7 }
	c := runningJobs(n, func(i int) uint32 {
		if i == n-1 {
			return pid(0)
		}
		return pid(i)
	})
	if c.cx != nil {
		t.Fatal("an index before any cancel")
	}
	checkIndex(t, c)

	// The ask, as the calls run.
	c.indexCancels()
	if len(c.cx.b) < n {
		t.Fatalf("%d buckets for %d jobs", len(c.cx.b), n)
	}
	checkIndex(t, c)
	longest := 0
	for b := range c.cx.b {
		longest = max(longest, bucketLen(c, b))
	}
	// Random seeds: 4,096 ids in 4,096 buckets hardly ever put more than
	// a dozen in one (the expected longest is about 6); 64 would take a
	// broken hash.
	if longest > 64 {
		t.Fatalf("a bucket of %d jobs", longest)
	}

	jobOf := map[uint32][]*job{}
	for b := range c.cx.b {
		for j := c.cx.b[b]; j != nil; j = j.jnext {
			jobOf[j.pid] = append(jobOf[j.pid], j)
		}
	}
	if len(jobOf[pid(0)]) != 2 {
		t.Fatalf("%d running calls of promise %d, want 2", len(jobOf[pid(0)]), pid(0))
	}
	for i := 0; i < n-1; i += 3 {
		c.cancelCall(wire.AppendCancel(nil, pid(i)))
	}
	// An id no call runs.
	c.cancelCall(wire.AppendCancel(nil, 1<<31))
	for i := 0; i < n-1; i++ {
		for _, j := range jobOf[pid(i)] {
			if got, want := j.canceled.Load(), i%3 == 0; got != want {
				t.Fatalf("call %d (promise %d): canceled %v, want %v", i, pid(i), got, want)
			}
		}
	}
	checkIndex(t, c)

	// The calls end (finish clears live); the jobs' next calls, under
	// new ids, move to their buckets; the canceled ones clear their mark.
	for _, js := range jobOf {
		for _, j := range js {
			j.live.Store(0)
			c.putFree(j)
		}
	}
	for i := range n / 2 {
		j := c.acquire()
		j.pid = uint32(i)<<16 | 9
		if j.canceled.Load() {
			j.canceled.Store(false)
		}
		c.indexJob(j)
		j.live.Store(1<<32 | uint64(j.pid))
	}
	checkIndex(t, c)
	c.cancelCall(wire.AppendCancel(nil, 5<<16|9))
	c.cancelCall(wire.AppendCancel(nil, pid(5))) // the job's last call: over
	var canceled []uint32
	for _, head := range append([]*job{c.jobs}, c.cx.b...) {
		for j := head; j != nil; j = j.jnext {
			if j.canceled.Load() && j.live.Load() != 0 {
				canceled = append(canceled, j.pid)
			}
		}
	}
	if len(canceled) != 1 || canceled[0] != 5<<16|9 {
		t.Fatalf("canceled: promises %v, want [%d]", canceled, 5<<16|9)
	}
	checkIndex(t, c)

	// The pool takes the free jobs back: the index shrinks, and holds
	// the calls still running.
	c.releaseJobs()
	if c.nJobs != n/2 || len(c.cx.b) > 4*n/2 {
		t.Fatalf("after the release: %d jobs, %d buckets", c.nJobs, len(c.cx.b))
	}
	checkIndex(t, c)
	for i := range n / 2 {
		j := jobWithPid(c, uint32(i)<<16|9)
		if j == nil {
			t.Fatalf("promise %d not found after the release", uint32(i)<<16|9)
		}
		j.live.Store(0)
		c.putFree(j)
	}
	c.releaseJobs()
	if c.nJobs != 0 || len(c.cx.b) != minCancelBuckets {
		t.Fatalf("all given back: %d jobs, %d buckets, want 0 and %d", c.nJobs, len(c.cx.b), minCancelBuckets)
	}
	checkIndex(t, c)
}

// jobWithPid is the running job of promise id pid in c's index (or in
// c.jobs, where a cancel that found it put it), or nil.
func jobWithPid(c *serverConn, pid uint32) *job {
	for _, head := range []*job{c.cx.b[c.bucket(pid)], c.jobs} {
		for j := head; j != nil; j = j.jnext {
			if j.live.Load() == 1<<32|uint64(pid) {
				return j
			}
		}
	}
	return nil
}

// Many calls run on a connection when its client cancels them all at
// once: the first cancel asks the server, which then indexes the calls
// already running (the ones whose cancels wait for the announcement
// among them); the client sends the rest as the announcement comes, and
// every handler's ctx ends with context.Canceled. On a server that runs
// its calls inline (the read loop taken from the first by the watchdog)
// and on one that runs them on workers.
func TestCancelAskWithManyRunning(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []ServerOption
	}{
		{"inline", nil},
		{"workers", []ServerOption{WithPipelining(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const calls = 40
			addr, started, ended, release := blockServer(t, tc.opts...)
			defer close(release)
			c := dial(t, addr)
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			errs := make(chan error, calls)
			for range calls {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, err := c.Call(ctx, mBlock, nil, nil)
					errs <- err
				}()
			}
			for range calls {
				receive(t, "a handler's start", started)
			}
			cancel()
			wg.Wait()
			for range calls {
				if err := <-errs; err != context.Canceled {
					t.Fatalf("Call: %v, want context.Canceled", err)
				}
			}
			for i := range calls {
				if err := receive(t, "a handler's end", ended); err != context.Canceled {
					t.Fatalf("handler %d: ctx ended with %v, want context.Canceled", i, err)
				}
			}
		})
	}
}

// BenchmarkUnaryCancelOn is BenchmarkUnary's 64-byte calls from 256
// callers on a connection whose client canceled a call before the timed
// loop, so that the server keeps its index of the jobs by promise id
// (cancel.go) as it takes each call on: against BenchmarkUnary, the
// index's cost per call.
func BenchmarkUnaryCancelOn(b *testing.B) {
	b.Run("size=64/callers=256", func(b *testing.B) {
		s, addr, _ := testServer(b)
		started := make(chan struct{}, 1)
		s.Handle(mBlock, func(ctx context.Context, req, resp []byte) ([]byte, error) {
			started <- struct{}{}
			<-ctx.Done()
			return resp, ctx.Err()
		})
		c := dial(b, addr)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := c.Call(ctx, mBlock, nil, nil)
			done <- err
		}()
		receive(b, "the handler's start", started)
		cancel()
		if err := receive(b, "Call's return", done); err != context.Canceled {
			b.Fatalf("the canceled call: %v", err)
		}
		// The cancel's question was sent: the server has its index once
		// it answers a call sent after it.
		if _, err := c.Call(context.Background(), mEcho, nil, nil); err != nil {
			b.Fatal(err)
		}
		benchCalls(b, c, 64, 256)
	})
}

// The index grows as the connection takes more jobs after the peer
// asked (acquire doubles it once the jobs outnumber its buckets), and
// every running call stays findable across the growths.
func TestCancelIndexGrows(t *testing.T) {
	c := runningJobs(3, func(i int) uint32 { return uint32(i + 1) })
	c.indexCancels()
	if len(c.cx.b) != minCancelBuckets {
		t.Fatalf("%d buckets for 3 jobs, want %d", len(c.cx.b), minCancelBuckets)
	}
	const n = 200
	c.s.opts.maxInFlight = n
	for i := 3; i < n; i++ {
		j := c.acquire()
		j.pid = uint32(i + 1)
		j.canceled.Store(false)
		c.indexJob(j)
		j.live.Store(1<<32 | uint64(j.pid))
	}
	if len(c.cx.b) < n {
		t.Fatalf("%d buckets for %d jobs", len(c.cx.b), n)
	}
	checkIndex(t, c)
	for i := range n {
		j := jobWithPid(c, uint32(i+1))
		if j == nil {
			t.Fatalf("promise %d not in the index", i+1)
		}
		c.cancelCall(wire.AppendCancel(nil, uint32(i+1)))
		if !j.canceled.Load() {
			t.Fatalf("promise %d not canceled", i+1)
		}
	}
	checkIndex(t, c)
}
