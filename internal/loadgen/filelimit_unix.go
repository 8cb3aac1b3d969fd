//go:build unix

package loadgen

import (
	"errors"
	"syscall"
)

// processFileLimit is this process's limit on open files (its soft limit,
// which the Go runtime raises to the hard one as the process starts), and
// whether it could be read.
func processFileLimit() (uint64, bool) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, false
	}
	return uint64(lim.Cur), true
}

// outOfFiles reports whether err is the process's limit of open files
// (EMFILE) or the system's (ENFILE), and which.
func outOfFiles(err error) (process, system bool) {
	return errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE)
}
