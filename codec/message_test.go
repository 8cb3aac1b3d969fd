package codec_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/zapcodec/zapcodec/codec"
)

// TestMessageBytesCapped: Message.Bytes ends at the message's size in
// capacity too, as every slice a reader returns does, so that appending
// to it cannot write over the bytes that follow the message in the
// caller's buffer (the next message of a stream, say).
func TestMessageBytesCapped(t *testing.T) {
	msg := make([]byte, 24, 64)
	copy(msg, codec.Magic)
	binary.LittleEndian.PutUint16(msg[4:], codec.Version1)
	binary.LittleEndian.PutUint32(msg[8:], 16)
	binary.LittleEndian.PutUint32(msg[12:], 20) // 4 bytes past the size: the next message's
	copy(msg[20:], "next")
	m, err := codec.Parse(msg)
	if err != nil {
		t.Fatal(err)
	}
	b := m.Bytes()
	if len(b) != 20 || cap(b) != 20 || &b[0] != &msg[0] {
		t.Fatalf("Bytes: len %d cap %d, aliasing %v; want len and cap 20, aliasing the buffer", len(b), cap(b), &b[0] == &msg[0])
	}
	_ = append(b, "XXXX"...)
	if !bytes.Equal(msg[20:24], []byte("next")) {
		t.Fatalf("appending to Bytes wrote over the bytes after the message: %q", msg[20:24])
	}
}

// TestSetHeader: SetHeader turns a message written with the defaults
// (version 1, flags 0) into the bytes a builder told the version and
// flags writes, and refuses, changing nothing, what Parse refuses and a
// version other than 1 or 2.
func TestSetHeader(t *testing.T) {
	build := func(version, flags uint16) []byte {
		var b codec.Builder
		b.Reset(nil)
		if version != 0 {
			b.SetVersion(version)
			b.SetFlags(flags)
		}
		root := b.StartObject(16)
		root.SetUint32(0, 7)
		root.SetText(8, "hello")
		b.SetRoot(root.Finish())
		return b.Finish()
	}
	msg := build(0, 0)
	if err := codec.SetHeader(msg, codec.Version2, 0x0105); err != nil {
		t.Fatal(err)
	}
	if want := build(codec.Version2, 0x0105); !bytes.Equal(msg, want) {
		t.Fatalf("after SetHeader:\n% x\nthe builder writes:\n% x", msg, want)
	}
	m, err := codec.Parse(msg)
	if err != nil || m.Version() != 2 || m.Flags() != 0x0105 || m.Root().Text(8) != "hello" {
		t.Fatalf("read back: version %d flags %#x text %q, %v", m.Version(), m.Flags(), m.Root().Text(8), err)
	}

	for _, tc := range []struct {
		name    string
		msg     []byte
		version uint16
		want    error
	}{
		{"short", msg[:10], 1, codec.ErrTooSmall},
		{"magic", append([]byte("ZIP\x00"), msg[4:]...), 1, codec.ErrMagic},
		{"version 3", build(0, 0), 3, codec.ErrVersion},
		{"version 0", build(0, 0), 0, codec.ErrVersion},
	} {
		before := bytes.Clone(tc.msg)
		err := codec.SetHeader(tc.msg, tc.version, 0xFFFF)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.want)
		}
		if !bytes.Equal(tc.msg, before) {
			t.Errorf("%s: the refused message changed", tc.name)
		}
	}
}
