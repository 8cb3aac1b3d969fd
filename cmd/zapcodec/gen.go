package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/zapcodec/zapcodec/cmd/zapcodec/internal/gen"
	"github.com/zapcodec/zapcodec/codec/schema"
)

func init() {
	register(&command{
		name:    "gen",
		summary: "compile .zap schemas into Go records and RPC stubs",
		usage: `  zapcodec gen [-out DIR] [-package NAME] SCHEMA.zap...
    Writes one Go file per schema, NAME.zap -> DIR/NAME.zap.go. The schemas
    are parsed together (they may refer to each other) and share one package.
    Each schema file holds at most 16 MiB.
  -out DIR       output directory (default ".")
  -package NAME  Go package name (default: the schemas' package clause)
`,
		run: runGen,
	})
}

func runGen(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", ".", "output directory")
	pkg := fs.String("package", "", "Go package name (default: the schema's package clause)")
	fs.Usage = func() { fmt.Fprint(stderr, "usage:\n"+commands["gen"].usage) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "zapcodec gen: no schema files")
		fs.Usage()
		return 2
	}
	var srcs []schema.Source
	for _, name := range fs.Args() {
		b, err := readSchemaFile(name)
		if err != nil {
			fmt.Fprintf(stderr, "zapcodec gen: %v\n", err)
			return 1
		}
		srcs = append(srcs, schema.Source{Name: name, Src: b})
	}
	f, err := schema.ParseFiles(srcs...)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	files, err := gen.Generate(f, gen.Options{Package: *pkg})
	if err != nil {
		var fe *gen.FormatError
		if errors.As(err, &fe) {
			broken := filepath.Join(*out, fe.Name+".broken")
			if werr := os.WriteFile(broken, fe.Src, 0o644); werr == nil {
				fmt.Fprintf(stderr, "zapcodec gen: %v (unformatted output in %s)\n", err, broken)
				return 1
			}
		}
		if se := (*schema.Error)(nil); errors.As(err, &se) {
			// A schema that parses but cannot be Go (names that collide):
			// "file:line:col: message" alone, as a parse error is.
			fmt.Fprintln(stderr, err)
			return 1
		}
		fmt.Fprintf(stderr, "zapcodec %v\n", err) // "zapcodec gen: ..."
		return 1
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintf(stderr, "zapcodec gen: %v\n", err)
		return 1
	}
	for _, gf := range files {
		path := filepath.Join(*out, gf.Name)
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, gf.Data) {
			continue // unchanged: keep the timestamp
		}
		if err := os.WriteFile(path, gf.Data, 0o644); err != nil {
			fmt.Fprintf(stderr, "zapcodec gen: %v\n", err)
			return 1
		}
	}
	return 0
}
