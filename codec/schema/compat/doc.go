// Package compat compares two versions of a .zap schema and lists what
// changed between them, saying for each change whether it breaks peers
// that still have the old version, and which ones. It is what
// `zapcodec breaking` runs, the counterpart of protobuf's `buf breaking`.
//
// Experimental: the API may change in later versions.
//
// # What the wire fixes
//
// The ZAP wire carries no field numbers and no names (docs/wire.md
// sections 2 and 6): a field is the bytes at its offset in its struct's
// fixed section, with the width of its type, and a method is its ordinal
// in its interface. So [Compare] matches what the wire matches:
//
//   - Fields by offset. A field keeps its bytes when its offset and its
//     type stay; it is matched by name first, so that a field whose offset
//     changed shows as moved, and then by offset, so that a field given
//     another name at the same place shows as renamed, which the wire does
//     not see. Any other type at the same bytes is a retyping, which breaks
//     peers both ways (u32 to u64, i32 to u32, bytes_fixed[4] to
//     bytes_fixed[8], list<u32> to list<u64>), except text and bytes, which
//     are the same bytes on the wire (a slot and the value), in a field or
//     as list elements: a note, though codec/dynamic (unlike generated
//     code) refuses text that is not UTF-8, so bytes that are not UTF-8
//     read as text fail there.
//   - Structs by name, and by where they are used: the request and result
//     of a method matched by ordinal, the struct a matched field points at,
//     the element of a matched list. A struct that only the new schema
//     has, used where one that only the old schema has was, is that
//     struct renamed; so is one nothing uses that has the same shape and
//     the same place among the declarations as one the new schema
//     dropped.
//   - Methods by name, then by ordinal: a method whose ordinal changed
//     (one inserted or removed before it, or a reordering) moved, which
//     breaks peers both ways; a method at the same ordinal under a new
//     name is renamed (only its name in logs, metrics and
//     rpc.MethodFrom changes). The wire cannot tell a rename from
//     another method put in the old one's place, whose old clients'
//     calls would run the new method: Compare takes it for a rename,
//     a note whose message says so; its payloads are compared as
//     usual.
//   - Interfaces by name, then in declaration order among those without a
//     match. The package and interface names make a service's name
//     (package.Interface), which health checks ask for: renaming either
//     breaks a health check by name both ways.
//
// A nested struct field is a 4-byte slot pointing at an object elsewhere
// in the message, never the object inline, and a list element is a whole
// message of its own: so a nested struct that grows or shrinks moves none
// of its parent's fields. Its own change is reported at the nested struct,
// with the same rule as for any struct. The schema language has no
// separate pointer form (*S and S): every struct field is the slot.
//
// # Which peers break
//
// [Breaks] names the peers a change breaks: [OldReaders], peers with the
// old schema reading what peers with the new schema wrote, and
// [OldWriters], peers with the new schema reading what peers with the old
// one wrote (for a method, the server taking the call reads what the
// client wrote). A change that breaks one side only is safe when the
// other side upgrades first: a field added at the end of a struct breaks
// [OldWriters] (a new reader reads the added field from the bytes that
// follow the old, smaller object, README.md "Changing a schema"), so
// every writer of the struct must have the new schema before any reader.
// The change says which side that is (clients write requests and request
// streams, servers results), and sets [Change.NoOrder] when both sides
// write the struct, which no upgrade order can then satisfy.
package compat
