package codec_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"strconv"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
	"github.com/zapcodec/zapcodec/internal/fixture"
)

// fixtureOp is one builder call of messages.json.
type fixtureOp struct {
	Op       string          `json:"op"`
	ID       string          `json:"id"`
	Obj      string          `json:"obj"`
	List     string          `json:"list"`
	Ref      string          `json:"ref"`
	Type     string          `json:"type"`
	Off      int             `json:"off"`
	Size     int             `json:"size"`
	ElemSize int             `json:"elem_size"`
	Version  uint16          `json:"version"`
	Flags    uint16          `json:"flags"`
	Hex      string          `json:"hex"`
	Value    json.RawMessage `json:"value"`
	AlphaLen int             `json:"value_alphabet_len"`
}

type fixtureRead struct {
	Path  []json.RawMessage `json:"path"`
	Off   int               `json:"off"`
	Type  string            `json:"type"`
	Value json.RawMessage   `json:"value"`
}

type messageCase struct {
	File  string        `json:"-"` // the fixture file the case came from
	Name  string        `json:"name"`
	Note  string        `json:"note"`
	Ops   []fixtureOp   `json:"ops"`
	Hex   string        `json:"hex"`
	Reads []fixtureRead `json:"reads"`
}

// messageFiles are the fixture files written in the builder-ops vocabulary:
// messages.json, and messages-more.json (set twice, empty lists, zero-size
// objects, and the read types bytes_is_nil, object_null, list_null,
// list_len and root_null).
var messageFiles = []string{"fixtures/messages.json", "fixtures/messages-more.json"}

// loadMessages returns the cases of every file in messageFiles, in order.
func loadMessages(t testing.TB) []messageCase {
	var all []messageCase
	for _, file := range messageFiles {
		var f struct{ Cases []messageCase }
		if err := json.Unmarshal(fixture.Read(t, file), &f); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if len(f.Cases) == 0 {
			t.Fatalf("no cases in %s", file)
		}
		for _, c := range f.Cases {
			c.File = strings.TrimSuffix(strings.TrimPrefix(file, "fixtures/"), ".json")
			all = append(all, c)
		}
	}
	return all
}

// program is a fixture case compiled to values, so that replaying it in an
// allocation test does no JSON work.
type program struct {
	steps []func(*runState)
	ids   map[string]int // object and list ids → slot in runState
}

// runState holds the builders of one replay, indexed by program.ids, so a
// replay does no map work and no allocation.
type runState struct {
	b     *codec.Builder
	objs  []codec.ObjectBuilder
	refs  []codec.Ref
	lists []codec.ListBuilder
	lrefs []codec.ListRef
}

// unquote returns a JSON value that may be a number or a string holding one.
func unquote(raw json.RawMessage) string {
	return strings.Trim(string(raw), `"`)
}

func parseUint(t testing.TB, raw json.RawMessage) uint64 {
	v, err := strconv.ParseUint(unquote(raw), 10, 64)
	if err != nil {
		t.Fatalf("value %s: %v", raw, err)
	}
	return v
}

func parseInt(t testing.TB, raw json.RawMessage) int64 {
	v, err := strconv.ParseInt(unquote(raw), 10, 64)
	if err != nil {
		t.Fatalf("value %s: %v", raw, err)
	}
	return v
}

func parseFloat(t testing.TB, raw json.RawMessage) float64 {
	v, err := strconv.ParseFloat(unquote(raw), 64)
	if err != nil {
		t.Fatalf("value %s: %v", raw, err)
	}
	return v
}

func alphabet(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return string(b)
}

func textValue(t testing.TB, op fixtureOp) string {
	if op.AlphaLen > 0 {
		return alphabet(op.AlphaLen)
	}
	var s string
	if err := json.Unmarshal(op.Value, &s); err != nil {
		t.Fatalf("text value %s: %v", op.Value, err)
	}
	return s
}

