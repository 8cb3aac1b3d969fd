package gen

import (
	"fmt"
	"strings"

	"github.com/zapcodec/zapcodec/codec/schema"
)

func (g *generator) stubs(it *schema.Interface) {
	if len(it.Methods) > 0 {
		g.use("context") // an interface without methods has no method to take a context
	}
	g.use(rpcPath)
	i := GoName(it.Name)
	srv, cli := i+"Server", i+"Client"

	if len(it.Methods) > 0 {
		g.p("// RPC method ordinals of interface %s (1-based, declaration order).", it.Name)
		g.p("const (")
		for _, m := range it.Methods {
			g.p("%s%sOrdinal uint32 = %d // %s", i, GoName(m.Name), m.Ordinal, m.Name)
		}
		g.p(")\n")
	}
	g.methodName(it)

	// Server interface.
	g.p("// %s is implemented by a server of interface %s; register it with", srv, it.Name)
	g.p("// Register%s. A request view aliases a buffer the server owns and is", srv)
	g.p("// valid only until the method returns, as is every string, slice and")
	g.p("// view read from it: the buffer is reused for later calls, so copy")
	g.p("// (strings.Clone, bytes.Clone) what the method keeps. A result arrives")
	g.p("// set to its zero value and is encoded after the method returns nil; it")
	g.p("// must not be kept.")
	g.p("// An error answers the call with its status (see rpc.Errorf), 500 by default.")
	g.p("// An implementation that embeds Unimplemented%s keeps building when", srv)
	g.p("// the schema gains a method: it answers the new method as a server")
	g.p("// without it would.")
	g.schemaDoc(true, it.Doc, it.Comment)
	for _, m := range it.Methods {
		if streaming(m) {
			g.p("//")
			g.p("// A streaming method's error ends its stream with that status (the")
			g.p("// client's Recv returns it), nil ends it cleanly; a streaming request")
			g.p("// or result that is not a stream is the stream's first message.")
			break
		}
	}
	g.p("type %s interface {", srv)
	for _, m := range it.Methods {
		g.p("// %s serves %s.%s.", GoName(m.Name), it.Name, m.Name)
		g.schemaDoc(true, m.Doc, m.Comment)
		g.p("%s(%s) error", GoName(m.Name), params(it, m, true))
	}
	g.p("}\n")
	g.unimplemented(it)

	svcName := it.Name
	if g.f.Package != "" {
		svcName = g.f.Package + "." + it.Name
	}
	g.p("// %sServiceName is the name interface %s is mounted under on a server", i, it.Name)
	g.p("// (rpc.Server.Mount) and reports its health by (rpc.CheckHealth).")
	g.p("const %sServiceName = %q\n", i, svcName)

	g.p("// zap%sSchema is the .zap source of interface %s that Register%s", i, it.Name, srv)
	g.p("// gives the server (rpc.WithSchema) for its reflection answer")
	g.p("// (rpc.WithReflection): the parts of the schema the interface uses,")
	g.p("// re-printed to parse alone (aliases resolved, every offset written).")
	if src := ServiceSchema(g.f, it); strings.Contains(src, "`") {
		g.p("const zap%sSchema = %q\n", i, src)
	} else {
		g.p("const zap%sSchema = `%s`\n", i, src)
	}

	g.p("// Register%s mounts impl's methods on s (rpc.Server.MountNamed, with", srv)
	g.p("// their names for rpc.Server.MethodName and rpc.MethodFrom): at their")
	g.p("// ordinals, or at base + ordinal with rpc.At(base), which the clients of")
	g.p("// this mount must be given too. It panics when the ordinals overlap those")
	g.p("// of a service mounted before. A request that is not a valid message is")
	g.p("// answered with status 400. It gives the server the interface's schema")
	g.p("// (rpc.WithSchema, before opts: one among opts replaces it), which a server")
	g.p("// made with rpc.WithReflection serves to tools such as zapcodec call.")
	g.p("func Register%s(s *rpc.Server, impl %s, opts ...rpc.MountOption) {", srv, srv)
	g.p("opts = append([]rpc.MountOption{rpc.WithSchema(zap%sSchema)}, opts...)", i)
	if len(it.Methods) == 0 {
		g.p("s.MountNamed(%sServiceName, 0, %sMethodName, opts...)", i, i)
	} else {
		g.p("base := s.MountNamed(%sServiceName, %d, %sMethodName, opts...)", i, len(it.Methods), i)
	}
	for _, m := range it.Methods {
		if streaming(m) {
			g.streamRegister(it, m)
			continue
		}
		mn := GoName(m.Name)
		ord := i + mn + "Ordinal"
		pool := "zap" + i + mn + "Pool"
		g.p("s.Handle(base+%s, func(ctx context.Context, req, out []byte) ([]byte, error) {", ord)
		var args []string
		args = append(args, "ctx")
		if m.Req != nil {
			g.p("in, err := Read%s(req)", GoName(m.Req.Name))
			g.p("if err != nil {")
			g.p("return out, rpc.Errorf(rpc.StatusBadRequest, %q, err)", g.pkg+": "+it.Name+"."+m.Name+": %v")
			g.p("}")
			args = append(args, "in")
		}
		if m.Resp != nil {
			g.p("resp := %s.Get()", pool)
			args = append(args, "resp")
			op := ":="
			if m.Req != nil {
				op = "="
			}
			g.p("err %s impl.%s(%s)", op, mn, strings.Join(args, ", "))
			g.p("if err == nil {")
			g.p("out = resp.AppendZAP(out)")
			g.p("}")
			g.p("%s.Put(resp) // zeroes it", pool)
			g.p("return out, err")
		} else {
			g.p("return out, impl.%s(%s)", mn, strings.Join(args, ", "))
		}
		g.p("})")
	}
	g.p("}\n")
	for _, m := range it.Methods {
		if m.Resp != nil && !m.RespStream {
			r := GoName(m.Resp.Name)
			g.p("// zap%s%sPool recycles the results of %s.%s.", i, GoName(m.Name), it.Name, m.Name)
			g.p("var zap%s%sPool rpc.ResultPool[%s]\n", i, GoName(m.Name), r)
		}
	}

	// Client.
	g.p("// %s calls the methods of interface %s through an rpc.Caller (an", cli, it.Name)
	g.p("// *rpc.Client, or a *cluster.Client of package rpc/cluster). It is safe")
	g.p("// for concurrent use.")
	g.schemaDoc(true, it.Doc, it.Comment)
	g.p("type %s struct {", cli)
	g.p("c    rpc.Caller")
	g.p("base uint32 // mount offset (rpc.At)")
	g.p("}\n")
	g.p("// New%s returns a client of interface %s that calls through c, at the", cli, it.Name)
	g.p("// ordinals the server mounted it at: without an option, where a canonical")
	g.p("// server serves it (1..n); with rpc.At(base), base + ordinal. When c keeps")
	g.p("// method names (an rpc.MethodNamer: *rpc.Client, *cluster.Client), it")
	g.p("// adds the names of %s's methods at those ordinals to c's table", it.Name)
	g.p("// (rpc.NameMethods), for client interceptors and observers, which see")
	g.p("// only the ordinal; nothing once they were added at that base.")
	g.p("func New%s(c rpc.Caller, opts ...rpc.MountOption) *%s {", cli, cli)
	g.p("base := rpc.MountBase(opts...)")
	g.p("rpc.NameMethods(c, %sServiceName, %d, %sMethodName, base)", i, len(it.Methods), i)
	g.p("return &%s{c: c, base: base}", cli)
	g.p("}\n")
	for _, m := range it.Methods {
		if streaming(m) {
			g.streamClientMethod(it, m, cli)
			continue
		}
		mn := GoName(m.Name)
		g.p("// %s calls %s.%s. It encodes the request into a pooled buffer,", mn, it.Name, m.Name)
		if m.Resp != nil {
			g.p("// decodes the answer into resp (reusing resp's memory) and keeps")
		} else {
			g.p("// ignores the answer body and keeps")
		}
		g.p("// nothing of its arguments. A non-200 answer is an *rpc.StatusError")
		g.p("// (errors.As); see rpc.Client.Call for the other errors.")
		if m.Resp != nil {
			g.decodeErrorDoc(m.Resp)
		}
		g.schemaDoc(true, m.Doc, m.Comment)
		g.p("func (c *%s) %s(%s) error {", cli, mn, params(it, m, false))
		g.p("bp := rpc.GetBuffer()")
		if m.Req != nil {
			g.p("buf := req.AppendZAP((*bp)[:0])")
		} else {
			g.p("buf := (*bp)[:0]")
		}
		g.p("out, err := c.c.Call(ctx, c.base+%s%sOrdinal, buf, buf[len(buf):])", i, mn)
		if m.Resp != nil {
			g.p("if err == nil {")
			g.p("err = resp.DecodeZAP(out)")
			g.p("}")
		}
		g.p("rpc.PutBuffer(bp, buf, out)")
		g.p("return err")
		g.p("}\n")
	}
	g.streamTypes(it)
	g.pipelineStubs(it, cli)
}

