//go:build amd64 || arm64

// The sizes below are int constants past 2 GiB: 64-bit platforms only.

package dynamic

import (
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/codec/schema"
	"github.com/zapcodec/zapcodec/internal/bigbuf"
)

// TestEncodeTooLarge: a document whose message the Builder cannot write
// was reported as "BUG: builder: ...", as if AppendMessage were broken;
// it is a limit of the caller's input, and the error must say which.
func TestEncodeTooLarge(t *testing.T) {
	const gib = 1 << 30
	f, err := schema.Parse("big.zap", []byte("struct Blob { B bytes_fixed[16777216] }\nstruct Many { L list<Blob> }\n"))
	if err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T, err error, want string) {
		t.Helper()
		if err == nil || strings.Contains(err.Error(), "BUG") || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v, want one that says %q", err, want)
		}
	}
	t.Run("dst past 4 GiB", func(t *testing.T) {
		// Mapped address space: the test touches only the message's pages.
		space := bigbuf.New(t, 4*gib+1024)
		_, err := AppendMessage(space[:4*gib], f.Struct("Many"), []byte(`{}`))
		check(t, err, "within the first 4 GiB")
	})
	t.Run("message of 2 GiB", func(t *testing.T) {
		if testing.Short() {
			t.Skip("writes 2 GiB")
		}
		// 128 records of 16 MiB and their headers: just past 2 GiB. The
		// JSON is small, but the zeroed fixed sections are written: 2
		// GiB of mapped pages, released when the test ends.
		space := bigbuf.New(t, 2*gib+64<<20)
		js := "{\"L\":[{}" + strings.Repeat(",{}", 127) + "]}"
		_, err := AppendMessage(space[:0], f.Struct("Many"), []byte(js))
		check(t, err, "too large")
	})
}
