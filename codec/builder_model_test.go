package codec_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
)

// modelBuilder writes messages as the canonical builder does (WIRE.md
// §1–3, the ops of messages.json), independently of codec.Builder: the
// reference the differential test below holds the Builder to.
type modelBuilder struct {
	buf     []byte
	objects []*modelObject
}

type modelObject struct {
	pos, size int
	pending   []modelTail
	done      bool
}

type modelTail struct {
	slot int
	data string
}

func newModel() *modelBuilder { return &modelBuilder{buf: make([]byte, codec.HeaderSize)} }

func (m *modelBuilder) pad8() {
	for len(m.buf)%8 != 0 {
		m.buf = append(m.buf, 0)
	}
}

func (m *modelBuilder) startObject(size int) int {
	m.pad8()
	m.objects = append(m.objects, &modelObject{pos: len(m.buf), size: size})
	m.buf = append(m.buf, make([]byte, size)...)
	return len(m.objects) - 1
}

func (m *modelBuilder) setScalar(id, off int, v []byte) {
	copy(m.buf[m.objects[id].pos+off:], v)
}

// setText: an empty value writes {0, 0} now; any other writes its length
// now and is appended, and the slot's offset patched, when the object
// finishes (text_set_then_empty: "hello" then "" leaves {rel, 0}).
func (m *modelBuilder) setText(id, off int, s string) {
	o := m.objects[id]
	slot := o.pos + off
	binary.LittleEndian.PutUint32(m.buf[slot:], 0)
	binary.LittleEndian.PutUint32(m.buf[slot+4:], uint32(len(s)))
	if s != "" {
		o.pending = append(o.pending, modelTail{slot, s})
	}
}

func (m *modelBuilder) finishObject(id int) int {
	o := m.objects[id]
	for _, t := range o.pending {
		binary.LittleEndian.PutUint32(m.buf[t.slot:], uint32(len(m.buf)-t.slot))
		m.buf = append(m.buf, t.data...)
	}
	o.pending, o.done = nil, true
	return o.pos
}

func (m *modelBuilder) setObject(id, off, ref int) {
	slot := m.objects[id].pos + off
	rel := int32(0)
	if ref != 0 {
		rel = int32(ref - slot)
	}
	binary.LittleEndian.PutUint32(m.buf[slot:], uint32(rel))
}

func (m *modelBuilder) setList(id, off, start, count int) {
	slot := m.objects[id].pos + off
	if count == 0 {
		binary.LittleEndian.PutUint64(m.buf[slot:], 0)
		return
	}
	binary.LittleEndian.PutUint32(m.buf[slot:], uint32(int32(start-slot)))
	binary.LittleEndian.PutUint32(m.buf[slot+4:], uint32(count))
}

func (m *modelBuilder) finish(version, flags uint16, root int) []byte {
	copy(m.buf, codec.Magic)
	binary.LittleEndian.PutUint16(m.buf[4:], version)
	binary.LittleEndian.PutUint16(m.buf[6:], flags)
	binary.LittleEndian.PutUint32(m.buf[8:], uint32(root))
	binary.LittleEndian.PutUint32(m.buf[12:], uint32(len(m.buf)))
	return m.buf
}

