//go:build !unix

package frame

import "io"

// rawSource: readiness-first reads exist on unix only; elsewhere every
// read goes through the io.Reader.
type rawSource struct{ src io.Reader }

func newRawSource(*Reader, io.Reader) *rawSource { return nil }

func (*rawSource) read(int) error { panic("unreachable") }