// compile turns ops into builder calls.
func compile(t testing.TB, ops []fixtureOp) program {
	p := program{ids: map[string]int{}}
	add := func(f func(*runState)) { p.steps = append(p.steps, f) }
	idx := func(name string) int {
		if i, ok := p.ids[name]; ok {
			return i
		}
		p.ids[name] = len(p.ids)
		return len(p.ids) - 1
	}
	for _, op := range ops {
		switch op.Op {
		case "new_builder":
			v := op.Version
			add(func(s *runState) { s.b.SetVersion(v) })
		case "start_object":
			id, size := idx(op.ID), op.Size
			add(func(s *runState) { s.objs[id] = s.b.StartObject(size) })
		case "finish_object", "finish_root":
			id, root := idx(op.Obj), op.Op == "finish_root"
			add(func(s *runState) {
				r := s.objs[id].Finish()
				s.refs[id] = r
				if root {
					s.b.SetRoot(r)
				}
			})
		case "set":
			add(compileSet(t, op, idx(op.Obj)))
		case "set_object":
			id, off, ref := idx(op.Obj), op.Off, idx(op.Ref)
			add(func(s *runState) { s.objs[id].SetObject(off, s.refs[ref]) })
		case "set_list":
			id, off, ref := idx(op.Obj), op.Off, idx(op.Ref)
			add(func(s *runState) { s.objs[id].SetList(off, s.lrefs[ref]) })
		case "start_list":
			id, size := idx(op.ID), op.ElemSize
			add(func(s *runState) { s.lists[id] = s.b.StartList(size) })
		case "finish_list":
			id := idx(op.List)
			add(func(s *runState) { s.lrefs[id] = s.lists[id].Finish() })
		case "add":
			add(compileAdd(t, op, idx(op.List)))
		case "write_bytes":
			data := fixture.Hex(t, op.Hex)
			add(func(s *runState) { s.b.WriteBytes(data) })
		case "finish":
			flags := op.Flags
			add(func(s *runState) { s.b.SetFlags(flags) })
		default:
			t.Fatalf("unknown op %q", op.Op)
		}
	}
	return p
}

func compileSet(t testing.TB, op fixtureOp, id int) func(*runState) {
	off := op.Off
	switch op.Type {
	case "bool":
		v := string(op.Value) == "true"
		return func(s *runState) { s.objs[id].SetBool(off, v) }
	case "u8":
		v := uint8(parseUint(t, op.Value))
		return func(s *runState) { s.objs[id].SetUint8(off, v) }
	case "u16":
		v := uint16(parseUint(t, op.Value))
		return func(s *runState) { s.objs[id].SetUint16(off, v) }
	case "u32":
		v := uint32(parseUint(t, op.Value))
		return func(s *runState) { s.objs[id].SetUint32(off, v) }
	case "u64":
		v := parseUint(t, op.Value)
		return func(s *runState) { s.objs[id].SetUint64(off, v) }
	case "i8":
		v := int8(parseInt(t, op.Value))
		return func(s *runState) { s.objs[id].SetInt8(off, v) }
	case "i16":
		v := int16(parseInt(t, op.Value))
		return func(s *runState) { s.objs[id].SetInt16(off, v) }
	case "i32":
		v := int32(parseInt(t, op.Value))
		return func(s *runState) { s.objs[id].SetInt32(off, v) }
	case "i64":
		v := parseInt(t, op.Value)
		return func(s *runState) { s.objs[id].SetInt64(off, v) }
	case "f32":
		v := float32(parseFloat(t, op.Value))
		return func(s *runState) { s.objs[id].SetFloat32(off, v) }
	case "f64":
		v := parseFloat(t, op.Value)
		return func(s *runState) { s.objs[id].SetFloat64(off, v) }
	case "text":
		v := textValue(t, op)
		return func(s *runState) { s.objs[id].SetText(off, v) }
	case "bytes":
		v := fixture.Hex(t, op.Hex)
		return func(s *runState) { s.objs[id].SetBytes(off, v) }
	case "bytes_fixed":
		v := fixture.Hex(t, op.Hex)
		return func(s *runState) { s.objs[id].SetBytesFixed(off, v) }
	}
	t.Fatalf("unknown set type %q", op.Type)
	return nil
}

