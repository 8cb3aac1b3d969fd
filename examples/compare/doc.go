// Package compare puts zapcodec beside other Go codecs and RPC stacks on one
// job: eth_getBalance, the same records and the same handler each way.
//
// Every codec implements [Codec] over the records [Request] and [Response];
// every RPC stack serves the same [Table] behind the same handler logic.
// The benchmark bodies live in this package (bench.go) so that both
// `go test -bench` and cmd/results run exactly the same code.
//
// Buffers: an Append method appends to dst and returns the extended slice,
// which the caller owns. A Decode method may leave string fields aliasing
// its input where the codec's own API aliases (FlatBuffers, vtprotobuf's
// UnmarshalVTUnsafe, msgp's ReadStringZC, sonic's default config, the
// hand-written floor); such a record is valid while the input bytes stay
// unchanged. A Codec value keeps scratch state and is for one goroutine.
//
// Every benchmark checks its results (Fixture.Check before the timing,
// the last iteration's result after it), and Load checks every answer, so
// that an arm that does less than the job fails instead of posting a fast
// figure.
package compare
