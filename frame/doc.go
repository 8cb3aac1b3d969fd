// Package frame reads and writes length-prefixed frames over an
// io.Reader / io.Writer: the transport frames of ZAP RPC (WIRE.md §6).
//
// # Layout
//
// The canonical transport frame (the default):
//
//	+----------------+------+----------------------+
//	| u32 LE length  | kind | envelope             |
//	+----------------+------+----------------------+
//	   4 bytes         1      length-1 bytes
//
// length counts the kind byte, so 0 is a protocol error ([ErrEmptyFrame])
// and 1 is a kind with an empty envelope. The ZAP-over-HTTP framing
// ([WithHTTPFraming]) is a big-endian u32 length followed by the message,
// with no kind byte.
//
// # Limits
//
// A length prefix above the maximum frame size ([WithMaxFrameSize], default
// 16 MiB) fails with [ErrFrameTooLarge] before any of the body is read or
// allocated, so a hostile peer can make a Reader commit at most that much
// memory.
//
// # Validity of a payload
//
// [Reader.Next] returns a payload that aliases either the Reader's bufio
// buffer (the whole frame fits it: no copy) or a buffer from package pool
// (a larger frame, read with io.ReadFull). Either way the payload is valid
// only until the next call to Next: then the bytes are discarded from the
// bufio buffer or the pooled buffer goes back to its pool. Copy what must
// live longer. Build with -tags zapdebug (or call pool.SetPoison(true) in
// a test) and an expired payload is overwritten with 0xDB bytes, so a use
// after Next shows up in tests.
//
// # Writing
//
// [Writer] coalesces frames in one buffer that leaves in a single Write per
// [Writer.Flush]; a payload of at least the writev threshold goes out with
// its header through net.Buffers without being copied. [Writer.Begin] and
// [Writer.End] let an encoder append a payload straight into the output
// buffer; the length is patched in place. Neither Reader nor Writer is safe
// for concurrent use.
package frame
