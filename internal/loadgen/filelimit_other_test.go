//go:build !unix

package loadgen

// emfileError: no EMFILE is told apart here.
func emfileError() (error, bool) { return nil, false }
