package gen

import (
	"strings"

	"github.com/zapcodec/zapcodec/codec/schema"
)

// Streaming methods (a zapcodec extension of the schema language; the
// canonical compiler has none): "name(req: T) returns (stream U)" (server
// stream), "name(stream T) returns (resp: U)" (client stream) and
// "name(stream T) returns (stream U)" (both ways). They run on rpc
// streams (rpc.Server.HandleStream, rpc.Client.OpenStream): the request,
// when it is not a stream, is the stream's initial message; a result that
// is not a stream is the server's one message before its end. Each side
// gets a typed wrapper of *rpc.Stream whose Send encodes into a buffer of
// its own and whose Recv returns a view of a buffer of its own, so that a
// message costs no allocation once the buffers have grown; a side that
// only sends has no receive buffer, and one that only receives no send
// buffer.

// streaming reports whether m is a streaming method.
func streaming(m *schema.Method) bool { return m.ReqStream || m.RespStream }

// streamType is the name of the typed stream of method m on one side.
func streamType(it *schema.Interface, m *schema.Method, server bool) string {
	side := "Client"
	if server {
		side = "Server"
	}
	return GoName(it.Name) + GoName(m.Name) + side + "Stream"
}

// streamServerParams is the parameter list of a streaming method in the
// server interface.
func streamServerParams(it *schema.Interface, m *schema.Method) string {
	ps := []string{"ctx context.Context"}
	if m.Req != nil && !m.ReqStream {
		ps = append(ps, "req "+GoName(m.Req.Name)+"View")
	}
	ps = append(ps, "s *"+streamType(it, m, true))
	if m.Resp != nil && !m.RespStream {
		ps = append(ps, "resp *"+GoName(m.Resp.Name))
	}
	return strings.Join(ps, ", ")
}

// streamRegister writes the HandleStream of a streaming method, inside
// Register<I>Server.
func (g *generator) streamRegister(it *schema.Interface, m *schema.Method) {
	i, mn := GoName(it.Name), GoName(m.Name)
	g.p("s.HandleStream(base+%s%sOrdinal, func(ctx context.Context, init []byte, st *rpc.Stream) error {", i, mn)
	g.p("x := &%s{s: st}", streamType(it, m, true))
	args := []string{"ctx"}
	if m.Req != nil && !m.ReqStream {
		g.p("in, err := Read%s(init)", GoName(m.Req.Name))
		g.p("if err != nil {")
		g.p("return rpc.Errorf(rpc.StatusBadRequest, %q, err)", g.pkg+": "+it.Name+"."+m.Name+": %v")
		g.p("}")
		args = append(args, "in")
	}
	args = append(args, "x")
	if m.Resp != nil && !m.RespStream {
		pool := "zap" + i + mn + "Pool"
		g.p("resp := %s.Get()", pool)
		args = append(args, "resp")
		g.p("err := impl.%s(%s)", mn, strings.Join(args, ", "))
		g.p("if err == nil {")
		// Sent once: a buffer of its own (the stream type's sbuf is
		// for Send, which a side that sends a result has not).
		g.p("err = st.Send(resp.AppendZAP(nil))")
		g.p("}")
		g.p("%s.Put(resp) // zeroes it", pool)
		g.p("return err")
	} else {
		g.p("return impl.%s(%s)", mn, strings.Join(args, ", "))
	}
	g.p("})")
}

