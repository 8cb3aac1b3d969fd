//go:build !race

package streams

import (
	"context"
	"testing"
)

// Typed Send and Recv allocate nothing per message once warm: a chat
// round trip (the client's Send and Recv, the server's Recv and Send,
// the whole process counted), and a subscribe message.
func TestStreamAllocs(t *testing.T) {
	c, _ := start(t)
	ctx := context.Background()
	chat, err := c.Chat(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m := Msg{Text: "hello there"}
	step := func() {
		m.Seq++
		if err := chat.Send(&m); err != nil {
			t.Fatal(err)
		}
		if v, err := chat.Recv(); err != nil || v.Seq() != m.Seq+1 {
			t.Fatal(err)
		}
	}
	for range 3000 {
		step()
	}
	if n := testing.AllocsPerRun(2000, step); n != 0 {
		t.Fatalf("%v allocations per chat round trip, want 0", n)
	}
	sub, err := c.Subscribe(ctx, &Filter{Count: 1 << 20, Size: 64})
	if err != nil {
		t.Fatal(err)
	}
	recv := func() {
		if _, err := sub.Recv(); err != nil {
			t.Fatal(err)
		}
	}
	for range 20000 {
		recv()
	}
	if n := testing.AllocsPerRun(20000, recv); n != 0 {
		t.Fatalf("%v allocations per subscribe message (server Send + client Recv), want 0", n)
	}
}
