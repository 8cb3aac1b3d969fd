package codec_test

import (
	"encoding/binary"
	"strconv"
	"testing"
	"unsafe"

	"github.com/zapcodec/zapcodec/codec"
)

// The eth layout of schemas/eth.zap (testdata/canonical), as the canonical compiler
// assigned it (fixtures/generated.json offsets).
const (
	reqAccount, reqBlock, reqID, reqMethod, reqSize         = 0, 20, 28, 36, 44
	respBalance, respNonce, respBlockHash, respID, respSize = 0, 32, 40, 72, 80
	benchMethod                                             = "eth_getBalance"
)

var (
	benchAccount = [20]byte{0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf, 0xb0, 0xb1, 0xb2, 0xb3}
	benchHash    = [32]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32}
)

func buildRequest(b *codec.Builder, dst []byte) []byte {
	b.Reset(dst)
	o := b.StartObject(reqSize)
	o.SetBytesFixed(reqAccount, benchAccount[:])
	o.SetUint64(reqBlock, 19_000_000)
	o.SetUint64(reqID, 1)
	o.SetText(reqMethod, benchMethod)
	b.SetRoot(o.Finish())
	return b.Finish()
}

func buildResponse(b *codec.Builder, dst []byte) []byte {
	b.Reset(dst)
	o := b.StartObject(respSize)
	o.SetBytesFixed(respBalance, benchHash[:])
	o.SetUint64(respNonce, 7)
	o.SetBytesFixed(respBlockHash, benchHash[:])
	o.SetUint64(respID, 1)
	b.SetRoot(o.Finish())
	return b.Finish()
}

// handRequest appends the same bytes as buildRequest, written out by hand:
// the floor for the builder.
func handRequest(dst []byte) []byte {
	const fixed = codec.HeaderSize + reqSize // 60: the text tail follows at once
	dst = append(dst, "ZAP\x00\x01\x00\x00\x00\x10\x00\x00\x00"...)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(fixed+len(benchMethod)))
	dst = append(dst, benchAccount[:]...)
	dst = binary.LittleEndian.AppendUint64(dst, 19_000_000)
	dst = binary.LittleEndian.AppendUint64(dst, 1)
	dst = binary.LittleEndian.AppendUint32(dst, fixed-(codec.HeaderSize+reqMethod))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(benchMethod)))
	return append(dst, benchMethod...)
}

func handResponse(dst []byte) []byte {
	dst = append(dst, "ZAP\x00\x01\x00\x00\x00\x10\x00\x00\x00"...)
	dst = binary.LittleEndian.AppendUint32(dst, codec.HeaderSize+respSize)
	dst = append(dst, benchHash[:]...)
	dst = binary.LittleEndian.AppendUint64(dst, 7)
	dst = append(dst, benchHash[:]...)
	return binary.LittleEndian.AppendUint64(dst, 1)
}

func TestHandFloorsMatchBuilder(t *testing.T) {
	t.Parallel()
	var b codec.Builder
	if got, want := string(buildRequest(&b, nil)), string(handRequest(nil)); got != want {
		t.Fatalf("request floor differs:\n%x\n%x", got, want)
	}
	if got, want := string(buildResponse(&b, nil)), string(handResponse(nil)); got != want {
		t.Fatalf("response floor differs:\n%x\n%x", got, want)
	}
}

