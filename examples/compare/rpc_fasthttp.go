package compare

// The fasthttp arms: JSON-RPC 2.0 over HTTP/1.1 with github.com/valyala/fasthttp
// on both sides and goccy/go-json as the codec (the goccy arm of
// codec_json.go), with either of fasthttp's two clients:
//   - a fasthttp.HostClient, whose connection pool grows to one connection
//     per worker (HTTP/1.1 without pipelining has one call in flight per
//     connection);
//   - a fasthttp.PipelineClient on one connection that every worker
//     shares: HTTP/1.1 pipelining, requests written by one writer goroutine
//     that flushes when no further request is queued, answers matched in
//     order, as the zapcodec rpc arm multiplexes its workers over one
//     connection and batches its writes. The server (the same for both)
//     reads pipelined requests and flushes when no further request is
//     buffered.

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

type fasthttpServer struct {
	l        net.Listener
	s        *fasthttp.Server
	addr     string
	pipeline bool // Connect returns the pipelining client
}

func startFastHTTP(t *Table) (Server, error) { return startFastHTTPServer(t, false) }

func startFastHTTPPipelined(t *Table) (Server, error) { return startFastHTTPServer(t, true) }

func startFastHTTPServer(t *Table, pipeline bool) (Server, error) {
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
	return &fasthttpServer{l: l, s: s, addr: l.Addr().String(), pipeline: pipeline}, nil
}

func (f *fasthttpServer) Close() error { return f.s.Shutdown() }

// fasthttpDoer is what the arms use of fasthttp.HostClient and
// fasthttp.PipelineClient.
type fasthttpDoer interface {
	Do(req *fasthttp.Request, resp *fasthttp.Response) error
	DoDeadline(req *fasthttp.Request, resp *fasthttp.Response, deadline time.Time) error
}

type fasthttpClient struct {
	hc  fasthttpDoer
	uri string
}

func (f *fasthttpServer) Connect(context.Context) (Client, error) {
	var hc fasthttpDoer = &fasthttp.HostClient{Addr: f.addr, MaxConns: 1024}
	if f.pipeline {
		// One connection (MaxConns 0 is 1), every request sent at once
		// (MaxBatchDelay 0), up to 1024 pending: the defaults.
		hc = &fasthttp.PipelineClient{Addr: f.addr, Logger: quietLogger{}}
	}
	return &fasthttpClient{hc: hc, uri: "http://" + f.addr + "/"}, nil
}

// quietLogger drops fasthttp's log lines: the pipelining client logs the
// end of its connection when the server closes it at the end of a run.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// Close closes the HostClient's idle connections; the PipelineClient has
// no Close: its connection ends when the server closes it.
func (f *fasthttpClient) Close() error {
	if hc, ok := f.hc.(*fasthttp.HostClient); ok {
		hc.CloseIdleConnections()
	}
	return nil
}

type fasthttpCaller struct {
	f    *fasthttpClient
	c    *jsonCodec
	req  *fasthttp.Request
	resp *fasthttp.Response
	buf  []byte
}

// NewCaller makes a caller whose request, its URI, method and content
// type set once, each call reuses with a new body.
func (f *fasthttpClient) NewCaller(context.Context) (Caller, error) {
	req := fasthttp.AcquireRequest()
	req.SetRequestURI(f.uri)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	return &fasthttpCaller{f: f, c: newGoccyJSON(), req: req, resp: fasthttp.AcquireResponse()}, nil
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
