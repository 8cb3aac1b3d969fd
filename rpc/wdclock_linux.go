package rpc

import (
	"os"
	"syscall"
	"time"
	"unsafe"
)

// fdTimer is a wdTimer on a Linux timerfd (CLOCK_MONOTONIC, non-blocking):
// wait reads it through the network poller, so the watchdog goroutine
// parks like one waiting for a socket, and no runtime timer is pending
// while it sleeps (see wdTimer).
type fdTimer struct {
	f   *os.File
	rc  syscall.RawConn
	d   time.Duration // of the last reset
	buf [8]byte
}

// itimerspec is the kernel's struct itimerspec.
type itimerspec struct {
	interval, value syscall.Timespec
}

const clockMonotonic = 1

// newOSTimer returns a timerfd timer, or nil when one cannot be made (a
// sandbox that forbids the system call, a poller that refuses the fd).
func newOSTimer() wdTimer {
	fd, _, errno := syscall.Syscall(syscall.SYS_TIMERFD_CREATE, clockMonotonic, syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errno != 0 {
		return nil
	}
	// A non-blocking descriptor given to os.NewFile is read through the
	// poller.
	f := os.NewFile(fd, "rpc-watchdog-timerfd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil
	}
	t := &fdTimer{f: f, rc: rc}
	if !t.set(0) || f.SetReadDeadline(time.Time{}) != nil {
		// SetReadDeadline fails on a file the poller does not watch: a
		// read would block the thread.
		f.Close()
		return nil
	}
	return t
}

// set arms the timer d from now (d <= 0 disarms it).
func (t *fdTimer) set(d time.Duration) bool {
	var spec itimerspec
	if d > 0 {
		spec.value = syscall.NsecToTimespec(int64(d))
	}
	var errno syscall.Errno
	err := t.rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall6(syscall.SYS_TIMERFD_SETTIME, fd, 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
	})
	return err == nil && errno == 0
}

func (t *fdTimer) reset(d time.Duration) {
	t.d = max(d, 1)
	if !t.set(t.d) {
		t.d = -t.d // wait sleeps instead
	}
}

// wait returns when the timer has fired (the read returns its count of
// expirations). A timer that could not be armed or read (it does not
// happen: a descriptor the kernel gave us and we alone use) sleeps for
// its delay instead, so that the watchdog never spins.
func (t *fdTimer) wait() {
	if t.d < 0 {
		time.Sleep(-t.d)
		return
	}
	if _, err := t.f.Read(t.buf[:]); err != nil {
		time.Sleep(t.d)
	}
}

func (t *fdTimer) close() { t.f.Close() }
