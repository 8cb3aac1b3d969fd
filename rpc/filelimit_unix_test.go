//go:build unix

package rpc

import "syscall"

// openFileLimit is this process's limit on open files (its soft limit, which
// the Go runtime raises to the hard one as the process starts), and whether
// it could be read.
func openFileLimit() (uint64, bool) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, false
	}
	return uint64(lim.Cur), true
}
