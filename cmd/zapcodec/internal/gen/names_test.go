package gen

import (
	"errors"
	"fmt"
	"go/token"
	"testing"

	"github.com/zapcodec/zapcodec/codec/schema"
)

// TestAwkwardNames: schema identifiers that are Go keywords, predeclared
// identifiers, names of the packages a generated file imports, or names
// of what gen itself declares (views, readers, list types, iterators,
// pools, methods of records, views, lists and stream types) either
// generate Go that type-checks or are refused with a positioned
// *schema.Error, as a struct, a field of each kind, a list field, an
// interface and a method.
func TestAwkwardNames(t *testing.T) {
	t.Parallel()
	var names []string
	for tok := token.BREAK; tok <= token.VAR; tok++ {
		names = append(names, tok.String())
	}
	names = append(names,
		"bool", "string", "error", "int", "byte", "rune", "any", "nil", "true", "iota", "len", "cap", "new", "make", "append", "copy", "min", "max", "clear", "panic", "unsafe",
		"codec", "rpc", "binary", "context", "encoding", "errors", "io", "math", "slices", "sync",
		"m", "v", "l", "it", "o", "b", "c", "s", "x", "p", "dst", "base", "root", "msg", "err", "ok", "n", "budget", "depth", "ctx", "req", "resp", "out", "impl", "opts", "in", "bp", "buf", "st", "init",
		"view", "read", "list", "iter", "elem", "value", "index", "next", "at", "atBytes", "bytes", "len", "isNull", "stream", "send", "recv", "closeSend", "closeAndRecv", "zapObject", "zapSize", "zapDecode", "zapAppend", "zapDecodeMessage",
		"_", "__", "_x", "X_", "Ordinal", "Server", "Client", "ServiceName", "Pool",
	)
	for _, n := range names {
		for _, src := range []string{
			fmt.Sprintf("package p\nstruct %s\n    %s u32\n    y text\n", n, n),
			fmt.Sprintf("package p\nstruct T\n    %s list<list<T>>\n    z text\n", n),
			fmt.Sprintf("package p\nstruct T\n    %s T\n    w bytes_fixed[2]\n", n),
			fmt.Sprintf("package p\nstruct T\n    %s text\n    q list<bytes_fixed[2]>\n", n),
			fmt.Sprintf("package p\nstruct T\n    %s bytes_fixed[3]\n    q list<text>\n", n),
			fmt.Sprintf("package p\nstruct T\n    a u8\ninterface %s\n    %s(req: T) returns (resp: T)\n    get(req: T) returns (stream T)\n", n, n),
			fmt.Sprintf("package p\nstruct T\n    a u8\ninterface S\n    %s(stream T) returns (stream T)\n    put(req: T) returns (resp: T)\n", n),
		} {
			f, err := schema.Parse("t.zap", []byte(src))
			if err != nil {
				continue // the schema language does not take it
			}
			files, err := Generate(f, Options{})
			var se *schema.Error
			if err != nil {
				if !errors.As(err, &se) {
					t.Errorf("%q: %v (%T), want a *schema.Error", src, err, err)
				}
				continue
			}
			if err := typeCheck(files); err != nil {
				t.Errorf("generated Go does not compile: %v\n%s", err, src)
			}
		}
	}
}
