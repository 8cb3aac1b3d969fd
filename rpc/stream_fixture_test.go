package rpc

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/zapcodec/zapcodec/internal/fixture"
	"github.com/zapcodec/zapcodec/rpc/wire"
)

// streamFixtures is fixtures/streams.json: socket bytes of five canonical
// stream exchanges.
type streamFixtures struct {
	Scenarios []struct {
		Name     string          `json:"name"`
		Observed json.RawMessage `json:"observed"`
		Frames   []struct {
			Seq  int    `json:"seq"`
			Dir  string `json:"dir"`
			Kind byte   `json:"kind"`
			ID   uint32 `json:"id"`
			Hex  string `json:"hex"`
		} `json:"frames"`
	} `json:"scenarios"`
}

type streamFrameFx struct {
	toServer bool
	kind     byte
	raw      []byte // the whole frame: length, kind, body
}

func loadStreamFixtures(t testing.TB) map[string][]streamFrameFx {
	t.Helper()
	var f streamFixtures
	if err := json.Unmarshal(fixture.Read(t, "fixtures/streams.json"), &f); err != nil {
		t.Fatal(err)
	}
	out := map[string][]streamFrameFx{}
	for _, s := range f.Scenarios {
		var fs []streamFrameFx
		for _, fr := range s.Frames {
			raw := unhex(t, fr.Hex)
			if len(raw) < 5 || raw[4] != fr.Kind || int(binary.LittleEndian.Uint32(raw)) != len(raw)-4 {
				t.Fatalf("%s: malformed fixture frame %x", s.Name, raw)
			}
			fs = append(fs, streamFrameFx{toServer: fr.Dir == "client_to_server", kind: fr.Kind, raw: raw})
		}
		out[s.Name] = fs
	}
	if len(out) != 5 {
		t.Fatalf("%d scenarios in streams.json, want 5", len(out))
	}
	return out
}

// readRawFrame reads one whole frame (header included).
func readRawFrame(nc net.Conn) ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(nc, h[:]); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint32(h[:])
	if n == 0 || n > 1<<20 {
		return nil, errors.New("bad frame length")
	}
	b := make([]byte, 4+n)
	copy(b, h[:])
	_, err := io.ReadFull(nc, b[4:])
	return b, err
}

// fixture messages: a ZAP message with one u32 at the root (msgU32).
func msgU32(v uint32) []byte {
	b := []byte{'Z', 'A', 'P', 0, 1, 0, 0, 0, 16, 0, 0, 0, 24, 0, 0, 0}
	b = binary.LittleEndian.AppendUint32(b, v)
	return append(b, 0, 0, 0, 0)
}

func msgVal(t testing.TB, m []byte) uint32 {
	t.Helper()
	if len(m) != 24 {
		t.Fatalf("message %x is not a msgU32", m)
	}
	return binary.LittleEndian.Uint32(m[16:])
}

// Fixture methods: the canonical geometry interface (1 area, 3 ping) and
// the stream methods the scenarios open.
func fixtureServer(t *testing.T) (string, *fixtureObs) {
	t.Helper()
	s, addr, _ := testServer(t)
	obs := &fixtureObs{}
	s.Handle(1, func(_ context.Context, req, resp []byte) ([]byte, error) { // Area: NewPoint{X: shape.ID, Y: -1}
		id := binary.LittleEndian.Uint32(req[16:])
		resp = append(resp, 'Z', 'A', 'P', 0, 1, 0, 0, 0, 16, 0, 0, 0, 24, 0, 0, 0)
		resp = binary.LittleEndian.AppendUint32(resp, id)
		return binary.LittleEndian.AppendUint32(resp, 0xFFFFFFFF), nil
	})
	s.Handle(3, func(_ context.Context, req, resp []byte) ([]byte, error) { return resp, nil }) // Ping
	// The stream handlers call SetResponseMetadata with no pairs: the
	// server's end is the fixture's (no trailer frame).
	s.HandleStream(5, func(ctx context.Context, init []byte, st *Stream) error {
		SetResponseMetadata(ctx)
		obs.add("init", init)
		for v := uint32(100); v <= 102; v++ {
			if err := st.Send(msgU32(v)); err != nil {
				return err
			}
		}
		return nil
	})
	recvToEOF := func(st *Stream) ([][]byte, error) {
		var got [][]byte
		for {
			m, err := st.Recv(nil)
			if err == io.EOF {
				return got, nil
			}
			if err != nil {
				return got, err
			}
			got = append(got, m)
		}
	}
	s.HandleStream(6, func(ctx context.Context, init []byte, st *Stream) error {
		SetResponseMetadata(ctx)
		obs.add("init", init)
		got, err := recvToEOF(st)
		if err != nil {
			return err
		}
		var sum uint32
		for _, m := range got {
			obs.add("recv", m)
			sum += msgVal(t, m)
		}
		return st.Send(msgU32(sum))
	})
	s.HandleStream(7, func(_ context.Context, init []byte, st *Stream) error {
		m, err := st.Recv(nil)
		if err != nil {
			return err
		}
		if err := st.Send(msgU32(2 * msgVal(t, m))); err != nil {
			return err
		}
		_, err = recvToEOF(st)
		return err
	})
	s.HandleStream(4, func(_ context.Context, init []byte, st *Stream) error {
		got, err := recvToEOF(st)
		for _, m := range got {
			obs.add("recv", m)
		}
		return err
	})
	return addr, obs
}

