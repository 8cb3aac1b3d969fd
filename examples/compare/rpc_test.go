package compare

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestArmsSmoke runs every RPC arm for a moment: a handful of workers
// make calls, every answer is checked against the table (the floor's echo
// against what was sent) after a call given a poisoned answer, and a
// short load run must complete calls. No timing is asserted.
func TestArmsSmoke(t *testing.T) {
	f := NewFixture()
	for _, arm := range Arms() {
		t.Run(arm.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			s, err := arm.Start(f.Table)
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
			defer cl.Close()
			for i := range f.Requests {
				// A Call fills every field of the answer it is given,
				// whatever that held before (Load reuses one per worker).
				got := poisoned
				if err := cl.Call(ctx, &f.Requests[i], &got); err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
				if !arm.Echo && got != f.Responses[i] {
					t.Fatalf("call %d: answer %+v, want %+v", i, got, f.Responses[i])
				}
			}
			if !arm.Echo {
				bad := f.Requests[0]
				bad.Method = "eth_call"
				var got Response
				if err := cl.Call(ctx, &bad, &got); err == nil {
					t.Errorf("method %q answered: %+v", bad.Method, got)
				}
				// The connection still serves after the refused call.
				if err := cl.Call(ctx, &f.Requests[1], &got); err != nil || got != f.Responses[1] {
					t.Fatalf("after a refused call: %v %+v", err, got)
				}
			}
			r, err := Load(ctx, c, f, arm.Echo, LoadOptions{Workers: 4, Duration: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if r.Calls == 0 {
				t.Fatal("no calls completed")
			}
		})
	}
}

// TestCheckResponse: the answer check finds a wrong value in each field.
func TestCheckResponse(t *testing.T) {
	f := NewFixture()
	want := f.Responses[2]
	if err := checkResponse(&want, &f.Responses[2]); err != nil {
		t.Fatalf("the right answer: %v", err)
	}
	for field, edit := range map[string]func(r *Response){
		"balance":    func(r *Response) { r.Balance[31] ^= 1 },
		"nonce":      func(r *Response) { r.Nonce++ },
		"block hash": func(r *Response) { r.BlockHash[0] ^= 0x80 },
		"id":         func(r *Response) { r.ID = 0 },
	} {
		got := want
		edit(&got)
		if err := checkResponse(&got, &want); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s changed: %v", field, err)
		}
	}
}

// fakeClient is an arm's client side whose callers answer from a table,
// then spoil the answer with spoil (nil: a right answer). A gobLike one
// writes only the answer's non-zero fields into the value it is given.
type fakeClient struct {
	t       *Table
	spoil   func(resp *Response)
	gobLike bool
}

func (c fakeClient) NewCaller(context.Context) (Caller, error) { return c, nil }
func (fakeClient) Close() error                                { return nil }

func (c fakeClient) Call(_ context.Context, req *Request, resp *Response) error {
	var r Response
	if err := c.t.Answer(req, &r); err != nil {
		return err
	}
	if c.spoil != nil {
		c.spoil(&r)
	}
	if !c.gobLike {
		*resp = r
		return nil
	}
	if r.Balance != ([32]byte{}) {
		resp.Balance = r.Balance
	}
	if r.Nonce != 0 {
		resp.Nonce = r.Nonce
	}
	if r.BlockHash != ([32]byte{}) {
		resp.BlockHash = r.BlockHash
	}
	if r.ID != 0 {
		resp.ID = r.ID
	}
	return nil
}

// TestLoadChecksAnswers: Load fails on an answer wrong in any field, and
// on a field the arm leaves unset, not only on a wrong id.
func TestLoadChecksAnswers(t *testing.T) {
	f := NewFixture()
	ctx := context.Background()
	opt := LoadOptions{Workers: 2, Duration: 20 * time.Millisecond}
	if _, err := Load(ctx, fakeClient{t: f.Table}, f, false, opt); err != nil {
		t.Fatalf("right answers: %v", err)
	}
	cases := map[string]fakeClient{
		"a wrong balance":    {t: f.Table, spoil: func(r *Response) { r.Balance[0]++ }},
		"a wrong block hash": {t: f.Table, spoil: func(r *Response) { r.BlockHash[31]++ }},
		"a wrong nonce":      {t: f.Table, spoil: func(r *Response) { r.Nonce++ }},
		// Every 7th request is for an unknown account: balance and nonce
		// 0, which this caller does not write into the answer it is given.
		"zeros left unset": {t: f.Table, gobLike: true},
	}
	for name, c := range cases {
		if _, err := Load(ctx, c, f, false, opt); err == nil {
			t.Errorf("%s: Load passed", name)
		}
	}
}

// TestFastHTTPPipelined: the pipelined fasthttp arm carries every worker's
// calls over one connection (HTTP/1.1 pipelining, as the zapcodec rpc arm
// multiplexes one connection), where the other fasthttp arm opens one per
// worker.
func TestFastHTTPPipelined(t *testing.T) {
	f := NewFixture()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tc := range []struct {
		start func(*Table) (Server, error)
		conns func(workers, open int) bool
		want  string
	}{
		{startFastHTTPPipelined, func(_, open int) bool { return open == 1 }, "1"},
		{startFastHTTP, func(workers, open int) bool { return open > 1 && open <= workers }, "2 to 8"},
	} {
		s, err := tc.start(f.Table)
		if err != nil {
			t.Fatal(err)
		}
		c, err := s.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		const workers = 8
		if _, err := Load(ctx, c, f, false, LoadOptions{Workers: workers, Duration: 50 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		open := int(s.(*fasthttpServer).s.GetOpenConnectionsCount())
		if !tc.conns(workers, open) {
			t.Errorf("pipeline %v: %d workers used %d connections, want %s", s.(*fasthttpServer).pipeline, workers, open, tc.want)
		}
		c.Close()
		s.Close()
	}
}
