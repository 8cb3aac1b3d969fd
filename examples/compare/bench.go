package compare

import (
	"bytes"
	"fmt"
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

// Check runs every operation of c on every record of f, as the
// benchmarks call them, and returns the first wrong result: decoding e's
// encodings (c's own, from f.Encode) into a poisoned record must give f's
// records field for field, encoding f's records must give e's bytes again,
// and the handler's answer to each request must decode to f's response.
// The benchmarks run it before their timing starts, so that a codec that
// does less than the job fails instead of posting a fast figure.
func (f *Fixture) Check(c Codec, e *Encoded) error {
	var buf []byte
	for i := range f.Requests {
		r := poisonedRequest
		if err := c.DecodeRequest(e.Requests[i], &r); err != nil {
			return checkErr("DecodeRequest", i, err)
		}
		if err := checkRequest(&r, &f.Requests[i]); err != nil {
			return checkErr("DecodeRequest", i, err)
		}
		if err := checkDecodeResponse(c, e.Responses[i], &f.Responses[i]); err != nil {
			return checkErr("DecodeResponse", i, err)
		}
		var err error
		if buf, err = c.AppendRequest(buf[:0], &f.Requests[i]); err != nil {
			return checkErr("EncodeRequest", i, err)
		}
		if err := checkBytes(buf, e.Requests[i]); err != nil {
			return checkErr("EncodeRequest", i, err)
		}
		if buf, err = c.AppendResponse(buf[:0], &f.Responses[i]); err != nil {
			return checkErr("EncodeResponse", i, err)
		}
		if err := checkBytes(buf, e.Responses[i]); err != nil {
			return checkErr("EncodeResponse", i, err)
		}
		if buf, err = c.Handle(buf[:0], e.Requests[i], f.Table); err != nil {
			return checkErr("Handler", i, err)
		}
		if err := checkDecodeResponse(c, buf, &f.Responses[i]); err != nil {
			return checkErr("Handler", i, err)
		}
	}
	return nil
}

// checkErr is the error of Check for operation op on record i.
func checkErr(op string, i int, err error) error {
	return fmt.Errorf("check of %s, record %d: %w", op, i, err)
}

// checkDecodeResponse decodes b with c into a poisoned response and
// compares it with want.
func checkDecodeResponse(c Codec, b []byte, want *Response) error {
	r := poisoned
	if err := c.DecodeResponse(b, &r); err != nil {
		return err
	}
	return checkResponse(&r, want)
}

// checkBytes returns an error when got and want differ.
func checkBytes(got, want []byte) error {
	if !bytes.Equal(got, want) {
		return fmt.Errorf("compare: encoded %x, want %x", got, want)
	}
	return nil
}

// prepare makes the codec and its encodings of f, and checks every
// operation's results (Check) before the timing starts.
func prepare(b *testing.B, m Maker, f *Fixture) (Codec, *Encoded) {
	c := m.New()
	e, err := f.Encode(c)
	if err != nil {
		b.Fatal(err)
	}
	if err := f.Check(c, e); err != nil {
		b.Fatalf("%s: %v", m.Name, err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	return c, e
}

// last is the ring index of the last of n iterations of a benchmark loop
// that started at index 0. After the loop (the timer stopped) each
// benchmark checks that iteration's result too, so that a codec that goes
// wrong only once warm fails as well.
func last(n int) int { return (n + ring - 1) % ring }

func benchDecodeRequest(m Maker, f *Fixture) func(b *testing.B) {
	return func(b *testing.B) {
		c, e := prepare(b, m, f)
		var r Request
		i := 0
		for ; b.Loop(); i++ {
			if err := c.DecodeRequest(e.Requests[i%ring], &r); err != nil {
				b.Fatal(err)
			}
		}
		if err := checkRequest(&r, &f.Requests[last(i)]); err != nil {
			b.Fatal(err)
		}
	}
}

func benchDecodeResponse(m Maker, f *Fixture) func(b *testing.B) {
	return func(b *testing.B) {
		c, e := prepare(b, m, f)
		var r Response
		i := 0
		for ; b.Loop(); i++ {
			if err := c.DecodeResponse(e.Responses[i%ring], &r); err != nil {
				b.Fatal(err)
			}
		}
		if err := checkResponse(&r, &f.Responses[last(i)]); err != nil {
			b.Fatal(err)
		}
	}
}

func benchEncodeRequest(m Maker, f *Fixture) func(b *testing.B) {
	return func(b *testing.B) {
		c, e := prepare(b, m, f)
		buf := make([]byte, 0, 512)
		var err error
		i := 0
		for ; b.Loop(); i++ {
			if buf, err = c.AppendRequest(buf[:0], &f.Requests[i%ring]); err != nil {
				b.Fatal(err)
			}
		}
		if err := checkBytes(buf, e.Requests[last(i)]); err != nil {
			b.Fatal(err)
		}
	}
}

func benchEncodeResponse(m Maker, f *Fixture) func(b *testing.B) {
	return func(b *testing.B) {
		c, e := prepare(b, m, f)
		buf := make([]byte, 0, 512)
		var err error
		i := 0
		for ; b.Loop(); i++ {
			if buf, err = c.AppendResponse(buf[:0], &f.Responses[i%ring]); err != nil {
				b.Fatal(err)
			}
		}
		if err := checkBytes(buf, e.Responses[last(i)]); err != nil {
			b.Fatal(err)
		}
	}
}

func benchHandler(m Maker, f *Fixture) func(b *testing.B) {
	return func(b *testing.B) {
		c, e := prepare(b, m, f)
		buf := make([]byte, 0, 512)
		var err error
		i := 0
		for ; b.Loop(); i++ {
			if buf, err = c.Handle(buf[:0], e.Requests[i%ring], f.Table); err != nil {
				b.Fatal(err)
			}
		}
		if err := checkDecodeResponse(c, buf, &f.Responses[last(i)]); err != nil {
			b.Fatal(err)
		}
	}
}
