// Package loadgen drives a ZAP-RPC server with calls and measures it: the
// engine behind `zapcodec load` and the examples/ethrpc demo.
//
// A run opens Config.Conns connections and keeps Config.Concurrency calls in
// flight on each (one worker goroutine per in-flight slot); with a cluster
// Target, Config.Conns to each replica, at most cluster.MaxConnsPerReplica. Closed loop (Rate
// 0): a worker sends its next call as soon as the previous one is answered,
// and latency is measured from the send. Open loop (Rate > 0): call k is due
// at start + k/Rate whatever happened before, and its latency is measured from
// that intended time, so a stalled server shows up as latency instead of
// silently lowering the send rate (no coordinated omission). Calls due
// before the end that could not be sent before the grace ran out (the
// server held every in-flight slot) count as abandoned, as the calls then
// in flight do, with their latency from their due time (a run bounded by
// a count of calls alone ends just after its last call is due, as if it
// had that duration); so do, when Run's ctx ends, the calls due by then
// and not sent, with their latency until then. A call is given up
// after Config.Timeout (a bound of the tool's own, sent to no server) and
// counts as failed; by default a run bounded by a count of calls alone
// has a bound of 20 s, so that a server that never answers cannot hold it
// forever, and a run with a duration has none but its end and the grace
// after it (Config.Grace, 10 s by default). The report's calls/s counts
// the calls that ended, over the run until sending stopped or, when later,
// until the last of them ended: the calls abandoned at the end of the
// grace, and the wait for them, are left out (they are in the report's
// calls, failed, and its latencies).
//
// Latencies go into a [Histogram] (log-linear buckets, at most 1/128
// relative error) that allocates nothing per record; workers share at most 64
// of them (round robin, each behind a mutex: a histogram is 60 KB, and one
// per worker would make 10,000 connections hold 600 MB), merged at the end. Bytes in and out are counted at the connection
// (a net.Conn wrapper), so they are the real frame bytes on the wire; with
// a cluster Target, whose sockets are the cluster client's, they are
// counted from the calls (payloads, envelopes and frame headers).
//
// A warm run ([Runner.Run] after [Runner.Warm], or the measured part of a
// run with Config.Warmup) allocates nothing per call on the client side
// beyond what package rpc does (nothing, when warm), unless
// Config.Request or Config.Check allocate.
package loadgen
