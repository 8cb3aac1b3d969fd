package compat_test

import (
	"fmt"

	"github.com/zapcodec/zapcodec/codec/schema"
	"github.com/zapcodec/zapcodec/codec/schema/compat"
)

func ExampleCompare() {
	old, err := schema.Parse("old.zap", []byte(`package shop
struct Order
    ID    u64
    Total u32
interface Shop {
    place(req: Order)
}
`))
	if err != nil {
		panic(err)
	}
	cur, err := schema.Parse("new.zap", []byte(`package shop
struct Order
    ID    u64
    Total u64
    Note  text
interface Shop {
    place(req: Order)
    cancel(req: Order)
}
`))
	if err != nil {
		panic(err)
	}
	for _, ch := range compat.Compare(old, cur) {
		fmt.Printf("%s %s, breaks %s, breaking %v\n", ch.Pos(), ch.Kind, ch.Breaks, ch.Breaking(false))
	}
	// Output:
	// new.zap:4:5 field retyped, breaks old readers and old writers, breaking true
	// new.zap:5:5 field appended, breaks old writers, breaking false
	// new.zap:8:5 method appended, breaks none, breaking false
}
