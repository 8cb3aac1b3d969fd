//go:build !race

package rpc

import (
	"context"
	"testing"
)

// TestReflectionAllocs: once built, the reflection answer costs a call
// its copy into the answer buffer and no allocation.
func TestReflectionAllocs(t *testing.T) {
	s := NewServer(WithReflection())
	defer s.Close()
	s.MountNamed("a.A", 2, nameList("x", "y"), WithSchema(reflSchemaA))
	s.Mount("b.B", 1, At(100), WithSchema(reflSchemaB))
	h := s.reflection.h
	buf := make([]byte, 0, 4096)
	want, _ := h(context.Background(), nil, nil)
	if n := testing.AllocsPerRun(100, func() {
		out, err := h(context.Background(), nil, buf[:0])
		if err != nil || len(out) != len(want) {
			panic("wrong answer")
		}
	}); n != 0 {
		t.Errorf("the reflection handler: %v allocations a call, want 0", n)
	}
}