func compileAdd(t testing.TB, op fixtureOp, id int) func(*runState) {
	switch op.Type {
	case "u8":
		v := uint8(parseUint(t, op.Value))
		return func(s *runState) { s.lists[id].AddUint8(v) }
	case "u32":
		v := uint32(parseUint(t, op.Value))
		return func(s *runState) { s.lists[id].AddUint32(v) }
	case "u64":
		v := parseUint(t, op.Value)
		return func(s *runState) { s.lists[id].AddUint64(v) }
	case "bytes":
		v := fixture.Hex(t, op.Hex)
		return func(s *runState) { s.lists[id].AddBytes(v) }
	case "object_bytes":
		v := fixture.Hex(t, op.Hex)
		return func(s *runState) { s.lists[id].AddMessage(v) }
	}
	t.Fatalf("unknown add type %q", op.Type)
	return nil
}

func (p program) newState(b *codec.Builder) *runState {
	n := len(p.ids)
	return &runState{
		b:     b,
		objs:  make([]codec.ObjectBuilder, n),
		refs:  make([]codec.Ref, n),
		lists: make([]codec.ListBuilder, n),
		lrefs: make([]codec.ListRef, n),
	}
}

// run replays p into b over dst and returns the finished buffer.
func (p program) run(s *runState, dst []byte) []byte {
	s.b.Reset(dst)
	for _, step := range p.steps {
		step(s)
	}
	return s.b.Finish()
}

func TestFixtureMessagesBuild(t *testing.T) {
	t.Parallel()
	for _, c := range loadMessages(t) {
		t.Run(c.File+"/"+c.Name, func(t *testing.T) {
			var b codec.Builder
			p := compile(t, c.Ops)
			got := p.run(p.newState(&b), nil)
			if err := b.Err(); err != nil {
				t.Fatalf("builder: %v", err)
			}
			if want := fixture.Hex(t, c.Hex); !bytes.Equal(got, want) {
				t.Fatalf("bytes differ\n got %x\nwant %x", got, want)
			}
			// The same message appended after a prefix is the same bytes.
			prefix := []byte("prefix-of-odd-length")
			got = p.run(p.newState(&b), prefix)
			if !bytes.Equal(got[len(prefix):], fixture.Hex(t, c.Hex)) || string(got[:len(prefix)]) != "prefix-of-odd-length" {
				t.Fatalf("message after a prefix differs\n got %x", got)
			}
		})
	}
}

func TestFixtureMessagesRead(t *testing.T) {
	t.Parallel()
	for _, c := range loadMessages(t) {
		t.Run(c.File+"/"+c.Name, func(t *testing.T) {
			m, err := codec.Parse(fixture.Hex(t, c.Hex))
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Reads) == 0 {
				t.Fatal("case has no reads")
			}
			for _, r := range c.Reads {
				obj := resolvePath(t, m.Root(), r.Path)
				if got, want := readValue(t, obj, r.Type, r.Off), normalize(t, r.Type, r.Value); got != want {
					t.Errorf("path %s %s @%d = %s, want %s", joinPath(r.Path), r.Type, r.Off, got, want)
				}
			}
		})
	}
}

