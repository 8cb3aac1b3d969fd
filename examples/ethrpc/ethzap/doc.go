// Package ethzap holds the records and RPC stubs that zapcodec gen writes
// for ../eth.zap (eth_getBalance; eth_getLogs whole and streamed):
// GetBalanceRequest, GetBalanceResponse, LogFilter, Log, Logs, their views,
// the Eth and EthLogs server interfaces and clients (EthLogs.streamLogs is
// a zapcodec streaming method, with typed streams). Its tests check
// the generated code itself: fixture bytes, views, random round trips,
// allocations, a typed RPC round trip, and benchmarks beside the same work
// written by hand with package codec. The gen package's tests fail when
// this file is stale.
package ethzap

//go:generate go run github.com/zapcodec/zapcodec/cmd/zapcodec gen -package ethzap -out . ../eth.zap
