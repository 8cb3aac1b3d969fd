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
// Both directions follow the layout of the generated records, which is the
// canonical compiler's: every list, scalars included, is a variable-element
// list ([u32 size][element bytes] per element, docs/wire.md §4) whose
// elements are a scalar's little-endian value, the raw value of text and
// bytes, a struct's whole message, or a nested list's own elements. Both are safe
// on hostile input: errors name the byte offset (decoding) or the field
// (encoding), never a panic, and work is bounded by the input's size.
package dynamic
