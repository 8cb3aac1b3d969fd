package compare

// The fasthttp arm: JSON-RPC 2.0 over HTTP/1.1 with github.com/valyala/fasthttp
// on both sides and goccy/go-json as the codec (the goccy arm of
// codec_json.go). The client is one fasthttp.HostClient whose connection
// pool grows to one connection per worker (HTTP/1.1 has one call in flight
// per connection).

import (
	"context"
	"fmt"
	"net"
	"sync"

	"github.com/valyala/fasthttp"
)

type fasthttpServer struct {
	l    net.Listener
	s    *fasthttp.Server
	addr string
}

func startFastHTTP(t *Table) (Server, error) {
	l, err := listen()
	if err != nil {
		return nil, err
	}
	type scratch struct {
		c   *jsonCodec
		buf []byte
	}
	pool := sync.Pool{New: func() any { return &scratch{c: newGoccyJSON(), buf: make([]byte, 0, 512)} }}
	h := func(ctx *fasthttp.RequestCtx) {
		if !ctx.IsPost() {
			ctx.Error("POST only", fasthttp.StatusMethodNotAllowed)
			return
		}
		sc := pool.Get().(*scratch)
		out, err := sc.c.Handle(sc.buf[:0], ctx.PostBody(), t)
		if err != nil {
			ctx.Error(err.Error(), fasthttp.StatusBadRequest)
		} else {
			ctx.SetContentType("application/json")
			ctx.SetBody(out)
		}
		sc.buf = out[:0]
		pool.Put(sc)
	}
	s := &fasthttp.Server{Handler: h, Name: "compare"}
	go s.Serve(l)
	return &fasthttpServer{l: l, s: s, addr: l.Addr().String()}, nil
}

func (f *fasthttpServer) Close() error { return f.s.Shutdown() }

type fasthttpClient struct {
	hc  *fasthttp.HostClient
	uri string
}

func (f *fasthttpServer) Connect(context.Context) (Client, error) {
	return &fasthttpClient{hc: &fasthttp.HostClient{Addr: f.addr, MaxConns: 1024}, uri: "http://" + f.addr + "/"}, nil
}

func (f *fasthttpClient) Close() error { f.hc.CloseIdleConnections(); return nil }

type fasthttpCaller struct {
	f    *fasthttpClient
	c    *jsonCodec
	req  *fasthttp.Request
	resp *fasthttp.Response
	buf  []byte
}

func (f *fasthttpClient) NewCaller(context.Context) (Caller, error) {
	return &fasthttpCaller{f: f, c: newGoccyJSON(), req: fasthttp.AcquireRequest(), resp: fasthttp.AcquireResponse()}, nil
}

func (c *fasthttpCaller) Close() error {
	fasthttp.ReleaseRequest(c.req)
	fasthttp.ReleaseResponse(c.resp)
	return nil
}

// Call posts one JSON-RPC request; the context is honoured through its
// deadline, as fasthttp takes no context.
func (c *fasthttpCaller) Call(ctx context.Context, req *Request, resp *Response) error {
	var err error
	c.buf, err = c.c.AppendRequest(c.buf[:0], req)
	if err != nil {
		return err
	}
	c.req.Reset()
	c.req.SetRequestURI(c.f.uri)
	c.req.Header.SetMethod(fasthttp.MethodPost)
	c.req.Header.SetContentType("application/json")
	c.req.SetBody(c.buf)
	if d, ok := ctx.Deadline(); ok {
		err = c.f.hc.DoDeadline(c.req, c.resp, d)
	} else {
		err = c.f.hc.Do(c.req, c.resp)
	}
	if err != nil {
		return err
	}
	if code := c.resp.StatusCode(); code != fasthttp.StatusOK {
		return fmt.Errorf("compare: HTTP %d: %s", code, c.resp.Body())
	}
	return c.c.DecodeResponse(c.resp.Body(), resp)
}
