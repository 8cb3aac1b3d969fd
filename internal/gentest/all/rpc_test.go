package all

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
	"github.com/zapcodec/zapcodec/rpc"
)

// service implements every method shape: request and result, request only,
// neither, result only.
type service struct{ pings, resets atomic.Int32 }

func (s *service) Get(ctx context.Context, req PairView, resp *Kitchen) error {
	resp.Title = req.B()
	resp.Tail = uint8(req.A())
	resp.Points = append(resp.Points, Point{X: int32(req.A())})
	return nil
}

func (s *service) Put(ctx context.Context, req PointView) error {
	if req.X() < 0 {
		return rpc.Errorf(rpc.StatusBadRequest, "negative x")
	}
	return nil
}

func (s *service) Ping(ctx context.Context) error { s.pings.Add(1); return nil }

func (s *service) Stats(ctx context.Context, out *Scalars) error {
	out.Count = uint32(s.pings.Load())
	return nil
}

func (s *service) Reset(ctx context.Context) error { s.resets.Add(1); return nil }

// Bump answers its request with Count+1 and Big*2.
func (s *service) Bump(ctx context.Context, in ScalarsView, out *Scalars) error {
	out.Count, out.Big = in.Count()+1, in.Big()*2
	return nil
}

// Typed promise pipelining: BumpOn sends Bump with the answer of Stats (or
// of an earlier Bump) as its request, before that answer comes back.
// serve serves srv on a loopback listener and returns a client dialed to
// it with opts; both close when the test ends. It skips the test when the
// machine has no loopback TCP.
func serve(t *testing.T, srv *rpc.Server, opts ...rpc.ClientOption) *rpc.Client {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback TCP: %v", err)
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	c, err := rpc.Dial(context.Background(), "tcp", l.Addr().String(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestRPCPipelining(t *testing.T) {
	srv := rpc.NewServer(rpc.WithPipelining(0))
	impl := &service{}
	RegisterServiceServer(srv, impl)
	c := serve(t, srv)
	cli := NewServiceClient(c)
	ctx := context.Background()
	impl.pings.Store(41)
	p, err := cli.SendStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var bumped Scalars
	if err := cli.BumpOn(ctx, p, &bumped); err != nil || bumped.Count != 42 {
		t.Fatalf("BumpOn(Stats): %+v %v, want Count 42", bumped, err)
	}
	// The typed promise decodes its answer, a Scalars.
	var st Scalars
	if err := p.Wait(ctx, &st); err != nil || st.Count != 41 {
		t.Fatalf("Stats' own answer: %+v %v", st, err)
	}
	if err := p.Wait(ctx, &st); err == nil {
		t.Fatal("a second Wait of one promise succeeded")
	}
	// A chain: Bump on Bump's answer.
	p2, err := cli.SendBump(ctx, &Scalars{Count: 1, Big: 5})
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.BumpOn(ctx, p2, &bumped); err != nil || bumped.Count != 3 || bumped.Big != 20 {
		t.Fatalf("BumpOn(Bump): %+v %v, want Count 3 Big 20", bumped, err)
	}
	p2.Release()
	// A Caller that cannot send without waiting.
	if _, err := NewServiceClient(callerOnly{c}).SendStats(ctx); err != rpc.ErrNoSender {
		t.Fatalf("SendStats through a plain Caller: %v", err)
	}
}

type callerOnly struct{ c rpc.Caller }

func (c callerOnly) Call(ctx context.Context, method uint32, req, resp []byte) ([]byte, error) {
	return c.c.Call(ctx, method, req, resp)
}

func TestRPCShapes(t *testing.T) {
	srv := rpc.NewServer()
	impl := &service{}
	RegisterServiceServer(srv, impl)
	c := serve(t, srv)
	cli := NewServiceClient(c)
	ctx := context.Background()

	if ServiceGetOrdinal != 1 || ServicePutOrdinal != 2 || ServicePingOrdinal != 3 || ServiceStatsOrdinal != 4 || ServiceResetOrdinal != 5 {
		t.Fatal("ordinals are not 1..5 in declaration order")
	}
	for i := range 3 {
		var k Kitchen
		if err := cli.Get(ctx, &Pair{A: 7, B: "seven"}, &k); err != nil {
			t.Fatal(err)
		}
		if k.Title != "seven" || k.Tail != 7 || len(k.Points) != 1 || k.Points[0].X != 7 {
			t.Fatalf("Get #%d: %+v (a pooled result leaked into the next call?)", i, k)
		}
	}
	if err := cli.Put(ctx, &Point{X: 1}); err != nil {
		t.Fatal(err)
	}
	var se *rpc.StatusError
	if err := cli.Put(ctx, &Point{X: -1}); !errors.As(err, &se) || se.Code != rpc.StatusBadRequest {
		t.Fatalf("Put(-1): %v", err)
	}
	for range 2 {
		if err := cli.Ping(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var st Scalars
	if err := cli.Stats(ctx, &st); err != nil || st.Count != 2 {
		t.Fatalf("Stats: %v %+v", err, st)
	}
	if err := cli.Reset(ctx); err != nil || impl.resets.Load() != 1 {
		t.Fatalf("Reset: %v", err)
	}
}

// Send<M> and <M>On call at the client's mount base, as the plain methods
// do: with rpc.At(100) on both sides, Stats is served at 104, and a Send
// that went to 4 (as generated clients once did) would be answered 404.
func TestRPCPipeliningAtBase(t *testing.T) {
	srv := rpc.NewServer(rpc.WithPipelining(0))
	impl := &service{}
	RegisterServiceServer(srv, impl, rpc.At(100))
	c := serve(t, srv)
	cli := NewServiceClient(c, rpc.At(100))
	ctx := context.Background()
	impl.pings.Store(6)
	p, err := cli.SendStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var bumped Scalars
	if err := cli.BumpOn(ctx, p, &bumped); err != nil || bumped.Count != 7 {
		t.Fatalf("BumpOn(SendStats) at base 100: %+v %v, want Count 7", bumped, err)
	}
	var st Scalars
	if err := p.Wait(ctx, &st); err != nil || st.Count != 6 {
		t.Fatalf("SendStats at base 100: %+v %v, want Count 6", st, err)
	}
}

// A client interceptor may answer with a slice of its own
// (rpc.ClientInterceptor): here a cache that answers every call after the
// first with the bytes it kept. The typed client must not take that
// memory for its pooled buffers: it used to keep the larger of request
// and answer for the next call, so the next request was encoded over the
// cached answer, and the cache then answered with the request's bytes.
func TestRPCInterceptorAnswerOfItsOwn(t *testing.T) {
	srv := rpc.NewServer()
	RegisterServiceServer(srv, &service{})
	var (
		mu    sync.Mutex
		cache []byte
	)
	caching := func(ctx context.Context, method uint32, req, resp []byte, invoke rpc.Invoker) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		if cache != nil {
			return cache, nil
		}
		out, err := invoke(ctx, method, req, resp)
		if err != nil {
			return out, err
		}
		cache = append([]byte(nil), out...)
		return cache, nil
	}
	c := serve(t, srv, rpc.WithClientInterceptors(caching))
	cli := NewServiceClient(c)
	// An answer larger than a pooled buffer's room.
	title := strings.Repeat("t", 2000)
	for i := range 10 {
		var k Kitchen
		if err := cli.Get(context.Background(), &Pair{A: 7, B: title}, &k); err != nil {
			t.Fatalf("Get #%d: %v", i, err)
		}
		if k.Title != title || k.Tail != 7 || len(k.Points) != 1 {
			t.Fatalf("Get #%d: Title %.10q... (%d bytes), Tail %d, %d points: the cached answer was overwritten", i, k.Title, len(k.Title), k.Tail, len(k.Points))
		}
	}
}

// failing serves Service with Get and Put failing with err, or panicking
// when err is nil.
type failing struct {
	service
	err error
}

func (f *failing) Get(ctx context.Context, req PairView, resp *Kitchen) error {
	resp.Title = "partial"
	if f.err == nil {
		panic("get failed")
	}
	return f.err
}

func (f *failing) Put(ctx context.Context, req PointView) error {
	if f.err == nil {
		panic("put failed")
	}
	return f.err
}

// A method's error reaches the typed client as the *rpc.StatusError the
// server docs promise, for a method with and without a result, and the
// result is left as it was. An error whose code is no error status (0,
// 200) answers 500 like a plain one: code 200 used to answer 200 with the
// error's text as the body, which the typed client read as a result (a
// decode error for Get, success for Put).
func TestRPCHandlerErrors(t *testing.T) {
	srv := rpc.NewServer(rpc.WithLogger(slog.New(slog.DiscardHandler)))
	impl := &failing{}
	RegisterServiceServer(srv, impl)
	c := serve(t, srv)
	cli := NewServiceClient(c)
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		err  error
		code uint32
		msg  string
	}{
		{"bad request", rpc.Errorf(rpc.StatusBadRequest, "bad"), 400, "bad"},
		{"unauthorized", rpc.Errorf(rpc.StatusUnauthorized, "who"), 401, "who"},
		{"forbidden", rpc.Errorf(rpc.StatusForbidden, "no"), 403, "no"},
		{"not found", rpc.Errorf(rpc.StatusNotFound, "no such account"), 404, "no such account"},
		{"unavailable", rpc.Errorf(rpc.StatusUnavailable, "later"), 503, "later"},
		{"custom", rpc.Errorf(599, "odd"), 599, "odd"},
		{"wrapped", fmt.Errorf("get: %w", rpc.Errorf(rpc.StatusForbidden, "inner")), 403, "get: inner"},
		{"internal", rpc.Errorf(rpc.StatusInternal, "broke"), 500, "broke"},
		{"plain", errors.New("disk full"), 500, "disk full"},
		{"code 0", rpc.Errorf(0, "zero"), 500, "rpc: status 0: zero"},
		{"code 200", rpc.Errorf(rpc.StatusOK, "fine?"), 500, "rpc: status 200: fine?"},
		{"panic", nil, 500, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			impl.err = tt.err
			k := Kitchen{Title: "before"}
			err := cli.Get(ctx, &Pair{A: 1}, &k)
			var se *rpc.StatusError
			if !errors.As(err, &se) || se.Code != tt.code || se.Message != tt.msg {
				t.Errorf("Get: %v (%T), want status %d %q", err, err, tt.code, tt.msg)
			}
			if k.Title != "before" {
				t.Errorf("Get's result after the error: %+v", k)
			}
			if rpc.IsRetryable(err) {
				t.Errorf("Get: a handler's error is retryable")
			}
			err = cli.Put(ctx, &Point{})
			if !errors.As(err, &se) || se.Code != tt.code || se.Message != tt.msg {
				t.Errorf("Put: %v (%T), want status %d %q", err, err, tt.code, tt.msg)
			}
		})
	}
}

// An answer that is not a valid result (a hostile or mismatched server)
// gives the typed client DecodeZAP's error, a *codec.FieldError and no
// *rpc.StatusError, as the method's doc says: the call ran, it is not a
// transport error to retry. The plain call and the pipelined one alike.
func TestRPCInvalidAnswer(t *testing.T) {
	srv := rpc.NewServer(rpc.WithPipelining(0))
	bad := func(ctx context.Context, req, out []byte) ([]byte, error) {
		return append(out, "not a ZAP message"...), nil
	}
	srv.Handle(ServiceStatsOrdinal, func(ctx context.Context, req, out []byte) ([]byte, error) {
		return (&Scalars{Count: 1}).AppendZAP(out), nil
	})
	srv.Handle(ServiceGetOrdinal, bad)
	srv.Handle(ServiceBumpOrdinal, bad)
	c := serve(t, srv)
	cli := NewServiceClient(c)
	ctx := context.Background()
	check := func(what string, err error) {
		t.Helper()
		var fe *codec.FieldError
		var se *rpc.StatusError
		if !errors.As(err, &fe) || errors.As(err, &se) || !errors.Is(err, codec.ErrMagic) {
			t.Errorf("%s: %v (%T), want a *codec.FieldError matching codec.ErrMagic", what, err, err)
		}
	}
	var k Kitchen
	check("Get", cli.Get(ctx, &Pair{}, &k))
	p, err := cli.SendStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	var s Scalars
	check("BumpOn", cli.BumpOn(ctx, p, &s))
}
