package ethzap

import (
	"testing"

	"github.com/zapcodec/zapcodec/internal/gentest/check"
)

// FuzzDecode feeds arbitrary bytes to DecodeZAP and to every view accessor
// of every generated type (see check.FuzzDecode): the decoders' one-check
// fast path over the fixed section must agree with the views' field by
// field reads, and nothing may panic.
func FuzzDecode(f *testing.F) { check.FuzzDecode(f, 3, types) }
