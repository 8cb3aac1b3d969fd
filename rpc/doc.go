// Package rpc is a ZAP-RPC client and server over TCP, Unix and TLS
// sockets, byte-compatible with the canonical runtime (docs/wire.md §6–7).
//
// A call is one request envelope (version 2, flags 0xC800, fixed section
// of 28 bytes: method, promise_id, target, cap, payload) carried in a
// transport frame of kind 1; its answer is one response envelope (fixed
// section of 20 bytes: status, promise_id, body) in a frame of kind 2.
// Answers may arrive in any order and are matched by promise_id, so one
// connection carries many concurrent calls. The encoding of envelopes and
// the frame kinds are in package [github.com/zapcodec/zapcodec/rpc/wire],
// for code that speaks the protocol itself; a service needs only this
// package.
//
// Server: [NewServer], [Server.Handle] registers a [Handler] per method
// ordinal (dispatch is a slice index), [Server.Serve] runs one read loop per
// connection, which runs each call inline and writes the answers of all
// the requests it found buffered in one write. A handler still running
// after one to two milliseconds loses the read loop to a parked worker
// goroutine (a server-wide watchdog hands it over), so a slow handler
// delays the calls behind it by that much and then runs on beside them
// (by up to about 20 ms when it began just as calls stopped on every other
// connection: the watchdog's timer backs off while calls flow, see
// watchdog.go). At most [WithMaxInFlight] calls run per connection (beyond that
// the connection is not read: backpressure, as while its queue of answers
// is full); worker goroutines are reused.
// Answers that are ready together leave in one write.
//
// [Server.Shutdown] sends every connection a go-away frame (kind 6,
// ignored by canonical peers); calls already running are answered when
// their handlers return, calls read after the go-away are refused at once
// with a 503 that carries the not-run flag (retryable: [IsRetryable]), and
// Shutdown returns once the last answer is written and every connection
// closed; a [Server.Close] during it cuts it short, and it returns an error
// matching [ErrServerClosed].
//
// Handler errors: a *[StatusError] (see [Errorf]), wrapped or not,
// answers its code and message, with the words of any wrapper around it;
// any other error answers 500 with the error's text as body
// ([WithHideErrors] sends "internal error" instead) and is logged with the
// method and the peer's address; but a handler that returns its ctx's
// context.DeadlineExceeded once the call's deadline passed is answered
// 504, not logged, and one that returns its ctx's context.Canceled after
// its caller canceled the call is answered 499, not logged. The
// handler's ctx carries the values of
// the base context ([WithBaseContext]), is done when the connection dies
// (reset, failed write, timeout, Close, end of Shutdown's grace) or when
// a zapcodec caller cancels the call (frame kind 12, see [Handler]), and
// [CallInfo] reads the call's method and promise id through any wrapping
// ([MethodFrom] its name); [PeerFrom] gives the caller's address and,
// over TLS, the handshake's state (its client certificate), in a unary
// or stream handler or interceptor, as gRPC-go's peer.FromContext does.
//
// Server defaults, chosen so that a service can keep them (see the options
// for the reasoning and the comparison with net/http and gRPC-go):
//
//	read timeout    10 s + 1 s per 16 KiB received, per frame (WithReadTimeout,
//	                WithMinReadRate; over WithTLSConfig also per TLS record):
//	                a trickling peer is dropped ~10 s after its frame began;
//	                a healthy transfer is never cut
//	idle timeout    5 min without a request while no call runs and no
//	                stream is open: go-away, then close (WithIdleTimeout)
//	in-flight       256 calls per connection, then backpressure (WithMaxInFlight);
//	                each builds its whole answer first: handlers with large
//	                answers bound them with ReserveAnswer (WithAnswerBudget)
//	frame size      16 MiB (WithFrameOptions(frame.WithMaxFrameSize(n)));
//	                memory follows bytes received; a larger request is
//	                read past and answered 413 (StatusTooLarge), not run,
//	                the connection going on; a larger frame that names
//	                no call or stream, or one over 64 MiB, drops the
//	                connection and every call on it
//	connections     no limit (WithMaxConns: beyond it, closed at once)
//	connection age  no limit (WithMaxConnectionAge: at age ±10 %, go-away;
//	                calls in flight finish, cut after a grace)
//	shutdown grace  500 ms for a peer that does not acknowledge the go-away
//	accept errors   EMFILE, ENFILE...: retried after 5 ms doubling to 1 s
//
// An idle connection costs the server about 3.2 KiB of heap and 4 KiB of
// goroutine stack (BenchmarkIdleConns10k): buffers are pooled while data
// flows and given back when it stops. It costs no CPU: it is not woken
// before its idle limit (one whose calls ran on workers is woken once,
// within a read timeout of its last call, to give its jobs back), and the
// watchdog looks only at connections that ran calls in its last few scans
// (BenchmarkIdleCPU: 10,000 idle connections use the CPU of 10). The locks and shared atomics a call
// touches, and what each costs as cores are added, are listed in
// DESIGN.md.
//
// Client: [Dial] returns a [Client] that multiplexes calls from many
// goroutines over one connection; package rpc/cluster spreads calls over
// the replicas of a service (resolved by DNS or a registry, balanced by
// load, failing replicas ejected, refused calls retried within a budget).
// Both satisfy [Caller], the interface generated stubs use. A warm unary
// call allocates nothing on either side. An idle client keeps one
// goroutine, its read loop: over TLS, the goroutine that writes for
// calls whose ctx can end is ended at the client's periodic check once
// idle for a second or more, and started again by the next such call.
//
// Safe defaults: a call returns by its ctx's deadline whatever the peer
// does (a write blocked by a peer that does not read is finished by
// another goroutine, or the request is not sent at all when the queue is
// full). A peer that takes no byte of a write for [DefaultWriteTimeout]
// (30 s, both sides, [WithWriteTimeout]) loses its connection, and so
// does one that takes a write slower than 16 KiB/s in all;
// a client with calls outstanding that receives no whole frame (nor
// bytes at 16 KiB/s or faster) for [DefaultAnswerTimeout] (60 s,
// [WithAnswerTimeout]) closes the connection, as does one whose
// table of pending calls fills up with abandoned calls, so that
// rpc/cluster dials a fresh one. A connection's write queue takes frames
// while less than 4 MiB wait to be written. A
// [StatusError]'s Message keeps at most [MaxErrorMessage] bytes of the
// answer body; Call returns the whole body appended to resp. Only a call
// the server certainly did not run ([IsRetryable]) is sent again by
// rpc/cluster, once.
//
// Services: [WithInterceptors] and [WithClientInterceptors]
// chain code around every handler and every call (first outermost; the
// chain is built once, a trivial interceptor allocates nothing);
// [WithObserver] reports each call's method, status, duration, payload
// bytes and peer on either side as a [CallEvent] passed by value (no
// allocation, two clock reads); every observer given sees every call, in
// order, as every gRPC-go stats handler does. [Server.Mount] (generated
// Register…Server functions call [Server.MountNamed], with their method
// names) places several interfaces on one server, each at its own offset
// ([At]; the clients take the same option), and panics when two overlap;
// [Server.MethodName] and [MethodFrom] give an interceptor or observer
// the full name of a wire ordinal, "/greet.Greeter/hello" as gRPC spells
// it, at no cost to a call that does not ask; on a client, the table of
// method names the generated clients made on it fill ([MethodNames],
// [WithMethodNames]) does. Every server answers the health service at the
// reserved ordinal [HealthMethod], named [HealthMethodName]
// ("/rpc.Health/check") ([Server.Health] sets statuses, [Health.SetAll] all at once,
// Shutdown turns them to draining, [CheckHealth] and `zapcodec health`
// ask). A server made with [WithReflection] (off by default) also answers
// the reserved ordinal [ReflectionMethod] with the services it serves,
// their mount offsets and their .zap sources ([WithSchema]; generated
// Register…Server functions give theirs), which [Reflect] and `zapcodec
// call -list ADDR` read, as grpcurl reads a gRPC server's reflection.
//
// Beyond the payload (docs/wire.md §8 has the bytes, README.md "Wire
// extensions" the costs): a
// call's ctx deadline travels with the request as the time left (a
// zapcodec extension field; the handler's ctx then has that deadline and
// is done when it passes, and a call whose deadline passed before it
// could run is answered 504 unrun, matching context.DeadlineExceeded; a
// stream open so is refused with an error end 504 marked not run, whose
// Recv error matches the same, its handler not run);
// [WithCap] sets the canonical cap field, read with [CapFrom];
// [WithMetadata] adds key/value pairs (an extension field), read with
// [MetadataFrom]; the other way, a unary handler or server interceptor
// sets pairs for its answer with [SetResponseMetadata] (an extension
// field of the response; a stream handler's go as a trailer, a frame of
// kind 10 before its end), which a caller receives with
// [WithResponseMetadata] (a stream's once Recv returned its end). [Client.Send] returns a [Promise], on which
// [Promise.Call] pipelines a call whose input is the first call's answer
// (envelope target; the server needs [WithPipelining]): both in one round
// trip. [WithCompression], on both sides, compresses large unary
// answers and payloads with raw DEFLATE, negotiated in extension flags
// without a round trip and never sent to a peer that did not say it
// takes them (a compressed call allocates what compress/flate's
// decompressor does); a client inflates an answer to at most 100 times
// the bytes of its frame ([WithMaxInflateRatio]), or into the room of
// the call's buffer, so its memory follows the bytes received. None of the others allocates per call once warm (a
// caller's copy of response metadata is one allocation per answer that
// carries some), and a call using none of them is the canonical
// envelope byte for byte.
//
// Streams (docs/wire.md §9; README.md "Streams"): [Server.HandleStream]
// registers a [StreamHandler] per method ordinal, [Client.OpenStream]
// opens a stream, and [Stream.Send], [Stream.Recv] and [Stream.CloseSend]
// carry messages both ways on the canonical frames (kinds 3, 4, 5), byte
// for byte. Between zapcodec peers each stream is flow controlled (a
// window per direction, [WithStreamWindow]; grants travel in frame kind
// 9, which a canonical peer ignores), so a slow reader stops only its own
// sender; a handler's error ends the stream with a status the client's
// Recv returns (a canonical peer reads a clean end); a panic ends only its
// stream. At most [WithMaxStreams] streams are open per connection;
// Shutdown gives open streams the shutdown grace, then ends them with 503.
// Once warm, Send and Recv allocate nothing; a stream's open and end
// allocate its Stream on each side (README.md, "Cost" under "Streams").
// [WithStreamInterceptors] and
// [WithStreamClientInterceptors] chain code around stream handlers and
// opens (a [StreamTap] sees each message), [WithStreamObserver] reports
// each stream's start and end as a [StreamEvent] (to every stream
// observer given, in order), and [Server.Stats]
// counts streams and their messages.
//
// Buffers: a handler's req aliases a per-call buffer owned by the server
// and is valid only until the handler returns; the handler appends its
// answer to resp (owned by the server, valid until the handler returns) and
// returns the result. The server reuses both for later calls: a handler
// keeps no slice of either after it returns, and copies what it needs
// (see [Handler]). Call appends the answer body to the caller's resp and
// returns it; nothing of the caller's req or resp is kept after Call
// returns.
//
// Until a later call reuses it, a kept req still reads the request's
// bytes, so a handler that keeps a view of it past its return (hands it
// to a goroutine, stores it in a map) usually works in tests and fails
// under load. Build with -tags zapdebug (as CI runs this package's tests)
// and the server overwrites each call's req with 0xDB bytes once its
// handler returned, before the answer is written: by the time the
// caller has the answer, a kept view reads 0xDB, every time. (A handler
// that answered with req itself, or a slice of it, has its answer
// written first, then req poisoned.) Normal builds compile none of it.
// The poison covers the cap and metadata views ([CapFrom],
// [MetadataFrom]) too, of a call and of a stream (by the time the client
// has the stream's end), but not resp, which the answer is written from,
// nor a stream handler's init, which is the handler's own.
package rpc
