package compare

// The floors: a raw length-prefixed echo over loopback TCP. The server reads
// [u32 length][payload] and writes the same frame back through a buffered
// writer that it flushes when no further request is already buffered (so
// answers ready together leave in one write). No codec, no dispatch: what
// moving a request and an answer of that size costs. Two clients:
//   - per worker: each worker has its own connection, one call in flight;
//   - one connection: all workers share one connection, frames written
//     through one buffered writer flushed by the last writer waiting, echoes
//     matched first-in first-out (the server answers in order).

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
	"sync/atomic"
)

// maxEcho bounds the floor's frames.
const maxEcho = 1 << 16

type floorServer struct {
	mux   bool // Connect returns the one-connection client
	l     net.Listener
	addr  string
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func startFloor(*Table) (Server, error) { return startFloorServer(false) }

func startFloorMux(*Table) (Server, error) { return startFloorServer(true) }

func startFloorServer(mux bool) (Server, error) {
	l, err := listen()
	if err != nil {
		return nil, err
	}
	s := &floorServer{mux: mux, l: l, addr: l.Addr().String(), conns: map[net.Conn]struct{}{}}
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
	r := bufio.NewReaderSize(nc, 64<<10)
	w := bufio.NewWriterSize(nc, 64<<10)
	buf := make([]byte, 0, 4096)
	hdr := make([]byte, 4)
	for {
		if _, err := io.ReadFull(r, hdr); err != nil {
			return
		}
		n := binary.LittleEndian.Uint32(hdr)
		if n > maxEcho {
			return
		}
		if cap(buf) < int(n)+4 {
			buf = make([]byte, int(n)+4)
		}
		buf = buf[:n+4]
		copy(buf, hdr)
		if _, err := io.ReadFull(r, buf[4:]); err != nil {
			return
		}
		if _, err := w.Write(buf); err != nil {
			return
		}
		if r.Buffered() == 0 {
			if err := w.Flush(); err != nil {
				return
			}
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

func (s *floorServer) Connect(ctx context.Context) (Client, error) {
	if s.mux {
		return dialFloorMux(ctx, s.addr)
	}
	return floorClient{s.addr}, nil
}

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
	nc      net.Conn
	r       *bufio.Reader
	out, in []byte
}

func (c *floorCaller) Close() error { return c.nc.Close() }

var errEcho = errors.New("compare: floor echo differs")

// Call sends the request (hand-encoded, see codec_floor.go) in one frame
// and reads the echo back; ctx's deadline bounds the exchange.
func (c *floorCaller) Call(ctx context.Context, req *Request, _ *Response) error {
	if d, ok := ctx.Deadline(); ok {
		c.nc.SetDeadline(d)
	}
	c.out = appendFloorFrame(c.out[:0], req)
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

// appendFloorFrame appends [u32 length][hand-encoded req] to dst.
func appendFloorFrame(dst []byte, req *Request) []byte {
	at := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst, _ = floorCodec{}.AppendRequest(dst, req)
	binary.LittleEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
	return dst
}

// floorMux is the one-connection floor client.
type floorMux struct {
	nc      net.Conn
	wmu     sync.Mutex // guards w and the order of queue pushes
	w       *bufio.Writer
	writers atomic.Int32 // callers between "want to write" and "wrote"
	qmu     sync.Mutex
	queue   []*floorMuxCaller // callers waiting for their echo, in send order
	failed  error             // set under qmu when the read loop ends
}

func dialFloorMux(ctx context.Context, addr string) (*floorMux, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	m := &floorMux{nc: nc, w: bufio.NewWriterSize(nc, 64<<10)}
	go m.readLoop()
	return m, nil
}

func (m *floorMux) readLoop() {
	r := bufio.NewReaderSize(m.nc, 64<<10)
	hdr := make([]byte, 4)
	var err error
	for {
		if _, err = io.ReadFull(r, hdr); err != nil {
			break
		}
		n := binary.LittleEndian.Uint32(hdr)
		if n > maxEcho {
			err = fmt.Errorf("compare: floor frame of %d bytes", n)
			break
		}
		m.qmu.Lock()
		if len(m.queue) == 0 {
			m.qmu.Unlock()
			err = errors.New("compare: floor echo without a call")
			break
		}
		c := m.queue[0]
		n0 := copy(m.queue, m.queue[1:]) // keep the array: no reallocation
		m.queue[n0] = nil
		m.queue = m.queue[:n0]
		m.qmu.Unlock()
		if cap(c.in) < int(n)+4 {
			c.in = make([]byte, int(n)+4)
		}
		c.in = c.in[:n+4]
		copy(c.in, hdr)
		if _, err = io.ReadFull(r, c.in[4:]); err != nil {
			c.done <- err
			break
		}
		c.done <- nil
	}
	m.nc.Close()
	m.qmu.Lock()
	m.failed = fmt.Errorf("compare: floor connection: %w", err)
	for _, c := range m.queue {
		c.done <- m.failed
	}
	m.queue = nil
	m.qmu.Unlock()
}

func (m *floorMux) Close() error { return m.nc.Close() }

func (m *floorMux) NewCaller(context.Context) (Caller, error) {
	return &floorMuxCaller{m: m, done: make(chan error, 1)}, nil
}

type floorMuxCaller struct {
	m       *floorMux
	out, in []byte
	done    chan error
}

func (*floorMuxCaller) Close() error { return nil }

// Call writes the frame and waits for its echo; ctx is not consulted once
// the frame is written (the floor has no cancellation).
func (c *floorMuxCaller) Call(ctx context.Context, req *Request, _ *Response) error {
	m := c.m
	c.out = appendFloorFrame(c.out[:0], req)
	m.writers.Add(1)
	m.wmu.Lock()
	m.qmu.Lock()
	if m.failed != nil {
		err := m.failed
		m.qmu.Unlock()
		m.wmu.Unlock()
		m.writers.Add(-1)
		return err
	}
	m.queue = append(m.queue, c)
	m.qmu.Unlock()
	_, err := m.w.Write(c.out)
	if m.writers.Add(-1) == 0 && err == nil {
		err = m.w.Flush()
	}
	m.wmu.Unlock()
	if err != nil {
		m.nc.Close() // the read loop fails every waiting call, this one too
	}
	if err := <-c.done; err != nil {
		return err
	}
	if !bytes.Equal(c.in, c.out) {
		return errEcho
	}
	return nil
}
