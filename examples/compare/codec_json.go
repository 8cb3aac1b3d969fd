package compare

// The JSON arms: encoding/json, goccy/go-json and sonic on the same Go
// types, shaped as JSON-RPC 2.0 carries eth_getBalance: bytes and quantities
// as 0x-hex strings (quantities without leading zeros), the id a decimal
// number. Each library in its default configuration, through its fastest
// entry points: Marshal/Unmarshal for encoding/json and goccy/go-json
// (neither has an API that appends to a caller's buffer), and for sonic
// encoder.EncodeInto, which appends to the caller's buffer (sonic.Marshal
// encodes into a pooled buffer and returns a copy), and a reused
// decoder.Decoder on the input itself (sonic.Unmarshal copies the input
// into a string and makes a decoder per call). The hex texts an encode
// needs are formatted into the codec's scratch, not allocated, so that an
// encode's allocations are the library's own.

import (
	"encoding/hex"
	stdjson "encoding/json"
	"fmt"
	"strconv"

	sonicdec "github.com/bytedance/sonic/decoder"
	sonicenc "github.com/bytedance/sonic/encoder"
	gojson "github.com/goccy/go-json"
)

// jsonRequest is {"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0x<account>","0x<block>"]}.
type jsonRequest struct {
	JSONRPC string    `json:"jsonrpc"`
	ID      uint64    `json:"id"`
	Method  string    `json:"method"`
	Params  [2]string `json:"params"`
}

// jsonResponse is {"jsonrpc":"2.0","id":1,"result":{"balance":"0x..","nonce":"0x..","blockHash":"0x.."}}.
type jsonResponse struct {
	JSONRPC string      `json:"jsonrpc"`
	ID      uint64      `json:"id"`
	Result  jsonBalance `json:"result"`
}

type jsonBalance struct {
	Balance   string `json:"balance"`
	Nonce     string `json:"nonce"`
	BlockHash string `json:"blockHash"`
}

// jsonLib is the part of a JSON library the arms use.
type jsonLib struct {
	name string
	// appendJSON appends v's encoding to *dst.
	appendJSON func(dst *[]byte, v any) error
	unmarshal  func(b []byte, v any) error
}

// appendMarshal makes an appendJSON of a library's Marshal.
func appendMarshal(marshal func(v any) ([]byte, error)) func(dst *[]byte, v any) error {
	return func(dst *[]byte, v any) error {
		b, err := marshal(v)
		*dst = append(*dst, b...)
		return err
	}
}

// sonicAppend appends v's encoding to *dst with sonic.ConfigDefault's
// options (none): the bytes sonic.Marshal returns.
func sonicAppend(dst *[]byte, v any) error { return sonicenc.EncodeInto(dst, v, 0) }

// sonicUnmarshal returns the equivalent of sonic.Unmarshal (the default
// config) that decodes b itself, where sonic.Unmarshal decodes a copy
// (decoded strings alias b), with one decoder reused from call to call,
// where sonic.Unmarshal makes one per call. It is for one goroutine.
func sonicUnmarshal() func(b []byte, v any) error {
	d := sonicdec.NewDecoder("")
	return func(b []byte, v any) error {
		d.Reset(aliasString(b))
		err := d.Decode(v)
		if err == nil {
			err = d.CheckTrailings()
		}
		d.Reset("") // keep nothing of b
		return err
	}
}

type jsonCodec struct {
	lib  jsonLib
	req  jsonRequest
	resp jsonResponse
	in   Request
	out  Response
	// hex holds the 0x-hex texts of the message being encoded (up to
	// three: balance, nonce, block hash), which its string fields alias
	// until the next encode: the JSON-RPC shape's hex costs its
	// formatting, not an allocation per field (the library copies the
	// texts into its output).
	hex [3][2 + 64]byte
	// dst holds an Append method's dst while the library appends to it:
	// a pointer to the codec's field, which is on the heap already, costs
	// no allocation (a pointer to the dst argument would).
	dst []byte
}

// appendJSON appends v's encoding to dst with the codec's library.
func (c *jsonCodec) appendJSON(dst []byte, v any) ([]byte, error) {
	c.dst = dst
	err := c.lib.appendJSON(&c.dst, v)
	dst, c.dst = c.dst, nil
	return dst, err
}

func newStdJSON() *jsonCodec {
	return &jsonCodec{lib: jsonLib{"encoding/json", appendMarshal(stdjson.Marshal), stdjson.Unmarshal}}
}

func newGoccyJSON() *jsonCodec {
	return &jsonCodec{lib: jsonLib{"goccy/go-json", appendMarshal(gojson.Marshal), gojson.Unmarshal}}
}

