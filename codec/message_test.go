package codec_test

import (
	"bytes"
	"encoding/binary"
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
