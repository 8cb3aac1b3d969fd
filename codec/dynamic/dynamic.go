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
// Both directions follow the layout of the generated records: a list of
// structs is a variable-element list whose elements are whole messages, a
// list of scalars is a flat list of little-endian elements, and list<text>
// and list<bytes> are variable-element lists of raw values. Both are safe
// on hostile input: errors name the byte offset (decoding) or the field
// (encoding), never a panic, and work is bounded by the input's size.
package dynamic
