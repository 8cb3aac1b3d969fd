package rpc

import (
	"sync"
	"sync/atomic"
	"testing"
)

// The free stack (Client.free) has any number of pushers and one popper
// at a time, the holder of the outbox's lock; the links are plain fields.
// Goroutines take slots with acquire under the lock and give them back
// with release without it, as calls do, each checking that no one else
// holds the slot it took, and at the end every slot is on the stack once,
// linked as the head counts. A pop outside the lock lets a popper follow
// a link that a pusher is rewriting: the race detector reports it (and
// two owners of one slot or a lost slot would show, given the timing).
func TestFreeStackPopUnderLock(t *testing.T) {
	const nslots, workers = 4, 8
	const rounds = 20000
	c := &Client{} // a table of nslots and no room for more (maxPending 0)
	table := make([]*slot, nslots)
	owners := make([]atomic.Int32, nslots)
	for i := range table {
		table[i] = &slot{slotLine: slotLine{pid: uint32(i) + 1}}
	}
	c.table.Store(&table)
	for _, s := range table {
		c.push(s)
	}
	var wg sync.WaitGroup
	var bad atomic.Int32
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				s, err := acquireSlot(c, nil) // acquire, under the lock
				if err != nil {
					continue // all taken by the others
				}
				i := s.pid&0xFFFF - 1
				if owners[i].Add(1) != 1 {
					bad.Add(1)
				}
				s.gen++ // the slot is the popper's alone
				owners[i].Add(-1)
				c.release(s)
			}
		}()
	}
	wg.Wait()
	if n := bad.Load(); n != 0 {
		t.Errorf("%d pops took a slot another goroutine held", n)
	}
	if n := idleSlots(t, c); n != nslots {
		t.Errorf("%d of %d slots on the free stack at the end", n, nslots)
	}
}

// A call that a watch canceled before it was sent (its ctx ended while
// the queue was full, say) gives its slot back idle: the free stack's
// slots keep the state their last use ended in (see slotIdle), and a
// slot left canceled there would count as a call still owed its answer
// (pending, which the answer check closes a silent connection by; the
// cancels of cancelAnnounced).
func TestUnsentCanceledSlotIdle(t *testing.T) {
	c, _ := pipeClient(t)
	answered, err := acquireSlot(c, nil) // another call, its answer delivered
	if err != nil {
		t.Fatal(err)
	}
	s, _ := canceledWaitingSlot(t, c)
	c.unsend(s) // as queueSlow does when ctx ends before there is room
	if st := s.st.Load() & slotStateMask; st != slotIdle {
		t.Errorf("an unsent call's slot is idle with state %d, want slotIdle", st)
	}
	if c.claim(answered.pid) != answered {
		t.Fatal("the other call was not delivered its answer")
	}
	if c.pending() {
		t.Error("pending with no call owed an answer (one unsent, one answered)")
	}
}