// streamClientMethod writes the client method that opens a streaming
// method's stream.
func (g *generator) streamClientMethod(it *schema.Interface, m *schema.Method, cli string) {
	i, mn := GoName(it.Name), GoName(m.Name)
	st := streamType(it, m, false)
	ps := "ctx context.Context"
	if m.Req != nil && !m.ReqStream {
		ps += ", req *" + GoName(m.Req.Name)
	}
	g.p("// %s opens a stream of %s.%s (a zapcodec streaming method),", mn, it.Name, m.Name)
	if m.Req != nil && !m.ReqStream {
		g.p("// with req as its initial message. ctx bounds the whole stream: when")
	} else {
		g.p("// with no initial message. ctx bounds the whole stream: when")
	}
	g.p("// it ends first, the stream is canceled on both sides. A stream that is")
	g.p("// neither read to its end nor canceled keeps its place on the connection")
	g.p("// (rpc.WithMaxStreams: opens past it fail with rpc.ErrTooManyStreams) and")
	g.p("// its server handler: cancel ctx to give one up. c's Caller must be an")
	g.p("// rpc.StreamOpener (*rpc.Client, *cluster.Client), else rpc.ErrNoStreams.")
	g.schemaDoc(true, m.Doc, m.Comment)
	g.p("func (c *%s) %s(%s) (*%s, error) {", cli, mn, ps, st)
	g.p("o, ok := c.c.(rpc.StreamOpener)")
	g.p("if !ok {")
	g.p("return nil, rpc.ErrNoStreams")
	g.p("}")
	g.p("x := &%s{}", st)
	init := "nil"
	if m.Req != nil && !m.ReqStream {
		// Sent once, at the open: a buffer of its own (the stream
		// type's sbuf is for Send, which a side that sends a request
		// has not).
		g.p("first := req.AppendZAP(nil)")
		init = "first"
	}
	g.p("s, err := o.OpenStream(ctx, c.base+%s%sOrdinal, %s)", i, mn, init)
	g.p("if err != nil {")
	g.p("return nil, err")
	g.p("}")
	g.p("x.s = s")
	g.p("return x, nil")
	g.p("}\n")
}

// streamTypes writes the typed streams of the streaming methods of it.
func (g *generator) streamTypes(it *schema.Interface) {
	for _, m := range it.Methods {
		if !streaming(m) {
			continue
		}
		g.streamType(it, m, true)
		g.streamType(it, m, false)
	}
}

