package compat

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/zapcodec/zapcodec/codec/schema"
	"github.com/zapcodec/zapcodec/internal/fixture"
)

// FuzzCompare: two schemas that parse never panic the comparer, each is
// the same as itself, and every change has a kind, a position in the file
// it names and a message.
func FuzzCompare(f *testing.F) {
	var paths []string
	for _, pattern := range []string{"../testdata/*.zap", "../../../cmd/zapcodec/internal/gen/testdata/*.zap"} {
		m, _ := filepath.Glob(pattern)
		paths = append(paths, m...)
	}
	if dir, err := fixture.Find(); err == nil {
		m, _ := filepath.Glob(filepath.Join(dir, "schemas", "*.zap"))
		more, _ := filepath.Glob(filepath.Join(dir, "schemas", "more", "*.zap"))
		paths = append(append(paths, m...), more...)
	}
	var srcs [][]byte
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		srcs = append(srcs, src)
	}
	for i, src := range srcs {
		f.Add(src, src)
		f.Add(src, srcs[(i+1)%len(srcs)])
	}
	for _, c := range cases {
		f.Add([]byte(c.old), []byte(c.new))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		fa, err := schema.Parse("old.zap", a)
		if err != nil {
			return
		}
		fb, err := schema.Parse("new.zap", b)
		if err != nil {
			return
		}
		for _, ch := range Compare(fa, fb) {
			p := ch.Pos()
			if ch.Kind == 0 || ch.Kind > Incomplete || ch.Msg == "" || p.Line == 0 ||
				ch.New.Line > 0 && ch.New.Filename != "new.zap" || ch.Old.Line > 0 && ch.Old.Filename != "old.zap" {
				t.Fatalf("bad change %+v", ch)
			}
		}
		self, err := schema.Parse("new.zap", b)
		if err != nil {
			t.Fatalf("parsed once, not twice: %v", err)
		}
		if changes := Compare(fb, self); len(changes) != 0 {
			t.Fatalf("%d changes against itself: %s", len(changes), Format(changes[0], false))
		}
	})
}
