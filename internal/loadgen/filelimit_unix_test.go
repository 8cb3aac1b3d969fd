//go:build unix

package loadgen

import (
	"os"
	"syscall"
)

// emfileError is the error of a socket call out of open files.
func emfileError() (error, bool) { return os.NewSyscallError("socket", syscall.EMFILE), true }
