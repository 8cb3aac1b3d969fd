package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"github.com/zapcodec/zapcodec/examples/ethrpc/ethzap"
	"github.com/zapcodec/zapcodec/rpc"
)

// numAccounts is the size of the demo's in-memory account table.
const numAccounts = 1024

// demoBlock is the block number the load asks balances at.
const demoBlock = 19_000_000

// account is one row of the table.
type account struct {
	balance [32]byte // wei, big-endian, as eth_getBalance returns it
	nonce   uint64
}

// table is the in-memory state the server answers from. Server and client
// build the same table (it is a pure function of numAccounts), so a client
// in another process can check every answer.
type table struct {
	byAddr map[[20]byte]*account
	addrs  [][20]byte
}

// accountAddr returns the address of account i: i+1 in the low bytes,
// 0x0000000000000000000000000000000000000001 for the first.
func accountAddr(i int) (a [20]byte) {
	binary.BigEndian.PutUint32(a[16:], uint32(i+1))
	return a
}

func newTable() *table {
	t := &table{byAddr: make(map[[20]byte]*account, numAccounts)}
	for i := 0; i < numAccounts; i++ {
		a := &account{nonce: uint64(i)}
		// (i+1) ether plus i wei, as a 128-bit number in the low 16 bytes.
		hi, lo := bits.Mul64(uint64(i+1), 1_000_000_000_000_000_000)
		lo += uint64(i)
		binary.BigEndian.PutUint64(a.balance[24:], lo)
		binary.BigEndian.PutUint64(a.balance[16:], hi)
		addr := accountAddr(i)
		t.byAddr[addr] = a
		t.addrs = append(t.addrs, addr)
	}
	return t
}

// blockHash is the hash the demo answers for a block: a fixed pattern with
// the block number in its last 8 bytes.
func blockHash(block uint64) (h [32]byte) {
	for i := range 24 {
		h[i] = 0xb0 + byte(i)
	}
	binary.BigEndian.PutUint64(h[24:], block)
	return h
}

// ethServer answers eth_getBalance from a table.
type ethServer struct{ t *table }

var _ ethzap.EthServer = ethServer{}

// errUnknown is preallocated: a 404 for an address not in the table.
var errUnknown = rpc.Errorf(rpc.StatusNotFound, "unknown account")

// GetBalance looks the account up; it allocates nothing.
func (s ethServer) GetBalance(_ context.Context, req ethzap.GetBalanceRequestView, resp *ethzap.GetBalanceResponse) error {
	// The key in place (AccountBytes, nil when the field is outside the
	// message): a copy hashed at once costs more (see the generated
	// code's docs).
	key := (*[20]byte)(req.AccountBytes())
	if key == nil {
		return errUnknown
	}
	a, ok := s.t.byAddr[*key]
	if !ok {
		return errUnknown
	}
	resp.Balance = a.balance
	resp.Nonce = a.nonce
	resp.BlockHash = blockHash(req.Block())
	resp.ID = req.ID()
	return nil
}

// request builds the payload of call i: account i mod numAccounts, id i+1.
func (t *table) request(i uint64, dst []byte) []byte {
	r := ethzap.GetBalanceRequest{
		Account: t.addrs[i%numAccounts],
		Block:   demoBlock,
		ID:      i + 1,
		Method:  "eth_getBalance",
	}
	return r.AppendZAP(dst)
}

var (
	errBadBalance = errors.New("balance differs from the table")
	errBadNonce   = errors.New("nonce differs from the table")
	errBadID      = errors.New("id not echoed")
	errBadHash    = errors.New("block hash differs")
)

// check verifies an answer against the table; it allocates only to report
// a malformed message.
func (t *table) check(req, resp []byte) error {
	q, err := ethzap.ReadGetBalanceRequest(req)
	if err != nil {
		return fmt.Errorf("request: %w", err)
	}
	a, err := ethzap.ReadGetBalanceResponse(resp)
	if err != nil {
		return fmt.Errorf("answer: %w", err)
	}
	want, ok := t.byAddr[q.Account()]
	switch {
	case !ok:
		return fmt.Errorf("request for unknown account %x", q.AccountBytes())
	case a.Balance() != want.balance:
		return errBadBalance
	case a.Nonce() != want.nonce:
		return errBadNonce
	case a.ID() != q.ID():
		return errBadID
	case a.BlockHash() != blockHash(q.Block()):
		return errBadHash
	}
	return nil
}