// decodeErrorDoc writes the doc lines of a client method's error for an
// answer that is not a valid resp.
func (g *generator) decodeErrorDoc(resp *schema.Struct) {
	g.p("// An answer that is not a valid %s is DecodeZAP's error (a", GoName(resp.Name))
	g.p("// *codec.FieldError): the call ran, and resp may be partly filled.")
}

// params returns a method's parameter list: server side (req as a view) or
// client side (req as a record).
func params(it *schema.Interface, m *schema.Method, server bool) string {
	if streaming(m) {
		return streamServerParams(it, m)
	}
	ps := []string{"ctx context.Context"}
	if m.Req != nil {
		if server {
			ps = append(ps, fmt.Sprintf("req %sView", GoName(m.Req.Name)))
		} else {
			ps = append(ps, fmt.Sprintf("req *%s", GoName(m.Req.Name)))
		}
	}
	if m.Resp != nil {
		ps = append(ps, fmt.Sprintf("resp *%s", GoName(m.Resp.Name)))
	}
	return strings.Join(ps, ", ")
}

// pipelineStubs writes the typed promise pipelining of a client (rpc
// Promise, docs/wire.md §6): Send<M> for every method with a result, which
// sends the call without waiting for its answer, and <M>On for every
// method whose request type is the result type of some method of the
// interface, which sends the call with the answer of a promise as its
// request, in the same round trip.
func (g *generator) pipelineStubs(it *schema.Interface, cli string) {
	i := GoName(it.Name)
	results := pipelineResults(it)
	for _, m := range it.Methods {
		if !sendStub(m) {
			continue
		}
		mn := GoName(m.Name)
		// The <M>On methods that take this answer as their request.
		var ons []string
		for _, o := range it.Methods {
			if onStub(o, results) && o.Req == m.Resp {
				ons = append(ons, GoName(o.Name)+"On")
			}
		}
		g.p("// Send%s sends a call of %s.%s without waiting for its answer and", mn, it.Name, m.Name)
		if len(ons) > 0 {
			g.p("// returns its promise: pipeline calls on it with %s (their", strings.Join(ons, ", "))
			g.p("// request is %s %s), take the answer with p.Wait(ctx, resp)", article(GoName(m.Resp.Name)), GoName(m.Resp.Name))
		} else {
			g.p("// returns its promise: take the answer with p.Wait(ctx, resp)")
		}
		g.p("// or drop it with p.Release (one of the two, once). c's Caller must be")
		g.p("// an rpc.Sender (*rpc.Client, *cluster.Client), else rpc.ErrNoSender.")
		g.p("// The Caller's client interceptors do not run for it (see")
		g.p("// rpc.Client.Send): the call carries ctx's deadline, cap and metadata,")
		g.p("// and nothing an interceptor would add.")
		ps := "ctx context.Context"
		if m.Req != nil {
			ps += fmt.Sprintf(", req *%s", GoName(m.Req.Name))
		}
		pt := GoName(m.Resp.Name) + "Promise"
		g.p("func (c *%s) Send%s(%s) (%s, error) {", cli, mn, ps, pt)
		g.p("s, ok := c.c.(rpc.Sender)")
		g.p("if !ok {")
		g.p("return %s{}, rpc.ErrNoSender", pt)
		g.p("}")
		g.p("bp := rpc.GetBuffer()")
		if m.Req != nil {
			g.p("buf := req.AppendZAP((*bp)[:0])")
		} else {
			g.p("buf := (*bp)[:0]")
		}
		g.p("p, err := rpc.SendPooled(ctx, s, c.base+%s%sOrdinal, bp, buf)", i, mn)
		g.p("return %s{p}, err", pt)
		g.p("}\n")
	}
	for _, m := range it.Methods {
		if !onStub(m, results) {
			continue
		}
		mn := GoName(m.Name)
		g.p("// %sOn calls %s.%s with, as its request, the answer of the call p", mn, it.Name, m.Name)
		g.p("// (%s %s): promise pipelining, one round trip for both calls; the server", article(GoName(m.Req.Name)), GoName(m.Req.Name))
		g.p("// must run rpc.WithPipelining. p is not spent (see rpc.Promise.Call): wait")
		g.p("// for its own answer or release it as well.")
		if ends := streamEndResults(it, m.Req); ends != nil {
			// No Send<M> of the interface returns this promise.
			rt, rest := GoName(m.Req.Name), ""
			if m.Resp != nil {
				rest = ", &resp"
			}
			g.p("//")
			g.p("// No Send method of this client returns %sPromise: %s answers %s %s", rt, strings.Join(ends, " and "), article(rt), rt)
			g.p("// at the end of a client stream, which is no promise. Wrap the")
			g.p("// rpc.Promise of a call that answers one, sent on the same connection")
			g.p("// (rpc.Client.Send): %sOn(ctx, %sPromise{p}%s).", mn, rt, rest)
		}
		if m.Resp != nil {
			g.decodeErrorDoc(m.Resp)
		}
		ps := fmt.Sprintf("ctx context.Context, p %sPromise", GoName(m.Req.Name))
		if m.Resp != nil {
			ps += fmt.Sprintf(", resp *%s", GoName(m.Resp.Name))
		}
		g.p("func (c *%s) %sOn(%s) error {", cli, mn, ps)
		g.p("bp := rpc.GetBuffer()")
		g.p("buf := (*bp)[:0]")
		g.p("out, err := p.Call(ctx, c.base+%s%sOrdinal, buf)", i, mn)
		if m.Resp != nil {
			g.p("if err == nil {")
			g.p("err = resp.DecodeZAP(out)")
			g.p("}")
		}
		g.p("rpc.PutBuffer(bp, buf, out)")
		g.p("return err")
		g.p("}\n")
	}
}

