package rpc

import (
	"crypto/tls"
	"testing"
)

// ClientTLSConfig gives the config of the last WithTLSConfig among the
// options, nil when none sets one.
func TestClientTLSConfig(t *testing.T) {
	a, b := &tls.Config{ServerName: "a"}, &tls.Config{ServerName: "b"}
	if got := ClientTLSConfig(); got != nil {
		t.Errorf("no options: %p, want nil", got)
	}
	if got := ClientTLSConfig(WithMaxPending(4), nil); got != nil {
		t.Errorf("no TLS option: %p, want nil", got)
	}
	if got := ClientTLSConfig(WithTLSConfig(a), WithMaxPending(4), WithTLSConfig(b)); got != b {
		t.Errorf("two TLS options: %p, want the last, %p", got, b)
	}
}