// TestBuilderMatchesModel runs random programs of builder calls (several
// objects open at once, values set twice or emptied, children built
// before and while their parents are open, flat and variable lists, empty
// ones included, raw blobs, more pending values than the Builder records
// inline) through codec.Builder and the model, after a random prefix, and
// compares the bytes.
func TestBuilderMatchesModel(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(21, 3))
	var b codec.Builder
	for i := range 20000 {
		var log strings.Builder
		m := newModel()
		prefix := bytes.Repeat([]byte{0xEE}, r.IntN(12))
		b.Reset(bytes.Clone(prefix))
		var obs []codec.ObjectBuilder
		var open []int     // ids of the objects still open
		var finished []int // positions of the objects finished
		type list struct {
			start, count int
			ref          codec.ListRef
		}
		var lists []list
		for range r.IntN(40) + 1 {
			switch op := r.IntN(10); {
			case op < 2 || len(open) == 0:
				size := r.IntN(5)*8 + r.IntN(2)*r.IntN(8)
				id := m.startObject(size)
				obs = append(obs, b.StartObject(size))
				open = append(open, id)
				fmt.Fprintf(&log, "start %d size %d\n", id, size)
			case op < 6:
				// Each object's fields do not overlap: the slot at 8k is
				// of kind (id+k)%4 (text or bytes, object, list, u32).
				id := open[r.IntN(len(open))]
				size := m.objects[id].size
				if size < 8 {
					break
				}
				k := r.IntN(size / 8)
				off := 8 * k
				switch (id + k) % 4 {
				case 0:
					s := []string{"", "a", "bc", "hello", strings.Repeat("z", 20)}[r.IntN(5)]
					m.setText(id, off, s)
					if r.IntN(2) == 0 {
						obs[id].SetText(off, s)
					} else {
						obs[id].SetBytes(off, []byte(s))
					}
					fmt.Fprintf(&log, "text %d@%d %q\n", id, off, s)
				case 1:
					ref := 0
					if len(finished) > 0 && r.IntN(4) != 0 {
						ref = finished[r.IntN(len(finished))]
					}
					m.setObject(id, off, ref)
					obs[id].SetObject(off, codec.Ref(ref))
					fmt.Fprintf(&log, "object %d@%d -> %d\n", id, off, ref)
				case 2:
					if len(lists) == 0 {
						break
					}
					l := lists[r.IntN(len(lists))]
					m.setList(id, off, l.start, l.count)
					obs[id].SetList(off, l.ref)
					fmt.Fprintf(&log, "list %d@%d -> %d x%d\n", id, off, l.start, l.count)
				default:
					v := r.Uint32()
					var p [4]byte
					binary.LittleEndian.PutUint32(p[:], v)
					m.setScalar(id, off, p[:])
					obs[id].SetUint32(off, v)
					fmt.Fprintf(&log, "u32 %d@%d\n", id, off)
				}
			case op < 8:
				k := r.IntN(len(open))
				id := open[k]
				open = append(open[:k], open[k+1:]...)
				pos := m.finishObject(id)
				if got := int(obs[id].Finish()); got != pos {
					t.Fatalf("#%d: Finish of %d = %d, model %d\n%s", i, id, got, pos, log.String())
				}
				finished = append(finished, pos)
				fmt.Fprintf(&log, "finish %d\n", id)
			case op < 9:
				m.pad8()
				start := len(m.buf)
				n := r.IntN(4)
				varList := r.IntN(2) == 0
				elem := 4
				if varList {
					elem = 0
				}
				lb := b.StartList(elem)
				for j := range n {
					var p [4]byte
					binary.LittleEndian.PutUint32(p[:], uint32(j+1))
					if varList {
						m.buf = append(m.buf, 4, 0, 0, 0)
						lb.AddMessage(p[:])
					} else {
						lb.AddUint32(uint32(j + 1))
					}
					m.buf = append(m.buf, p[:]...)
				}
				ref := lb.Finish()
				lists = append(lists, list{start, n, ref})
				fmt.Fprintf(&log, "list at %d x%d\n", start, n)
			default:
				p := bytes.Repeat([]byte{0xAB}, r.IntN(11))
				m.pad8()
				m.buf = append(m.buf, p...)
				b.WriteBytes(p)
				fmt.Fprintf(&log, "raw %d\n", len(p))
			}
		}
		for len(open) > 0 {
			k := r.IntN(len(open))
			id := open[k]
			open = append(open[:k], open[k+1:]...)
			finished = append(finished, m.finishObject(id))
			obs[id].Finish()
		}
		root := finished[r.IntN(len(finished))]
		version := uint16(1 + r.IntN(2))
		flags := uint16(r.Uint32())
		want := m.finish(version, flags, root)
		b.SetVersion(version)
		b.SetFlags(flags)
		b.SetRoot(codec.Ref(root))
		got := b.Finish()
		if err := b.Err(); err != nil {
			t.Fatalf("#%d: %v\n%s", i, err, log.String())
		}
		if !bytes.Equal(got[:len(prefix)], prefix) || !bytes.Equal(got[len(prefix):], want) {
			t.Fatalf("#%d:\n got %x\nwant %x\n%s", i, got[len(prefix):], want, log.String())
		}
	}
}
