package codec

// Layout constants of the ZAP wire (docs/wire.md §1–4). The code generator folds
// these into generated records.
const (
	// HeaderSize is the length of the message header: magic, version,
	// flags, root offset and size.
	HeaderSize = 16

	// Alignment is the boundary that objects, lists and raw blobs start on,
	// measured from the start of the message.
	Alignment = 8

	// Magic is the first four bytes of every message.
	Magic = "ZAP\x00"

	// TextSlotSize and BytesSlotSize are the widths of a text or bytes slot:
	// {u32 forward relative offset, u32 length}.
	TextSlotSize  = 8
	BytesSlotSize = 8
	// ObjectSlotSize is the width of a nested-object slot: {i32 relative offset}.
	ObjectSlotSize = 4
	// ListSlotSize is the width of a list slot: {i32 relative offset, u32 count}.
	ListSlotSize = 8

	// ElementHeaderSize is the u32 size that precedes each element of a
	// variable-element list.
	ElementHeaderSize = 4
)

// Header flag bits (the low byte of the flags word). The high byte is a
// message type; see [Message.Type].
const (
	FlagCompressed uint16 = 1 << 0
	FlagEncrypted  uint16 = 1 << 1
	FlagSigned     uint16 = 1 << 2
)

// Header field offsets.
const (
	offVersion = 4
	offFlags   = 6
	offRoot    = 8
	offSize    = 12
)

// Version1 and Version2 are the header versions a reader accepts. They carry
// the same data segment; the canonical runtime writes 2 for RPC envelopes.
const (
	Version1 uint16 = 1
	Version2 uint16 = 2
)

// align8 rounds n up to the next multiple of [Alignment].
func align8(n int) int { return (n + Alignment - 1) &^ (Alignment - 1) }
