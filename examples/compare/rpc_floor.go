package compare

// The floor: a raw length-prefixed echo over loopback TCP. The server reads
// [u32 length][payload] and writes the same frame back; each worker has its
// own connection with one call in flight. No codec, no dispatch, no
// multiplexing: what moving a request and an answer of that size costs.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// maxEcho bounds the floor's frames.
const maxEcho = 1 << 16

type floorServer struct {
	l     net.Listener
	addr  string
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func startFloor(*Table) (Server, error) {
	l, err := listen()
	if err != nil {
		return nil, err
	}
	s := &floorServer{l: l, addr: l.Addr().String(), conns: map[net.Conn]struct{}{}}
	go s.accept()
	return s, nil
}

func (s *floorServer) accept() {
	for {
		nc, err := s.l.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[nc] = struct{}{}
		s.mu.Unlock()
		go s.serve(nc)
	}
}

func (s *floorServer) serve(nc net.Conn) {
	defer func() {
		s.mu.Lock()
		delete(s.conns, nc)
		s.mu.Unlock()
		nc.Close()
	}()
	r := bufio.NewReaderSize(nc, 4096)
	buf := make([]byte, 0, 4096)
	for {
		var hdr [4]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return
		}
		n := binary.LittleEndian.Uint32(hdr[:])
		if n > maxEcho {
			return
		}
		if cap(buf) < int(n)+4 {
			buf = make([]byte, int(n)+4)
		}
		buf = buf[:n+4]
		copy(buf, hdr[:])
		if _, err := io.ReadFull(r, buf[4:]); err != nil {
			return
		}
		if _, err := nc.Write(buf); err != nil {
			return
		}
	}
}

func (s *floorServer) Close() error {
	err := s.l.Close()
	s.mu.Lock()
	for nc := range s.conns {
		nc.Close()
	}
	s.mu.Unlock()
	return err
}

func (s *floorServer) Connect(context.Context) (Client, error) { return floorClient{s.addr}, nil }

type floorClient struct{ addr string }

func (floorClient) Close() error { return nil }

func (f floorClient) NewCaller(ctx context.Context) (Caller, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", f.addr)
	if err != nil {
		return nil, err
	}
	return &floorCaller{nc: nc, r: bufio.NewReaderSize(nc, 4096)}, nil
}

type floorCaller struct {
	nc       net.Conn
	r        *bufio.Reader
	out, in  []byte
	floorEnc floorCodec
}

func (c *floorCaller) Close() error { return c.nc.Close() }

var errEcho = errors.New("compare: floor echo differs")

// Call sends the request (hand-encoded, see codec_floor.go) in one frame
// and reads the echo back; ctx's deadline bounds the exchange.
func (c *floorCaller) Call(ctx context.Context, req *Request, _ *Response) error {
	if d, ok := ctx.Deadline(); ok {
		c.nc.SetDeadline(d)
	}
	c.out = append(c.out[:0], 0, 0, 0, 0)
	c.out, _ = c.floorEnc.AppendRequest(c.out, req)
	binary.LittleEndian.PutUint32(c.out, uint32(len(c.out)-4))
	if _, err := c.nc.Write(c.out); err != nil {
		return err
	}
	if cap(c.in) < len(c.out) {
		c.in = make([]byte, len(c.out))
	}
	c.in = c.in[:len(c.out)]
	if _, err := io.ReadFull(c.r, c.in); err != nil {
		return fmt.Errorf("compare: floor read: %w", err)
	}
	if !bytes.Equal(c.in, c.out) {
		return errEcho
	}
	return nil
}
