// Package check holds reflection-based helpers for the tests of the
// packages that zapcodec gen writes under internal/gentest: loading the
// shared generated.json cases into records, random records, record
// comparison and a view-versus-record check. It is test support only.
package check

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/zapcodec/zapcodec/internal/fixture"
)

// Case is one entry of generated.json.
type Case struct {
	Schema string         `json:"schema"`
	Struct string         `json:"struct"`
	Name   string         `json:"name"`
	Values map[string]any `json:"values"`
	Hex    string         `json:"hex"`
}

// Generated returns the cases of generated.json (schemas/*.zap) and
// generated-lists.json (schemas/more/*.zap), or skips t when the shared
// fixtures are absent.
func Generated(t testing.TB) []Case {
	var cases []Case
	for _, name := range []string{"generated.json", "generated-lists.json"} {
		var doc struct {
			Cases []Case `json:"cases"`
		}
		if err := json.Unmarshal(fixture.Read(t, "fixtures/"+name), &doc); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(doc.Cases) == 0 {
			t.Fatalf("%s has no cases", name)
		}
		cases = append(cases, doc.Cases...)
	}
	return cases
}

// caseRef looks up a case named by a value: "item_a", or "point[16:24]"
// (the case's fixed section, which fills the same record).
func caseRef(val any, byName map[string]Case) (Case, error) {
	name, _ := val.(string)
	if i := strings.IndexByte(name, '['); i >= 0 {
		name = name[:i]
	}
	c, ok := byName[name]
	if !ok {
		return Case{}, fmt.Errorf("no case %v", val)
	}
	return c, nil
}

// Fill sets the fields of the record *ptr from a case's values. A list of
// structs names other cases (looked up in byName) whose values fill its
// elements.
func Fill(t testing.TB, ptr any, values map[string]any, byName map[string]Case) {
	t.Helper()
	v := reflect.ValueOf(ptr).Elem()
	for name, val := range values {
		f := v.FieldByName(name)
		if !f.IsValid() {
			t.Fatalf("%s has no field %s", v.Type(), name)
		}
		if err := set(t, f, val, byName); err != nil {
			t.Fatalf("%s.%s = %v: %v", v.Type(), name, val, err)
		}
	}
}

func set(t testing.TB, f reflect.Value, val any, byName map[string]Case) error {
	switch f.Kind() {
	case reflect.Bool:
		f.SetBool(val.(bool))
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(val.(string), 10, 64)
		if err != nil {
			return err
		}
		f.SetUint(n)
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(val.(string), 10, 64)
		if err != nil {
			return err
		}
		f.SetInt(n)
	case reflect.Float32, reflect.Float64:
		f.SetFloat(val.(float64))
	case reflect.String:
		f.SetString(val.(string))
	case reflect.Array:
		b, err := hex.DecodeString(val.(string))
		if err != nil || len(b) != f.Len() {
			return fmt.Errorf("want %d hex bytes: %v", f.Len(), err)
		}
		reflect.Copy(f, reflect.ValueOf(b))
	case reflect.Slice:
		if str, ok := val.(string); ok && f.Type().Elem().Kind() == reflect.Uint8 {
			b, err := hex.DecodeString(str)
			if err != nil {
				return err
			}
			f.SetBytes(b)
			return nil
		}
		items, ok := val.([]any)
		if !ok {
			return fmt.Errorf("want a list, got %T", val)
		}
		s := reflect.MakeSlice(f.Type(), len(items), len(items))
		for i, item := range items {
			e := s.Index(i)
			if e.Kind() == reflect.Struct {
				c, err := caseRef(item, byName)
				if err != nil {
					return err
				}
				Fill(t, e.Addr().Interface(), c.Values, byName)
				continue
			}
			if err := set(t, e, item, byName); err != nil {
				return fmt.Errorf("element %d: %v", i, err)
			}
		}
		f.Set(s)
	case reflect.Pointer:
		if val == "" {
			f.Set(reflect.Zero(f.Type()))
			return nil
		}
		c, err := caseRef(val, byName)
		if err != nil {
			return err
		}
		p := reflect.New(f.Type().Elem())
		Fill(t, p.Interface(), c.Values, byName)
		f.Set(p)
	default:
		return fmt.Errorf("unsupported kind %s", f.Kind())
	}
	return nil
}

