package cluster

import "github.com/zapcodec/zapcodec/rpc"

// A Client opens streams for generated streaming clients (see
// [Client.OpenStream]).
var _ rpc.StreamOpener = (*Client)(nil)
