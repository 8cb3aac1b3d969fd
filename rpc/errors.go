package rpc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/zapcodec/zapcodec/frame"
	"github.com/zapcodec/zapcodec/rpc/internal/unavailable"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrClosed: the connection or server is closed, or the connection broke
	// while the call was pending. A call that failed with ErrClosed may or
	// may not have run on the server. The error of a call or stream whose
	// connection broke matches ErrClosed and wraps what broke it, which
	// errors.Is and errors.As find: io.EOF (the peer closed), a
	// *net.OpError (syscall.ECONNRESET, os.ErrDeadlineExceeded...), a
	// TLS handshake's error, frame.ErrFrameTooLarge (a frame over the
	// client's maximum that it cannot fail alone: one that names no call
	// or stream, such as a ping, or one longer than frame.DiscardLimit;
	// an answer or stream message over it fails alone, see
	// [StatusTooLarge]), [ErrProtocol], the client's own
	// [WithWriteTimeout] or [WithAnswerTimeout] (an error that matches
	// os.ErrDeadlineExceeded, as a socket's timeout does). It is gRPC's
	// Unavailable: [Code] says 503 (StatusUnavailable) of it, but 500 of
	// one that wraps ErrProtocol (gRPC's Internal). When the server had
	// sent its go-away before it closed the connection, the text says the
	// server cut what was still pending ("... EOF after the server's
	// go-away ..."): the grace of [WithMaxConnectionAge] or Shutdown's
	// ctx ended with it running, the network did not lose it.
	ErrClosed = errors.New("rpc: connection closed")
	// ErrGoAway: the server announced shutdown (go-away frame) before this
	// call was sent, so it did not run; it is safe to retry elsewhere
	// ([IsRetryable] reports true). [Code] says 503 (StatusUnavailable)
	// of it, as of the 503 answer of a call the server read after its
	// go-away, which matches ErrGoAway too.
	ErrGoAway = errors.New("rpc: server is going away")
	// ErrMalformed: an envelope did not decode (see [wire.EnvelopeError]).
	// It is the same value as [wire.ErrMalformed].
	ErrMalformed = wire.ErrMalformed
	// ErrServerClosed is returned by [Server.Serve] after Shutdown or Close,
	// and (wrapped: use errors.Is) by [Server.Shutdown] when Close cut it
	// short.
	ErrServerClosed = errors.New("rpc: server closed")
	// ErrTooManyPending: the client already has the maximum number of
	// pending calls on this connection.
	ErrTooManyPending = errors.New("rpc: too many pending calls")
	// ErrProtocol: the peer sent bytes that are not a valid frame stream or
	// an answer the client cannot match; the connection is dropped. The
	// error wraps what was wrong: frame.ErrEmptyFrame or
	// frame.ErrForeignProtocol for the frame stream; a [wire.EnvelopeError]
	// (errors.As; it matches [ErrMalformed]) for an answer's envelope that
	// did not decode, its promise id unreadable (readable, it fails that
	// call alone). A frame over the client's maximum frame size is not
	// ErrProtocol but frame.ErrFrameTooLarge (a limit, not a broken
	// peer: an answer so fails its call alone, see [StatusTooLarge]), and
	// a foreign protocol the frame reader names by its first bytes (an
	// HTTP server, say) wraps the reader's error instead.
	ErrProtocol = errors.New("rpc: protocol violation")
)

// closedError is the error of the calls and streams of a connection that
// closed or broke: it matches ErrClosed (errors.Is), and unwraps to the
// cause, what broke the connection (io.EOF, a *net.OpError that matches
// syscall.ECONNRESET, a TLS error, frame.ErrFrameTooLarge, a reason of
// the client's own such as errNoAnswer...), so that errors.Is and
// errors.As find it as they find gRPC-go's causes. Its text is
// ErrClosed's, ": ", and the cause's, as it always was.
type closedError struct {
	cause error
	text  string
}

func (e *closedError) Error() string { return e.text }

// Is makes errors.Is(err, ErrClosed) true.
func (e *closedError) Is(target error) bool { return target == ErrClosed }

