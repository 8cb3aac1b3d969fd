// Package dynamic converts between ZAP messages and JSON through a parsed
// schema ([schema.Struct]) at run time, without generated code: the ground
// for a JSON gateway, a message inspector or a test tool. [AppendJSON]
// turns a message into a JSON object with field names; [AppendMessage]
// turns such an object into a message, the bytes the generated AppendZAP
// builds for the same values. The zapcodec dump and load subcommands are
// built on it.
//
// Experimental: the API may change in later versions.
//
// Both directions follow the layout of the generated records, which is
// the canonical compiler's (docs/wire.md §4): every list is a
// variable-element list, [u32 size][element bytes] per element; the
// elements of a list of structs are whole messages, those of a list of
// scalars little-endian values at their declared width, those of
// list<text> and list<bytes> the raw values.
//
// Both are safe on hostile input: errors name the byte offset (decoding)
// or the field (encoding), never a panic, and work and output are bounded
// by the input's size times a factor of the schema (AppendMessage writes
// a struct's whole fixed section for each JSON object, "{}" included;
// AppendJSON writes the field names of each record it prints).
package dynamic