// Randomize fills the record *ptr with random values: lists of up to 4
// elements, strings and byte slices of up to 24 bytes (sometimes empty),
// nested records up to a few levels deep (sometimes nil), every float
// except NaN.
func Randomize(r *rand.Rand, ptr any) { randomize(r, reflect.ValueOf(ptr).Elem(), 0) }

func randomize(r *rand.Rand, v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 1)
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(edgy(r))
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(edgy(r)))
	case reflect.Float32:
		x := math.Float32frombits(uint32(edgy(r)))
		if x != x {
			x = -0.5
		}
		v.SetFloat(float64(x))
	case reflect.Float64:
		x := math.Float64frombits(edgy(r))
		if x != x {
			x = 1.25
		}
		v.SetFloat(x)
	case reflect.String:
		v.SetString(string(randBytes(r)))
	case reflect.Array:
		for i := range v.Len() {
			v.Index(i).SetUint(uint64(r.IntN(256)))
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes(randBytes(r))
			return
		}
		// Only struct elements can recurse without end; lists of lists are
		// finite by type and get elements at every level.
		n := r.IntN(5)
		structs := v.Type().Elem().Kind() == reflect.Struct
		if structs && depth > 1 || r.IntN(4) == 0 {
			n = 0
		}
		next := depth
		if structs {
			next++
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			randomize(r, s.Index(i), next)
		}
		if n > 0 {
			v.Set(s)
		} else {
			v.Set(reflect.Zero(v.Type()))
		}
	case reflect.Pointer:
		if depth > 1 || r.IntN(3) == 0 {
			v.Set(reflect.Zero(v.Type()))
			return
		}
		p := reflect.New(v.Type().Elem())
		randomize(r, p.Elem(), depth+1)
		v.Set(p)
	case reflect.Struct:
		for i := range v.NumField() {
			randomize(r, v.Field(i), depth)
		}
	default:
		panic("BUG: unsupported kind " + v.Kind().String())
	}
}

// edgy returns a random 64-bit value, often an edge case.
func edgy(r *rand.Rand) uint64 {
	switch r.IntN(6) {
	case 0:
		return 0
	case 1:
		return math.MaxUint64
	case 2:
		return uint64(r.IntN(256))
	}
	return r.Uint64()
}

func randBytes(r *rand.Rand) []byte {
	if r.IntN(4) == 0 {
		return nil
	}
	b := make([]byte, r.IntN(25))
	for i := range b {
		b[i] = byte(r.IntN(256))
	}
	if len(b) == 0 {
		return nil
	}
	return b
}

// Equal reports whether two records hold the same values, treating a nil
// slice and an empty one as equal. It returns a description of the first
// difference, or "".
func Equal(a, b any) string { return diffAt(reflect.ValueOf(a), reflect.ValueOf(b), nil) }

// place names where in a record (or a view) a comparison is, for the
// description of a difference: its string is made only when there is a
// difference to describe. Made as a string for every field and element
// compared (fmt.Sprintf of each index), it was about a quarter of a random
// round trip's cost.
type place struct {
	up    *place
	kind  byte   // '.': .name; '[': [index]; 'a': .At(index); 'i': .Iter[index]
	name  string // a field's Go name
	index int
}

// String returns the place as a difference's description writes it:
// ".Items.At(2).Name"; "" for the root.
func (p *place) String() string {
	if p == nil {
		return ""
	}
	up := p.up.String()
	switch p.kind {
	case '.':
		return up + "." + p.name
	case '[':
		return up + "[" + strconv.Itoa(p.index) + "]"
	case 'a':
		return up + ".At(" + strconv.Itoa(p.index) + ")"
	}
	return up + ".Iter[" + strconv.Itoa(p.index) + "]"
}

// diff is diffAt for a caller that names the place with a string: every
// description diffAt returns starts with its place.
func diff(a, b reflect.Value, path string) string {
	if d := diffAt(a, b, nil); d != "" {
		return path + d
	}
	return ""
}

