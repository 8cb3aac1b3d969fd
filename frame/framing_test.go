package frame

import "testing"

func TestUsesHTTPFraming(t *testing.T) {
	for _, tc := range []struct {
		opts []Option
		want bool
	}{
		{nil, false},
		{[]Option{WithMaxFrameSize(10), WithBufferSize(64)}, false},
		{[]Option{WithHTTPFraming()}, true},
		{[]Option{WithMaxFrameSize(10), WithHTTPFraming(), nil}, true},
	} {
		if got := UsesHTTPFraming(tc.opts...); got != tc.want {
			t.Errorf("UsesHTTPFraming(%d options) = %v, want %v", len(tc.opts), got, tc.want)
		}
	}
}
