package ethzap

import (
	"encoding/binary"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
)

// Each generated operation is benchmarked beside the same work written by
// hand with package codec (the floor).

var benchSink uint64

func BenchmarkViewRequest(b *testing.B) {
	req := fixtureRequest()
	msg := req.AppendZAP(nil)
	b.Run("generated", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(msg)))
		for b.Loop() {
			v, err := ReadGetBalanceRequest(msg)
			if err != nil {
				b.Fatal(err)
			}
			benchSink += uint64(v.AccountBytes()[0]) + v.Block() + v.ID() + uint64(len(v.Method()))
		}
	})
	b.Run("handwritten", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(msg)))
		for b.Loop() {
			m, err := codec.Parse(msg)
			if err != nil {
				b.Fatal(err)
			}
			o := m.Root()
			benchSink += uint64(o.BytesFixed(0, 20)[0]) + o.Uint64(20) + o.Uint64(28) + uint64(len(o.Text(36)))
		}
	})
}

func BenchmarkAppendRequest(b *testing.B) {
	req := fixtureRequest()
	buf := make([]byte, 0, 256)
	b.Run("generated", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(req.SizeZAP()))
		for b.Loop() {
			buf = req.AppendZAP(buf[:0])
		}
	})
	b.Run("handwritten", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(req.SizeZAP()))
		var bl codec.Builder
		for b.Loop() {
			bl.Reset(buf[:0])
			o := bl.StartObject(44)
			o.SetBytesFixed(0, req.Account[:])
			o.SetUint64(20, req.Block)
			o.SetUint64(28, req.ID)
			o.SetText(36, req.Method)
			bl.SetRoot(o.Finish())
			buf = bl.Finish()
		}
	})
}

func BenchmarkAppendResponse(b *testing.B) {
	resp := GetBalanceResponse{Nonce: 7, ID: 1}
	for i := range resp.Balance {
		resp.Balance[i], resp.BlockHash[i] = byte(i+1), byte(0x40+i)
	}
	buf := make([]byte, 0, 256)
	b.Run("generated", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(resp.SizeZAP()))
		for b.Loop() {
			buf = resp.AppendZAP(buf[:0])
		}
	})
	b.Run("handwritten", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(resp.SizeZAP()))
		var bl codec.Builder
		for b.Loop() {
			bl.Reset(buf[:0])
			o := bl.StartObject(80)
			o.SetBytesFixed(0, resp.Balance[:])
			o.SetUint64(32, resp.Nonce)
			o.SetBytesFixed(40, resp.BlockHash[:])
			o.SetUint64(72, resp.ID)
			bl.SetRoot(o.Finish())
			buf = bl.Finish()
		}
	})
}

func BenchmarkDecodeRequest(b *testing.B) {
	req := fixtureRequest()
	msg := req.AppendZAP(nil)
	b.Run("generated", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(msg)))
		var d GetBalanceRequest
		for b.Loop() {
			if err := d.DecodeZAP(msg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("floor", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(msg)))
		var d GetBalanceRequest
		for b.Loop() {
			if !decodeRequestFloor(msg, &d) {
				b.Fatal("floor refused the message")
			}
		}
	})
	b.Run("handwritten", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(msg)))
		var d GetBalanceRequest
		for b.Loop() {
			m, err := codec.Parse(msg)
			if err != nil {
				b.Fatal(err)
			}
			o := m.Root()
			copy(d.Account[:], o.BytesFixed(0, 20))
			d.Block = o.Uint64(20)
			d.ID = o.Uint64(28)
			if p := o.Bytes(36); string(p) != d.Method {
				d.Method = string(p)
			}
		}
	})
}

// decodeRequestFloor is DecodeZAP of a GetBalanceRequest written by hand
// with encoding/binary: the checks a safe decoder cannot skip (the header,
// the root's fixed section inside the message, the text inside it), the
// loads, and the text copied only when it changed. It refuses what
// DecodeZAP would read field by field (a root running past the end).
func decodeRequestFloor(b []byte, d *GetBalanceRequest) bool {
	if len(b) < 16 {
		return false
	}
	le := binary.LittleEndian
	h, rs := le.Uint64(b), le.Uint64(b[8:])
	root, size := uint64(uint32(rs)), rs>>32
	if uint32(h) != 'Z'|'A'<<8|'P'<<16 || uint16(h>>32)-1 > 1 || size < 16 || size > uint64(len(b)) ||
		root < 16 || root+44 > size {
		return false
	}
	f := b[root : root+44 : root+44]
	d.Account = [20]byte(f[0:20])
	d.Block = le.Uint64(f[20:28])
	d.ID = le.Uint64(f[28:36])
	var p []byte
	if rel, n := uint64(le.Uint32(f[36:40])), uint64(le.Uint32(f[40:44])); rel != 0 && root+36+rel >= 16 && root+36+rel+n <= size {
		p = b[root+36+rel : root+36+rel+n]
	}
	if string(p) != d.Method {
		d.Method = string(p)
	}
	return true
}

// The floor decodes what DecodeZAP decodes.
func TestDecodeRequestFloor(t *testing.T) {
	req := fixtureRequest()
	msg := req.AppendZAP(nil)
	var got GetBalanceRequest
	if !decodeRequestFloor(msg, &got) || got != req {
		t.Fatalf("floor decoded %+v, want %+v", got, req)
	}
}

func BenchmarkDecodeResponse(b *testing.B) {
	resp := GetBalanceResponse{Nonce: 7, ID: 1}
	msg := resp.AppendZAP(nil)
	b.Run("generated", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(msg)))
		var d GetBalanceResponse
		for b.Loop() {
			if err := d.DecodeZAP(msg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("handwritten", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(msg)))
		var d GetBalanceResponse
		for b.Loop() {
			m, err := codec.Parse(msg)
			if err != nil {
				b.Fatal(err)
			}
			o := m.Root()
			copy(d.Balance[:], o.BytesFixed(0, 32))
			d.Nonce = o.Uint64(32)
			copy(d.BlockHash[:], o.BytesFixed(40, 32))
			d.ID = o.Uint64(72)
		}
	})
}

// BenchmarkTypedCall is one warm GetBalance over loopback TCP through the
// generated client and server stubs, beside the same call with raw bytes
// (rpc.Client.Call and a byte handler would be the floor; here the raw side
// reuses the generated server so only the client half differs).
func BenchmarkTypedCall(b *testing.B) {
	cli, raw := serve(b)
	ctx := b.Context()
	req := fixtureRequest()
	b.Run("generated", func(b *testing.B) {
		b.ReportAllocs()
		var resp GetBalanceResponse
		for b.Loop() {
			if err := cli.GetBalance(ctx, &req, &resp); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("handwritten", func(b *testing.B) {
		b.ReportAllocs()
		msg := req.AppendZAP(nil)
		var out []byte
		for b.Loop() {
			var err error
			out, err = raw.Call(ctx, EthGetBalanceOrdinal, msg, out[:0])
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}
