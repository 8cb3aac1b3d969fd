package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/zapcodec/zapcodec/codec/schema"
	"github.com/zapcodec/zapcodec/codec/schema/compat"
)

func init() {
	register(&command{
		name:    "breaking",
		summary: "list the changes from an old schema to a new one that break peers (exit 1 when one does)",
		usage: `  zapcodec breaking [-strict] -against OLD.zap [-against OLD2.zap] NEW.zap...
    Compares the new schema (its files are parsed together, as gen parses
    them) with the old one (the -against files, likewise) as the wire sees
    them: fields by offset and type, methods by ordinal, and the service
    names the package and interface names make (package codec/schema/compat).
    Prints one line per change, "file:line:col: LABEL: what changed",
    at the new schema's position (a field or method removed: its struct
    or interface there, and the old position at the end of the line; a
    struct or interface removed: the old position):
      breaking  breaks old peers or new ones whatever the upgrade order
                (a field inserted, moved, retyped, or removed so that
                others move; a method inserted, moved, or turned into a
                stream; a service renamed)
      warning   breaks one way only, safe when the side it names upgrades
                first (a field added at the end of a struct: its writers
                first; removed from the end: its readers first; a method
                removed: clients first); breaking when clients and
                servers both write the struct
      note      breaks nothing (a rename, though a method renamed at its
                ordinal breaks both ways if it is in fact another method
                put in the old one's place; a method added at the end, a
                field removed with the others keeping their @N offsets,
                text read as bytes: the same bytes, though codec/dynamic,
                zapcodec call and dump refuse text that is not UTF-8)
    Exits 0 when nothing is breaking, 1 when something is, 2 on bad usage,
    a file that cannot be read, or a schema that does not parse (its error
    on stderr, "file:line:col: message"). Each schema file holds at most
    16 MiB.
  -against FILE  a file of the old schema (repeat for several; required)
  -strict        a warning is breaking too (for peers that cannot be
                 upgraded in order)
`,
		run: runBreaking,
	})
}

// fileList is a repeatable flag of file names.
type fileList []string

func (l *fileList) String() string     { return strings.Join(*l, ",") }
func (l *fileList) Set(s string) error { *l = append(*l, s); return nil }

func runBreaking(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("breaking", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var against fileList
	fs.Var(&against, "against", "a file of the old schema (repeatable)")
	strict := fs.Bool("strict", false, "treat warnings as breaking")
	fs.Usage = func() { fmt.Fprint(stderr, "usage:\n"+commands["breaking"].usage) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if len(against) == 0 || fs.NArg() == 0 {
		fmt.Fprintln(stderr, "zapcodec breaking: -against OLD.zap and at least one new schema file are required")
		fs.Usage()
		return 2
	}
	old, err := parseSchemaFiles(against)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	cur, err := parseSchemaFiles(fs.Args())
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	code := 0
	for _, ch := range compat.Compare(old, cur) {
		fmt.Fprintln(stdout, compat.Format(ch, *strict))
		if ch.Breaking(*strict) {
			code = 1
		}
	}
	return code
}

// parseSchemaFiles reads and parses names as one schema. Its errors are
// "file:line:col: message" for a schema that does not parse, "zapcodec
// breaking: ..." for a file that cannot be read.
func parseSchemaFiles(names []string) (*schema.File, error) {
	srcs := make([]schema.Source, 0, len(names))
	for _, name := range names {
		b, err := readSchemaFile(name)
		if err != nil {
			return nil, fmt.Errorf("zapcodec breaking: %w", err)
		}
		srcs = append(srcs, schema.Source{Name: name, Src: b})
	}
	return schema.ParseFiles(srcs...)
}
