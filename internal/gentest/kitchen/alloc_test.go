//go:build !race

package kitchen

import "testing"

var sink uint64

func TestAllocs(t *testing.T) {
	e := Everything{
		Flag: true, Small: 200, Port: 9999, Count: 123456, Big: 1 << 50, Delta: -7, Temp: -300,
		Off: -70000, Nanos: -5e9, Ratio: 0.5, Score: 2.75, Title: "kitchen sink", Blob: []byte{0xde, 0xad},
		Items: []Item{{Tag: 1, Name: "first"}, {Tag: 2}},
	}
	buf := make([]byte, 0, 512)
	msg := e.AppendZAP(nil)
	var d Everything
	if err := d.DecodeZAP(msg); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		f    func()
	}{
		{"AppendZAP", func() { buf = e.AppendZAP(buf[:0]) }},
		{"view", func() {
			v, _ := ReadEverything(msg)
			sink += uint64(v.Count()) + uint64(v.Nanos()) + uint64(len(v.Title())) + uint64(len(v.Blob())) + uint64(v.Root()[0])
			items := v.Items()
			for it := items.Iter(); it.Next(); {
				sink += uint64(it.Value().Tag()) + uint64(len(it.Value().Name()))
			}
			sink += uint64(items.At(1).Tag()) + uint64(items.Len())
		}},
		{"DecodeZAP warm", func() { _ = d.DecodeZAP(msg) }},
	}
	for _, tt := range tests {
		if n := testing.AllocsPerRun(200, tt.f); n != 0 {
			t.Errorf("%s: %v allocations, want 0", tt.name, n)
		}
	}
}
