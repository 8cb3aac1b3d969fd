package codec_test

import (
	"errors"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
)

// The path is built from the inside out, the way generated decoders
// return through their levels: element 3 of txs, field to inside it, all
// in a Block.
func TestFieldErrorPath(t *testing.T) {
	err := codec.InField(codec.InElement(codec.InField(codec.ErrOutOfBounds, "to"), 3), "txs")
	err = codec.InField(err, "Block")
	var fe *codec.FieldError
	if !errors.As(err, &fe) || fe.Path != "Block.txs[3].to" {
		t.Fatalf("path: %v", err)
	}
	if !errors.Is(err, codec.ErrOutOfBounds) || errors.Is(err, codec.ErrShared) {
		t.Fatalf("errors.Is does not see the sentinel: %v", err)
	}
	if got, want := err.Error(), "Block.txs[3].to: "+codec.ErrOutOfBounds.Error(); got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
}

func TestFieldErrorNestedIndices(t *testing.T) {
	err := codec.InField(codec.InElement(codec.InElement(codec.ErrElementSize, 2), 1), "grid")
	if got := err.(*codec.FieldError).Path; got != "grid[1][2]" {
		t.Fatalf("path %q", got)
	}
	// An error at the level of a list element (a header), then its record.
	err = codec.InField(codec.InField(codec.InElement(codec.ErrMagic, 0), "items"), "Order")
	if got := err.(*codec.FieldError).Path; got != "Order.items[0]" || !errors.Is(err, codec.ErrMagic) {
		t.Fatalf("path %q (%v)", got, err)
	}
}

func TestFieldErrorNil(t *testing.T) {
	if codec.InField(nil, "x") != nil || codec.InElement(nil, 1) != nil {
		t.Fatal("a nil error must stay nil")
	}
}

// A ParseError-style wrapper below the FieldError still matches.
func TestFieldErrorWrapsWrapped(t *testing.T) {
	_, perr := codec.Parse([]byte("short"))
	err := codec.InField(perr, "Block")
	if !errors.Is(err, codec.ErrTooSmall) {
		t.Fatalf("%v does not match ErrTooSmall", err)
	}
}
