package rpc

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// StatusOf finds what errors.As finds for a *StatusError, through single
// and joined wrapping.
func TestStatusOf(t *testing.T) {
	se := &StatusError{Code: StatusUnavailable, Message: "x"}
	other := &StatusError{Code: StatusNotFound}
	for _, tc := range []struct {
		err  error
		want *StatusError
	}{
		{nil, nil},
		{se, se},
		{fmt.Errorf("a: %w", se), se},
		{fmt.Errorf("a: %w", fmt.Errorf("b: %w", se)), se},
		{errors.Join(errors.New("x"), se), se},
		{fmt.Errorf("a: %w", errors.Join(errors.New("x"), fmt.Errorf("b: %w", se), other)), se},
		{fmt.Errorf("%w and %w", errors.New("x"), se), se},
		{errors.Join(errors.New("x"), errors.New("y")), nil},
		{errors.New("x"), nil},
		{context.Canceled, nil},
		{fmt.Errorf("a: %w", nil), nil},
	} {
		if got := StatusOf(tc.err); got != tc.want {
			t.Errorf("StatusOf(%v) = %v, want %v", tc.err, got, tc.want)
		}
		var as *StatusError
		errors.As(tc.err, &as)
		if as != tc.want {
			t.Errorf("errors.As(%v) = %v, the test wants %v", tc.err, as, tc.want)
		}
	}
}

// Reading the code of a wrapped status error allocates nothing: a service
// that branches on Code of each failed call pays for no escaping target.
func TestCodeAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	wrapped := fmt.Errorf("lookup: %w", Errorf(StatusNotFound, "no such account"))
	joined := errors.Join(errors.New("first"), fmt.Errorf("second: %w", &StatusError{Code: StatusNotFound, Message: NoSuchMethod}))
	plain := errors.New("plain")
	for _, tc := range []struct {
		name string
		run  func()
	}{
		{"Code/wrapped", func() {
			if Code(wrapped) != StatusNotFound {
				t.Fatal("wrong code")
			}
		}},
		{"Code/joined", func() {
			if Code(joined) != StatusNotFound {
				t.Fatal("wrong code")
			}
		}},
		{"Code/plain", func() {
			if Code(plain) != StatusInternal {
				t.Fatal("wrong code")
			}
		}},
		{"IsNoSuchMethod/joined", func() {
			if !IsNoSuchMethod(joined) {
				t.Fatal("not no-such-method")
			}
		}},
	} {
		if n := testing.AllocsPerRun(1000, tc.run); n != 0 {
			t.Errorf("%s: %v allocations, want 0", tc.name, n)
		}
	}
}
