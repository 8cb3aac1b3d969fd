package schema

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// sharedDir returns the repository's copy of the canonical bytes
// (testdata/canonical, the layout of ../shared/zap), or skips the test
// when the repository root cannot be found.
func sharedDir(t testing.TB) string {
	t.Helper()
	dir := sharedDirOrEmpty()
	if dir == "" {
		t.Skip("canonical fixtures not found (testdata/canonical of the repository root)")
	}
	return dir
}

// TestSharedOffsets checks the layout of the shared schemas against the
// offsets and sizes the canonical compiler assigned (generated.json for
// schemas/, generated-lists.json for schemas/more/).
func TestSharedOffsets(t *testing.T) {
	dir := sharedDir(t)
	var fixture struct {
		Offsets map[string]map[string]int `json:"offsets"` // "pkg.Struct" -> field or "size" -> value
	}
	fixture.Offsets = map[string]map[string]int{}
	// generated.json covers schemas/*.zap, generated-lists.json schemas/more/*.zap.
	for _, name := range []string{"generated.json", "generated-lists.json"} {
		raw, err := os.ReadFile(filepath.Join(dir, "fixtures", name))
		if err != nil {
			t.Fatal(err)
		}
		var one struct {
			Offsets map[string]map[string]int `json:"offsets"`
		}
		if err := json.Unmarshal(raw, &one); err != nil {
			t.Fatal(err)
		}
		if len(one.Offsets) == 0 {
			t.Fatalf("%s has no offsets", name)
		}
		for k, v := range one.Offsets {
			fixture.Offsets[k] = v
		}
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "schemas", "*.zap"))
	more, _ := filepath.Glob(filepath.Join(dir, "schemas", "more", "*.zap"))
	if len(paths) == 0 || len(more) == 0 {
		t.Fatal("no shared schemas")
	}
	paths = append(paths, more...)
	seen := map[string]bool{}
	for _, path := range paths {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := Parse(filepath.Base(path), src)
		if err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, f)
		for _, s := range f.Structs {
			key := f.Package + "." + s.Name
			want, ok := fixture.Offsets[key]
			if !ok {
				t.Errorf("%s: not in the fixtures' offsets", key)
				continue
			}
			seen[key] = true
			got := map[string]int{"size": s.Size}
			for _, fd := range s.Fields {
				got[fd.Name] = fd.Offset
			}
			if len(got) != len(want) {
				t.Errorf("%s: got %v, want %v", key, got, want)
			}
			for name, w := range want {
				if g, ok := got[name]; !ok || g != w {
					t.Errorf("%s.%s: got %d (present %v), want %d", key, name, g, ok, w)
				}
			}
		}
	}
	for key := range fixture.Offsets {
		if !seen[key] {
			t.Errorf("%s: in the fixtures' offsets but not in any shared schema", key)
		}
	}
}

// TestSharedInterface checks the eth interface: one method, ordinal 1.
func TestSharedInterface(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(sharedDir(t), "schemas", "eth.zap"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse("eth.zap", src)
	if err != nil {
		t.Fatal(err)
	}
	it := f.Interface("Eth")
	if it == nil || len(it.Methods) != 1 {
		t.Fatalf("interface Eth: %+v", it)
	}
	m := it.Methods[0]
	if m.Name != "getBalance" || m.Ordinal != 1 || m.Req != f.Struct("GetBalanceRequest") ||
		m.Resp != f.Struct("GetBalanceResponse") || m.ReqName != "req" || m.RespName != "resp" {
		t.Errorf("method: %+v", m)
	}
	acct := f.Struct("GetBalanceRequest").Field("Account").Type
	if acct.Kind != KindBytesFixed || acct.N != 20 || acct.AliasName != "address" {
		t.Errorf("Account type: %+v", acct)
	}
}

// TestSharedWhitespaceInterface checks service_ws.zap: an interface in the
// whitespace form (indented methods, no braces) with ordinals 1, 2, 3.
func TestSharedWhitespaceInterface(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(sharedDir(t), "schemas", "more", "service_ws.zap"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse("service_ws.zap", src)
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, f)
	it := f.Interface("Geometry")
	if it == nil || len(it.Methods) != 3 {
		t.Fatalf("interface Geometry: %+v", it)
	}
	want := []string{"1 area(req Shape) (resp Point)", "2 notify(req Shape) ( -)", "3 ping( -) ( -)"}
	for i, m := range it.Methods {
		got := fmt.Sprintf("%d %s(%s %s) (%s %s)", m.Ordinal, m.Name, m.ReqName, structName(m.Req), m.RespName, structName(m.Resp))
		if got != want[i] {
			t.Errorf("method %d: %s, want %s", i, got, want[i])
		}
	}
}