// pipelineResults returns the result types of the methods of it that
// answer once: a method whose request is one of them gets an <M>On stub.
func pipelineResults(it *schema.Interface) map[*schema.Struct]bool {
	results := map[*schema.Struct]bool{}
	for _, m := range it.Methods {
		if m.Resp != nil && !m.RespStream {
			results[m.Resp] = true
		}
	}
	return results
}

// sendStub reports whether method m gets a Send<M> stub: it has a result
// and does not stream.
func sendStub(m *schema.Method) bool { return m.Resp != nil && !streaming(m) }

// streamEndResults returns the names of the methods of it that answer
// with req only at the end of a client stream, when no method of it with
// a Send<M> stub answers one (nil otherwise): an <M>On stub taking req
// then gets its promise from no stub of the client, and its doc says to
// wrap a raw rpc.Promise.
func streamEndResults(it *schema.Interface, req *schema.Struct) []string {
	var ends []string
	for _, m := range it.Methods {
		switch {
		case m.Resp != req:
		case sendStub(m):
			return nil
		case !m.RespStream:
			ends = append(ends, m.Name)
		}
	}
	return ends
}

// onStub reports whether method m gets an <M>On stub: its request is one of
// results (pipelineResults) and it does not stream.
func onStub(m *schema.Method, results map[*schema.Struct]bool) bool {
	return m.Req != nil && results[m.Req] && !streaming(m)
}

