package compare

// The gRPC arms: google.golang.org/grpc with the generated Eth service
// (internal/pb, committed) over HTTP/2 on one ClientConn that every worker
// shares, default options but the codec, no TLS; the second arm's server
// also runs its handlers on GOMAXPROCS reused stream workers
// (grpc.NumStreamWorkers, which gRPC's doc says is most performant at the
// number of CPUs; without it each call's handler gets a new goroutine,
// whose stack may have to grow). The codec is vtCodec,
// vtprotobuf's generated marshalling under gRPC's CodecV2 (the same bytes
// as gRPC's default protobuf codec, made faster), forced on the server and
// on the client's calls rather than registered, so that it replaces the
// default for this arm only.

import (
	"context"
	"fmt"
	"runtime"

	"github.com/zapcodec/zapcodec/examples/compare/internal/pb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
)

// grpcCodec is the codec of the gRPC arm's server and client; a variable
// so that a test can check that the arm uses it.
var grpcCodec encoding.CodecV2 = vtCodec{}

// vtCodec is a gRPC CodecV2 over vtprotobuf's generated methods. It
// handles buffers as gRPC's default protobuf codec does (a new slice below
// gRPC's pooling threshold, a pooled buffer above it; the received bytes
// made one buffer), with SizeVT and MarshalToSizedBufferVT in place of
// proto.Size and proto.MarshalAppend and UnmarshalVT in place of
// proto.Unmarshal. UnmarshalVT copies what it keeps: gRPC reuses the
// received buffer once Unmarshal returns, so the zero-copy
// UnmarshalVTUnsafe would leave the message aliasing freed memory.
type vtCodec struct{}

// vtMessage is what vtprotobuf generates for a message.
type vtMessage interface {
	SizeVT() int
	MarshalToSizedBufferVT([]byte) (int, error)
	UnmarshalVT([]byte) error
}

// Name is the default codec's, "proto": the content-subtype on the wire
// does not change.
func (vtCodec) Name() string { return "proto" }

func (vtCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(vtMessage)
	if !ok {
		return nil, fmt.Errorf("vtCodec: %T has no vtprotobuf methods", v)
	}
	size := m.SizeVT()
	if mem.IsBelowBufferPoolingThreshold(size) {
		buf := make([]byte, size)
		if _, err := m.MarshalToSizedBufferVT(buf); err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(buf)}, nil
	}
	pool := mem.DefaultBufferPool()
	buf := pool.Get(size)
	if _, err := m.MarshalToSizedBufferVT((*buf)[:size]); err != nil {
		pool.Put(buf)
		return nil, err
	}
	return mem.BufferSlice{mem.NewBuffer(buf, pool)}, nil
}

func (vtCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(vtMessage)
	if !ok {
		return fmt.Errorf("vtCodec: %T has no vtprotobuf methods", v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	return m.UnmarshalVT(buf.ReadOnlyData())
}

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

func startGRPC(t *Table) (Server, error) { return startGRPCServer(t, false) }

func startGRPCWorkers(t *Table) (Server, error) { return startGRPCServer(t, true) }

func startGRPCServer(t *Table, workers bool) (Server, error) {
	l, err := listen()
	if err != nil {
		return nil, err
	}
	opts := []grpc.ServerOption{grpc.ForceServerCodecV2(grpcCodec)}
	if workers {
		opts = append(opts, grpc.NumStreamWorkers(uint32(runtime.GOMAXPROCS(0))))
	}
	s := grpc.NewServer(opts...)
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
	cc, err := grpc.NewClient(g.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(grpcCodec)))
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