func newSonicJSON() *jsonCodec {
	return &jsonCodec{lib: jsonLib{"sonic", sonicAppend, sonicUnmarshal()}}
}

func (c *jsonCodec) Name() string { return c.lib.name }

// hexData returns "0x" and the lowercase hex of p (at most 32 bytes),
// written into the codec's scratch text i, which the result aliases.
func (c *jsonCodec) hexData(i int, p []byte) string {
	b := append(c.hex[i][:0], "0x"...)
	return aliasString(hex.AppendEncode(b, p))
}

// hexQty returns a JSON-RPC quantity, "0x" and hex digits without leading
// zeros, written into the codec's scratch text i, which the result aliases.
func (c *jsonCodec) hexQty(i int, v uint64) string {
	b := append(c.hex[i][:0], "0x"...)
	return aliasString(strconv.AppendUint(b, v, 16))
}

func parseData(s string, dst []byte) error {
	if len(s) != 2+2*len(dst) || s[0] != '0' || s[1] != 'x' {
		return fmt.Errorf("%w: want 0x and %d hex digits, got %q", ErrMalformed, 2*len(dst), s)
	}
	for i := range dst {
		hi, ok1 := unhex(s[2+2*i])
		lo, ok2 := unhex(s[3+2*i])
		if !ok1 || !ok2 {
			return fmt.Errorf("%w: bad hex %q", ErrMalformed, s)
		}
		dst[i] = hi<<4 | lo
	}
	return nil
}

// unhex accepts lowercase hex digits only, so that decode then re-encode is
// byte-exact.
func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

func parseQty(s string) (uint64, error) {
	if len(s) < 3 || len(s) > 18 || s[0] != '0' || s[1] != 'x' || (s[2] == '0' && len(s) > 3) {
		return 0, fmt.Errorf("%w: bad quantity %q", ErrMalformed, s)
	}
	var v uint64
	for i := 2; i < len(s); i++ {
		d, ok := unhex(s[i])
		if !ok {
			return 0, fmt.Errorf("%w: bad quantity %q", ErrMalformed, s)
		}
		v = v<<4 | uint64(d)
	}
	return v, nil
}

func (c *jsonCodec) AppendRequest(dst []byte, r *Request) ([]byte, error) {
	c.req = jsonRequest{JSONRPC: "2.0", ID: r.ID, Method: r.Method,
		Params: [2]string{c.hexData(0, r.Account[:]), c.hexQty(1, r.Block)}}
	return c.appendJSON(dst, &c.req)
}

func (c *jsonCodec) DecodeRequest(b []byte, r *Request) error {
	c.req = jsonRequest{}
	if err := c.lib.unmarshal(b, &c.req); err != nil {
		return err
	}
	if c.req.JSONRPC != "2.0" {
		return fmt.Errorf("%w: jsonrpc %q", ErrMalformed, c.req.JSONRPC)
	}
	if err := parseData(c.req.Params[0], r.Account[:]); err != nil {
		return err
	}
	blk, err := parseQty(c.req.Params[1])
	if err != nil {
		return err
	}
	r.Block, r.ID, r.Method = blk, c.req.ID, c.req.Method
	return nil
}

func (c *jsonCodec) AppendResponse(dst []byte, r *Response) ([]byte, error) {
	c.resp = jsonResponse{JSONRPC: "2.0", ID: r.ID, Result: jsonBalance{
		Balance: c.hexData(0, r.Balance[:]), Nonce: c.hexQty(1, r.Nonce), BlockHash: c.hexData(2, r.BlockHash[:])}}
	return c.appendJSON(dst, &c.resp)
}

func (c *jsonCodec) DecodeResponse(b []byte, r *Response) error {
	c.resp = jsonResponse{}
	if err := c.lib.unmarshal(b, &c.resp); err != nil {
		return err
	}
	if c.resp.JSONRPC != "2.0" {
		return fmt.Errorf("%w: jsonrpc %q", ErrMalformed, c.resp.JSONRPC)
	}
	if err := parseData(c.resp.Result.Balance, r.Balance[:]); err != nil {
		return err
	}
	if err := parseData(c.resp.Result.BlockHash, r.BlockHash[:]); err != nil {
		return err
	}
	n, err := parseQty(c.resp.Result.Nonce)
	if err != nil {
		return err
	}
	r.Nonce, r.ID = n, c.resp.ID
	return nil
}

func (c *jsonCodec) Handle(dst, req []byte, t *Table) ([]byte, error) {
	if err := c.DecodeRequest(req, &c.in); err != nil {
		return dst, err
	}
	if err := t.Answer(&c.in, &c.out); err != nil {
		return dst, err
	}
	return c.AppendResponse(dst, &c.out)
}
