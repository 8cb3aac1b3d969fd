package compare

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
)

// Method is the JSON-RPC method name every request carries.
const Method = "eth_getBalance"

// ErrMethod is returned by a handler given a request for another method.
var ErrMethod = errors.New("compare: unknown method")

// Request is the eth_getBalance call: the same four fields in every codec.
type Request struct {
	Account [20]byte
	Block   uint64
	ID      uint64
	Method  string
}

// Response is the eth_getBalance answer: the same four fields in every codec.
type Response struct {
	Balance   [32]byte
	Nonce     uint64
	BlockHash [32]byte
	ID        uint64
}

// Account is one row of the in-memory state a handler answers from.
type Account struct {
	Balance [32]byte
	Nonce   uint64
}

// Table is the in-memory state: accounts by address and block hashes by
// block number. It is read-only once built and safe for concurrent readers.
type Table struct {
	accounts map[[20]byte]*Account
	addrs    [][20]byte
	hashes   [256][32]byte
	empty    Account
}

// NewTable builds a deterministic table of n accounts.
func NewTable(n int) *Table {
	rng := rand.New(rand.NewPCG(6, 0x5eed))
	t := &Table{accounts: make(map[[20]byte]*Account, n), addrs: make([][20]byte, n)}
	for i := range n {
		var a [20]byte
		fill(rng, a[:])
		acct := &Account{Nonce: rng.Uint64N(1 << 20)}
		fill(rng, acct.Balance[16:]) // a realistic 128-bit balance, big-endian
		t.addrs[i] = a
		t.accounts[a] = acct
	}
	for i := range t.hashes {
		fill(rng, t.hashes[i][:])
	}
	return t
}

func fill(rng *rand.Rand, p []byte) {
	for i := 0; i < len(p); i += 8 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], rng.Uint64())
		copy(p[i:], w[:])
	}
}

// Addr returns the address of account i (mod the table size).
func (t *Table) Addr(i int) [20]byte { return t.addrs[i%len(t.addrs)] }

// Lookup returns the account at addr (a zero account when it is unknown)
// and the hash of block. The results point into the table: read-only.
func (t *Table) Lookup(addr *[20]byte, block uint64) (*Account, *[32]byte) {
	a := t.accounts[*addr]
	if a == nil {
		a = &t.empty
	}
	return a, &t.hashes[block%uint64(len(t.hashes))]
}

// Answer is the handler's compute step on plain records: it checks the
// method and fills resp from the table.
func (t *Table) Answer(req *Request, resp *Response) error {
	if req.Method != Method {
		return ErrMethod
	}
	a, h := t.Lookup(&req.Account, req.Block)
	resp.Balance = a.Balance
	resp.Nonce = a.Nonce
	resp.BlockHash = *h
	resp.ID = req.ID
	return nil
}

// Requests returns n requests for accounts of t (every 7th for an unknown
// account), with varied block numbers and ids.
func (t *Table) Requests(n int) []Request {
	rng := rand.New(rand.NewPCG(7, 0xca11))
	out := make([]Request, n)
	for i := range out {
		r := &out[i]
		if i%7 == 6 {
			fill(rng, r.Account[:])
		} else {
			r.Account = t.Addr(rng.IntN(len(t.addrs)))
		}
		r.Block = 19_000_000 + rng.Uint64N(1_000_000)
		r.ID = uint64(i + 1)
		r.Method = Method
	}
	return out
}

// checkResponse returns an error naming the first field in which got
// differs from want, or nil when they are equal.
func checkResponse(got, want *Response) error {
	switch {
	case got.Balance != want.Balance:
		return fmt.Errorf("compare: answer balance %x, want %x", got.Balance, want.Balance)
	case got.Nonce != want.Nonce:
		return fmt.Errorf("compare: answer nonce %d, want %d", got.Nonce, want.Nonce)
	case got.BlockHash != want.BlockHash:
		return fmt.Errorf("compare: answer block hash %x, want %x", got.BlockHash, want.BlockHash)
	case got.ID != want.ID:
		return fmt.Errorf("compare: answer id %d, want %d", got.ID, want.ID)
	}
	return nil
}

// checkRequest returns an error naming the first field in which got
// differs from want, or nil when they are equal.
func checkRequest(got, want *Request) error {
	switch {
	case got.Account != want.Account:
		return fmt.Errorf("compare: request account %x, want %x", got.Account, want.Account)
	case got.Block != want.Block:
		return fmt.Errorf("compare: request block %d, want %d", got.Block, want.Block)
	case got.ID != want.ID:
		return fmt.Errorf("compare: request id %d, want %d", got.ID, want.ID)
	case got.Method != want.Method:
		return fmt.Errorf("compare: request method %q, want %q", got.Method, want.Method)
	}
	return nil
}

// poisonedRequest has every field set to a value no fixture request has,
// for the checks to decode into.
var poisonedRequest = Request{
	Account: [20]byte(bytes.Repeat([]byte{0xff}, 20)),
	Block:   ^uint64(0),
	ID:      ^uint64(0),
	Method:  "\xff",
}

// poisoned is a Response with every bit of every field set. Load hands it
// to each call, so that an arm whose Call leaves a field alone (a decoder
// that skips zero fields into a reused value, say) fails the check instead
// of passing with an earlier call's value.
var poisoned = Response{
	Balance:   [32]byte(bytes.Repeat([]byte{0xff}, 32)),
	Nonce:     ^uint64(0),
	BlockHash: [32]byte(bytes.Repeat([]byte{0xff}, 32)),
	ID:        ^uint64(0),
}