func diffAt(a, b reflect.Value, path *place) string {
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return fmt.Sprintf("%s: nil %v vs nil %v", path, a.IsNil(), b.IsNil())
			}
			return ""
		}
		return diffAt(a.Elem(), b.Elem(), path)
	case reflect.Struct:
		for i := range a.NumField() {
			if d := diffAt(a.Field(i), b.Field(i), &place{up: path, kind: '.', name: a.Type().Field(i).Name}); d != "" {
				return d
			}
		}
		return ""
	case reflect.Slice:
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: len %d vs %d", path, a.Len(), b.Len())
		}
		for i := range a.Len() {
			if d := diffAt(a.Index(i), b.Index(i), &place{up: path, kind: '[', index: i}); d != "" {
				return d
			}
		}
		return ""
	case reflect.Float32, reflect.Float64:
		if math.Float64bits(a.Float()) != math.Float64bits(b.Float()) {
			return fmt.Sprintf("%s: %v vs %v", path, a.Float(), b.Float())
		}
		return ""
	}
	if !equalValues(a, b) {
		return fmt.Sprintf("%s: %#v vs %#v", path, a.Interface(), b.Interface())
	}
	return ""
}

// equalValues is a.Equal(b), but compares byte arrays (bytes_fixed) as
// memory: Value.Equal compares an array element by element through
// reflection, which was a quarter of a random round trip's cost.
func equalValues(a, b reflect.Value) bool {
	if a.Kind() == reflect.Array && a.Type().Elem().Kind() == reflect.Uint8 && a.CanInterface() && b.CanInterface() {
		return a.Interface() == b.Interface()
	}
	return a.Equal(b)
}

// View compares a generated view (TView) with the record it should show,
// through the accessors the generator promises: F() for every field, FBytes()
// for text and bytes_fixed, IsNull, and for lists Len, IsNull, At and Iter. It
// returns a description of the first mismatch, or "".
func View(rec any, view any) string {
	r := reflect.ValueOf(rec)
	if r.Kind() == reflect.Pointer {
		// The root: a struct without fields has an empty object at the end
		// of its message, which reads as null; do not compare nullness.
		r = r.Elem()
	}
	return viewDiff(r, reflect.ValueOf(view), nil, false)
}

// ViewLoose is View for a record decoded from hostile bytes: there a
// bytes_fixed field outside the message reads as a zero array from the
// record and the view's F() but as nil from the view's FBytes(), which
// ViewLoose accepts.
func ViewLoose(rec any, view any) string {
	r := reflect.ValueOf(rec)
	if r.Kind() == reflect.Pointer {
		r = r.Elem()
	}
	return viewDiff(r, reflect.ValueOf(view), nil, true)
}

func call(v reflect.Value, name string, args ...reflect.Value) reflect.Value {
	m := methodByName(v, name)
	if !m.IsValid() {
		p := reflect.New(v.Type())
		p.Elem().Set(v)
		m = methodByName(p, name)
	}
	if !m.IsValid() {
		panic(fmt.Sprintf("%s has no method %s", v.Type(), name))
	}
	return m.Call(args)[0]
}

// methodIndexes caches, for a type and a method name, the index that
// reflect.Value.Method takes (-1: no such method). Value.MethodByName
// builds the method's func type at every call, which was most of what a
// random round trip of a deep record cost (the views are walked by name).
var methodIndexes sync.Map // methodKey -> int

type methodKey struct {
	t    reflect.Type
	name string
}

// methodByName is v.MethodByName(name), the method found once per type.
func methodByName(v reflect.Value, name string) reflect.Value {
	k := methodKey{v.Type(), name}
	i, ok := methodIndexes.Load(k)
	if !ok {
		idx := -1
		if m, found := v.Type().MethodByName(name); found {
			idx = m.Index
		}
		i, _ = methodIndexes.LoadOrStore(k, idx)
	}
	if i.(int) < 0 {
		return reflect.Value{}
	}
	return v.Method(i.(int))
}

