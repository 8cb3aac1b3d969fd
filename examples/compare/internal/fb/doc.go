// Package fb holds the FlatBuffers schema of the eth_getBalance records;
// the Go code flatc 2.0.8 generated from it is committed in ethfb/.
package fb

//go:generate flatc --go -o . eth.fbs