// methodName writes <I>MethodName, which names a method of interface it by
// its ordinal: interceptors and observers see only the wire ordinal.
func (g *generator) methodName(it *schema.Interface) {
	i := GoName(it.Name)
	g.p("// %sMethodName returns the schema name of the method of interface %s", i, it.Name)
	if len(it.Methods) > 0 {
		m := it.Methods[0]
		g.p("// at ordinal (%q for %s%sOrdinal), or \"\" when it has none there:", m.Name, i, GoName(m.Name))
	} else {
		g.p("// at ordinal, or \"\" when it has none there (it has no methods):")
	}
	g.p("// for logs, metrics and interceptors, which see only an ordinal. The")
	g.p("// ordinal is the schema's, 1..n: subtract the mount base (rpc.At; 0")
	g.p("// without it) from the wire ordinal an rpc.Interceptor, an")
	g.p("// rpc.ClientInterceptor or a CallEvent gives. On a server,")
	g.p("// rpc.Server.MethodName(method) and rpc.MethodFrom(ctx) take the wire")
	g.p("// ordinal as it is and give the full name, \"/\" + %sServiceName +", i)
	g.p("// \"/\" + the method's name, as gRPC spells it; on a client, so do")
	g.p("// rpc.Client.MethodName(method) and the client's rpc.MethodNames, to")
	g.p("// which New%sClient adds the names.", i)
	g.p("func %sMethodName(ordinal uint32) string {", i)
	if len(it.Methods) > 0 {
		g.p("switch ordinal {")
		for _, m := range it.Methods {
			g.p("case %s%sOrdinal:", i, GoName(m.Name))
			g.p("return %q", m.Name)
		}
		g.p("}")
	}
	g.p("return \"\"")
	g.p("}\n")
}

