package compare

// The zapcodec rpc arm: package rpc of this repository, one multiplexed
// *rpc.Client that every worker shares, the handler of codec_zapcodec.go.

import (
	"context"
	"sync"

	"github.com/zapcodec/zapcodec/rpc"
)

// zapGetBalance is the method ordinal of getBalance (the first method of
// the Eth interface).
const zapGetBalance = 1

type zapServer struct {
	s    *rpc.Server
	addr string
}

func startZapRPC(t *Table) (Server, error) {
	l, err := listen()
	if err != nil {
		return nil, err
	}
	codecs := sync.Pool{New: func() any { return NewZapcodec() }}
	s := rpc.NewServer()
	s.Handle(zapGetBalance, func(_ context.Context, req, resp []byte) ([]byte, error) {
		z := codecs.Get().(*Zapcodec)
		out, err := z.Handle(resp, req, t)
		codecs.Put(z)
		return out, err
	})
	go s.Serve(l)
	return &zapServer{s: s, addr: l.Addr().String()}, nil
}

func (z *zapServer) Close() error { return z.s.Close() }

type zapClient struct{ c *rpc.Client }

func (z *zapServer) Connect(ctx context.Context) (Client, error) {
	c, err := rpc.Dial(ctx, "tcp", z.addr)
	if err != nil {
		return nil, err
	}
	return &zapClient{c: c}, nil
}

func (z *zapClient) Close() error { return z.c.Close() }

func (z *zapClient) NewCaller(context.Context) (Caller, error) {
	return &zapCaller{c: z.c, z: NewZapcodec(), req: make([]byte, 0, 256), resp: make([]byte, 0, 256)}, nil
}

type zapCaller struct {
	c         *rpc.Client
	z         *Zapcodec
	req, resp []byte
}

func (*zapCaller) Close() error { return nil }

func (c *zapCaller) Call(ctx context.Context, req *Request, resp *Response) error {
	var err error
	if c.req, err = c.z.AppendRequest(c.req[:0], req); err != nil {
		return err
	}
	if c.resp, err = c.c.Call(ctx, zapGetBalance, c.req, c.resp[:0]); err != nil {
		return err
	}
	return c.z.DecodeResponse(c.resp, resp)
}
