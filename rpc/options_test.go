package rpc

import (
	"context"
	"net"
	"testing"

	"github.com/zapcodec/zapcodec/frame"
)

// Frame settings reach both sides' reader and writer through
// WithFrameOptions, later settings winning; without them both use frame's
// defaults, as the former WithMaxFrameSize did.
func TestFrameOptionsPassThrough(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
		want int
	}{
		{"default", nil, frame.DefaultMaxFrameSize},
		{"set", []Option{WithFrameOptions(frame.WithMaxFrameSize(1 << 10))}, 1 << 10},
		{"zero is the default", []Option{WithFrameOptions(frame.WithMaxFrameSize(0))}, frame.DefaultMaxFrameSize},
		{"later wins", []Option{WithFrameOptions(frame.WithMaxFrameSize(1<<10), frame.WithBufferSize(64)),
			WithFrameOptions(frame.WithMaxFrameSize(2 << 10))}, 2 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := net.Pipe()
			defer b.Close()
			var copts []ClientOption
			var sopts []ServerOption
			for _, o := range tc.opts {
				copts = append(copts, o)
				sopts = append(sopts, o)
			}
			c := NewClient(a, copts...)
			defer c.Close()
			if got := c.r.MaxFrameSize(); got != tc.want {
				t.Fatalf("client reader max %d, want %d", got, tc.want)
			}
			if c.out.max != tc.want {
				t.Fatalf("client writer max %d, want %d", c.out.max, tc.want)
			}
			s := NewServer(sopts...)
			sc := newServerConn(s, b, context.Background())
			if got := sc.r.MaxFrameSize(); got != tc.want {
				t.Fatalf("server reader max %d, want %d", got, tc.want)
			}
			if sc.out.max != tc.want {
				t.Fatalf("server writer max %d, want %d", sc.out.max, tc.want)
			}
		})
	}
}
