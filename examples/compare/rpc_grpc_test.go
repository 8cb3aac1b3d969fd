package compare

import (
	"bytes"
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/examples/compare/internal/pb"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// countingCodec counts the calls to the codec it wraps.
type countingCodec struct {
	vtCodec
	marshals, unmarshals atomic.Int64
}

func (c *countingCodec) Marshal(v any) (mem.BufferSlice, error) {
	c.marshals.Add(1)
	return c.vtCodec.Marshal(v)
}

func (c *countingCodec) Unmarshal(data mem.BufferSlice, v any) error {
	c.unmarshals.Add(1)
	return c.vtCodec.Unmarshal(data, v)
}

// TestGRPCUsesVTCodec: the gRPC arms' servers and clients both encode and
// decode with grpcCodec (vtprotobuf's methods), not gRPC's default
// protobuf codec: each call marshals twice (the request at the client, the
// answer at the server) and unmarshals twice.
func TestGRPCUsesVTCodec(t *testing.T) {
	for _, start := range []func(*Table) (Server, error){startGRPC, startGRPCWorkers} {
		grpcUsesVTCodec(t, start)
	}
}

func grpcUsesVTCodec(t *testing.T, start func(*Table) (Server, error)) {
	cc := &countingCodec{}
	old := grpcCodec
	defer func() { grpcCodec = old }()
	grpcCodec = cc
	f := NewFixture()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := start(f.Table)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := s.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := c.NewCaller(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const calls = 3
	for i := range calls {
		var got Response
		if err := cl.Call(ctx, &f.Requests[i], &got); err != nil || got != f.Responses[i] {
			t.Fatalf("call %d: %+v, %v", i, got, err)
		}
	}
	if m, u := cc.marshals.Load(), cc.unmarshals.Load(); m != 2*calls || u != 2*calls {
		t.Fatalf("%d calls: the arm's codec marshalled %d times and unmarshalled %d, want %d each", calls, m, u, 2*calls)
	}
}

// TestVTCodec: vtCodec writes the bytes proto.Marshal does and reads them
// back, for a message below gRPC's pooling threshold and one above it, and
// refuses a value without vtprotobuf methods.
func TestVTCodec(t *testing.T) {
	f := NewFixture()
	r := f.Requests[0]
	for _, method := range []string{r.Method, strings.Repeat("m", 4000)} {
		in := &pb.GetBalanceRequest{Account: r.Account[:], Block: r.Block, Id: r.ID, Method: method}
		want, err := proto.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		data, err := vtCodec{}.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := data.Materialize(); !bytes.Equal(got, want) {
			t.Fatalf("%d-byte method: vtCodec wrote\n%x\nproto.Marshal\n%x", len(method), got, want)
		}
		var out pb.GetBalanceRequest
		err = vtCodec{}.Unmarshal(data, &out)
		data.Free()
		if err != nil || !proto.Equal(&out, in) {
			t.Fatalf("%d-byte method: read back %v, %v", len(method), &out, err)
		}
	}
	if _, err := (vtCodec{}).Marshal("not a message"); err == nil {
		t.Error("Marshal of a string: no error")
	}
	if err := (vtCodec{}).Unmarshal(mem.BufferSlice{mem.SliceBuffer{1}}, new(int)); err == nil {
		t.Error("Unmarshal into an *int: no error")
	}
}
