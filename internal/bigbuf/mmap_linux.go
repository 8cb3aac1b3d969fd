package bigbuf

import "syscall"

// mapZeroed maps n bytes of anonymous memory, reserving no swap for them.
func mapZeroed(n int) ([]byte, error) {
	return syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS|syscall.MAP_NORESERVE)
}

// unmap releases what mapZeroed mapped.
func unmap(b []byte) error { return syscall.Munmap(b) }
