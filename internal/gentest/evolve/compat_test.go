package evolve

import (
	"os"
	"slices"
	"testing"

	"github.com/zapcodec/zapcodec/codec/schema"
	"github.com/zapcodec/zapcodec/codec/schema/compat"
	"github.com/zapcodec/zapcodec/internal/gentest/evolve/evnew"
	"github.com/zapcodec/zapcodec/internal/gentest/evolve/evold"
)

func parseSchema(t *testing.T, path string) *schema.File {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := schema.Parse(path, src)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestCompatVerdicts cross-checks package compat (zapcodec breaking)
// against what the generated packages do. From evolve_old.zap to
// evolve_new.zap it finds fields added at the end of Leaf and Rec, and
// nothing else the wire sees: no break for old readers, which
// TestOldReadsNew shows read new messages right (the root, and Leaf
// nested, listed and listed in lists, whose growth moves none of Rec's
// fields); and a break for old writers, which a new reader shows here,
// reading an old message's text as the added field More. The package
// rename is a note: the two packages read each other's bytes.
func TestCompatVerdicts(t *testing.T) {
	old, cur := parseSchema(t, oldSchema), parseSchema(t, newSchema)
	var appended []string
	for _, ch := range compat.Compare(old, cur) {
		switch {
		case ch.Kind == compat.PackageRenamed && ch.Breaks == 0:
		case ch.Kind == compat.FieldAppended && ch.Breaks == compat.OldWriters && !ch.Breaking(false) && ch.Breaking(true):
			appended = append(appended, ch.New.String())
		default:
			t.Errorf("unexpected change: %s", compat.Format(ch, false))
		}
	}
	// evolve_new.zap's added fields: Leaf's B, Note, Tags, Sub; Rec's
	// More, Note, Extra, Other.
	want := []string{newSchema + ":9:5", newSchema + ":10:5", newSchema + ":11:5", newSchema + ":12:5",
		newSchema + ":23:5", newSchema + ":24:5", newSchema + ":25:5", newSchema + ":26:5"}
	if !slices.Equal(appended, want) {
		t.Errorf("appended fields at\n%v\nwant\n%v", appended, want)
	}
	// The reverse is the same fact seen from the other side: removed from
	// the end, breaking the readers of the schema compared against.
	for _, ch := range compat.Compare(cur, old) {
		if ch.Kind != compat.PackageRenamed && (ch.Kind != compat.FieldRemovedAtEnd || ch.Breaks != compat.OldReaders) {
			t.Errorf("unexpected change from new to old: %s", compat.Format(ch, false))
		}
	}

	// The break for old writers: Rec's text follows its fixed section, and
	// a new reader reads the added More from it.
	msg := (&evold.Rec{Label: "hello"}).AppendZAP(nil)
	v, err := evnew.ReadRec(msg)
	if err != nil {
		t.Fatal(err)
	}
	if v.Label() != "hello" || v.More() == 0 {
		t.Errorf("new reader of an old Rec: Label %q, More %#x; want More read from the text that follows", v.Label(), v.More())
	}
}
