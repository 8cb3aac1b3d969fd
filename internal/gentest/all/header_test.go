package all

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
	"github.com/zapcodec/zapcodec/codec/dynamic"
	"github.com/zapcodec/zapcodec/internal/gentest/check"
)

// TestReadersHeaderWords: the three readers (DecodeZAP, the view, package
// dynamic) take a message of version 1 or 2 with any flags word alike,
// reading the same record (WIRE.md §1: the data segment of both versions
// is the same, and the flags, message type included, are not the reader's
// business), and refuse any other version with codec.ErrVersion. The
// generated readers test the header's magic and version as one word with
// the flags masked off (codec.RootOf): versions next to 1 and 2 and flags
// with every bit set check that no flag bit leaks into that test.
func TestReadersHeaderWords(t *testing.T) {
	structs := check.Structs(t, schemaFile, types)
	r := rand.New(rand.NewPCG(5, 7))
	for name, typ := range types {
		st := structs[name]
		for k := range 2 {
			rec := check.RandomRecord(r, typ)
			msg := rec.AppendZAP(nil)
			want, err := dynamic.AppendJSON(nil, st, msg)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for _, version := range []uint16{0, 1, 2, 3, 0x0101, 0x0102, 0x8001, 0xFFFF} {
				for _, flags := range []uint16{0, 7, 0xC800, 0xFFFF, 0x0100} {
					b := bytes.Clone(msg)
					binary.LittleEndian.PutUint16(b[4:], version)
					binary.LittleEndian.PutUint16(b[6:], flags)
					what := fmt.Sprintf("%s #%d, version %#x, flags %#x", name, k, version, flags)
					got := typ.New()
					derr := got.DecodeZAP(b)
					_, verr := typ.Read(b)
					js, jerr := dynamic.AppendJSON(nil, st, b)
					if version != 1 && version != 2 {
						for reader, err := range map[string]error{"DecodeZAP": derr, "the view": verr} {
							if !errors.Is(err, codec.ErrVersion) {
								t.Errorf("%s: %s: %v, want ErrVersion", what, reader, err)
							}
						}
						if jerr == nil {
							t.Errorf("%s: dynamic reads %s", what, js)
						}
						continue
					}
					if derr != nil || verr != nil || jerr != nil {
						t.Fatalf("%s: DecodeZAP %v, the view %v, dynamic %v", what, derr, verr, jerr)
					}
					if d := check.Equal(rec, got); d != "" {
						t.Errorf("%s: DecodeZAP: %s", what, d)
					}
					if !bytes.Equal(js, want) {
						t.Errorf("%s: dynamic reads\n%s\nnot\n%s", what, js, want)
					}
					if d := check.DiffRead(b, types, structs); d != "" {
						t.Errorf("%s: %s", what, d)
					}
				}
			}
		}
	}
}