// Unwrap returns what broke the connection.
func (e *closedError) Unwrap() error { return e.cause }

// closedBy returns the error of the calls and streams of a connection
// that closed because of cause: ErrClosed for nil, cause itself when it
// matches ErrClosed already, else a *closedError that wraps it (one
// allocation, and the text's).
func closedBy(cause error) error {
	switch {
	case cause == nil:
		return ErrClosed
	case errors.Is(cause, ErrClosed):
		return cause
	}
	return &closedError{cause: cause, text: ErrClosed.Error() + ": " + cause.Error()}
}

// Reasons a client closes a connection by itself; the calls it fails get
// an error matching ErrClosed whose text names the reason.
var (
	errNoAnswer      = &timeoutError{"rpc: no answer: the server sent nothing for the answer timeout while calls were outstanding"}
	errAbandonedFull = errors.New("rpc: the table of pending calls is full, at least half of it abandoned calls the server never answered")
)

// timeoutError is what breaks a connection when one of the timeouts a
// client or server keeps itself passes ([WithWriteTimeout],
// [WithAnswerTimeout]): the calls and streams of the connection get it
// wrapped in their error, which matches [ErrClosed]. It matches
// os.ErrDeadlineExceeded (errors.Is) and is a net.Error whose Timeout
// reports true, as the error of a deadline on the socket is, so that a
// caller tells a peer that stopped reading or answering from one that
// closed or reset the connection without reading the text.
type timeoutError struct{ text string }

func (e *timeoutError) Error() string { return e.text }

// Is makes errors.Is(err, os.ErrDeadlineExceeded) true.
func (e *timeoutError) Is(target error) bool { return target == os.ErrDeadlineExceeded }

// Timeout reports true: the error is a timeout (net.Error).
func (e *timeoutError) Timeout() bool { return true }

// Temporary reports false (net.Error): the connection is gone.
func (e *timeoutError) Temporary() bool { return false }

// MaxErrorMessage is the most bytes of a non-200 answer's body that
// [Client.Call] keeps in [StatusError].Message (cut at a UTF-8 boundary).
// An error string travels through logs, wrapped errors and metrics labels,
// so it must stay small whatever the server sent (a body may be up to the
// maximum frame size, 16 MiB); 1 KiB holds any human-readable message. The
// whole body is still given back: Call returns it appended to resp.
const MaxErrorMessage = 1 << 10

// StatusError is a non-200 answer. A handler returns one (see [Errorf]) to
// choose the status; [Client.Call] returns one for every non-200 answer.
// Read it with [StatusOf] (or errors.As, which allocates). On the wire the message travels as the answer
// body (the canonical server writes "no such method" for 404 this way).
type StatusError struct {
	Code    uint32
	Message string
	// BodyLen is the length of the answer body Message was taken from
	// when Call had to cut it (len(Message) < BodyLen); 0 otherwise.
	BodyLen int

	refused bool // the answer carried the server's not-run flag
	// received: the error of an answer or stream end a peer sent (made
	// by newStatusError), not one a handler made (see handlerStatus).
	received bool
	// late: a 504 that came once the caller's deadline had passed (see
	// answerError).
	late bool
}

// answerError is the error of a non-200 answer (or stream end) with the
// given body to a call (or stream) made with ctx. A 504 that comes once
// ctx's deadline has passed is marked late, so that it matches
// context.DeadlineExceeded as the ctx's error the client's timer gives
// does: the call ended at its deadline, the server's timer having fired
// before the client's. (The server counts the deadline from when it
// read the request, so its timer fires after the client's: at a 504 of
// the server's deadline, the caller's has passed too.) A 504 to a call
// whose deadline is still ahead, or that has none, is a handler's own,
// as is any other status.
func answerError(ctx context.Context, status uint32, body []byte, notRun bool) *StatusError {
	e := newStatusError(status, body, notRun)
	if status == StatusDeadlineExceeded && !notRun {
		if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
			e.late = true
		}
	}
	return e
}

