package dynamic

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/zapcodec/zapcodec/cmd/zapcodec/internal/schema"
	"github.com/zapcodec/zapcodec/internal/fixture"
)

// generatedCase is one case of the shared generated.json: the bytes the
// canonical generated constructor wrote for Values.
type generatedCase struct {
	Schema, Struct, Name, Hex string
	Values                    map[string]any
}

// generatedCases reads the shared generated.json (or skips t) and returns
// its cases, the values of each case by name (list<Item> values name other
// cases), and a parser of the shared schemas that caches what it parsed.
func generatedCases(t *testing.T) ([]generatedCase, map[string]map[string]any, func(t *testing.T, name string) *schema.File) {
	t.Helper()
	dir := fixture.Dir(t)
	var fx struct{ Cases []generatedCase }
	if err := json.Unmarshal(fixture.Read(t, "fixtures/generated.json"), &fx); err != nil {
		t.Fatal(err)
	}
	byName := map[string]map[string]any{}
	for _, c := range fx.Cases {
		byName[c.Name] = c.Values
	}
	files := map[string]*schema.File{}
	parse := func(t *testing.T, name string) *schema.File {
		t.Helper()
		if f := files[name]; f != nil {
			return f
		}
		src, err := os.ReadFile(filepath.Join(dir, "schemas", name))
		if err != nil {
			t.Fatal(err)
		}
		f, err := schema.Parse(name, src)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = f
		return f
	}
	return fx.Cases, byName, parse
}
