// Package dnstest is a small authoritative DNS server over UDP for tests
// and examples: it answers A, AAAA and SRV questions from records set at
// run time, so a test can point a net.Resolver at it (see
// [Server.Resolver]) and change what a name resolves to while clients use
// it. It is not a general DNS server: one question per query, no
// recursion, no compression in what it reads, no TCP (its answers are
// small), no zone transfers.
package dnstest

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
)

// Record types and the class this server answers.
const (
	TypeA    = 1
	TypeAAAA = 28
	TypeSRV  = 33
	ClassIN  = 1
)

// SRV is one SRV record's data: the target is a host name, which the
// server should also have A or AAAA records for.
type SRV struct {
	Priority, Weight, Port uint16
	Target                 string
}

// Server answers DNS queries on a UDP socket from its records. Its methods
// are safe for concurrent use.
type Server struct {
	pc      net.PacketConn
	mu      sync.Mutex
	addrs   map[string][]netip.Addr // A and AAAA, by lower-case name without the final dot
	srvs    map[string][]SRV
	queries atomic.Int64
	done    chan struct{}
}

// Listen starts a server on a UDP address ("127.0.0.1:0" for any port).
func Listen(addr string) (*Server, error) {
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{
		pc:    pc,
		addrs: make(map[string][]netip.Addr),
		srvs:  make(map[string][]SRV),
		done:  make(chan struct{}),
	}
	go s.serve()
	return s, nil
}

// Addr returns the server's UDP address (host:port).
func (s *Server) Addr() string { return s.pc.LocalAddr().String() }

// Close stops the server and waits for its loop to end.
func (s *Server) Close() error {
	err := s.pc.Close()
	<-s.done
	return err
}

// Queries returns how many well-formed queries the server answered.
func (s *Server) Queries() int64 { return s.queries.Load() }

// SetAddrs sets the A and AAAA records of name (IPv4 addresses become A
// records, the others AAAA); no address removes the name.
func (s *Server) SetAddrs(name string, ips ...netip.Addr) {
	name = canonical(name)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(ips) == 0 {
		delete(s.addrs, name)
		return
	}
	s.addrs[name] = append([]netip.Addr(nil), ips...)
}

// SetSRV sets the SRV records of name (such as "_zap._tcp.eth.svc"); no
// record removes the name.
func (s *Server) SetSRV(name string, recs ...SRV) {
	name = canonical(name)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(recs) == 0 {
		delete(s.srvs, name)
		return
	}
	s.srvs[name] = append([]SRV(nil), recs...)
}

// Resolver returns a resolver that sends every query to this server
// (pure Go resolver; the system's resolver configuration decides only the
// search list and timeouts).
func (s *Server) Resolver() *net.Resolver {
	addr := s.Addr()
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "udp", addr)
		},
	}
}

func canonical(name string) string {
	return strings.ToLower(strings.TrimSuffix(name, "."))
}

func (s *Server) serve() {
	defer close(s.done)
	buf := make([]byte, 1500)
	var out []byte
	for {
		n, from, err := s.pc.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // a transient error (ICMP unreachable...) on UDP
		}
		q, err := ParseQuery(buf[:n])
		if err != nil {
			continue // not answerable: a real server would say FORMERR; the client retries or times out
		}
		s.queries.Add(1)
		out = s.answer(out[:0], buf[:n], q)
		s.pc.WriteTo(out, from)
	}
}

// Query is the part of a DNS query this server reads.
type Query struct {
	ID    uint16
	Flags uint16
	Name  string // lower case, without the final dot
	Type  uint16
	Class uint16
	// QuestionEnd is the offset just past the question in the message.
	QuestionEnd int
}

// Errors of ParseQuery.
var (
	ErrShort    = errors.New("dnstest: message too short")
	ErrNotQuery = errors.New("dnstest: not a standard query with one question")
	ErrName     = errors.New("dnstest: bad name in question")
)

