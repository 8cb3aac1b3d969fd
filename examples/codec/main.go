// Command codec is the smallest zapcodec demo: it builds an
// eth_getBalance request with package codec, prints its bytes as hex, and
// reads every field back.
package main

import (
	"encoding/hex"
	"fmt"
	"os"

	"github.com/zapcodec/zapcodec/codec"
)

// The GetBalanceRequest layout of the eth schema: offsets and fixed size.
const (
	offAccount = 0
	offBlock   = 20
	offID      = 28
	offMethod  = 36
	size       = 44
)

func main() {
	account := [20]byte{0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9,
		0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf, 0xb0, 0xb1, 0xb2, 0xb3}

	var b codec.Builder
	b.Reset(make([]byte, 0, 128))
	req := b.StartObject(size)
	req.SetBytesFixed(offAccount, account[:])
	req.SetUint64(offBlock, 19_000_000)
	req.SetUint64(offID, 1)
	req.SetText(offMethod, "eth_getBalance")
	b.SetRoot(req.Finish())
	msg := b.Finish()
	if err := b.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}

	fmt.Printf("built %d bytes:\n%s", len(msg), hex.Dump(msg))

	m, err := codec.Parse(msg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	r := m.Root()
	fmt.Printf("read back: version=%d account=0x%x block=%d id=%d method=%q\n",
		m.Version(), r.BytesFixed(offAccount, 20), r.Uint64(offBlock), r.Uint64(offID), r.Text(offMethod))
}
