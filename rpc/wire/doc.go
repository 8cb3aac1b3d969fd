// Package wire is the encoding of ZAP-RPC on the wire (docs/wire.md §6–7,
// the zapcodec extensions of §8, the streams of §9): the request and
// response envelopes ([AppendRequest], [ParseRequest], [AppendResponse],
// [ParseResponse]), their layout constants, the transport frame kinds, and
// the bodies of the stream frames ([AppendStreamMsg], [ParseStreamMsg],
// [ParseStreamEnd] with its error-end extension, the flow-control
// [AppendStreamWindow] and [ParseStreamWindow]).
//
// A service author does not need it: package rpc builds and reads these
// envelopes for its Server and Client. It is for code that speaks the
// protocol itself: a proxy, a traffic dumper (zapcodec dump), a load
// generator or a test that writes hostile bytes. Nothing here imports rpc.
//
// The Parse functions never panic and never allocate on success; the
// slices they return alias their input. The Append functions append to
// the dst they are given (which may be nil) and only read their argument.
package wire
