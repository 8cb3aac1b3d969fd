// Package respmd lets rpc/cluster find the response metadata receiver a
// caller's ctx carries (rpc.WithResponseMetadata) without a public API
// for it: a hedged call sends its attempts, at once, with ctxs of their
// own, each with its own receiver, and gives the caller's receiver the
// metadata of the answer that decided the call, since attempts sharing
// the caller's receiver would write it concurrently, and after the call
// returned.
package respmd

import "context"

// Receiver returns the *rpc.Metadata that ctx's calls store their
// answers' response metadata in, or nil (an untyped nil) when ctx has
// none. Package rpc sets it when it is initialized.
var Receiver func(ctx context.Context) any
