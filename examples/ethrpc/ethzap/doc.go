// Package ethzap holds the records and RPC stubs that zapcodec gen writes
// for ../eth.zap (eth_getBalance): GetBalanceRequest, GetBalanceResponse,
// their views, and the Eth server interface and client.
package ethzap

//go:generate go run github.com/zapcodec/zapcodec/cmd/zapcodec gen -package ethzap -out . ../eth.zap
