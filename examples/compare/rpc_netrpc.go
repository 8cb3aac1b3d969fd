package compare

// The net/rpc arm: the standard library's net/rpc with its default gob
// codec, one multiplexed *rpc.Client that every worker shares.

import (
	"context"
	"net"
	"net/rpc"
)

// NetRPCService is the net/rpc receiver ("Eth.GetBalance"); exported
// because net/rpc registers exported types only.
type NetRPCService struct{ t *Table }

// GetBalance answers one call from the table.
func (s *NetRPCService) GetBalance(req *Request, resp *Response) error {
	return s.t.Answer(req, resp)
}

type netrpcServer struct {
	l net.Listener
}

func startNetRPC(t *Table) (Server, error) {
	s := rpc.NewServer()
	if err := s.RegisterName("Eth", &NetRPCService{t: t}); err != nil {
		return nil, err
	}
	l, err := listen()
	if err != nil {
		return nil, err
	}
	go func() { // s.Accept would log the close of l
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			go s.ServeConn(nc)
		}
	}()
	return &netrpcServer{l: l}, nil
}

// Close stops accepting; connections end when their clients close.
func (n *netrpcServer) Close() error { return n.l.Close() }

type netrpcClient struct{ c *rpc.Client }

func (n *netrpcServer) Connect(context.Context) (Client, error) {
	c, err := rpc.Dial("tcp", n.l.Addr().String())
	if err != nil {
		return nil, err
	}
	return &netrpcClient{c: c}, nil
}

func (n *netrpcClient) Close() error { return n.c.Close() }

func (n *netrpcClient) NewCaller(context.Context) (Caller, error) { return netrpcCaller{n.c}, nil }

type netrpcCaller struct{ c *rpc.Client }

func (netrpcCaller) Close() error { return nil }

// Call blocks in net/rpc's Call, which takes no context. It zeroes resp
// first: gob does not send a zero field (a nonce of 0, say) and decodes
// into the value it is given, so a reused answer would keep the last
// call's value where this answer has a zero.
func (n netrpcCaller) Call(_ context.Context, req *Request, resp *Response) error {
	*resp = Response{}
	return n.c.Call("Eth.GetBalance", req, resp)
}
