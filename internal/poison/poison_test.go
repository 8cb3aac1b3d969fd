package poison

import (
	"bytes"
	"testing"
)

func TestSetAndFill(t *testing.T) {
	was := Set(true)
	defer Set(was)
	if !Enabled() {
		t.Fatal("Set(true) did not take effect")
	}
	if prev := Set(false); !prev || Enabled() {
		t.Fatalf("Set(false) returned %v, Enabled %v", prev, Enabled())
	}
	b := make([]byte, 3, 10)
	copy(b, "abc")
	Fill(b)
	if want := bytes.Repeat([]byte{Byte}, 10); !bytes.Equal(b[:cap(b)], want) {
		t.Fatalf("Fill left %x", b[:cap(b)])
	}
}

// TestDefault checks the build tag's setting: on with -tags zapdebug, off
// without (CI runs both).
func TestDefault(t *testing.T) {
	if Enabled() != byDefault {
		t.Fatalf("Enabled() = %v at start, want %v", Enabled(), byDefault)
	}
}