// ParseQuery reads the header and the single question of a DNS query. It
// returns an error, never panics, on any input.
func ParseQuery(msg []byte) (Query, error) {
	var q Query
	if len(msg) < 12 {
		return q, ErrShort
	}
	q.ID = binary.BigEndian.Uint16(msg)
	q.Flags = binary.BigEndian.Uint16(msg[2:])
	if q.Flags&0x8000 != 0 || (q.Flags>>11)&0xF != 0 { // a response, or not opcode QUERY
		return q, ErrNotQuery
	}
	if binary.BigEndian.Uint16(msg[4:]) != 1 || binary.BigEndian.Uint16(msg[6:]) != 0 || binary.BigEndian.Uint16(msg[8:]) != 0 {
		return q, ErrNotQuery // one question, no answers, no authority records
	}
	off := 12
	var b strings.Builder
	for {
		if off >= len(msg) {
			return q, ErrShort
		}
		l := int(msg[off])
		off++
		if l == 0 {
			break
		}
		if l > 63 { // a compression pointer or a reserved label type
			return q, ErrName
		}
		if off+l > len(msg) {
			return q, ErrShort
		}
		if b.Len()+l+1 > 254 {
			return q, ErrName
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		for _, c := range msg[off : off+l] {
			if c == '.' {
				return q, ErrName
			}
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b.WriteByte(c)
		}
		off += l
	}
	if off+4 > len(msg) {
		return q, ErrShort
	}
	q.Name = b.String()
	q.Type = binary.BigEndian.Uint16(msg[off:])
	q.Class = binary.BigEndian.Uint16(msg[off+2:])
	q.QuestionEnd = off + 4
	return q, nil
}

// answer appends the response to query q (whose bytes are msg) to dst.
func (s *Server) answer(dst, msg []byte, q Query) []byte {
	s.mu.Lock()
	ips, haveAddrs := s.addrs[q.Name]
	srvs, haveSRV := s.srvs[q.Name]
	var rrs [][]byte
	if q.Class == ClassIN {
		switch q.Type {
		case TypeA, TypeAAAA:
			for _, ip := range ips {
				if ip.Is4() == (q.Type == TypeA) {
					rrs = append(rrs, ip.AsSlice())
				}
			}
		case TypeSRV:
			for _, r := range srvs {
				d := binary.BigEndian.AppendUint16(nil, r.Priority)
				d = binary.BigEndian.AppendUint16(d, r.Weight)
				d = binary.BigEndian.AppendUint16(d, r.Port)
				rrs = append(rrs, appendName(d, r.Target))
			}
		}
	}
	s.mu.Unlock()

	rcode := uint16(0)
	if !haveAddrs && !haveSRV {
		rcode = 3 // NXDOMAIN
	}
	// QR, the opcode (0), AA, RD copied, RA, rcode.
	flags := uint16(0x8000|0x0400|0x0080) | q.Flags&0x0100 | rcode
	dst = binary.BigEndian.AppendUint16(dst, q.ID)
	dst = binary.BigEndian.AppendUint16(dst, flags)
	dst = binary.BigEndian.AppendUint16(dst, 1)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(rrs)))
	dst = binary.BigEndian.AppendUint16(dst, 0)
	dst = binary.BigEndian.AppendUint16(dst, 0)
	dst = append(dst, msg[12:q.QuestionEnd]...)
	for _, rd := range rrs {
		dst = append(dst, 0xC0, 12) // the name: a pointer to the question's
		dst = binary.BigEndian.AppendUint16(dst, q.Type)
		dst = binary.BigEndian.AppendUint16(dst, ClassIN)
		dst = binary.BigEndian.AppendUint32(dst, 1) // TTL 1 s: nobody should cache a test's records
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(rd)))
		dst = append(dst, rd...)
	}
	return dst
}

// appendName appends name in wire form (labels, uncompressed).
func appendName(dst []byte, name string) []byte {
	name = canonical(name)
	for _, l := range strings.Split(name, ".") {
		if l == "" {
			continue
		}
		if len(l) > 63 {
			l = l[:63]
		}
		dst = append(dst, byte(len(l)))
		dst = append(dst, l...)
	}
	return append(dst, 0)
}
