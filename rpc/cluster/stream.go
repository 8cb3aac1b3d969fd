package cluster

import (
	"errors"

	"github.com/zapcodec/zapcodec/rpc"
)

// A Client opens streams for generated streaming clients (see
// [Client.OpenStream]).
var _ rpc.StreamOpener = (*Client)(nil)

// streamEnded is the stream observer of the connection (see
// replica.dial): the end of a stream opened on it counts toward its
// replica's ejection as a call's answer does, by how the stream ended
// (gRPC's outlier detection counts a stream by its final status too). A
// server's error end of 500 and above, or 404 "no such stream method"
// ([rpc.IsNoSuchMethod]), is a failed call; a clean end, or a handler's
// own 4xx, is an answer, which ends the replica's failures in a row; a
// connection that broke counts once, however many streams (and calls)
// were on it. The caller's ends count nothing: its ctx ended or it
// canceled the stream ([rpc.StatusCanceled]), the stream's deadline
// passed on the server (504: the caller chose how long the stream
// lives; so too when it passed before the handler could run, an open
// the server refuses unrun and marks so), and so do the 503 of a server
// going away, which ends its streams at the end of its Shutdown's grace
// and refuses the opens it reads meanwhile (see refusedGoingAway: such a
// refusal replaces its connection at once, as a unary call's does), the
// 503 "too many open streams" of a server whose connection is full (see
// refusedFull: load, not failure), and an open that was not sent
// (OpenStream looked at its error). A stream's duration is not one of the replica's latencies: it
// lasts as long as its caller and its handler make it, not as long as
// the replica takes to answer.
func (cn *Conn) streamEnded(ev rpc.StreamEvent) {
	if !ev.End {
		return
	}
	switch ev.Status {
	case 0:
		// No end came: the connection broke or was closed, or the open
		// was not sent.
		if errors.Is(ev.Err, rpc.ErrClosed) {
			cn.r.c.account(cn, ev.Err, false)
		}
	case rpc.StatusOK:
		cn.r.ok()
	case rpc.StatusCanceled, rpc.StatusDeadlineExceeded:
	case rpc.StatusUnavailable:
		switch {
		case refusedGoingAway(ev.Err):
			// Counts nothing, but the connection is replaced at once,
			// as for a call refused unrun (account).
			cn.r.c.account(cn, ev.Err, false)
		case !cn.rc.Draining() && !refusedFull(ev.Err):
			cn.r.c.account(cn, ev.Err, false)
		}
	default:
		cn.r.c.account(cn, ev.Err, false)
	}
}

// streamTooManyText is the text of the 503 with which a zapcodec server
// refuses, unrun, the open of a stream beyond its limit on the connection
// (rpc.WithMaxStreams): TestStreamRefusedFullCountsNothing reads it from
// a server.
const streamTooManyText = "too many open streams"

// refusedFull reports whether a stream ended with the server's refusal
// of its open because the connection had as many streams open as the
// server allows. That replica is full, not failing: the client picked
// the connection, and a full connection is load, as one full on the
// client's side ([rpc.ErrTooManyStreams]) is, which counts against no
// one either.
func refusedFull(err error) bool {
	se := rpc.StatusOf(err)
	return se != nil && se.Code == rpc.StatusUnavailable && se.Message == streamTooManyText
}

// refusedGoingAway reports whether a stream ended with the refusal of its
// open by a server going away, which says nothing of the replica, as a
// call refused for its go-away does not, but takes its connection out
// and has the replica dial another at once, as that call does (account:
// the connection was refused unrun; one refused younger than the
// ejection base backs off instead). A zapcodec server refuses, unrun,
// an open it read once its go-away was decided, with a 503 it marks as
// not run (rpc's KindStreamNotRun frame), which makes the error match
// rpc.ErrGoAway; it decides before it writes the go-away frame, so the
// refusal may reach the client before the go-away does, while the
// connection is not draining yet (rpc.Client.Draining). A handler's own
// 503, whatever its text, is not such a refusal: its stream ran.
func refusedGoingAway(err error) bool {
	return errors.Is(err, rpc.ErrGoAway)
}