// newStatusError is the error of a non-200 answer with the given body: the
// message keeps at most MaxErrorMessage bytes of it.
func newStatusError(status uint32, body []byte, notRun bool) *StatusError {
	e := &StatusError{Code: status, refused: notRun, received: true}
	if len(body) > MaxErrorMessage {
		e.BodyLen = len(body)
	}
	e.Message = string(body[:messageCut(body)])
	return e
}

// messageCut returns how many bytes of an error text to keep (see
// textCut): at most MaxErrorMessage.
func messageCut[T string | []byte](text T) int { return textCut(text, MaxErrorMessage) }

// textCut returns how many bytes of text to keep: all of it up to limit,
// else limit or a little less, so that the cut falls between whole UTF-8
// characters.
func textCut[T string | []byte](text T, limit int) int {
	if len(text) <= limit {
		return len(text)
	}
	cut := limit
	for cut > limit-utf8.UTFMax && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return cut
}

// goAwayRefusal is the body of the 503 answer a server sends for a call it
// read after announcing go-away; the call did not run. The words are for
// people: what makes the answer a refusal is the not-run flag beside them
// (see [Response].NotRun), which no handler can set.
const goAwayRefusal = "going away"

// Error returns "rpc: status <code>: <message>", followed by
// " [cut from N bytes]" when Message is a prefix of the answer body.
func (e *StatusError) Error() string {
	if e.Message == "" && e.BodyLen == 0 {
		return fmt.Sprintf("rpc: status %d", e.Code)
	}
	if e.BodyLen > len(e.Message) {
		return fmt.Sprintf("rpc: status %d: %s [cut from %d bytes]", e.Code, e.Message, e.BodyLen)
	}
	return fmt.Sprintf("rpc: status %d: %s", e.Code, e.Message)
}

// Is makes errors.Is(err, ErrGoAway) true for the answer a server sends,
// with the not-run flag, for a call it read after announcing go-away (503:
// the call did not run, so it may be sent elsewhere), and errors.Is(err,
// context.DeadlineExceeded) true for the one it sends for a call whose
// deadline passed before it could run (504, not run, not retryable). The
// error end of a stream open refused so, which the server marks not run
// (wire.KindStreamNotRun), matches the same. An answer or stream end a
// handler returned, whatever its status and message, is neither (the
// call or stream ran), but for a 504 that came once the caller's
// deadline had passed (the handler returned its ctx's error, the
// server's timer having fired first): that matches
// context.DeadlineExceeded, as the ctx's error does when the client's
// timer fires first, so that a call at its deadline reads the same
// however it ended ([Code] says 504 of both).
func (e *StatusError) Is(target error) bool {
	switch target {
	case ErrGoAway:
		return e.refused && e.Code == StatusUnavailable
	case context.DeadlineExceeded:
		return (e.refused || e.late) && e.Code == StatusDeadlineExceeded
	}
	return false
}

// handlerStatus returns the status and the text a handler's error err,
// which wraps se (errors.As), answers or ends a stream with: se's code
// (not 0 nor 200: the caller checks), and err's whole text with se's own
// "rpc: status N: " words left out, so that the words a handler wrapped
// around the status reach the caller ("loading user 7: no user"), as
// gRPC-go's status.FromError keeps a wrapper's message; with hide
// (WithHideErrors), or when err is se, se's message alone. A 404
// [NoSuchMethod] (or "no such stream method") the handler received from
// a peer (a call or stream it made to a backend that lacks the method)
// answers 500 instead: passed on as it is, it would say that this server
// lacks the method (IsNoSuchMethod; rpc/cluster takes a replica that
// answers it as one deployed without the method), when the one lacking
// it is the backend.
func handlerStatus(err error, se *StatusError, hide bool) (uint32, string) {
	code := se.Code
	if se.received && se.noSuchMethod() {
		code = StatusInternal
	}
	if hide || err == error(se) {
		return code, se.Message
	}
	text, own := err.Error(), se.Error()
	if i := strings.LastIndex(text, own); i >= 0 {
		return code, text[:i] + se.Message + text[i+len(own):]
	}
	return code, text
}

