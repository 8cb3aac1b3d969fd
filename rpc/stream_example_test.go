package rpc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/zapcodec/zapcodec/rpc"
)

// A server stream: the handler sends three messages and ends with an
// error, which the client's Recv returns as a *rpc.StatusError after the
// messages sent before it. (Messages here are plain bytes; a schema's
// typed streams, from zapcodec gen, send and receive records.)
func ExampleClient_OpenStream() {
	s := rpc.NewServer()
	s.HandleStream(1, func(ctx context.Context, init []byte, st *rpc.Stream) error {
		for i := range 3 {
			if err := st.Send(fmt.Appendf(nil, "%s %d", init, i)); err != nil {
				return err
			}
		}
		return rpc.Errorf(410, "no more")
	})
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	go s.Serve(l)
	defer s.Close()

	c, _ := rpc.Dial(context.Background(), "tcp", l.Addr().String())
	defer c.Close()
	st, err := c.OpenStream(context.Background(), 1, []byte("tick"))
	if err != nil {
		fmt.Println(err)
		return
	}
	var buf []byte
	for {
		msg, err := st.Recv(buf[:0])
		var se *rpc.StatusError
		switch {
		case err == io.EOF:
			fmt.Println("clean end")
			return
		case errors.As(err, &se):
			fmt.Println("ended with status", se.Code, se.Message)
			return
		case err != nil:
			fmt.Println(err)
			return
		}
		fmt.Println(string(msg))
		buf = msg
	}
	// Output:
	// tick 0
	// tick 1
	// tick 2
	// ended with status 410 no more
}