func viewDiff(rec, view reflect.Value, path *place, loose bool) string {
	if rec.Kind() == reflect.Pointer {
		null := call(view, "IsNull").Bool()
		if rec.IsNil() != null {
			return fmt.Sprintf("%s: record nil %v, view null %v", path, rec.IsNil(), null)
		}
		if rec.IsNil() {
			return ""
		}
		rec = rec.Elem()
	}
	for i := range rec.NumField() {
		name := rec.Type().Field(i).Name
		p := &place{up: path, kind: '.', name: name}
		f := rec.Field(i)
		got := call(view, name)
		switch f.Kind() {
		case reflect.Pointer:
			if d := viewDiff(f, got, p, loose); d != "" {
				return d
			}
		case reflect.String:
			if got.String() != f.String() {
				return fmt.Sprintf("%s: view %q, record %q", p, got.String(), f.String())
			}
			if b := call(view, name+"Bytes").Bytes(); string(b) != f.String() {
				return fmt.Sprintf("%sBytes: view %q, record %q", p, b, f.String())
			}
		case reflect.Array:
			if !equalValues(got, f) {
				return fmt.Sprintf("%s: view %x, record %x", p, got.Interface(), f.Interface())
			}
			b := call(view, name+"Bytes").Bytes()
			if loose && b == nil && f.IsZero() {
				continue
			}
			if !reflect.DeepEqual(reflect.ValueOf(b).Convert(reflect.TypeOf([]byte(nil))).Interface(), f.Slice(0, f.Len()).Bytes()) {
				return fmt.Sprintf("%sBytes: view %x, record %x", p, b, f.Interface())
			}
		case reflect.Slice:
			if f.Type().Elem().Kind() == reflect.Uint8 && got.Kind() == reflect.Slice {
				if string(got.Bytes()) != string(f.Bytes()) {
					return fmt.Sprintf("%s: view %x, record %x", p, got.Bytes(), f.Bytes())
				}
				continue
			}
			if d := listDiff(f, got, p, loose); d != "" {
				return d
			}
		default:
			if d := diffAt(got, f, p); d != "" {
				return d
			}
		}
	}
	return ""
}

func elemDiff(want, got reflect.Value, p *place, loose bool) string {
	switch want.Kind() {
	case reflect.Struct:
		return viewDiff(want, got, p, loose)
	case reflect.Slice:
		if got.Kind() != reflect.Slice { // a nested list: got is its view
			return listDiff(want, got, p, loose)
		}
		// a bytes element
		if string(got.Bytes()) != string(want.Bytes()) {
			return fmt.Sprintf("%s: view %x, record %x", p, got.Bytes(), want.Bytes())
		}
		return ""
	}
	return diffAt(got, want, p)
}

func listDiff(rec, list reflect.Value, path *place, loose bool) string {
	if n := call(list, "Len").Int(); int(n) != rec.Len() {
		return fmt.Sprintf("%s.Len() = %d, record has %d", path, n, rec.Len())
	}
	// An empty list is written as a {0, 0} slot (an empty nested list as no
	// bytes): both read as null.
	// (Hostile bytes can point a slot of count 0 somewhere: not null, empty.)
	if null := call(list, "IsNull").Bool(); null != (rec.Len() == 0) && !(loose && rec.Len() == 0) {
		return fmt.Sprintf("%s.IsNull() = %v with %d elements", path, null, rec.Len())
	}
	for i := range rec.Len() {
		got := call(list, "At", reflect.ValueOf(i))
		if d := elemDiff(rec.Index(i), got, &place{up: path, kind: 'a', index: i}, loose); d != "" {
			return d
		}
		if e := rec.Index(i); e.Kind() == reflect.Array && hasMethod(list, "AtBytes") {
			// bytes_fixed elements in place: the same bytes as At.
			b := call(list, "AtBytes", reflect.ValueOf(i)).Bytes()
			want := make([]byte, e.Len())
			reflect.Copy(reflect.ValueOf(want), e)
			if !bytes.Equal(b, want) && !(loose && b == nil && e.IsZero()) {
				return fmt.Sprintf("%s.AtBytes(%d) = %x, record %x", path, i, b, want)
			}
		}
	}
	if got := call(list, "At", reflect.ValueOf(rec.Len())); !got.IsZero() {
		return fmt.Sprintf("%s.At(Len()) is not the zero value", path)
	}
	it := reflect.New(call(list, "Iter").Type())
	it.Elem().Set(call(list, "Iter"))
	i := 0
	for methodByName(it, "Next").Call(nil)[0].Bool() {
		if idx := methodByName(it, "Index").Call(nil)[0].Int(); int(idx) != i {
			return fmt.Sprintf("%s.Iter: Index() = %d at step %d", path, idx, i)
		}
		if i >= rec.Len() {
			return fmt.Sprintf("%s.Iter: more than %d elements", path, rec.Len())
		}
		if d := elemDiff(rec.Index(i), methodByName(it, "Value").Call(nil)[0], &place{up: path, kind: 'i', index: i}, loose); d != "" {
			return d
		}
		i++
	}
	if i != rec.Len() {
		return fmt.Sprintf("%s.Iter: %d elements, record has %d", path, i, rec.Len())
	}
	return ""
}
