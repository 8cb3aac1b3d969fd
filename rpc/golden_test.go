package rpc

import (
	"bytes"
	"context"
	"net"
	"testing"

	"github.com/zapcodec/zapcodec/rpc/wire"
)

func fixtureFrame(t *testing.T, f *rpcFixtures, name string) []byte {
	for _, fr := range f.Frames {
		if fr.Name == name {
			return unhex(t, fr.Hex)
		}
	}
	t.Fatalf("frame %q not in rpc.json", name)
	return nil
}

// The fixture request frame sent raw gets exactly the fixture response
// frame from a handler returning the fixture body.
func TestGoldenServerFrame(t *testing.T) {
	f := loadFixtures(t)
	reqFrame := fixtureFrame(t, f, "request_frame")
	respFrame := fixtureFrame(t, f, "response_frame")
	wantResp, err := wire.ParseResponse(respFrame[5:])
	if err != nil {
		t.Fatal(err)
	}
	wantReq, err := wire.ParseRequest(reqFrame[5:])
	if err != nil {
		t.Fatal(err)
	}
	s, addr, _ := testServer(t)
	s.Handle(wantReq.Method, func(_ context.Context, req, resp []byte) ([]byte, error) {
		if !bytes.Equal(req, wantReq.Payload) {
			t.Errorf("handler got %x, want %x", req, wantReq.Payload)
		}
		return append(resp, wantResp.Body...), nil
	})
	rc := rawDial(t, addr)
	if _, err := rc.Write(reqFrame); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(respFrame))
	if _, err := readFull(rc, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, respFrame) {
		t.Fatalf("response frame\n got %x\nwant %x", got, respFrame)
	}
}

// The client's request frame for the fixture call equals the fixture bytes.
// The fixture call has promise_id 5: the fifth concurrent call of a fresh
// client gets it, so four calls are left pending first.
func TestGoldenClientFrame(t *testing.T) {
	f := loadFixtures(t)
	reqFrame := fixtureFrame(t, f, "request_frame")
	respFrame := fixtureFrame(t, f, "response_frame")
	want, err := wire.ParseRequest(reqFrame[5:])
	if err != nil {
		t.Fatal(err)
	}
	body, _ := wire.ParseResponse(respFrame[5:])

	cside, sside := net.Pipe()
	c := NewClient(cside)
	defer c.Close()
	peer := &rawConn{t, sside}
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		go func() {
			_, err := c.Call(ctx, 9, []byte("x"), nil)
			errs <- err
		}()
		if _, _, ok := peer.recv(); !ok { // wait until call i is written
			t.Fatal("pipe closed")
		}
	}
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := c.Call(context.Background(), want.Method, want.Payload, nil)
		done <- result{b, err}
	}()
	_, env, ok := peer.recv()
	if !ok {
		t.Fatal("pipe closed")
	}
	if got := frameBytes(wire.KindRequest, env); !bytes.Equal(got, reqFrame) {
		t.Fatalf("client request frame\n got %x\nwant %x", got, reqFrame)
	}
	if _, err := sside.Write(respFrame); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || !bytes.Equal(r.b, body.Body) {
		t.Fatalf("Call = %x, %v; want %x", r.b, r.err, body.Body)
	}
	cancel()
	for i := 0; i < 4; i++ {
		if err := <-errs; err != context.Canceled {
			t.Fatalf("abandoned call: %v", err)
		}
	}
}

func readFull(c net.Conn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := c.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
