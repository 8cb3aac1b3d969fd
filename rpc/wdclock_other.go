//go:build !linux

package rpc

// newOSTimer: no OS timer outside Linux; the watchdog uses a time.Timer.
func newOSTimer() wdTimer { return nil }
