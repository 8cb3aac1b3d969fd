// Package dynamic reads and writes ZAP messages through a parsed schema
// ([schema.Struct]) at run time, without generated code: the decoder turns a
// message into JSON with field names (decode.go), the encoder turns JSON
// into a message (encode.go). The zapcodec dump and load subcommands use
// it.
//
// Both sides follow the layout of the generated records (package gen): a
// list of structs is a variable-element list whose elements are whole
// messages, a list of scalars is a flat list of little-endian elements, and
// list<text> and list<bytes> are variable-element lists of raw values.
package dynamic
