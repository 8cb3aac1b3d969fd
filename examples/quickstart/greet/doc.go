// Package greet is the README's quick start: greet.zap, a service with one
// method, and greet.zap.go, the code zapcodec gen wrote for it (records
// with their views, a GreeterServer interface with RegisterGreeterServer,
// and a GreeterClient). The package example runs a server and a client
// over loopback TCP, and a test keeps the README's copy of the schema and
// of the example the same as these files. The gen package's tests fail
// when greet.zap.go is stale.
package greet

//go:generate go run github.com/zapcodec/zapcodec/cmd/zapcodec gen -package greet -out . greet.zap
