//go:build !linux

package bigbuf

import "errors"

func mapZeroed(int) ([]byte, error) {
	return nil, errors.New("only implemented on Linux")
}

func unmap([]byte) error { return nil }
