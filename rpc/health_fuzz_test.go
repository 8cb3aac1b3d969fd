package rpc

import (
	"context"
	"testing"
)

// FuzzHealthRequest: the health service answers any request payload with
// 200 (a status it knows), 400 (not a message) or 404 (a service never known),
// never a panic.
func FuzzHealthRequest(f *testing.F) {
	s := NewServer()
	s.Mount("pkg.A", 1)
	j := &job{c: &serverConn{s: s, ctx: context.Background()}}
	j.cc.Store(j.c)
	for _, svc := range []string{"", "pkg.A", "pkg.B"} {
		r := HealthCheckRequest{Service: svc}
		f.Add(r.AppendZAP(nil))
	}
	f.Add([]byte("ZAP\x00\x02\x00\x00\x00\x10\x00\x00\x00\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, req []byte) {
		out, err := serveHealth(j, req, nil)
		switch Code(err) {
		case StatusOK:
			var r HealthCheckResponse
			if r.DecodeZAP(out) != nil || HealthStatus(r.Status) != HealthServing {
				t.Fatalf("answer %x", out)
			}
		case StatusBadRequest, StatusNotFound:
		default:
			t.Fatalf("error %v", err)
		}
	})
}
