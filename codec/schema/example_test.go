package schema_test

import (
	"errors"
	"fmt"

	"github.com/zapcodec/zapcodec/codec/schema"
)

// Parse a schema and walk it: every struct with its comments and its
// fields at their byte offsets, every interface with its methods and their ordinals (the
// method ids on the wire). A linter or a compatibility check between two
// versions of a schema starts from this walk.
func ExampleParse() {
	src := []byte(`package shop
type sku = bytes_fixed[8]

# An item for sale.
struct Item
    Id    sku         # stock keeping unit
    Name  text
    Price u32
    Tags  list<text>

struct Order {
    Items list<Item>
    Note  text @12
}

interface Shop {
    get(req: Item) returns (resp: Item)
    place(req: Order)
}
`)
	f, err := schema.Parse("shop.zap", src)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("package", f.Package)
	for _, s := range f.Structs {
		fmt.Printf("struct %s: %d bytes\n", s.Name, s.Size)
		if s.Doc != "" {
			fmt.Printf("  doc: %s\n", s.Doc)
		}
		for _, fd := range s.Fields {
			written := ""
			if fd.Type.AliasName != "" {
				written = " (written " + fd.Type.AliasName + ")"
			}
			if fd.Comment != "" {
				written += " # " + fd.Comment
			}
			fmt.Printf("  @%-2d %-5s %s, %d bytes%s\n", fd.Offset, fd.Name, fd.Type, fd.Width, written)
		}
	}
	for _, it := range f.Interfaces {
		fmt.Printf("interface %s\n", it.Name)
		for _, m := range it.Methods {
			resp := "nothing"
			if m.Resp != nil {
				resp = m.Resp.Name
			}
			fmt.Printf("  %d %s(%s) returns %s\n", m.Ordinal, m.Name, m.Req.Name, resp)
		}
	}
	// Output:
	// package shop
	// struct Item: 28 bytes
	//   doc: An item for sale.
	//   @0  Id    bytes_fixed[8], 8 bytes (written sku) # stock keeping unit
	//   @8  Name  text, 8 bytes
	//   @16 Price u32, 4 bytes
	//   @20 Tags  list<text>, 8 bytes
	// struct Order: 20 bytes
	//   @0  Items list<Item>, 8 bytes
	//   @12 Note  text, 8 bytes
	// interface Shop
	//   1 get(Item) returns Item
	//   2 place(Order) returns nothing
}

// A schema error carries its position, for an editor or a linter to point
// at.
func ExampleError() {
	_, err := schema.Parse("bad.zap", []byte("struct A\n    X u32\n    Y u33\n"))
	var se *schema.Error
	if errors.As(err, &se) {
		fmt.Printf("line %d, column %d: %s\n", se.Pos.Line, se.Pos.Col, se.Msg)
	}
	fmt.Println(err)
	// Output:
	// line 3, column 7: unknown type u33
	// bad.zap:3:7: unknown type u33
}