func (g *generator) streamType(it *schema.Interface, m *schema.Method, server bool) {
	t := streamType(it, m, server)
	// What this side sends and receives as stream messages.
	var send, recv *schema.Struct
	if server {
		if m.RespStream {
			send = m.Resp
		}
		if m.ReqStream {
			recv = m.Req
		}
	} else {
		if m.ReqStream {
			send = m.Req
		}
		if m.RespStream {
			recv = m.Resp
		}
	}
	side := "server"
	if !server {
		side = "client"
	}
	// A buffer for each direction this side uses: sbuf for Send, rbuf for
	// Recv and for a client's CloseAndRecv (which reads to the end).
	closeAndRecv := !server && m.ReqStream && !m.RespStream
	g.p("// %s is the %s's side of a stream of %s.%s.", t, side, it.Name, m.Name)
	switch {
	case send != nil && recv != nil:
		g.p("// One goroutine may Send while another Recvs; neither is safe for")
		g.p("// concurrent use with itself.")
	case closeAndRecv:
		g.p("// It is not safe for concurrent use: a CloseSend or CloseAndRecv waits")
		g.p("// for a Send under way.")
	case send != nil:
		g.p("// Send is not safe for concurrent use.")
	default:
		g.p("// Recv is not safe for concurrent use.")
	}
	g.p("// A message costs no allocation once the stream's buffers have grown.")
	g.p("type %s struct {", t)
	g.p("s    *rpc.Stream")
	if send != nil {
		g.p("sbuf []byte // encodes what Send sends")
	}
	if recv != nil {
		g.p("rbuf []byte // holds what Recv returns a view of")
	} else if closeAndRecv {
		g.p("rbuf []byte // holds what CloseAndRecv reads")
	}
	g.p("}\n")
	g.p("// Stream returns the underlying rpc.Stream.")
	g.p("func (x *%s) Stream() *rpc.Stream { return x.s }\n", t)
	if send != nil {
		r := GoName(send.Name)
		g.p("// Send encodes m and sends it; m is not kept. It blocks on the peer's")
		g.p("// flow-control window (see rpc.Stream.Send for its errors).")
		g.p("func (x *%s) Send(m *%s) error {", t, r)
		g.p("x.sbuf = m.AppendZAP(x.sbuf[:0])")
		g.p("return x.s.Send(x.sbuf)")
		g.p("}\n")
	}
	if recv != nil {
		r := GoName(recv.Name)
		g.p("// Recv returns the next message as a view, valid until the next Recv;")
		g.p("// io.EOF at the peer's clean end, its *rpc.StatusError after an error")
		if server {
			// The client's message: returned, the error ends the stream
			// with 400, as an invalid request is answered.
			g.p("// end (see rpc.Stream.Recv), an *rpc.StatusError with status 400 for a")
			g.p("// message that is not a valid %s (returned, it ends the stream so).", r)
		} else {
			g.p("// end (see rpc.Stream.Recv), a decode error for a message that is not")
			g.p("// a valid %s.", r)
		}
		g.p("func (x *%s) Recv() (%sView, error) {", t, r)
		g.p("b, err := x.s.Recv(x.rbuf[:0])")
		g.p("if err != nil {")
		g.p("return %sView{}, err", r)
		g.p("}")
		g.p("x.rbuf = b")
		if server {
			g.p("v, err := Read%s(b)", r)
			g.p("if err != nil {")
			g.p("return v, rpc.Errorf(rpc.StatusBadRequest, %q, err)", g.pkg+": "+it.Name+"."+m.Name+": %v")
			g.p("}")
			g.p("return v, nil")
		} else {
			g.p("return Read%s(b)", r)
		}
		g.p("}\n")
	}
	if !server && m.ReqStream {
		g.p("// CloseSend ends the client's direction of the stream: the server's")
		g.p("// Recv returns io.EOF after the messages sent before it.")
		g.p("func (x *%s) CloseSend() error { return x.s.CloseSend() }\n", t)
		if !m.RespStream {
			g.use("io")
			g.use("errors")
			g.p("// CloseAndRecv ends the client's direction of the stream and waits for")
			if m.Resp != nil {
				r := GoName(m.Resp.Name)
				g.p("// the server's result, which it decodes into resp (reusing resp's")
				g.p("// memory), then reads to the stream's end, dropping any further")
				g.p("// message: nil at a clean end, else the end's error. A server that")
				g.p("// ends without a result gives io.ErrUnexpectedEOF; a result that is not")
				g.p("// a valid %s, DecodeZAP's error (a *codec.FieldError), without waiting", r)
				g.p("// for the end.")
				g.p("func (x *%s) CloseAndRecv(resp *%s) error {", t, r)
			} else {
				g.p("// the server's end, dropping any message the server sends: nil at a")
				g.p("// clean end, else the end's error.")
				g.p("func (x *%s) CloseAndRecv() error {", t)
			}
			g.p("if err := x.s.CloseSend(); err != nil {")
			g.p("return err")
			g.p("}")
			if m.Resp != nil {
				g.p("b, err := x.s.Recv(x.rbuf[:0])")
				g.p("if errors.Is(err, io.EOF) {")
				g.p("return io.ErrUnexpectedEOF")
				g.p("}")
				g.p("if err != nil {")
				g.p("return err")
				g.p("}")
				g.p("x.rbuf = b")
				g.p("if err := resp.DecodeZAP(b); err != nil {")
				g.p("return err")
				g.p("}")
			}
			g.p("for {")
			g.p("if _, err := x.s.Recv(x.rbuf[:0]); err != nil {")
			g.p("if errors.Is(err, io.EOF) {")
			g.p("return nil")
			g.p("}")
			g.p("return err")
			g.p("}")
			g.p("}")
			g.p("}\n")
		}
	}
}