// Errorf returns a *[StatusError] with the given code and a formatted
// message. A handler that returns it answers with that status and the
// message as body. Codes 0 and 200 are no error status: a unary
// handler's error with either answers 500 like any other error (its
// text, "rpc: status 0: ...", is logged and answered), and a stream
// handler's ends the stream cleanly, as a nil error does.
func Errorf(code uint32, format string, args ...any) error {
	return &StatusError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Code returns the status of a call's error, what a gRPC user reads
// with status.Code: 200 for nil; the code of a wrapped *StatusError (the
// answer's status, as [StatusOf] finds it); and for an error that no
// answer carried, the status a gRPC client reports of the same failure:
//   - 503 [StatusUnavailable] (gRPC's Unavailable: retry elsewhere) for
//     a lost connection ([ErrClosed], whatever broke it, the client's
//     own timeouts included), a call refused unrun as the server goes
//     away ([ErrGoAway]), and a cluster call that found no replica
//     (cluster.ErrNoReplica);
//   - 504 [StatusDeadlineExceeded] for the call's deadline
//     (context.DeadlineExceeded), as for the 504 answer that comes when
//     the server's timer fires first: errors.Is matches
//     context.DeadlineExceeded on both;
//   - 499 [StatusCanceled] for the caller's cancel (context.Canceled);
//   - 413 [StatusTooLarge] for frame.ErrFrameTooLarge (gRPC's
//     ResourceExhausted): a request (or stream message) over the
//     client's maximum frame size, refused unsent, and an answer over it,
//     which the client reads past, failing that call alone (the server's
//     413 answer to a request over its own maximum is a status too);
//   - 429 [StatusTooManyRequests] for [ErrTooManyPending] and
//     [ErrTooManyStreams] (gRPC's ResourceExhausted): a call or stream
//     open that the client's own limit refused, nothing sent;
//   - 500 [StatusInternal] for anything else: [ErrProtocol] (a peer that
//     broke the protocol: gRPC's Internal), the error of [Dial] (its TLS handshake's
//     included: with [NewClient], the calls get that one wrapped in
//     ErrClosed), a plain error.
//
// A lost connection is 503 whatever else its error wraps (a ctx's error
// that a net.Conn's Read returned, say, or the frame.ErrFrameTooLarge of
// a length beyond what the reader reads past, frame.DiscardLimit), but
// for ErrProtocol.
// errors.Is tells those failures apart as before; Code adds no match.
// Codes 0 and 200 of a *StatusError are no error status and count as
// 500. Code allocates nothing.
//
// Of a handler's error, Code says the status the server answers, but
// for the errors above that carry no status: a server answers a
// handler's plain error 500 whatever it wraps (a backend call's lost
// connection included: this server did not go away), but for the
// handler's own ctx's error once the call's deadline passed (504) or
// the caller canceled it (499); and it answers a backend's 404
// [NoSuchMethod] that a handler returns 500 (see [IsNoSuchMethod]).
func Code(err error) uint32 {
	if err == nil {
		return StatusOK
	}
	if se := StatusOf(err); se != nil && se.Code != 0 && se.Code != StatusOK {
		return se.Code
	}
	switch {
	case errors.Is(err, ErrProtocol):
		return StatusInternal
	case errors.Is(err, ErrClosed), errors.Is(err, ErrGoAway), errors.Is(err, unavailable.Marker):
		return StatusUnavailable
	case errors.Is(err, frame.ErrFrameTooLarge):
		return StatusTooLarge
	case errors.Is(err, ErrTooManyPending), errors.Is(err, ErrTooManyStreams):
		return StatusTooManyRequests
	case errors.Is(err, context.DeadlineExceeded):
		return StatusDeadlineExceeded
	case errors.Is(err, context.Canceled):
		return StatusCanceled
	}
	return StatusInternal
}

// StatusOf returns the first *[StatusError] in err's chain, nil when there
// is none: what errors.As with a *StatusError target finds (depth first,
// through Unwrap() error and Unwrap() []error), without the allocation
// errors.As costs for its target's escape, so that reading the status of
// each failed call costs nothing. Unlike errors.As it does not consult
// As methods; no error of this module has one. Nor does it look into
// what broke a connection, which the error of a call that lost its
// connection ([ErrClosed]) wraps: no answer came, so there is no status.
func StatusOf(err error) *StatusError {
	for err != nil {
		switch e := err.(type) {
		case *StatusError:
			return e
		case *closedError:
			// The connection broke: no answer came. What broke it is no
			// status, whatever it wraps (the error of a net.Conn that
			// NewClient was given).
			return nil
		case interface{ Unwrap() error }:
			err = e.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range e.Unwrap() {
				if se := StatusOf(e); se != nil {
					return se
				}
			}
			return nil
		default:
			return nil
		}
	}
	return nil
}

// IsRetryable reports whether a failed call certainly did not run on the
// server and may be sent again (to another connection): a go-away before
// the call was sent, or a 503 answer to a call read after go-away.
func IsRetryable(err error) bool {
	return errors.Is(err, ErrGoAway)
}

// NoSuchMethod is the body of the 404 a server answers a call to a method
// it has no handler for: zapcodec's and the canonical runtime's servers
// send this text.
const NoSuchMethod = "no such method"

// IsNoSuchMethod reports whether a failed call was answered 404
// [NoSuchMethod], or a stream was refused 404 "no such stream method" (the
// text a zapcodec server ends the open of a stream method it lacks with):
// the server has no handler for the method (one deployed without it,
// say). A handler's own 404 (Errorf(StatusNotFound, ...), "no such
// account") is not, unless its message is one of those texts. A handler
// that returns such a 404 of a call or stream it made (wrapped or not)
// answers 500, not 404: the method its server serves is there.
func IsNoSuchMethod(err error) bool {
	se := StatusOf(err)
	return se != nil && se.noSuchMethod()
}

// noSuchMethod reports whether e is the 404 of a server that lacks the
// method: [NoSuchMethod] for a call, streamNoHandler for a stream.
func (e *StatusError) noSuchMethod() bool {
	return e.Code == StatusNotFound && (e.Message == NoSuchMethod || e.Message == streamNoHandler)
}

// Status codes: those the canonical runtime uses, and this package's own,
// marked not canonical. A handler may answer with any other code but 0
// and 200 ([Errorf]).
const (
	StatusOK           = 200
	StatusBadRequest   = 400
	StatusUnauthorized = 401
	StatusForbidden    = 403
	StatusNotFound     = 404
	StatusInternal     = 500
	// StatusUnavailable is not canonical: it answers, with the not-run
	// flag, a call read after a go-away; [Code] says it of a lost
	// connection, a go-away and cluster.ErrNoReplica too.
	StatusUnavailable = 503
	// StatusDeadlineExceeded is not canonical: it answers, with the
	// not-run flag, a call whose deadline passed before it could run,
	// and without it one whose handler returned its ctx's error once the
	// deadline passed; [Code] says it of context.DeadlineExceeded too.
	StatusDeadlineExceeded = 504
	// StatusMetadataTooLarge is not canonical: it answers, with the
	// not-run flag, a call whose metadata exceeds the server's limit
	// ([WithMaxMetadata]).
	StatusMetadataTooLarge = 431
	// StatusTooManyRequests is not canonical and never on the wire from
	// this package (a handler may answer it): [Code] says it of
	// [ErrTooManyPending] and [ErrTooManyStreams], a client's own limits
	// (gRPC's ResourceExhausted).
	StatusTooManyRequests = 429
	// StatusTooLarge is not canonical: it answers, with the not-run
	// flag, a call whose request frame exceeds the server's maximum frame
	// size (the server reads past the frame and the connection goes on),
	// and ends so the open of a stream whose frame does, or the stream of
	// a message that does. [Code] says it of frame.ErrFrameTooLarge too: a
	// request, stream open or message over the client's own maximum
	// (nothing sent), an answer over it (read past, that call alone
	// failing). gRPC's ResourceExhausted ("received message larger than
	// max").
	StatusTooLarge = 413
	// StatusCanceled is not canonical: it is the status of the error end a
	// client sends when the ctx of [Client.OpenStream] ends before the
	// stream does (the server handler's ctx is canceled); [Code] says it
	// of context.Canceled.
	StatusCanceled = 499
)
