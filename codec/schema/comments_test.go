package schema

import "testing"

// Comments are kept on the declarations they document: the "#" lines
// right above (no blank line between) as Doc, the one ending the line as
// Comment. A comment after a blank line, or above the package clause,
// documents nothing.
func TestComments(t *testing.T) {
	src := `# The file. Not attached: the package clause follows.
package p

# Detached: a blank line follows.

# Item is one thing
# on two lines.
struct Item {
    # Tag says what it is.
    Tag u32 @0   # little-endian
    Name text @4
}

# Pair is two.
struct Pair { A u16; B text }  # one line

type id = bytes_fixed[4]  # an alias

# Shop sells items.
interface Shop
    # buy takes one.
    buy(req: Item) returns (resp: Item)
    ping()  # alive?
`
	f, err := Parse("t.zap", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	item, pair, shop := f.Struct("Item"), f.Struct("Pair"), f.Interface("Shop")
	for _, c := range []struct{ what, got, want string }{
		{"Item.Doc", item.Doc, "Item is one thing\non two lines."},
		{"Item.Comment", item.Comment, ""},
		{"Tag.Doc", item.Field("Tag").Doc, "Tag says what it is."},
		{"Tag.Comment", item.Field("Tag").Comment, "little-endian"},
		{"Name.Doc", item.Field("Name").Doc, ""},
		{"Pair.Comment", pair.Comment, "one line"},
		{"Pair.Doc", pair.Doc, "Pair is two."},
		{"Pair.A.Comment", pair.Field("A").Comment, ""},
		{"Pair.A.Doc", pair.Field("A").Doc, ""},
		{"Pair.B.Doc", pair.Field("B").Doc, ""},
		{"id.Comment", f.Aliases[0].Comment, "an alias"},
		{"Shop.Doc", shop.Doc, "Shop sells items."},
		{"buy.Doc", shop.Methods[0].Doc, "buy takes one."},
		{"ping.Comment", shop.Methods[1].Comment, "alive?"},
		{"ping.Doc", shop.Methods[1].Doc, ""},
	} {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.what, c.got, c.want)
		}
	}
}