func BenchmarkBuildRequest(b *testing.B) {
	var bld codec.Builder
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = buildRequest(&bld, buf[:0])
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkBuildRequestFloor(b *testing.B) {
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = handRequest(buf[:0])
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkBuildResponse(b *testing.B) {
	var bld codec.Builder
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = buildResponse(&bld, buf[:0])
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkBuildResponseFloor(b *testing.B) {
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = handResponse(buf[:0])
	}
	b.SetBytes(int64(len(buf)))
}

type request struct {
	account   []byte
	block, id uint64
	method    string
}

var (
	reqSink request
	sink    uint64
)

func BenchmarkReadRequest(b *testing.B) {
	msg := handRequest(nil)
	b.ReportAllocs()
	for b.Loop() {
		m, err := codec.Parse(msg)
		if err != nil {
			b.Fatal(err)
		}
		o := m.Root()
		reqSink = request{o.BytesFixed(reqAccount, 20), o.Uint64(reqBlock), o.Uint64(reqID), o.Text(reqMethod)}
	}
}

// handRead is the floor for BenchmarkReadRequest: the same checks (header,
// bounds of every field) written with encoding/binary.
func handRead(msg []byte) (request, bool) {
	if len(msg) < 16 || string(msg[:4]) != "ZAP\x00" {
		return request{}, false
	}
	if v := binary.LittleEndian.Uint16(msg[4:]); v != 1 && v != 2 {
		return request{}, false
	}
	size := binary.LittleEndian.Uint32(msg[12:])
	if size < 16 || int(size) > len(msg) {
		return request{}, false
	}
	msg = msg[:size]
	root := int(binary.LittleEndian.Uint32(msg[8:]))
	if root < 16 || root+reqSize > len(msg) {
		return request{}, false
	}
	o := msg[root : root+reqSize]
	r := request{account: o[:20], block: binary.LittleEndian.Uint64(o[20:]), id: binary.LittleEndian.Uint64(o[28:])}
	slot := root + reqMethod
	rel := int(binary.LittleEndian.Uint32(o[36:]))
	n := int(binary.LittleEndian.Uint32(o[40:]))
	if rel != 0 && n > 0 && slot+rel+n <= len(msg) {
		r.method = unsafe.String(&msg[slot+rel], n)
	}
	return r, true
}

func BenchmarkReadRequestFloor(b *testing.B) {
	msg := handRequest(nil)
	if r, ok := handRead(msg); !ok || r.method != benchMethod {
		b.Fatal("floor reader is wrong")
	}
	b.ReportAllocs()
	for b.Loop() {
		reqSink, _ = handRead(msg)
	}
}

var text1K = string(make([]byte, 1024))

func BenchmarkBuildText1K(b *testing.B) {
	var bld codec.Builder
	buf := make([]byte, 0, 2048)
	b.ReportAllocs()
	b.SetBytes(1024)
	for b.Loop() {
		bld.Reset(buf[:0])
		o := bld.StartObject(8)
		o.SetText(0, text1K)
		bld.SetRoot(o.Finish())
		buf = bld.Finish()
	}
}

func BenchmarkBuildText1KFloor(b *testing.B) {
	buf := make([]byte, 0, 2048)
	b.ReportAllocs()
	b.SetBytes(1024)
	for b.Loop() {
		buf = append(buf[:0], "ZAP\x00\x01\x00\x00\x00\x10\x00\x00\x00"...)
		buf = binary.LittleEndian.AppendUint32(buf, 24+1024)
		buf = binary.LittleEndian.AppendUint32(buf, 8)
		buf = binary.LittleEndian.AppendUint32(buf, 1024)
		buf = append(buf, text1K...)
	}
}

var strSink string

func BenchmarkReadText1K(b *testing.B) {
	var bld codec.Builder
	bld.Reset(nil)
	o := bld.StartObject(8)
	o.SetText(0, text1K)
	bld.SetRoot(o.Finish())
	msg := bld.Finish()
	b.ReportAllocs()
	b.SetBytes(1024)
	for b.Loop() {
		m, _ := codec.Parse(msg)
		strSink = m.Root().Text(0)
	}
}

// varList100 is a message whose root holds a variable-element list of 100
// small messages, each {u32 @0, text @8}.
func varList100() []byte {
	var elem, bld codec.Builder
	bld.Reset(nil)
	o := bld.StartObject(8)
	l := bld.StartList(0)
	for i := range 100 {
		buf := l.BeginElement()
		elem.Reset(buf)
		e := elem.StartObject(16)
		e.SetUint32(0, uint32(i))
		e.SetText(8, "element")
		elem.SetRoot(e.Finish())
		l.EndElement(elem.Finish())
	}
	o.SetList(0, l.Finish())
	bld.SetRoot(o.Finish())
	return bld.Finish()
}

func BenchmarkWalkVarList100(b *testing.B) {
	msg := varList100()
	b.ReportAllocs()
	for b.Loop() {
		m, _ := codec.Parse(msg)
		var sum uint64
		for it := m.Root().List(0).Iter(); it.Next(); {
			e := it.Object()
			sum += uint64(e.Uint32(0)) + uint64(len(e.Text(8)))
		}
		sink = sum
	}
}

// BenchmarkWalkVarList100Floor walks the same bytes by hand: element sizes,
// each element's header and root, the u32 and the text slot.
func BenchmarkWalkVarList100Floor(b *testing.B) {
	msg := varList100()
	b.ReportAllocs()
	for b.Loop() {
		root := int(binary.LittleEndian.Uint32(msg[8:]))
		slot := root
		p := slot + int(int32(binary.LittleEndian.Uint32(msg[slot:])))
		n := int(binary.LittleEndian.Uint32(msg[slot+4:]))
		var sum uint64
		for range n {
			size := int(binary.LittleEndian.Uint32(msg[p:]))
			e := msg[p+4 : p+4+size]
			if string(e[:4]) != "ZAP\x00" || int(binary.LittleEndian.Uint32(e[12:])) > len(e) {
				b.Fatal("bad element")
			}
			r := int(binary.LittleEndian.Uint32(e[8:]))
			sum += uint64(binary.LittleEndian.Uint32(e[r:]))
			sum += uint64(binary.LittleEndian.Uint32(e[r+12:]))
			p += 4 + size
		}
		sink = sum
	}
}

// flatRequest appends the request with AppendFlat, the path generated
// records without nesting or lists take.
func flatRequest(dst []byte) []byte {
	dst, o := codec.AppendFlat(dst, reqSize, len(benchMethod))
	copy(dst[o+reqAccount:], benchAccount[:])
	binary.LittleEndian.PutUint64(dst[o+reqBlock:], 19_000_000)
	binary.LittleEndian.PutUint64(dst[o+reqID:], 1)
	return codec.AppendTail(dst, o+reqMethod, benchMethod)
}

func TestFlatRequestMatchesFloor(t *testing.T) {
	t.Parallel()
	if got, want := string(flatRequest(nil)), string(handRequest(nil)); got != want {
		t.Fatalf("AppendFlat request differs:\n%x\n%x", got, want)
	}
}

func BenchmarkAppendFlatRequest(b *testing.B) {
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = flatRequest(buf[:0])
	}
	b.SetBytes(int64(len(buf)))
}

// sparseTexts are the values of a record of 16 text fields, every other one
// empty: the empty sets are the ones the set-twice rule (docs/wire.md §3) makes
// the Builder look at.
var sparseTexts = func() (v [16]string) {
	for i := 1; i < len(v); i += 2 {
		v[i] = "value"
	}
	return v
}()

func buildSparseTexts(b *codec.Builder, dst []byte) []byte {
	b.Reset(dst)
	o := b.StartObject(8 * len(sparseTexts))
	for i, v := range sparseTexts {
		o.SetText(8*i, v)
	}
	b.SetRoot(o.Finish())
	return b.Finish()
}

// handSparseTexts appends the same bytes by hand: the floor.
func handSparseTexts(dst []byte) []byte {
	base := len(dst)
	dst = append(dst, "ZAP\x00\x01\x00\x00\x00\x10\x00\x00\x00\x00\x00\x00\x00"...)
	dst = append(dst, make([]byte, 8*len(sparseTexts))...)
	for i, v := range sparseTexts {
		if v != "" {
			slot := base + codec.HeaderSize + 8*i
			binary.LittleEndian.PutUint64(dst[slot:], uint64(len(dst)-slot)|uint64(len(v))<<32)
			dst = append(dst, v...)
		}
	}
	binary.LittleEndian.PutUint32(dst[base+12:], uint32(len(dst)-base))
	return dst
}

func TestSparseTextsFloorMatchesBuilder(t *testing.T) {
	t.Parallel()
	var b codec.Builder
	if got, want := string(buildSparseTexts(&b, nil)), string(handSparseTexts(nil)); got != want {
		t.Fatalf("floor differs:\n%x\n%x", got, want)
	}
}

func BenchmarkBuildSparseTexts(b *testing.B) {
	var bld codec.Builder
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		buf = buildSparseTexts(&bld, buf[:0])
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkBuildSparseTextsFloor(b *testing.B) {
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		buf = handSparseTexts(buf[:0])
	}
	b.SetBytes(int64(len(buf)))
}

// textList returns a message whose root holds, in slot 0, a
// variable-element list of n short texts ("element-0", ...), and the
// list's start and count as the floor finds them.
func textList(n int) (msg []byte, start, count int) {
	var bld codec.Builder
	bld.Reset(nil)
	o := bld.StartObject(8)
	l := bld.StartList(0)
	for i := range n {
		l.AddTextElement("element-" + strconv.Itoa(i))
	}
	o.SetList(0, l.Finish())
	bld.SetRoot(o.Finish())
	msg = bld.Finish()
	root := int(binary.LittleEndian.Uint32(msg[8:]))
	start = root + int(int32(binary.LittleEndian.Uint32(msg[root:])))
	return msg, start, int(binary.LittleEndian.Uint32(msg[root+4:]))
}

// BenchmarkTextListAt reads every element of a list of text by index with
// List.BytesAt, which walks the sizes of the i elements before element i
// (text elements have no fixed width, and the wire has no offset table):
// quadratic in the list's length, as its floor, the same walk by hand, is
// (compare the 100 and 1000 arms). BenchmarkTextListIter is the linear
// way the docs point to.
func BenchmarkTextListAt(b *testing.B) {
	for _, n := range []int{100, 1000} {
		msg, start, count := textList(n)
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m, _ := codec.Parse(msg)
				l := m.Root().List(0)
				var sum uint64
				for i := range l.Len() {
					sum += uint64(len(l.BytesAt(i)))
				}
				sink = sum
			}
		})
		b.Run(strconv.Itoa(n)+"Floor", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var sum uint64
				for i := range count {
					p := start
					for k := 0; p+4 <= len(msg); k++ {
						end := p + 4 + int(binary.LittleEndian.Uint32(msg[p:]))
						if end > len(msg) {
							break
						}
						if k == i {
							sum += uint64(end - p - 4)
							break
						}
						p = end
					}
				}
				sink = sum
			}
		})
	}
}

