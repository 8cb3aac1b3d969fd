package schema_test

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/codec/schema"
)

// TestWireDocSchema parses the example schema of docs/wire.md §10 and
// checks each struct's field offsets against those its comment states
// ("# offsets ...: 0, 20, 28, 36", or "# 0, 32"; "explicit offsets": the
// fields' @N).
func TestWireDocSchema(t *testing.T) {
	doc, err := os.ReadFile("../../docs/wire.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(doc), "\n## 10. Schemas\n")
	if !ok {
		t.Fatal("docs/wire.md has no section 10, Schemas")
	}
	_, src, ok := strings.Cut(sec, "\n```\n")
	if !ok {
		t.Fatal("docs/wire.md §10 has no schema block")
	}
	src, _, _ = strings.Cut(src, "\n```\n")
	f, err := schema.Parse("wire.md", []byte(src+"\n"))
	if err != nil {
		t.Fatalf("the schema of docs/wire.md §10 does not parse: %v", err)
	}
	// The offsets each struct's comment states.
	stated := map[string]string{}
	head := regexp.MustCompile(`(?m)^struct (\w+)[ {]*#([^\n]*)$`)
	for _, m := range head.FindAllStringSubmatch(src, -1) {
		stated[m[1]] = m[2]
	}
	at := regexp.MustCompile(`@(\d+)`)
	if len(f.Structs) == 0 {
		t.Fatal("no struct in the schema of docs/wire.md §10")
	}
	for _, s := range f.Structs {
		comment, ok := stated[s.Name]
		if !ok {
			t.Errorf("struct %s states no offsets in a comment", s.Name)
			continue
		}
		var got, want []string
		for _, fd := range s.Fields {
			got = append(got, fmt.Sprint(fd.Offset))
		}
		if strings.Contains(comment, "explicit") {
			for _, m := range at.FindAllStringSubmatch(structText(src, s.Name), -1) {
				want = append(want, m[1])
			}
		} else {
			want = regexp.MustCompile(`\d+`).FindAllString(comment, -1)
		}
		if strings.Join(got, ", ") != strings.Join(want, ", ") {
			t.Errorf("struct %s: offsets %v, the doc says %v", s.Name, got, want)
		}
	}
}

// structText returns the declaration of struct name in src, up to the
// next blank line.
func structText(src, name string) string {
	_, s, _ := strings.Cut(src, "struct "+name)
	s, _, _ = strings.Cut(s, "\n\n")
	return s
}
