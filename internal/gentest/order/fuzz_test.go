package order

import (
	"testing"

	"github.com/zapcodec/zapcodec/internal/gentest/check"
)

// FuzzDecode feeds arbitrary bytes to DecodeZAP and to every view accessor
// of every generated type (see check.FuzzDecode).
func FuzzDecode(f *testing.F) { check.FuzzDecode(f, 12, types) }
