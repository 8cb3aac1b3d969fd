package rpc

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// mGated's handler reserves the bytes its request names ("name:bytes"),
// says so, and holds them until the test lets it return.
const mGated = 65

// gatedReservers is mGated's handler and what the test sees of its calls.
type gatedReservers struct {
	mu      sync.Mutex
	got     map[string]bool          // the calls that have their budget
	release map[string]chan struct{} // closed to let a call return
}

func newGatedReservers(names ...string) *gatedReservers {
	g := &gatedReservers{got: map[string]bool{}, release: map[string]chan struct{}{}}
	for _, n := range names {
		g.release[n] = make(chan struct{})
	}
	return g
}

func (g *gatedReservers) has(name string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.got[name]
}

func (g *gatedReservers) handle(ctx context.Context, req, resp []byte) ([]byte, error) {
	name, size, _ := strings.Cut(string(req), ":")
	n, err := strconv.Atoi(size)
	if err != nil {
		return resp, Errorf(StatusBadRequest, "bad size %q", size)
	}
	if err := ReserveAnswer(ctx, n); err != nil {
		return resp, err
	}
	g.mu.Lock()
	g.got[name] = true
	g.mu.Unlock()
	<-g.release[name]
	return resp, nil
}

// A call waiting for budget is not overtaken by later, smaller
// reservations that would fit meanwhile: they wait behind it. Otherwise
// a large answer could wait for as long as smaller calls kept coming
// (from any peer, for the server's budget), each fitting in what the
// one before it left.
func TestReserveAnswerWaitersInOrder(t *testing.T) {
	const unit = 64 << 10
	s, addr, _ := testServer(t, WithAnswerBudget(2*unit, 2*unit))
	g := newGatedReservers("holder", "large", "small")
	s.Handle(mGated, g.handle)
	released := map[string]bool{}
	let := func(name string) {
		released[name] = true
		close(g.release[name])
	}
	t.Cleanup(func() { // a failed test's handlers return too
		for name, ch := range g.release {
			if !released[name] {
				close(ch)
			}
		}
	})
	done := make(chan error, 3)
	call := func(name string, n int) {
		c := dial(t, addr) // a connection each: the server's budget is what they share
		go func() {
			_, err := c.Call(context.Background(), mGated, []byte(name+":"+strconv.Itoa(n)), nil)
			if err != nil {
				err = fmt.Errorf("%s: %w", name, err)
			}
			done <- err
		}()
	}

	call("holder", unit)
	await(t, "the holder to get its budget", func() bool { return g.has("holder") })
	call("large", 2*unit)
	await(t, "the large call to wait", func() bool { return s.Stats().AnswerWaits == 1 })
	call("small", unit)
	// Either the small call takes the unit left (it overtook the large
	// one) or it waits behind it: both are states that last.
	await(t, "the small call to get its budget or wait", func() bool {
		return g.has("small") || s.Stats().AnswerWaits == 2
	})
	if g.has("small") {
		t.Fatal("a later, smaller reservation got budget before the call waiting for it")
	}

	let("holder")
	await(t, "the large call to get its budget", func() bool { return g.has("large") })
	if g.has("small") {
		t.Fatal("the small call got budget while the large one holds all of it")
	}
	let("large")
	await(t, "the small call to get its budget", func() bool { return g.has("small") })
	let("small")
	for range 3 {
		if err := receive(t, "the calls' answers", done); err != nil {
			t.Error(err)
		}
	}
	await(t, "the budget to be given back", func() bool {
		st := s.Stats()
		return st.AnswerBytes == 0 && st.AnswerWaits == 0
	})
}

// A call that holds budget and reserves more takes it when it fits,
// ahead of the calls waiting: queued behind a call that waits for the
// bytes it holds, it would wait until its ctx ended.
func TestReserveAnswerHolderNotQueued(t *testing.T) {
	const unit = 64 << 10
	s, addr, _ := testServer(t, WithAnswerBudget(3*unit, 3*unit))
	g := newGatedReservers("large")
	s.Handle(mGated, g.handle)
	const mTwice = 66
	holding, more := make(chan struct{}), make(chan struct{})
	s.Handle(mTwice, func(ctx context.Context, req, resp []byte) ([]byte, error) {
		if err := ReserveAnswer(ctx, unit); err != nil {
			return resp, err
		}
		close(holding)
		<-more
		return resp, ReserveAnswer(ctx, unit)
	})
	t.Cleanup(func() {
		select {
		case <-more:
		default:
			close(more)
		}
		close(g.release["large"])
	})

	twice, large := make(chan error, 1), make(chan error, 1)
	c1, c2 := dial(t, addr), dial(t, addr)
	go func() {
		_, err := c1.Call(context.Background(), mTwice, nil, nil)
		twice <- err
	}()
	receive(t, "the first reservation", holding)
	go func() {
		_, err := c2.Call(context.Background(), mGated, []byte("large:"+strconv.Itoa(3*unit)), nil)
		large <- err
	}()
	await(t, "the large call to wait", func() bool { return s.Stats().AnswerWaits == 1 })
	close(more)
	if err := receive(t, "the call reserving twice", twice); err != nil {
		t.Fatal(err)
	}
	await(t, "the large call to get its budget", func() bool { return g.has("large") })
}

// A waiting call that leaves the queue's head (its deadline passed)
// lets in the calls behind it that fit: they do not wait for the next
// bytes given back.
func TestReserveAnswerHeadLeavesQueue(t *testing.T) {
	const unit = 64 << 10
	s, addr, _ := testServer(t, WithAnswerBudget(2*unit, 2*unit))
	g := newGatedReservers("holder", "large", "small")
	s.Handle(mGated, g.handle)
	t.Cleanup(func() {
		for _, ch := range g.release {
			close(ch)
		}
	})
	start := func(ctx context.Context, name string, n int) <-chan error {
		c := dial(t, addr)
		done := make(chan error, 1)
		go func() {
			_, err := c.Call(ctx, mGated, []byte(name+":"+strconv.Itoa(n)), nil)
			done <- err
		}()
		return done
	}
	start(context.Background(), "holder", unit)
	await(t, "the holder to get its budget", func() bool { return g.has("holder") })
	// 2 s for the call to reach the server and wait there on a busy
	// machine (the test waits for it to wait before it goes on).
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	large := start(ctx, "large", 2*unit)
	await(t, "the large call to wait", func() bool { return s.Stats().AnswerWaits == 1 })
	start(context.Background(), "small", unit)
	await(t, "the small call to wait behind it", func() bool { return s.Stats().AnswerWaits == 2 })
	if err := receive(t, "the large call's end at its deadline", large); err == nil {
		t.Fatal("the large call got an answer, with its budget held by another")
	}
	await(t, "the small call to get the unit left", func() bool { return g.has("small") })
	if g.has("large") {
		t.Fatal("the large call got budget")
	}
}
