// Package pb holds the eth_getBalance records and the Eth service as
// protobuf, generated from eth.proto (protoc 3.21.12, protoc-gen-go
// v1.36.12, protoc-gen-go-grpc v1.6.2, protoc-gen-go-vtproto v0.6.0). The
// generated files are committed: building needs no protoc.
package pb

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative --go-vtproto_out=. --go-vtproto_opt=paths=source_relative,features=marshal+unmarshal+unmarshal_unsafe+size eth.proto
