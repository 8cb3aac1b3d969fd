package all

import (
	"testing"

	"github.com/zapcodec/zapcodec/internal/gentest/check"
)

// FuzzDecode feeds arbitrary bytes to DecodeZAP and to every view accessor
// of every generated type (see check.FuzzDecode).
func FuzzDecode(f *testing.F) { check.FuzzDecode(f, 5, types) }

// FuzzDynamic: what package dynamic decodes, DecodeZAP decodes alike (see
// check.FuzzDynamic).
func FuzzDynamic(f *testing.F) {
	check.FuzzDynamic(f, "../../../cmd/zapcodec/internal/gen/testdata/all.zap", 5, types)
}
