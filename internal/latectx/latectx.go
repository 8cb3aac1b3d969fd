// Package latectx gives tests a context whose deadline passes while its
// timer has not fired, as when the runtime runs a ctx's timer late: the
// case where a call's 504 answer arrives before the caller's own timer
// ends its ctx.
package latectx

import (
	"context"
	"sync/atomic"
	"time"
)

// Ctx is a context whose deadline is an hour ahead until Pass, and then
// an hour behind; Done stays open and Err nil throughout.
type Ctx struct {
	context.Context // Value
	passed          atomic.Bool
	dl              time.Time
	done            chan struct{}
}

// New returns a Ctx whose deadline is an hour from now.
func New() *Ctx {
	return &Ctx{Context: context.Background(), dl: time.Now().Add(time.Hour), done: make(chan struct{})}
}

// Pass moves the deadline to the past, without ending the ctx.
func (c *Ctx) Pass() { c.passed.Store(true) }

// Deadline is an hour ahead before Pass, an hour behind after it.
func (c *Ctx) Deadline() (time.Time, bool) {
	if c.passed.Load() {
		return c.dl.Add(-2 * time.Hour), true
	}
	return c.dl, true
}

// Done is never closed.
func (c *Ctx) Done() <-chan struct{} { return c.done }
