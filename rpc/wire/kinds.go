package wire

import "encoding/binary"

// Frame kinds (docs/wire.md §7), plus the go-away, ping and pong kinds of
// package rpc (zapcodec extensions, docs/wire.md §8).
const (
	KindRequest  = 1
	KindResponse = 2
	// KindGoAway is sent by a server that is shutting down: the peer should
	// send no new calls on this connection. Canonical peers ignore it; package
	// rpc's client answers with a KindGoAway of its own (the peer's
	// promise that no more calls follow), after which the server closes the
	// connection as soon as its calls are answered.
	KindGoAway = 6
	// KindPing asks the peer for a KindPong carrying the same payload (at
	// most 8 bytes; zapcodec extension, docs/wire.md §8: canonical peers ignore
	// it). A client with calls outstanding that has heard nothing for half
	// its answer timeout sends one, so that a server that answers pings is
	// not taken for hung while its handlers are merely slow; a client
	// answers the pings it receives.
	KindPing = 7
	// KindPong answers a KindPing; servers and clients of package
	// rpc both answer pings.
	KindPong = 8
	// KindCancel (zapcodec extension, docs/wire.md §8: a kind a canonical
	// peer ignores) is [u32 LE promise id]: the sender no longer wants the
	// answer to its call with that promise id, whose handler may stop
	// (package rpc's server ends the handler's ctx with
	// context.Canceled). A promise id of 0 names no call: from a server
	// it is the announcement that it takes cancels, sent in answer to a
	// ping whose payload is [CancelQuestion]. Package rpc's client sends
	// cancels only to a server that announced; a receiver ignores a
	// cancel for a call it does not know or answered already, and the
	// bytes after the id.
	KindCancel = 12
)

// CancelQuestion is the payload of the ping with which package rpc's
// client asks whether its server takes KindCancel frames: a server that
// does answers with a KindCancel frame of promise id 0 just before the
// pong. A canonical server ignores the ping; an older zapcodec server
// answers it with the pong alone.
const CancelQuestion = "cancel?"

// AppendCancel appends the body of a KindCancel frame (the promise id;
// 0 for a server's announcement) to dst and returns the extended slice.
func AppendCancel(dst []byte, pid uint32) []byte {
	return binary.LittleEndian.AppendUint32(dst, pid)
}

// ParseCancel returns the promise id of a KindCancel body; ok is false
// for a body shorter than the id. Bytes after the id are ignored.
func ParseCancel(p []byte) (pid uint32, ok bool) {
	if len(p) < 4 {
		return 0, false
	}
	return binary.LittleEndian.Uint32(p), true
}

// Stream frame kinds and the flow-control kind of package rpc (a zapcodec
// extension), docs/wire.md §9.
const (
	// KindStreamOpen opens a stream: its body is a request envelope whose
	// promise_id is the stream id, method the method ordinal and payload
	// the initial message.
	KindStreamOpen = 3
	// KindStreamMsg carries one stream message: [u32 LE stream id][message].
	KindStreamMsg = 4
	// KindStreamEnd half-closes the sender's direction of a stream:
	// [u32 LE stream id], optionally followed (zapcodec extension) by
	// [u32 LE status][message text] for an error end. A canonical receiver
	// ignores the bytes after the id and reads a clean end.
	KindStreamEnd = 5
	// KindStreamWindow is package rpc's flow-control frame (a canonical
	// peer ignores it): [u32 LE stream id][u32 LE bytes]. For a stream id
	// other than 0 it grants the peer that many more bytes of messages on
	// the stream (each message counts its length plus 4); for id 0 it is
	// the hello: the sender does flow control and gives every stream it
	// receives on a window of that many bytes. A body of 4 bytes, id 0
	// alone, is the no-window notice (AppendStreamNoWindow).
	KindStreamWindow = 9
	// KindStreamTrailer carries the response metadata (the trailer) a
	// server's stream handler set, sent just before the server's end of
	// the stream and only when there is some (zapcodec extension, a kind a
	// canonical peer ignores): [u32 LE stream id][metadata], the metadata
	// encoded as a request's (docs/wire.md §8 "Request: metadata").
	KindStreamTrailer = 10
	// KindStreamNotRun tells the client that the error end which follows
	// it refuses a stream open the server did not run (zapcodec extension,
	// a kind a canonical peer ignores): [u32 LE stream id]. A zapcodec
	// server sends it just before the end with which it refuses an open
	// for a reason it refuses a unary call with the response's not-run
	// flag: 503 for an open read after its go-away (the stream had no
	// effect and may be opened again elsewhere), 504 for one whose
	// deadline passed before its handler could run, 431 for metadata over
	// its limit. A receiver that does not know the kind reads the end
	// alone, as before.
	KindStreamNotRun = 11
)
