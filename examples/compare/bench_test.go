package compare

import (
	"flag"
	"strings"
	"testing"
)

// BenchmarkCodec runs every codec operation on every codec:
//
//	go test -run '^$' -bench Codec -benchtime 200ms
func BenchmarkCodec(b *testing.B) {
	f := NewFixture()
	for _, op := range Ops {
		b.Run(op.Name, func(b *testing.B) {
			for _, m := range Codecs() {
				b.Run(benchName(m.Name), op.Run(m, f))
			}
		})
	}
}

// benchName keeps sub-benchmark names free of '/' and spaces.
func benchName(s string) string {
	return strings.NewReplacer("/", "_", " ", "_", "(", "", ")", "").Replace(s)
}

// TestCheckRequest: the request check finds a wrong value in each field.
func TestCheckRequest(t *testing.T) {
	f := NewFixture()
	want := f.Requests[2]
	if err := checkRequest(&want, &f.Requests[2]); err != nil {
		t.Fatalf("the right request: %v", err)
	}
	for field, edit := range map[string]func(r *Request){
		"account": func(r *Request) { r.Account[19] ^= 1 },
		"block":   func(r *Request) { r.Block++ },
		"id":      func(r *Request) { r.ID = 0 },
		"method":  func(r *Request) { r.Method = r.Method[:len(r.Method)-1] },
	} {
		got := want
		edit(&got)
		if err := checkRequest(&got, &want); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s changed: %v", field, err)
		}
	}
	if err := checkBytes([]byte{1, 2}, []byte{1, 2, 3}); err == nil {
		t.Error("checkBytes: a short encoding passed")
	}
}

// spoiled wraps a codec and spoils the results of operation op (an Ops
// name) once the wrapper has made more than after calls in all.
type spoiled struct {
	Codec
	op           string
	after, calls int
}

func (s *spoiled) spoil(op string) bool {
	s.calls++
	return op == s.op && s.calls > s.after
}

func (s *spoiled) DecodeRequest(b []byte, r *Request) error {
	err := s.Codec.DecodeRequest(b, r)
	if s.spoil("DecodeRequest") {
		r.ID++
	}
	return err
}

func (s *spoiled) DecodeResponse(b []byte, r *Response) error {
	err := s.Codec.DecodeResponse(b, r)
	if s.spoil("DecodeResponse") {
		r.Nonce++
	}
	return err
}

func (s *spoiled) AppendRequest(dst []byte, r *Request) ([]byte, error) {
	out, err := s.Codec.AppendRequest(dst, r)
	if s.spoil("EncodeRequest") {
		out = out[:len(out)-1]
	}
	return out, err
}

func (s *spoiled) AppendResponse(dst []byte, r *Response) ([]byte, error) {
	out, err := s.Codec.AppendResponse(dst, r)
	if s.spoil("EncodeResponse") {
		out[len(out)-1] ^= 1
	}
	return out, err
}

// Handle, spoiled, answers with the nonce one too high.
func (s *spoiled) Handle(dst, req []byte, t *Table) ([]byte, error) {
	out, err := s.Codec.Handle(dst, req, t)
	if !s.spoil("Handler") || err != nil {
		return out, err
	}
	var r Response
	if err := s.Codec.DecodeResponse(out[len(dst):], &r); err != nil {
		return out, err
	}
	r.Nonce++
	return s.Codec.AppendResponse(dst, &r)
}

func spoiledMaker(op string, after int) Maker {
	return Maker{"spoiled zapcodec", func() Codec { return &spoiled{Codec: NewZapcodec(), op: op, after: after} }}
}

// TestFixtureCheck: every codec passes the check the benchmarks run
// before timing, and a codec with any one operation wrong fails it.
func TestFixtureCheck(t *testing.T) {
	f := NewFixture()
	for _, m := range Codecs() {
		c := m.New()
		e, err := f.Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Check(c, e); err != nil {
			t.Errorf("%s: %v", m.Name, err)
		}
	}
	for _, op := range Ops {
		// Spoiled after f.Encode's calls, so that its encodings are right.
		c := spoiledMaker(op.Name, 2*ring).New()
		e, err := f.Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Check(c, e); err == nil || !strings.Contains(err.Error(), op.Name) {
			t.Errorf("%s spoiled: %v", op.Name, err)
		}
	}
}

// TestBenchmarksCheckResults runs each codec benchmark for 2000
// iterations (-benchtime 2000x, no timing read) on a codec whose results
// for that operation are wrong from the start, and on one whose results
// go wrong after its first 1000 calls (after the check before the
// timing): both benchmarks must fail, where a right codec's passes.
func TestBenchmarksCheckResults(t *testing.T) {
	bt := flag.Lookup("test.benchtime")
	old := bt.Value.String()
	if err := bt.Value.Set("2000x"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bt.Value.Set(old) })
	f := NewFixture()
	for _, op := range Ops {
		if r := testing.Benchmark(op.Run(spoiledMaker(op.Name, 1<<30), f)); r.N == 0 {
			t.Errorf("%s: the benchmark failed on right results", op.Name)
		}
		if r := testing.Benchmark(op.Run(spoiledMaker(op.Name, 0), f)); r.N != 0 {
			t.Errorf("%s: wrong from the start, the benchmark passed (%d iterations)", op.Name, r.N)
		}
		if r := testing.Benchmark(op.Run(spoiledMaker(op.Name, 1000), f)); r.N != 0 {
			t.Errorf("%s: wrong once warm, the benchmark passed (%d iterations)", op.Name, r.N)
		}
	}
}