func joinPath(p []json.RawMessage) string {
	var parts []string
	for _, x := range p {
		parts = append(parts, string(x))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func resolvePath(t testing.TB, root codec.Object, path []json.RawMessage) codec.Object {
	if len(path) == 0 {
		return root
	}
	switch unquote(path[0]) {
	case "object":
		return root.Object(int(parseInt(t, path[1])))
	case "var_list":
		return root.List(int(parseInt(t, path[1]))).ObjectAt(int(parseInt(t, path[2])))
	}
	t.Fatalf("unknown path %s", joinPath(path))
	return codec.Object{}
}

// readValue reads a field and renders it the way normalize renders the
// fixture's value, so the two compare as strings.
func readValue(t testing.TB, o codec.Object, typ string, off int) string {
	switch typ {
	case "bool":
		return strconv.FormatBool(o.Bool(off))
	case "u8":
		return strconv.FormatUint(uint64(o.Uint8(off)), 10)
	case "u16":
		return strconv.FormatUint(uint64(o.Uint16(off)), 10)
	case "u32":
		return strconv.FormatUint(uint64(o.Uint32(off)), 10)
	case "u64":
		return strconv.FormatUint(o.Uint64(off), 10)
	case "i8":
		return strconv.FormatInt(int64(o.Int8(off)), 10)
	case "i16":
		return strconv.FormatInt(int64(o.Int16(off)), 10)
	case "i32":
		return strconv.FormatInt(int64(o.Int32(off)), 10)
	case "i64":
		return strconv.FormatInt(o.Int64(off), 10)
	case "f32":
		return fmt.Sprint(float64(o.Float32(off)))
	case "f64":
		return fmt.Sprint(o.Float64(off))
	case "text":
		return strconv.Quote(o.Text(off))
	case "bytes":
		return hex.EncodeToString(o.Bytes(off))
	case "bytes_is_nil":
		return strconv.FormatBool(o.Bytes(off) == nil)
	case "object_is_null", "object_null":
		return strconv.FormatBool(o.Object(off).IsNull())
	case "list_null":
		return strconv.FormatBool(o.List(off).IsNull())
	case "root_null":
		// The read's object is the root (its path is empty).
		return strconv.FormatBool(o.IsNull())
	case "list_len":
		return strconv.Itoa(o.List(off).Len())
	case "list<u8>", "list<u32>", "list<u64>":
		l := o.List(off)
		var vals []string
		for i := range l.Len() {
			var v uint64
			switch typ {
			case "list<u8>":
				v = uint64(l.Uint8(i))
			case "list<u32>":
				v = uint64(l.Uint32(i))
			default:
				v = l.Uint64(i)
			}
			vals = append(vals, strconv.FormatUint(v, 10))
		}
		return "[" + strings.Join(vals, " ") + "]"
	}
	if n, ok := strings.CutPrefix(typ, "bytes_fixed["); ok {
		size, err := strconv.Atoi(strings.TrimSuffix(n, "]"))
		if err != nil {
			t.Fatalf("type %q", typ)
		}
		return hex.EncodeToString(o.BytesFixed(off, size))
	}
	t.Fatalf("unknown read type %q", typ)
	return ""
}

func normalize(t testing.TB, typ string, raw json.RawMessage) string {
	switch {
	case typ == "bool" || strings.HasSuffix(typ, "_null") || typ == "bytes_is_nil":
		return unquote(raw)
	case typ == "f32" || typ == "f64":
		return fmt.Sprint(parseFloat(t, raw))
	case typ == "text":
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		return strconv.Quote(s)
	case typ == "bytes" || strings.HasPrefix(typ, "bytes_fixed"):
		return unquote(raw)
	case strings.HasPrefix(typ, "list<"):
		var vals []json.RawMessage
		if err := json.Unmarshal(raw, &vals); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, v := range vals {
			out = append(out, strconv.FormatUint(parseUint(t, v), 10))
		}
		return "[" + strings.Join(out, " ") + "]"
	case strings.HasPrefix(typ, "i"):
		return strconv.FormatInt(parseInt(t, raw), 10)
	default:
		return strconv.FormatUint(parseUint(t, raw), 10)
	}
}

type malformedCase struct {
	Name       string        `json:"name"`
	Note       string        `json:"note"`
	Hex        string        `json:"hex"`
	ParseError string        `json:"parse_error"`
	Reads      []fixtureRead `json:"reads"`
}

func TestFixtureMalformed(t *testing.T) {
	t.Parallel()
	var f struct{ Cases []malformedCase }
	if err := json.Unmarshal(fixture.Read(t, "fixtures/malformed.json"), &f); err != nil {
		t.Fatal(err)
	}
	errs := map[string]error{
		"buffer_too_small": codec.ErrTooSmall,
		"invalid_magic":    codec.ErrMagic,
		"invalid_version":  codec.ErrVersion,
	}
	for _, c := range f.Cases {
		t.Run(c.Name, func(t *testing.T) {
			m, err := codec.Parse(fixture.Hex(t, c.Hex))
			if c.ParseError != "" {
				want, ok := errs[c.ParseError]
				if !ok {
					t.Fatalf("unknown parse_error %q", c.ParseError)
				}
				if !errors.Is(err, want) {
					t.Fatalf("Parse error = %v, want %v", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range c.Reads {
				got := readValue(t, m.Root(), r.Type, r.Off)
				if want := normalize(t, r.Type, r.Value); got != want {
					t.Errorf("%s @%d = %s, want %s", r.Type, r.Off, got, want)
				}
			}
		})
	}
}
