package compare

// The gRPC arm: google.golang.org/grpc with the generated Eth service
// (internal/pb, committed) over HTTP/2 on one ClientConn that every worker
// shares, default options, no TLS.

import (
	"context"
	"fmt"

	"github.com/zapcodec/zapcodec/examples/compare/internal/pb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

type grpcService struct {
	pb.UnimplementedEthServer
	t *Table
}

func (s *grpcService) GetBalance(_ context.Context, req *pb.GetBalanceRequest) (*pb.GetBalanceResponse, error) {
	a, h, err := pbLookup(req, s.t)
	if err != nil {
		return nil, err
	}
	// The bytes fields point into the read-only table; gRPC encodes them
	// after this returns.
	return &pb.GetBalanceResponse{Balance: a.Balance[:], Nonce: a.Nonce, BlockHash: h[:], Id: req.Id}, nil
}

type grpcServer struct {
	s    *grpc.Server
	addr string
}

func startGRPC(t *Table) (Server, error) {
	l, err := listen()
	if err != nil {
		return nil, err
	}
	s := grpc.NewServer()
	pb.RegisterEthServer(s, &grpcService{t: t})
	go s.Serve(l)
	return &grpcServer{s: s, addr: l.Addr().String()}, nil
}

func (g *grpcServer) Close() error { g.s.Stop(); return nil }

type grpcClient struct {
	cc *grpc.ClientConn
	c  pb.EthClient
}

func (g *grpcServer) Connect(ctx context.Context) (Client, error) {
	cc, err := grpc.NewClient(g.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	return &grpcClient{cc: cc, c: pb.NewEthClient(cc)}, nil
}

func (g *grpcClient) Close() error { return g.cc.Close() }

func (g *grpcClient) NewCaller(context.Context) (Caller, error) { return grpcCaller{g.c}, nil }

type grpcCaller struct{ c pb.EthClient }

func (g grpcCaller) Close() error { return nil }

func (g grpcCaller) Call(ctx context.Context, req *Request, resp *Response) error {
	out, err := g.c.GetBalance(ctx, &pb.GetBalanceRequest{
		Account: req.Account[:], Block: req.Block, Id: req.ID, Method: req.Method})
	if err != nil {
		return err
	}
	if len(out.Balance) != 32 || len(out.BlockHash) != 32 {
		return fmt.Errorf("%w: gRPC answer with %d/%d hash bytes", ErrMalformed, len(out.Balance), len(out.BlockHash))
	}
	copy(resp.Balance[:], out.Balance)
	copy(resp.BlockHash[:], out.BlockHash)
	resp.Nonce, resp.ID = out.Nonce, out.Id
	return nil
}
