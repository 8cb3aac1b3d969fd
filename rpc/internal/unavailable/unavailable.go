// Package unavailable lets rpc/cluster give an error of its own
// (cluster.ErrNoReplica) the status rpc.Code reports for it, 503
// (rpc.StatusUnavailable), without a public API for it: no answer
// carries that error, so no *rpc.StatusError can say its status, and
// package rpc cannot import rpc/cluster to know it.
package unavailable

// marker is the target an error made by New matches with errors.Is; no
// error is ever marker itself.
type marker struct{}

func (marker) Error() string { return "unavailable" }

// Marker is what rpc.Code looks for (errors.Is(err, Marker)) to report
// 503 of an error that carries no status.
var Marker error = marker{}

// New returns an error whose text is text and that matches Marker
// (errors.Is), and nothing else but itself.
func New(text string) error { return &markedError{text} }

type markedError struct{ text string }

func (e *markedError) Error() string { return e.text }

// Is makes errors.Is(err, Marker) true.
func (e *markedError) Is(target error) bool { return target == Marker }