// BenchmarkTextListIter reads every element of the same lists with
// List.Iter, in one walk, beside the floor: that walk by hand.
func BenchmarkTextListIter(b *testing.B) {
	for _, n := range []int{100, 1000} {
		msg, start, count := textList(n)
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m, _ := codec.Parse(msg)
				var sum uint64
				it := m.Root().List(0).Iter()
				for it.Next() {
					sum += uint64(len(it.Bytes()))
				}
				sink = sum
			}
		})
		b.Run(strconv.Itoa(n)+"Floor", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var sum uint64
				p := start
				for range count {
					if p+4 > len(msg) {
						break
					}
					end := p + 4 + int(binary.LittleEndian.Uint32(msg[p:]))
					if end > len(msg) {
						break
					}
					sum += uint64(end - p - 4)
					p = end
				}
				sink = sum
			}
		})
	}
}

// TestTextListFloors checks that the floors of BenchmarkTextListAt and
// BenchmarkTextListIter find the list the views read.
func TestTextListFloors(t *testing.T) {
	t.Parallel()
	msg, start, count := textList(100)
	m, err := codec.Parse(msg)
	if err != nil {
		t.Fatal(err)
	}
	l := m.Root().List(0)
	if count != 100 || l.Len() != 100 {
		t.Fatalf("count %d, Len %d", count, l.Len())
	}
	p := start
	it := l.Iter()
	for i := range count {
		end := p + 4 + int(binary.LittleEndian.Uint32(msg[p:]))
		want := "element-" + strconv.Itoa(i)
		if got := string(msg[p+4 : end]); got != want || string(l.BytesAt(i)) != want || !it.Next() || string(it.Bytes()) != want {
			t.Fatalf("element %d: floor %q, BytesAt %q, Iter %q; want %q", i, got, l.BytesAt(i), it.Bytes(), want)
		}
		p = end
	}
}