// unimplemented writes Unimplemented<I>Server, which a server
// implementation embeds so that a method added to the schema does not
// break its build; each of its methods answers as a server without the
// method does (404 rpc.NoSuchMethod), so that rpc.IsNoSuchMethod reports
// it on the client as it reports a method the server lacks.
func (g *generator) unimplemented(it *schema.Interface) {
	i := GoName(it.Name)
	srv := i + "Server"
	u := "Unimplemented" + srv
	g.p("// %s implements %s with methods that each answer", u, srv)
	g.p("// status 404 with the text rpc.NoSuchMethod: as a server that has no")
	g.p("// handler for the method does, so that rpc.IsNoSuchMethod reports it on")
	g.p("// the client (and rpc/cluster takes it, as it takes a method a replica")
	g.p("// lacks, for the replica's fault). Embed it in an implementation")
	g.p("// (struct{ %s; ... }) so that it keeps building when the", u)
	g.p("// schema gains a method; the methods the implementation defines take")
	g.p("// the place of its own. Unlike a method the server lacks, the call")
	g.p("// reaches its handler: the server's interceptors run around it.")
	for _, m := range it.Methods {
		if streaming(m) {
			g.p("// A stream of a streaming method opens and then ends with that")
			g.p("// status, where a server without the stream method refuses the open")
			g.p("// with 404 \"no such stream method\" (rpc.IsNoSuchMethod reports")
			g.p("// both).")
			break
		}
	}
	g.p("type %s struct{}\n", u)
	g.p("var _ %s = %s{}\n", srv, u)
	for _, m := range it.Methods {
		mn := GoName(m.Name)
		g.p("// %s answers 404 rpc.NoSuchMethod: %s.%s is not implemented.", mn, it.Name, m.Name)
		g.p("func (%s) %s(%s) error {", u, mn, params(it, m, true))
		g.p("return &rpc.StatusError{Code: rpc.StatusNotFound, Message: rpc.NoSuchMethod}")
		g.p("}\n")
	}
}
