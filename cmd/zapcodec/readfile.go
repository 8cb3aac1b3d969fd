package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/zapcodec/zapcodec/frame"
)

// The inputs the commands read whole are bounded: a file of any size, or
// /dev/zero, is read no further than one byte past its bound, and refused
// with an error naming it.
const (
	// maxSchemaFile bounds each schema file (gen's, and -schema of
	// dump, call and load): 16 MiB, far above any schema.
	maxSchemaFile = 16 << 20
	// maxDumpInput bounds dump's input, a file or stdin: 64 MiB, room for
	// the hex text of a frame of the largest size a peer accepts by
	// default (frame.DefaultMaxFrameSize, 16 MiB) twice over.
	maxDumpInput = 4 * frame.DefaultMaxFrameSize
)

// errTooLarge is readAtMost's error for input above its bound.
var errTooLarge = errors.New("input too large")

// readAtMost returns what r holds when that is at most limit bytes; from
// a larger input it reads no further than one byte past limit and fails
// with errTooLarge.
func readAtMost(r io.Reader, limit int) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, errTooLarge
	}
	return b, nil
}

// readFileAtMost returns the contents of the file name when it holds at
// most limit bytes; a larger file is read no further than one byte past
// limit and fails with errTooLarge.
func readFileAtMost(name string, limit int) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAtMost(f, limit)
}

// readSchemaFile returns the schema file name, refusing one of more than
// maxSchemaFile bytes with an error that names the file and the bound.
func readSchemaFile(name string) ([]byte, error) {
	b, err := readFileAtMost(name, maxSchemaFile)
	if errors.Is(err, errTooLarge) {
		return nil, fmt.Errorf("%s: more than %d bytes (16 MiB), too large for a schema", name, maxSchemaFile)
	}
	return b, err
}