type fixtureObs struct {
	mu  sync.Mutex
	got map[string][][]byte
}

func (o *fixtureObs) add(k string, v []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.got == nil {
		o.got = map[string][][]byte{}
	}
	o.got[k] = append(o.got[k], v)
}

func (o *fixtureObs) get(k string) [][]byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.got[k]
}

// A zapcodec server given the canonical client's bytes answers with the
// canonical server's bytes, frame for frame: no hello, no grant, nothing
// but the canonical frames (the client sent no hello).
func TestStreamFixturesServer(t *testing.T) {
	scen := loadStreamFixtures(t)
	for _, name := range []string{"server_stream", "client_stream", "unary_and_stream", "open_without_stream_handler", "send_after_close_send"} {
		t.Run(name, func(t *testing.T) {
			addr, obs := fixtureServer(t)
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			nc.SetReadDeadline(time.Now().Add(30 * time.Second))
			for i, f := range scen[name] {
				if f.toServer {
					if _, err := nc.Write(f.raw); err != nil {
						t.Fatal(err)
					}
					continue
				}
				got, err := readRawFrame(nc)
				if err != nil {
					t.Fatalf("frame %d: %v, want %x", i, err, f.raw)
				}
				if !bytes.Equal(got, f.raw) {
					t.Fatalf("frame %d:\n got %x\nwant %x", i, got, f.raw)
				}
			}
			// Nothing more: close our side and expect the server's EOF.
			nc.(*net.TCPConn).CloseWrite()
			if got, err := readRawFrame(nc); err != io.EOF {
				t.Fatalf("after the exchange: frame %x, %v; want EOF", got, err)
			}
			switch name {
			case "server_stream":
				if in := obs.get("init"); len(in) != 1 || msgVal(t, in[0]) != 42 {
					t.Fatalf("handler init %x", in)
				}
			case "client_stream":
				in, rec := obs.get("init"), obs.get("recv")
				if len(in) != 1 || len(in[0]) != 0 || len(rec) != 2 || msgVal(t, rec[0]) != 7 || msgVal(t, rec[1]) != 8 {
					t.Fatalf("handler init %x, received %x", in, rec)
				}
			case "send_after_close_send":
				if rec := obs.get("recv"); len(rec) != 1 || msgVal(t, rec[0]) != 1 {
					t.Fatalf("handler received %x, want only the message before the end", rec)
				}
			}
		})
	}
}

