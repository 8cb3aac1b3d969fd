package rpc

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
)

// loadCalls is the calls per goroutine of the load tests: the issue's
// 10,000 normally; fewer under -short and -race (the race detector slows
// a call about tenfold on 2 cores), so `go test -race ./rpc` stays short.
func loadCalls() int {
	switch {
	case testing.Short():
		return 200
	case raceEnabled:
		return 1000
	}
	return 10000
}

// runLoad has 64 goroutines make n calls each, every call with a unique
// payload that must come back to its own caller.
func runLoad(t *testing.T, c Caller, n int) {
	const goroutines = 64
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			req := make([]byte, 8, 64)
			var resp []byte
			for i := 0; i < n; i++ {
				req = req[:8]
				binary.LittleEndian.PutUint32(req, uint32(g))
				binary.LittleEndian.PutUint32(req[4:], uint32(i))
				req = append(req, byte(i), byte(g), byte(i>>8)) // vary the length too
				req = req[:8+i%40]
				var err error
				resp, err = c.Call(context.Background(), mEcho, req, resp[:0])
				if err != nil {
					errs <- fmt.Errorf("goroutine %d call %d: %w", g, i, err)
					return
				}
				if string(resp) != string(req) {
					errs <- fmt.Errorf("goroutine %d call %d: got %x, want %x (misrouted)", g, i, resp, req)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestLoadOneConn(t *testing.T) {
	s, addr, _ := testServer(t)
	c := dial(t, addr)
	n := loadCalls()
	runLoad(t, c, n)
	// Every answer reached its caller; the server counts an answer just
	// after writing it, so wait for the last count.
	await(t, "s.Stats().OK >= uint64(64*n)", func() bool { return s.Stats().OK >= uint64(64*n) })
	if st := s.Stats(); st.OK != uint64(64*n) {
		t.Fatalf("server answered %d OK, want %d", st.OK, 64*n)
	}
	// The free stack, pushed onto by 64 callers at once and popped under
	// the outbox's lock, holds every slot again, linked as it counts.
	if n, all := idleSlots(t, c), len(*c.table.Load()); n != all {
		t.Fatalf("%d of %d slots on the free stack after the load", n, all)
	}
}
