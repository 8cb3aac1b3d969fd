package wire

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
)
