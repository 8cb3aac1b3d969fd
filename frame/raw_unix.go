//go:build unix

package frame

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
)

// rawSource is the readiness-first read of a TCP or Unix socket: the
// Reader picks its buffer only once the socket is readable, so a Reader
// that waits for a new frame holds no pooled buffer, yet a frame larger
// than the inline buffer still arrives in one read (no 512-byte read
// first).
type rawSource struct {
	src io.Reader
	rc  syscall.RawConn
	fn  func(fd uintptr) bool // rawStep bound once: no allocation per read
	fr  *Reader
	pre int // pooled buffer to read into once readable
	n   int
	err error
	net string // for errors: "tcp" or "unix"
}

// newRawSource returns the raw source of r when r is a *net.TCPConn or a
// *net.UnixConn (exactly: a wrapper may want its own Read), else nil.
func newRawSource(fr *Reader, r io.Reader) *rawSource {
	var sc syscall.Conn
	switch c := r.(type) {
	case *net.TCPConn:
		sc = c
	case *net.UnixConn:
		sc = c
	default:
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	rs := &rawSource{src: r, rc: rc, fr: fr, net: "tcp"}
	if _, ok := r.(*net.UnixConn); ok {
		rs.net = "unix"
	}
	rs.fn = rs.step
	return rs
}

// read waits until the socket is readable, then takes a pooled buffer of
// pre bytes (unless the drained Reader kept one, see keepForRaw) and reads
// once into it. A step that finds the socket not readable gives the
// buffer back before the wait.
func (rs *rawSource) read(pre int) error {
	rs.pre, rs.n, rs.err = pre, 0, nil
	if err := rs.rc.Read(rs.fn); err != nil {
		rs.fr.dropBig()
		return err // deadline, closed: wrapped in *net.OpError, errors.Is works
	}
	fr := rs.fr
	if rs.err != nil {
		fr.dropBig()
		return &net.OpError{Op: "read", Net: rs.net, Err: os.NewSyscallError("read", rs.err)}
	}
	if rs.n == 0 {
		fr.dropBig()
		return io.EOF
	}
	fr.full = rs.n == len(fr.buf)
	fr.w = rs.n
	fr.received.Add(uint64(rs.n))
	return nil
}

// step is the RawConn callback: false means "not readable yet, wait".
func (rs *rawSource) step(fd uintptr) bool {
	fr := rs.fr
	if fr.big == nil {
		fr.grow(rs.pre)
	}
	for {
		n, err := syscall.Read(int(fd), fr.buf)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EAGAIN):
			fr.dropBig() // hold nothing while waiting
			return false
		case err != nil:
			rs.err = err
		default:
			rs.n = n
		}
		return true
	}
}
