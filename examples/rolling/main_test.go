package main

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// A rolling restart of 3 replicas behind a DNS name, under load: no call
// fails. Calls made, retried and the p99 before and during are logged.
func TestRollingRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	r, err := run(ctx, config{replicas: 3, callers: 8, before: 400 * time.Millisecond, down: 100 * time.Millisecond}, &progress)
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	var out bytes.Buffer
	r.print(&out)
	t.Log("\n" + progress.String() + out.String())
	if r.FailedBefore+r.FailedDuring != 0 {
		t.Fatalf("%d calls failed: %v", r.FailedBefore+r.FailedDuring, r.FirstError)
	}
	if r.CallsDuring == 0 || r.Ejections == 0 {
		t.Fatalf("no calls during the restarts, or no replica ever left: %+v", r)
	}
	for i, n := range r.CallsPerReplica {
		if n == 0 {
			t.Fatalf("replica %d ran no call", i+1)
		}
	}
}
