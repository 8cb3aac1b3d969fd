package gen

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/zapcodec/zapcodec/codec/schema"
)

// FuzzGenerate: every schema the parser accepts generates Go that parses
// and formats (a *FormatError is a generator bug), or is refused with a
// positioned *schema.Error (a Go name collision).
func FuzzGenerate(f *testing.F) {
	paths, _ := filepath.Glob("testdata/*.zap")
	for _, pattern := range []string{"*.zap", "more/*.zap"} {
		more, _ := filepath.Glob(filepath.Join(canonical, pattern))
		paths = append(paths, more...)
	}
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	f.Add([]byte("package p\ntype q = bytes_fixed[2]\nstruct A\n\tX list<list<list<q>>>\n\tY list<list<A>>\ninterface S\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		file, err := schema.Parse("f.zap", src)
		if err != nil {
			return
		}
		_, err = Generate(file, Options{Package: "p"})
		var fe *FormatError
		if errors.As(err, &fe) {
			t.Fatalf("generated Go does not parse: %v\n%s", fe, fe.Src)
		}
		var se *schema.Error
		if err != nil && !errors.As(err, &se) {
			t.Fatalf("unexpected error %T: %v", err, err)
		}
	})
}
