// Package observability shows the rpc package's per-call hooks feeding
// the usual tools: rpc.WithObserver into Prometheus counters and
// histograms (client_golang), and rpc.WithInterceptors /
// rpc.WithClientInterceptors creating OpenTelemetry spans on both sides.
// It lives in the examples module so that the library's go.mod keeps its
// one dependency (github.com/valyala/bytebufferpool).
package observability
