package compare

import (
	"testing"
)

// Fixture is the data every benchmark and test shares: a table and a ring
// of requests with their answers.
type Fixture struct {
	Table     *Table
	Requests  []Request
	Responses []Response
}

// ring is the number of distinct records a benchmark cycles through.
const ring = 16

// NewFixture builds the shared table (1024 accounts) and request ring.
func NewFixture() *Fixture {
	t := NewTable(1024)
	f := &Fixture{Table: t, Requests: t.Requests(ring), Responses: make([]Response, ring)}
	for i := range f.Requests {
		if err := t.Answer(&f.Requests[i], &f.Responses[i]); err != nil {
			panic(err)
		}
	}
	return f
}

// Encoded holds a codec's encodings of the fixture's records.
type Encoded struct {
	Requests, Responses [][]byte
}

// Encode encodes every record of f with c.
func (f *Fixture) Encode(c Codec) (*Encoded, error) {
	e := &Encoded{}
	for i := range f.Requests {
		b, err := c.AppendRequest(nil, &f.Requests[i])
		if err != nil {
			return nil, err
		}
		e.Requests = append(e.Requests, b)
		b, err = c.AppendResponse(nil, &f.Responses[i])
		if err != nil {
			return nil, err
		}
		e.Responses = append(e.Responses, b)
	}
	return e, nil
}

// MeanSize is the mean length of bs, rounded to the nearest byte.
func MeanSize(bs [][]byte) int {
	n := 0
	for _, b := range bs {
		n += len(b)
	}
	return (n + len(bs)/2) / len(bs)
}

// Op is one benchmarked codec operation.
type Op struct {
	Name string
	Run  func(m Maker, f *Fixture) func(b *testing.B)
}

// Ops lists the codec operations, in table order.
var Ops = []Op{
	{"DecodeRequest", benchDecodeRequest},
	{"EncodeResponse", benchEncodeResponse},
	{"Handler", benchHandler},
	{"EncodeRequest", benchEncodeRequest},
	{"DecodeResponse", benchDecodeResponse},
}

func prepare(b *testing.B, m Maker, f *Fixture) (Codec, *Encoded) {
	c := m.New()
	e, err := f.Encode(c)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	return c, e
}

func benchDecodeRequest(m Maker, f *Fixture) func(b *testing.B) {
	return func(b *testing.B) {
		c, e := prepare(b, m, f)
		var r Request
		for i := 0; b.Loop(); i++ {
			if err := c.DecodeRequest(e.Requests[i%ring], &r); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func benchDecodeResponse(m Maker, f *Fixture) func(b *testing.B) {
	return func(b *testing.B) {
		c, e := prepare(b, m, f)
		var r Response
		for i := 0; b.Loop(); i++ {
			if err := c.DecodeResponse(e.Responses[i%ring], &r); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func benchEncodeRequest(m Maker, f *Fixture) func(b *testing.B) {
	return func(b *testing.B) {
		c, _ := prepare(b, m, f)
		buf := make([]byte, 0, 512)
		var err error
		for i := 0; b.Loop(); i++ {
			if buf, err = c.AppendRequest(buf[:0], &f.Requests[i%ring]); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func benchEncodeResponse(m Maker, f *Fixture) func(b *testing.B) {
	return func(b *testing.B) {
		c, _ := prepare(b, m, f)
		buf := make([]byte, 0, 512)
		var err error
		for i := 0; b.Loop(); i++ {
			if buf, err = c.AppendResponse(buf[:0], &f.Responses[i%ring]); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func benchHandler(m Maker, f *Fixture) func(b *testing.B) {
	return func(b *testing.B) {
		c, e := prepare(b, m, f)
		buf := make([]byte, 0, 512)
		var err error
		for i := 0; b.Loop(); i++ {
			if buf, err = c.Handle(buf[:0], e.Requests[i%ring], f.Table); err != nil {
				b.Fatal(err)
			}
		}
	}
}
