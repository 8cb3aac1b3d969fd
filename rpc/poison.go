package rpc

import (
	"unsafe"

	"github.com/zapcodec/zapcodec/internal/poison"
)

// poisonRequest overwrites req, a request buffer of a call whose handler
// returned (its payload, or the copies of its cap and metadata that
// CapFrom and MetadataFrom view), with poison.Byte when poisoning is on,
// so that a view of the request a handler kept past its return (a
// goroutine it started, a map it filled) reads 0xDB at once instead of
// its bytes until a later call on the connection happens to reuse the
// buffer. Called only in the
// zapdebug build (finish, under the zapdebug constant), before the answer
// is written: the caller has its answer only once req is poisoned, so a
// test that reads the view after Call returns sees the poison. A body
// that overlaps req (a handler that answered with a slice of its
// request, or its cap) must be written first: poisonRequest then leaves req alone
// and reports late, and the caller poisons it after the write.
func poisonRequest(req, body []byte) (late bool) {
	if !poison.Enabled() || cap(req) == 0 {
		return false
	}
	if len(body) > 0 {
		r := uintptr(unsafe.Pointer(unsafe.SliceData(req)))
		b := uintptr(unsafe.Pointer(unsafe.SliceData(body)))
		if b < r+uintptr(cap(req)) && r < b+uintptr(len(body)) {
			return true
		}
	}
	poison.Fill(req)
	return false
}