// A zapcodec client driven through each scenario's client steps sends the
// canonical client's bytes (after its one hello, a kind 9 frame the
// canonical server ignores) and reads the canonical server's bytes into
// the values the canonical client observed. Unary promise ids are this
// client's own (its slot table), so kinds 1 and 2 are compared with the
// promise id set to the fixture's.
func TestStreamFixturesClient(t *testing.T) {
	scen := loadStreamFixtures(t)
	for _, name := range []string{"server_stream", "client_stream", "unary_and_stream", "open_without_stream_handler", "send_after_close_send"} {
		t.Run(name, func(t *testing.T) {
			frames := scen[name]
			if name == "send_after_close_send" {
				// The canonical client writes a message after its own end
				// (the server drops it); this client refuses that Send.
				frames = append(frames[:3:3], frames[4:]...)
			}
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			srvErr := make(chan error, 1)
			go func() { srvErr <- fakeCanonicalServer(l, frames) }()
			c := dial(t, l.Addr().String())
			ctx := context.Background()
			switch name {
			case "server_stream":
				st, err := c.OpenStream(ctx, 5, msgU32(42))
				if err != nil {
					t.Fatal(err)
				}
				msgs, err := recvAll(st)
				if err != io.EOF || len(msgs) != 3 || msgVal(t, msgs[0]) != 100 || msgVal(t, msgs[2]) != 102 {
					t.Fatalf("%x %v", msgs, err)
				}
			case "client_stream":
				st, err := c.OpenStream(ctx, 6, nil)
				if err != nil {
					t.Fatal(err)
				}
				must(t, st.Send(msgU32(7)))
				must(t, st.Send(msgU32(8)))
				must(t, st.CloseSend())
				msgs, err := recvAll(st)
				if err != io.EOF || len(msgs) != 1 || msgVal(t, msgs[0]) != 15 {
					t.Fatalf("%x %v", msgs, err)
				}
			case "unary_and_stream":
				st, err := c.OpenStream(ctx, 7, msgU32(1))
				if err != nil {
					t.Fatal(err)
				}
				shape := []byte{'Z', 'A', 'P', 0, 1, 0, 0, 0, 16, 0, 0, 0, 40, 0, 0, 0, 3}
				shape = append(shape, make([]byte, 23)...)
				out, err := c.Call(ctx, 1, shape, nil)
				if err != nil || len(out) != 24 || binary.LittleEndian.Uint32(out[16:]) != 3 || int32(binary.LittleEndian.Uint32(out[20:])) != -1 {
					t.Fatalf("area %x %v", out, err)
				}
				must(t, st.Send(msgU32(21)))
				m, err := st.Recv(nil)
				if err != nil || msgVal(t, m) != 42 {
					t.Fatalf("%x %v", m, err)
				}
				if _, err := c.Call(ctx, 3, nil, nil); err != nil {
					t.Fatal(err)
				}
				must(t, st.CloseSend())
				if _, err := st.Recv(nil); err != io.EOF {
					t.Fatal(err)
				}
			case "open_without_stream_handler":
				st, err := c.OpenStream(ctx, 9, msgU32(1))
				if err != nil {
					t.Fatal(err)
				}
				must(t, st.Send(msgU32(2)))
				must(t, st.CloseSend())
				if _, err := c.Call(ctx, 3, nil, nil); err != nil {
					t.Fatal(err)
				}
				// The ping's answer came after the server read the stream's
				// frames: nothing arrived for the stream.
				st.mu.Lock()
				nothing := !st.rdone && len(st.q) == 0
				st.mu.Unlock()
				if !nothing {
					t.Fatal("the stream got something from a server that ignored it")
				}
				c.Close()
				if _, err := st.Recv(nil); !errors.Is(err, ErrClosed) {
					t.Fatalf("Recv after Close: %v, want ErrClosed", err)
				}
			case "send_after_close_send":
				st, err := c.OpenStream(ctx, 4, nil)
				if err != nil {
					t.Fatal(err)
				}
				must(t, st.Send(msgU32(1)))
				must(t, st.CloseSend())
				if err := st.Send(msgU32(2)); !errors.Is(err, ErrStreamClosed) {
					t.Fatalf("Send after CloseSend: %v", err)
				}
				must(t, st.CloseSend()) // a second one writes nothing
				if _, err := st.Recv(nil); err != io.EOF {
					t.Fatal(err)
				}
			}
			c.Close()
			select {
			case err := <-srvErr:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("gave up after 30 s waiting for the fake server")
			}
		})
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// fakeCanonicalServer accepts one connection and plays the server's side
// of frames: it reads the client's frames and compares them with the
// fixture (after the client's hello, checked once before its first open),
// writes the server's frames, then expects EOF.
func fakeCanonicalServer(l net.Listener, frames []streamFrameFx) error {
	nc, err := l.Accept()
	if err != nil {
		return err
	}
	defer nc.Close()
	nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	hello := frameBytes(wire.KindStreamWindow, wire.AppendStreamWindow(nil, 0, DefaultStreamWindow))
	helloSeen := false
	var pids []uint32 // the client's unary promise ids, in order
	for i, f := range frames {
		if !f.toServer {
			out := f.raw
			if f.kind == wire.KindResponse {
				out = bytes.Clone(out)
				binary.LittleEndian.PutUint32(out[5+16+4:], pids[0])
				pids = pids[1:]
			}
			if _, err := nc.Write(out); err != nil {
				return err
			}
			continue
		}
		got, err := readRawFrame(nc)
		if err != nil {
			return err
		}
		if f.kind == wire.KindStreamOpen && !helloSeen {
			if !bytes.Equal(got, hello) {
				return fmt.Errorf("frame %d: got %x, want the hello %x", i, got, hello)
			}
			helloSeen = true
			if got, err = readRawFrame(nc); err != nil {
				return err
			}
		}
		want := f.raw
		if f.kind == wire.KindRequest && len(got) > 5+24 {
			pids = append(pids, binary.LittleEndian.Uint32(got[5+16+4:]))
			want = bytes.Clone(want)
			copy(want[5+16+4:], got[5+16+4:5+16+8])
		}
		if !bytes.Equal(got, want) {
			return fmt.Errorf("frame %d:\n got %x\nwant %x", i, got, want)
		}
	}
	if got, err := readRawFrame(nc); err != io.EOF && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("after the exchange: %x %v, want EOF", got, err)
	}
	return nil
}
