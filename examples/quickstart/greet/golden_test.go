package greet_test

import (
	"bytes"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/zapcodec/zapcodec/examples/quickstart/greet"
)

var update = flag.Bool("update", false, "rewrite testdata/*.hex from the records")

// record is what every generated record has.
type record interface {
	AppendZAP(dst []byte) []byte
	DecodeZAP(b []byte) error
}

// TestGolden pins the bytes of the quick start's records, as the README
// ("Coming from gRPC and protobuf", "Pinning the bytes") suggests for a
// service's own: a change of greet.zap that moves a field fails here
// before it reaches a peer. go test -update rewrites the files when a
// change is meant; go run ./cmd/zapcodec dump -schema
// examples/quickstart/greet/greet.zap -type HelloReply
// examples/quickstart/greet/testdata/reply.hex shows one as JSON.
func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		file  string
		rec   record
		fresh record
	}{
		{"request.hex", &greet.HelloRequest{Name: "ZAP"}, new(greet.HelloRequest)},
		{"request_empty.hex", &greet.HelloRequest{}, new(greet.HelloRequest)},
		{"reply.hex", &greet.HelloReply{Message: "hello, ZAP"}, new(greet.HelloReply)},
	} {
		path := filepath.Join("testdata", tc.file)
		got := tc.rec.AppendZAP(nil)
		if *update {
			if err := os.WriteFile(path, []byte(hex.EncodeToString(got)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		want, err := hex.DecodeString(strings.TrimSpace(string(text)))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: AppendZAP wrote\n%x\nwant\n%x\n(go test -update rewrites the file if the change is meant)", path, got, want)
		}
		if err := tc.fresh.DecodeZAP(want); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if !reflect.DeepEqual(tc.fresh, tc.rec) {
			t.Errorf("%s decodes as %+v, want %+v", path, tc.fresh, tc.rec)
		}
	}
}
