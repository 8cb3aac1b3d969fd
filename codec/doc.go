// Package codec reads and writes ZAP messages: records whose fields sit at
// fixed byte offsets, so that reading a field is a bounds-checked load and
// writing one is a store. It is byte-compatible with the canonical ZAP Go
// runtime and imports only the standard library.
//
// # Wire layout
//
//	offset  size  field
//	0       4     magic "ZAP\x00"
//	4       2     version: 1 or 2
//	6       2     flags: bit0 compressed, bit1 encrypted, bit2 signed;
//	              high byte: message type
//	8       4     root offset: absolute position of the root object
//	12      4     size: message length, header included
//	16      ...   objects, lists, text and bytes values
//
// An object is a fixed section whose fields the schema places at offsets.
// Scalars are stored little-endian in place; bytes_fixed[N] is stored
// inline; text and bytes fields hold {u32 forward offset, u32 length}; a
// nested object holds {i32 offset}; a list holds {i32 offset, u32 count}.
// Offsets are relative to the slot that holds them. Objects and lists start
// on 8-byte boundaries measured from the start of the message.
//
// # Reading
//
// [Parse] checks the header and returns a [Message] value; [Message.Root]
// gives the root [Object]; Object's typed getters (Uint32, Text, Object,
// List, ...) read one field each; [List] reads flat lists by index and
// variable-element lists with [List.Iter], [List.BytesAt] and, for the
// fixed-width elements the schema compiler writes for every list of
// scalars, in O(1) with [List.VarUint32] and its siblings. [Split]
// finds where the message at the start of a buffer ends, for messages
// written back to back ([ScanMessages] reads them with a
// bufio.Scanner), and tells a buffer that ends inside a message
// ([ErrShort]: read more) from one that cannot start one. Nothing
// allocates, and every
// getter is total: a field that does not fit inside the message reads as
// the zero value, so hostile bytes cannot make a reader panic or allocate.
//
// Two things a reader cannot check. The wire does not record where an
// object ends: a nested-object slot (and the header's root position)
// holds only where the object starts, and the length of its fixed section
// comes from the reader's schema. A getter checks a field against the end
// of the message, not of the object (as [Object.Fixed], with which
// generated records check a fixed section, checks it), so a field past
// the fixed section its writer wrote (a reader whose schema gives the
// object more fields than the writer's, or an offset that is simply
// wrong) is not zero: it reads whatever bytes follow the object in the
// message. And text is not checked for UTF-8:
// [Object.Text], [ListIter.Bytes] and generated records give the bytes
// the sender wrote, valid UTF-8 or not; a caller that needs valid text
// checks it (utf8.ValidString). (Package codec/dynamic's JSON decoding
// does check it, and refuses text that is not UTF-8.)
//
// Malformed input: [Parse] and the checked read [Object.CheckedBytes]
// (with its inlinable form [Message.BytesAt]) reject what the total
// getters read as zero, with a *[ParseError] that carries the offset where
// the input broke and matches its sentinel ([ErrTooSmall], [ErrMagic],
// [ErrVersion], [ErrOutOfBounds]) with errors.Is. Package rpc/wire parses
// its envelopes with them.
//
// Aliasing rule: a Message and every Object, List, string and []byte read
// from it alias the buffer given to Parse. They are valid only while that
// buffer is unchanged. Copy what you keep (strings.Clone, bytes.Clone).
//
// # Writing
//
// A [Builder] appends one message to a buffer the caller owns and reuses:
// [Builder.StartObject] reserves a fixed section, an [ObjectBuilder] sets
// its fields, [ObjectBuilder.Finish] writes its text and bytes values,
// [Builder.StartList] and [ListBuilder] write lists, and [Builder.Finish]
// writes the header. Building allocates nothing once the buffer has the
// capacity. Text and bytes values are not copied when set but written once,
// when their object finishes: the caller's slices must stay unchanged until
// then. One list is open at a time, from StartList to its Finish, and its
// elements lie together: while it is open, a call that would write past it
// (StartList, StartObject, WriteBytes, the Finish of an object with text or
// bytes values) is misuse, and so is the use of an object or list builder
// after the Reset that started the next message. Misuse writes nothing,
// never panics, and is reported by [Builder.Err], which a caller checks
// after Finish.
//
// The builder places every value where the canonical runtime places it, so
// the same calls give the same bytes: an object's text and bytes values
// follow, in the order they were set, whatever was built while it was open;
// a text or bytes field set more than once keeps every value in the message
// and ends up with the last one (an empty last value reads as empty, not
// null), as the canonical builder leaves it.
//
// # For generated code
//
// The records `zapcodec gen` writes use a few helpers documented "for
// generated code" (generated.go): [RootOf] (inlined, so a decoder's
// common case makes no call) and [Object.Fixed] check the header and the
// bounds of a record's fixed section once, after which its fields load at
// constant offsets with no check each; [Object.BytesIn] and
// [SameText] read and compare its text values; [AppendHeader],
// [AppendObject], [AppendListStart], [PutObjectSlot], [PutListSlot] and
// [PutHeader] write a message with nested objects and lists laid out as the
// Builder lays it out, without the Builder's bookkeeping; having no error
// to return, they panic with an error that wraps [ErrBuilder], writing
// nothing, when a size, offset or count does not fit in its 32-bit word
// (a message of 4 GiB or more). A generated
// DecodeZAP reports malformed input as a [*FieldError] naming the field
// ("Block.txs[3].to") and wrapping the cause ([ErrOutOfBounds], [ErrMagic],
// ...), built with [InField] and [InElement].
package codec
